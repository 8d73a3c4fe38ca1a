#pragma once
// Helpers shared by chipsim's tests: run small programs, build and read tensors.
#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/error.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/npy.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace chipsim_test {

using namespace tessera::chipsim;

inline const TimingModel &model(const std::string &target) {
    static TimingModel tsp(load_target("tsp-mini")), npu(load_target("npu-edge"));
    return target == "tsp-mini" ? tsp : npu;
}

template <typename T> TensorData tensor(DType d, std::vector<int64_t> shape, const std::vector<T> &values) {
    TensorData t{d, std::move(shape), {}};
    t.bytes.resize(values.size() * sizeof(T));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
}

template <typename T> std::vector<T> values(const TensorData &t) {
    std::vector<T> v(t.bytes.size() / sizeof(T));
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
}

/// Runs program text on tsp-mini, assigning @cycles with the ASAP scheduler when it has none.
inline SimResult run_tsp(const std::string &text, std::map<std::string, TensorData> inputs = {}, bool trace = false) {
    Program p = assemble(text, "test.tasm");
    bool has_cycles = !p.instructions.empty() && p.instructions[0].cycle >= 0;
    if (!has_cycles) p = schedule_asap(p, model("tsp-mini"));
    SimOptions o;
    o.inputs = std::move(inputs);
    o.trace = trace;
    return simulate(p, model("tsp-mini"), o);
}

inline SimResult run_npu(const std::string &text, std::map<std::string, TensorData> inputs = {}, bool trace = false) {
    SimOptions o;
    o.inputs = std::move(inputs);
    o.trace = trace;
    return simulate(assemble(text, "test.tasm"), model("npu-edge"), o);
}

/// Expects `fn` to throw tessera::Error whose message contains every one of `parts`.
template <typename Fn> void expect_error(Fn fn, const std::vector<std::string> &parts) {
    try {
        fn();
        ADD_FAILURE() << "expected an error containing '" << parts.at(0) << "'";
    } catch (const tessera::Error &e) {
        for (auto &part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "message: " << e.what() << "\nmissing: " << part;
    }
}

/// Loads an .npy into TensorData of a given dtype (same bytes).
inline TensorData from_npy(const std::string &path, DType d) {
    tessera::NpyArray a = tessera::read_npy(path);
    return TensorData{d, a.shape, a.data};
}

} // namespace chipsim_test
