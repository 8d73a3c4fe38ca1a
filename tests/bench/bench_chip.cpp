// The chip backend's benchmark: simulated cycles (exact and repeatable) of the library's hand
// schedules on each chip, as MXM utilisation and as the fraction of the roofline bound (the
// timing model's analytic bound for the MACs and bytes the kernel moves). One table per chip.
//
//   build-*/tests/bench/bench_chip [--quick]
#include <tessera/codegen/chip_backend.h>
#include <tessera/ops.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace tessera;

namespace {

struct Row {
    std::string name;
    ChipResult result;
    bool ok = false;
    std::string error;
};

Row run_matmul(const std::string &chip, int64_t m, int64_t n, int64_t k, Type type) {
    Row row;
    row.name = "matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + type.to_string();
    try {
        Input A(type, {int(m), int(k)}, "A"), B(type, {int(k), int(n)}, "B");
        Func C = ops::matmul(A, B);
        ChipProgram p = compile_for_chip(Pipeline(C), Target::named(chip), {{m, n}});
        ChipRunOptions o;
        o.functional = false;
        row.result = run_on_chip(p, {}, o);
        row.ok = true;
    } catch (const std::exception &e) {
        row.error = e.what();
    }
    return row;
}

void print_table(const std::string &chip, const std::vector<Row> &rows) {
    std::printf("\n%s\n", chip.c_str());
    std::printf("| kernel | cycles | MACs/cycle | MXM util | roofline cycles | of roofline | limiter |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---|\n");
    for (auto &r : rows) {
        if (!r.ok) {
            std::printf("| %s | — | — | — | — | — | not supported: %.80s |\n", r.name.c_str(), r.error.c_str());
            continue;
        }
        const auto &rep = r.result.report;
        std::printf("| %s | %lld | %.0f | %.1f %% | %.0f | %.1f %% | %s |\n", r.name.c_str(), (long long)rep.cycles,
                    rep.macs_per_cycle, 100.0 * rep.mxm_utilization, rep.roofline_cycles,
                    rep.cycles > 0 ? 100.0 * rep.roofline_cycles / double(rep.cycles) : 0.0, rep.roofline_limiter.c_str());
    }
}

} // namespace

int main(int argc, char **argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    std::vector<int64_t> sizes = quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1024, 2048};
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        std::vector<Row> rows;
        for (Type t : {Int(8), BFloat(16)})
            for (int64_t s : sizes) rows.push_back(run_matmul(chip, s, s, s, t));
        print_table(chip, rows);
    }
    return 0;
}
