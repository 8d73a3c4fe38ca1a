// `tessera plot DB -o DIR`: rooflines, tuning curves and sweep heat maps of a tuning database as
// PNG and SVG, and a self-contained report.html — drawn by matplotlib in a small Python script
// (plot/tessera_plot.py, installed under share/tessera) run with Debian's /usr/bin/python3.
// Everything the user can get wrong (the database, the output directory) is checked here first,
// so it is reported as `tessera: error:` like every other command.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <tessera/tuning_db.h>

#include "cli_common.h"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;

struct PlotOptions {
    std::string db, output;
    bool json = false;
};

/// The plotting script: installed beside the CLI (bin/../share/tessera), else in the source tree
/// this CLI was built from.
std::string plot_script() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path installed = exe.parent_path() / TESSERA_PLOT_SCRIPT_RELATIVE / "tessera_plot.py";
        if (fs::exists(installed)) return installed.lexically_normal().string();
    }
    if (fs::exists(TESSERA_PLOT_SCRIPT_SOURCE)) return TESSERA_PLOT_SCRIPT_SOURCE;
    throw Error("plot: the plotting script tessera_plot.py is not installed (looked in " +
                (exe.parent_path() / TESSERA_PLOT_SCRIPT_RELATIVE).lexically_normal().string() + ")");
}

/// Runs `argv` and returns its exit status, stdout and stderr (stderr through a file of the
/// output directory, removed after).
int run_program(const std::vector<std::string> &argv, const fs::path &err_file, std::string &out, std::string &err) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) throw Error("plot: cannot create a pipe");
    const pid_t pid = fork();
    if (pid < 0) throw Error("plot: cannot start " + argv[0]);
    if (pid == 0) {
        dup2(pipe_fds[1], 1);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        if (!freopen(err_file.c_str(), "w", stderr)) _exit(126);
        std::vector<char *> args;
        for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        std::fprintf(stderr, "cannot run %s\n", args[0]);
        _exit(127);
    }
    close(pipe_fds[1]);
    std::array<char, 4096> buf;
    for (ssize_t n; (n = read(pipe_fds[0], buf.data(), buf.size())) > 0;) out.append(buf.data(), size_t(n));
    close(pipe_fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    std::ifstream f(err_file);
    err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    fs::remove(err_file);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int plot(const PlotOptions &o) {
    std::string path = o.db;
    if (path.empty())
        if (const char *env = std::getenv("TESSERA_TUNING_DB")) path = env;
    if (path.empty()) throw UsageError("no tuning database: give DB or set TESSERA_TUNING_DB");
    // Every record read here, so a damaged one is reported as such, not as a failing script.
    const int64_t records = int64_t(TuningDatabase(path, {.read_only = true}).list().size());
    std::error_code ec;
    fs::create_directories(o.output, ec);
    if (ec) throw Error("plot: cannot create the output directory '" + o.output + "': " + ec.message());
    if (!fs::is_directory(o.output)) throw Error("plot: the output '" + o.output + "' is not a directory");
    if (access(o.output.c_str(), W_OK) != 0) throw Error("plot: cannot write into the output directory '" + o.output + "'");

    const std::string python = "/usr/bin/python3";
    if (access(python.c_str(), X_OK) != 0)
        throw Error("plot: " + python + " is not installed (Debian packages python3 and python3-matplotlib)");
    std::string out, err;
    const int status = run_program({python, plot_script(), path, "-o", o.output},
                                   fs::path(o.output) / ".tessera-plot-stderr", out, err);
    if (status != 0) {
        while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
        const size_t last = err.rfind('\n');
        throw Error("plot: the plotting script failed: " + (last == std::string::npos ? err : err.substr(last + 1)) +
                    (err.find("matplotlib") != std::string::npos ? " (install python3-matplotlib)" : ""));
    }
    const nlohmann::json summary = nlohmann::json::parse(out);
    if (o.json) {
        std::printf("%s\n", summary.dump(2).c_str());
    } else {
        std::printf("%lld records of %s plotted into %s:\n", (long long)records, path.c_str(), o.output.c_str());
        for (const auto &name : summary["plots"]) std::printf("  %s.png, %s.svg\n", name.get<std::string>().c_str(), name.get<std::string>().c_str());
        std::printf("  %s\n", summary["report"].get<std::string>().c_str());
    }
    return 0;
}

} // namespace

Command add_plot_command(CLI::App &app) {
    auto o = std::make_shared<PlotOptions>();
    CLI::App *cmd = app.add_subcommand("plot", "plot a tuning database: rooflines, tuning curves, sweep heat maps, report.html");
    cmd->footer("Writes into DIR, as PNG and SVG: roofline_<target> (chip records against the compute and memory\n"
                "roofs and their problem bound, from chipsim's report), tuning_curves (best time found against\n"
                "measurements of tuned host points) and heatmap_<target>_<op> (fraction of the problem bound over\n"
                "M x N); and report.html, one self-contained page with the plots and the records. Needs\n"
                "/usr/bin/python3 with matplotlib (Debian python3-matplotlib).");
    cmd->add_option("db", o->db, "the tuning database (default: $TESSERA_TUNING_DB)");
    cmd->add_option("-o,--output", o->output, "the directory to write into (created if missing)")->required();
    cmd->add_flag("--json", o->json, "print what was written as JSON");
    return {cmd, [o] { return plot(*o); }};
}

} // namespace tessera::cli
