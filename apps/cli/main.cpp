// `tessera <subcommand> ...`: dispatches through the command table. Every failure prints
// `tessera: error: <message>` on stderr and exits non-zero (2 for usage mistakes, 1 otherwise).
#include "cli_args.h"
#include "commands.h"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

using tessera::cli::Command;

// Add a subcommand here (and its cmd_<name>.cpp in CMakeLists.txt).
const Command kCommands[] = {
    {"targets", "list the built-in chip targets and their peaks", tessera::cli::cmd_targets},
    {"sim", "run a chip program on a target: values, cycles, utilisation", tessera::cli::cmd_sim},
    {"run", "run an op of the operator library on a target, verified against the reference", tessera::cli::cmd_run},
};

void print_help() {
    std::printf("usage: tessera <command> [options]\n\ncommands:\n");
    for (const Command &c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
    std::printf("\nEvery command takes --help and --json. Run 'tessera <command> --help' for its options.\n");
}

} // namespace

int main(int argc, char **argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        print_help();
        return args.empty() ? 2 : 0;
    }
    try {
        for (const Command &c : kCommands)
            if (args[0] == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
        std::string names;
        for (const Command &c : kCommands) names += std::string(names.empty() ? "" : ", ") + c.name;
        throw tessera::cli::UsageError("unknown command '" + args[0] + "', expected one of: " + names);
    } catch (const tessera::cli::UsageError &e) {
        std::fprintf(stderr, "tessera: error: %s (see 'tessera %s --help')\n", e.what(),
                     args.empty() ? "" : args[0].c_str());
        return 2;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tessera: error: %s\n", e.what());
        return 1;
    }
}
