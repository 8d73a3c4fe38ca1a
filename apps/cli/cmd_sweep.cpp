// `tessera sweep SPEC.json [--db FILE] [--jobs N] [--no-tune]`: runs every point of a sweep spec
// (sweep.h), recording each in the tuning database as it is measured, with a progress bar on
// stderr and a summary table at the end. A rerun skips completed points (resumable after kill -9).
//
// Under mpirun (when Tessera was built with MPI) the points still to do are dealt out over the
// ranks; each rank measures its share with --jobs threads and rank 0 alone opens and writes the
// database, receiving the other ranks' measurements as messages. Only this file includes mpi.h.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>

#include <nlohmann/json.hpp>
#include <tessera/sweep.h>
#include <tessera/tuning_db.h>

#ifdef TESSERA_HAVE_MPI
#include <mpi.h>
#endif

#include "cli_common.h"

namespace tessera::cli {

namespace {

using nlohmann::ordered_json;

struct SweepCliOptions {
    std::string spec, db;
    int jobs = 1;
    bool no_tune = false, json = false, quiet = false;
};

/// What became of one point.
struct PointOutcome {
    size_t index = 0;
    std::optional<MeasuredSchedule> measured;
    std::string error;
};

/// A point's measurement as a message between ranks (and back).
std::string outcome_to_text(const PointOutcome &o) {
    nlohmann::json j = {{"index", o.index}, {"error", o.error}};
    if (o.measured) {
        const MeasuredSchedule &m = *o.measured;
        j["schedule"] = m.schedule.to_json(-1);
        if (m.measurement.kind == Measurement::Kind::Cycles) j["cycles"] = m.measurement.cycles;
        else j["samples"] = m.measurement.samples;
        j["seed"] = m.seed;
        j["tuner_options"] = m.tuner_options;
        j["op_words"] = m.op_words;
        j["program_hash"] = m.program_hash;
        j["details"] = m.details;
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

[[maybe_unused]] PointOutcome outcome_from_text(const std::string &text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    PointOutcome o;
    o.index = j["index"].get<size_t>();
    o.error = j["error"].get<std::string>();
    if (j.contains("schedule")) {
        MeasuredSchedule m;
        m.schedule = Schedule::from_json(j["schedule"].get<std::string>());
        m.measurement = j.contains("cycles") ? Measurement::chip_cycles(j["cycles"].get<int64_t>())
                                             : Measurement::host_seconds(j["samples"].get<std::vector<double>>());
        m.seed = j["seed"].get<uint64_t>();
        m.tuner_options = j["tuner_options"].get<std::string>();
        m.op_words = j["op_words"].get<std::string>();
        m.program_hash = j["program_hash"].get<std::string>();
        m.details = j["details"].get<std::string>();
        o.measured = std::move(m);
    }
    return o;
}

/// This process's place among the sweep's processes: one, or the ranks of an MPI job.
struct Ranks {
    int rank = 0, size = 1;
    bool mpi = false;
};

Ranks start_ranks() {
    Ranks r;
#ifdef TESSERA_HAVE_MPI
    // Only when launched by mpirun: a plain `tessera sweep` must not start MPI's runtime.
    if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE")) {
        int provided = 0;
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &r.size);
        r.mpi = true;
    }
#endif
    return r;
}

/// Ends MPI on every path out of the sweep, errors included (an error on one rank aborts all:
/// the others would wait for it forever).
struct RanksGuard {
    const Ranks &ranks;
    bool ok = false;
    ~RanksGuard() {
#ifdef TESSERA_HAVE_MPI
        if (!ranks.mpi) return;
        if (!ok) MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Finalize();
#endif
    }
};

constexpr int kOutcomeTag = 7;

/// Rank 0's flags of completed points, sent to every rank.
void share_done(const Ranks &ranks, std::vector<char> &done) {
#ifdef TESSERA_HAVE_MPI
    if (ranks.mpi) MPI_Bcast(done.data(), int(done.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
#endif
}

void send_to_rank0(const PointOutcome &o) {
#ifdef TESSERA_HAVE_MPI
    const std::string text = outcome_to_text(o);
    MPI_Send(text.data(), int(text.size()), MPI_CHAR, 0, kOutcomeTag, MPI_COMM_WORLD);
#endif
}

/// A message from another rank, if one has arrived (wait: block until one does).
std::optional<PointOutcome> receive_from_ranks(const Ranks &ranks, bool wait) {
#ifdef TESSERA_HAVE_MPI
    if (!ranks.mpi) return std::nullopt;
    MPI_Status status;
    int flag = 0;
    if (wait) {
        MPI_Probe(MPI_ANY_SOURCE, kOutcomeTag, MPI_COMM_WORLD, &status);
        flag = 1;
    } else {
        MPI_Iprobe(MPI_ANY_SOURCE, kOutcomeTag, MPI_COMM_WORLD, &flag, &status);
    }
    if (!flag) return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    std::string text(size_t(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kOutcomeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return outcome_from_text(text);
#else
    return std::nullopt;
#endif
}

/// Measures points on `jobs` threads, handing outcomes to the caller's thread as they finish.
/// A host point measures alone (no other point runs meanwhile): timings taken side by side
/// would disturb each other. Chip points are simulated cycles and run side by side.
class PointWorkers {
public:
    PointWorkers(const SweepSpec &spec, std::vector<size_t> points, int jobs) : spec_(spec), points_(std::move(points)) {
        for (int t = 0; t < std::max(1, std::min<int>(jobs, int(points_.size()))); ++t)
            threads_.emplace_back([this] { work(); });
    }
    ~PointWorkers() {
        for (auto &t : threads_) t.join();
    }
    size_t count() const { return points_.size(); }
    /// The next finished outcome, waiting up to `wait` for one.
    std::optional<PointOutcome> next(std::chrono::milliseconds wait) {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait_for(lock, wait, [this] { return !outcomes_.empty(); });
        if (outcomes_.empty()) return std::nullopt;
        PointOutcome o = std::move(outcomes_.front());
        outcomes_.pop_front();
        return o;
    }

private:
    void work() {
        for (size_t i; (i = next_.fetch_add(1)) < points_.size();) {
            PointOutcome o;
            o.index = points_[i];
            const SweepPoint &p = spec_.points[o.index];
            try {
                std::unique_lock<std::shared_mutex> alone(measuring_, std::defer_lock);
                std::shared_lock<std::shared_mutex> shared(measuring_, std::defer_lock);
                if (p.chip) shared.lock();
                else alone.lock();
                o.measured = measure_sweep_point(spec_, p);
            } catch (const std::exception &e) {
                o.error = e.what();
            }
            std::lock_guard<std::mutex> lock(mutex_);
            outcomes_.push_back(std::move(o));
            ready_.notify_one();
        }
    }
    const SweepSpec &spec_;
    std::vector<size_t> points_;
    std::atomic<size_t> next_{0};
    std::mutex mutex_;
    std::shared_mutex measuring_;
    std::condition_variable ready_;
    std::deque<PointOutcome> outcomes_;
    std::vector<std::thread> threads_;
};

/// One line of the summary.
struct Row {
    std::string status; // "measured", "done before", "failed"
    int64_t record = 0;
    std::string measured, error;
    double efficiency = -1; // chips: problem bound / cycles
};

double efficiency_of(const MeasuredSchedule &m) {
    const nlohmann::json d = nlohmann::json::parse(m.details);
    if (m.measurement.kind != Measurement::Kind::Cycles) return -1;
    // The problem bound (the algorithm's, whatever the schedule moved); records stored before it
    // existed have only the program's roofline.
    for (const char *bound : {"problem_bound_cycles", "roofline_cycles"})
        if (d.contains(bound) && d[bound].get<double>() > 0) return d[bound].get<double>() / double(m.measurement.cycles);
    return -1;
}

class Progress {
public:
    Progress(size_t total, size_t already, bool quiet) : total_(total), done_(already), quiet_(quiet) {}
    void point_finished(const SweepPoint &p, const Row &row) {
        ++done_;
        ++measured_here_;
        if (row.efficiency > best_efficiency_) {
            best_efficiency_ = row.efficiency;
            best_ = p.description();
        }
        if (quiet_) return;
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        const double eta = elapsed / double(measured_here_) * double(total_ - done_);
        const int filled = total_ ? int(30 * done_ / total_) : 30;
        std::string best = best_.empty() ? "" : "  best " + std::to_string(int(best_efficiency_ * 100 + 0.5)) + "% of bound (" + best_ + ")";
        std::fprintf(stderr, "\r\033[Ksweep [%-30s] %zu/%zu  %s: %s%s  ETA %.0f s", std::string(size_t(filled), '#').c_str(),
                     done_, total_, p.description().c_str(), row.status == "failed" ? "FAILED" : row.measured.c_str(),
                     best.c_str(), eta);
        std::fflush(stderr);
    }
    void finish() {
        if (!quiet_ && measured_here_) std::fprintf(stderr, "\n");
    }

private:
    size_t total_, done_, measured_here_ = 0;
    bool quiet_;
    double best_efficiency_ = -1;
    std::string best_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int run_sweep(const SweepCliOptions &o, const Ranks &ranks, RanksGuard &guard) {
    const SweepSpec spec = SweepSpec::load(o.spec, !o.no_tune);
    const size_t n = spec.points.size();

    // Rank 0 opens the database and says which points are complete; the others never open it.
    std::optional<TuningDatabase> db;
    std::vector<char> done(n, 0);
    std::vector<Row> rows(n);
    if (ranks.rank == 0) {
        if (!o.db.empty()) db.emplace(o.db);
        else db = TuningDatabase::open_from_environment();
        if (!db) throw UsageError("no tuning database: give --db FILE or set TESSERA_TUNING_DB");
        for (size_t i = 0; i < n; ++i)
            if (auto record = db->sweep_point(spec.points[i].key)) {
                done[i] = 1;
                rows[i].status = "done before";
                rows[i].record = *record;
                if (auto r = db->find(*record)) rows[i].measured = r->measurement.to_string();
            }
    }
    share_done(ranks, done);
    std::vector<size_t> pending, mine;
    for (size_t i = 0; i < n; ++i)
        if (!done[i]) pending.push_back(i);
    for (size_t k = 0; k < pending.size(); ++k)
        if (int(k % size_t(ranks.size)) == ranks.rank) mine.push_back(pending[k]);

    PointWorkers workers(spec, mine, o.jobs);
    if (ranks.rank != 0) {
        for (size_t got = 0; got < mine.size();)
            if (auto out = workers.next(std::chrono::milliseconds(200))) {
                send_to_rank0(*out);
                ++got;
            }
        guard.ok = true;
        return 0;
    }

    Progress progress(n, n - pending.size(), o.quiet);
    size_t local = 0, stored = 0;
    auto handle = [&](const PointOutcome &out) {
        Row &row = rows[out.index];
        const SweepPoint &p = spec.points[out.index];
        if (out.measured) {
            try {
                row.record = store_sweep_point(*db, p, *out.measured);
                row.status = "measured";
                row.measured = out.measured->measurement.to_string();
                row.efficiency = efficiency_of(*out.measured);
            } catch (const Error &e) {
                row.status = "failed";
                row.error = e.what();
            }
        } else {
            row.status = "failed";
            row.error = out.error;
        }
        progress.point_finished(p, row);
        ++stored;
    };
    while (stored < pending.size()) {
        bool any = false;
        while (auto remote = receive_from_ranks(ranks, false)) {
            handle(*remote);
            any = true;
        }
        if (local < mine.size()) {
            if (auto out = workers.next(std::chrono::milliseconds(any ? 0 : 50))) {
                handle(*out);
                ++local;
            }
        } else if (stored < pending.size()) {
            if (auto remote = receive_from_ranks(ranks, true)) handle(*remote);
        }
    }
    progress.finish();

    size_t failed = 0;
    for (const Row &r : rows) failed += r.status == "failed";
    if (o.json) {
        ordered_json points = ordered_json::array();
        for (size_t i = 0; i < n; ++i) {
            const SweepPoint &p = spec.points[i];
            ordered_json j = {{"op", p.op}, {"words", p.words}, {"target", p.target}, {"status", rows[i].status}};
            if (rows[i].record) j["record"] = rows[i].record;
            if (!rows[i].measured.empty()) j["measured"] = rows[i].measured;
            if (!rows[i].error.empty()) j["error"] = rows[i].error;
            points.push_back(std::move(j));
        }
        ordered_json j = {{"spec", o.spec},   {"database", db->path()}, {"points", points},
                          {"total", n},       {"measured", pending.size() - failed},
                          {"done_before", n - pending.size()}, {"failed", failed}, {"ranks", ranks.size}};
        std::printf("%s\n", j.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
    } else {
        std::printf("sweep %s: %zu points, %zu measured now, %zu done before, %zu failed (database %s)\n",
                    spec.name.empty() ? o.spec.c_str() : spec.name.c_str(), n, pending.size() - failed, n - pending.size(),
                    failed, db->path().c_str());
        std::printf("%4s  %-44s  %-10s  %-28s  %7s  %s\n", "#", "POINT", "TARGET", "MEASURED", "RECORD", "STATUS");
        for (size_t i = 0; i < n; ++i) {
            const SweepPoint &p = spec.points[i];
            std::printf("%4zu  %-44s  %-10s  %-28s  %7lld  %s\n", i, p.words.c_str(), p.target.c_str(), rows[i].measured.c_str(),
                        (long long)rows[i].record, rows[i].status.c_str());
            if (!rows[i].error.empty()) std::printf("      %s\n", rows[i].error.c_str());
        }
    }
    guard.ok = true;
    if (failed) {
        std::fprintf(stderr, "tessera: error: %zu of %zu sweep points failed (see the table); the others are stored\n",
                     failed, n);
        return 1;
    }
    return 0;
}

int sweep(const SweepCliOptions &o) {
    const Ranks ranks = start_ranks();
    RanksGuard guard{ranks};
    if (!ranks.mpi) return run_sweep(o, ranks, guard);
    try {
        return run_sweep(o, ranks, guard);
    } catch (const std::exception &e) {
        // Said here: the guard's MPI_Abort ends the process before main could print it.
        std::fprintf(stderr, "tessera: error: %s (rank %d of %d)\n", e.what(), ranks.rank, ranks.size);
        std::fflush(stderr);
        throw;
    }
}

} // namespace

Command add_sweep_command(CLI::App &app) {
    auto o = std::make_shared<SweepCliOptions>();
    CLI::App *cmd = app.add_subcommand("sweep", "tune every point of a sweep spec and record them in a tuning database");
    cmd->footer("SPEC.json names ops of the operator library with grids of their parameters, dtypes, targets and\n"
                "tuner options:\n"
                "  {\"name\": \"mm\", \"ops\": [{\"op\": \"matmul\", \"grid\": {\"M\": [64, 128], \"N\": [64], \"K\": [64]},\n"
                "    \"dtypes\": [\"int8\"]}], \"targets\": [\"tsp-mini\", \"host\"], \"tuner\": {\"budget\": 16, \"seed\": 1}}\n"
                "Host points are tuned (autotune) or, with --no-tune, run with the library schedule; chip points run\n"
                "the library schedule on chipsim (cycles). Every point is committed as it is measured: rerunning the\n"
                "same command skips completed points. Under mpirun the points are shared out over the ranks and\n"
                "rank 0 writes the database. Exits 1 if a point failed (the others are stored).");
    cmd->add_option("spec", o->spec, "the sweep spec (JSON)")->required();
    cmd->add_option("--db", o->db, "the tuning database (default: $TESSERA_TUNING_DB)");
    cmd->add_option("--jobs", o->jobs, "points measured at once per process (chips; host points run one at a time)")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    cmd->add_flag("--no-tune", o->no_tune, "run the library schedule of host points instead of tuning them");
    cmd->add_flag("--quiet", o->quiet, "no progress bar on stderr");
    cmd->add_flag("--json", o->json, "print the summary as JSON");
    return {cmd, [o] { return sweep(*o); }};
}

} // namespace tessera::cli
