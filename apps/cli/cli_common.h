#pragma once
// What the subcommands of the `tessera` CLI share: how a subcommand is declared (a CLI11 app
// and what runs when it is named), the usage error, and the op words every op-running
// subcommand takes (`tessera run|lower OP key=value...`), generated from the op registry.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <tessera/error.h>
#include <tessera/ops/registry.h>

namespace tessera::cli {

/// A command-line mistake: main prints it with a hint to run --help and exits with status 2.
class UsageError : public Error {
public:
    using Error::Error;
};

/// A subcommand: its CLI11 app and what runs when the command line named it (after parsing),
/// returning the exit status. Errors are thrown (tessera::Error or UsageError); main prints
/// them as `tessera: error: ...`.
struct Command {
    CLI::App *app = nullptr;
    std::function<int()> run;
};

/// The op a command line names and its key=value words.
struct OpWords {
    std::string op;                      ///< a registered op (its subcommand was named)
    std::vector<std::string> key_values; ///< its parameters as given
    std::vector<std::string> unknown;    ///< words in the op's place when they name no op
};

/// Adds one subcommand per registered op under `parent` — `tessera run matmul M=512 ...` — each
/// taking key=value words and listing the op's parameters, defaults and meanings in its --help;
/// the parent's own options may follow the op's words. Fills `words` when parsed.
void add_op_subcommands(CLI::App *parent, const std::shared_ptr<OpWords> &words);

/// The op the words name, built by the registry. Throws UsageError when no op or an unknown
/// one was named, listing the ops.
ops::OpInstance build_named_op(const OpWords &words, const std::string &command);

/// Sets the schedule in the JSON file `path` on `pipeline`; errors name the file.
void apply_schedule_file(const Pipeline &pipeline, const std::string &path);

/// The whole text of `path`; throws tessera::Error naming `what` and the path when unreadable.
std::string read_text_file(const std::string &path, const std::string &what);

/// The subcommands, one per cmd_<name>.cpp; main.cpp lists them.
Command add_targets_command(CLI::App &app);
Command add_sim_command(CLI::App &app);
Command add_run_command(CLI::App &app);
Command add_lower_command(CLI::App &app);
Command add_db_command(CLI::App &app);
Command add_tune_command(CLI::App &app);
Command add_import_command(CLI::App &app);
Command add_run_model_command(CLI::App &app);
Command add_compile_command(CLI::App &app);
Command add_sweep_command(CLI::App &app);
Command add_plot_command(CLI::App &app);
Command add_gen_lib_command(CLI::App &app);

} // namespace tessera::cli
