// `tessera <subcommand> ...`, parsed with CLI11. Every failure prints `tessera: error: <message>`
// on stderr and exits non-zero: 2 for usage mistakes (with a hint to the subcommand's --help),
// 1 otherwise.
#include "cli_common.h"

#include <cstdio>
#include <exception>
#include <new>

namespace {

/// "tessera run" for the deepest subcommand the command line reached, for the --help hint.
std::string command_path(const CLI::App &app) {
    std::string path = app.get_name();
    const CLI::App *at = &app;
    for (;;) {
        const CLI::App *next = nullptr;
        for (const CLI::App *sub : at->get_subcommands())
            if (sub->parsed()) next = sub;
        if (!next) return path;
        path += " " + next->get_name();
        at = next;
    }
}

} // namespace

int main(int argc, char **argv) {
    using namespace tessera::cli;
    CLI::App app("Tessera: a scheduling language and kernel generator for AI chips and the host CPU.", "tessera");
    app.require_subcommand(1);
    app.footer("Every command takes --help and --json. Run 'tessera <command> --help' for its options.");
    // Add a subcommand here (and its cmd_<name>.cpp in CMakeLists.txt).
    const std::vector<Command> commands = {add_targets_command(app), add_sim_command(app), add_run_command(app),
                                           add_lower_command(app), add_tune_command(app), add_db_command(app),
                                           add_import_command(app), add_run_model_command(app), add_compile_command(app),
                                           add_sweep_command(app), add_plot_command(app),
                                           add_gen_lib_command(app)};
    if (argc <= 1) {
        std::fputs(app.help().c_str(), stdout);
        return 2;
    }
    // A word where a subcommand must be that names none: say which ones there are (CLI11 would
    // only say that one is required).
    const CLI::App *at = &app;
    std::string path = "tessera";
    for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
        const std::vector<const CLI::App *> subs = at->get_subcommands([](const CLI::App *) { return true; });
        const CLI::App *next = nullptr;
        std::string names;
        for (const CLI::App *sub : subs) {
            names += (names.empty() ? "" : ", ") + sub->get_name();
            if (sub->get_name() == argv[i]) next = sub;
        }
        if (!next) {
            if (at->get_require_subcommand_min() == 0) break;
            std::fprintf(stderr, "tessera: error: unknown command '%s'; the commands of '%s' are %s (see '%s --help')\n", argv[i],
                         path.c_str(), names.c_str(), path.c_str());
            return 2;
        }
        at = next;
        path += " " + next->get_name();
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "tessera: error: %s (see '%s --help')\n", e.what(), command_path(app).c_str());
        return 2;
    }
    try {
        for (const Command &c : commands)
            if (c.app->parsed()) return c.run();
        return 2; // require_subcommand(1) makes this unreachable
    } catch (const UsageError &e) {
        std::fprintf(stderr, "tessera: error: %s (see '%s --help')\n", e.what(), command_path(app).c_str());
        return 2;
    } catch (const tessera::Error &e) {
        std::fprintf(stderr, "tessera: error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "tessera: error: out of memory; the problem is too large for this machine\n");
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tessera: error: internal error: %s\n", e.what());
        return 1;
    }
}
