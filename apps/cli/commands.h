#pragma once
// The subcommands of the `tessera` CLI. Each lives in its own cmd_<name>.cpp and is listed once
// in the table in main.cpp; adding a subcommand is adding a file and a line.
#include <string>
#include <vector>

namespace tessera::cli {

/// A subcommand: its name, a one-line summary for `tessera --help`, and its entry point, which
/// receives the arguments after the subcommand name and returns the exit status. Errors are
/// thrown (tessera::Error or UsageError); main prints them as `tessera: error: ...`.
struct Command {
    const char *name;
    const char *summary;
    int (*run)(const std::vector<std::string> &args);
};

int cmd_targets(const std::vector<std::string> &args);
int cmd_sim(const std::vector<std::string> &args);
int cmd_run(const std::vector<std::string> &args);

} // namespace tessera::cli
