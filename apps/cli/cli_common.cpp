#include "cli_common.h"

#include <tessera/schedule.h>

#include <fstream>
#include <sstream>

namespace tessera::cli {

void add_op_subcommands(CLI::App *parent, const std::shared_ptr<OpWords> &words) {
    // A word that is no op's name lands here instead of in a CLI11 "unexpected argument".
    parent->add_option("op", words->unknown, "the op (one of the subcommands below)");
    for (const ops::OpSpec &spec : ops::op_registry()) {
        CLI::App *sub = parent->add_subcommand(spec.name, spec.summary);
        sub->fallthrough(); // --target and the other options of the parent may follow the op's words
        std::string footer = "parameters (key=value, defaults shown):\n";
        for (const ops::OpParam &p : spec.params) footer += "  " + p.describe() + "\n";
        footer += "The options of 'tessera " + parent->get_name() + "' (see its --help) may follow the parameters.\n";
        sub->footer(footer);
        sub->add_option("params", words->key_values, "the op's parameters as key=value words (listed below)");
        const std::string name = spec.name;
        sub->preparse_callback([words, name](size_t) { words->op = name; });
    }
}

ops::OpInstance build_named_op(const OpWords &words, const std::string &command) {
    std::string known;
    for (const ops::OpSpec &spec : ops::op_registry()) known += (known.empty() ? "" : ", ") + spec.name;
    if (words.op.empty() && words.unknown.empty())
        throw UsageError("name the op, e.g. 'tessera " + command + " matmul M=512 N=512 K=512'; the ops are " + known);
    if (words.op.empty()) throw UsageError("unknown op '" + words.unknown.front() + "'; the ops are " + known);
    try {
        return ops::build_op_from_words(words.op, words.key_values);
    } catch (const UsageError &) {
        throw;
    } catch (const Error &e) {
        // A bad parameter is a usage mistake; what the op itself refuses stays an Error.
        const std::string what = e.what();
        if (what.rfind("op " + words.op + ":", 0) == 0 || what.rfind("op " + words.op + " has no", 0) == 0) throw UsageError(what);
        throw;
    }
}

void apply_schedule_file(const Pipeline &pipeline, const std::string &path) {
    const Schedule s = Schedule::from_json(read_text_file(path, "schedule file"), path);
    try {
        pipeline.set_schedule(s);
    } catch (const Error &e) {
        throw Error(path + ": " + e.what());
    }
}

std::string read_text_file(const std::string &path, const std::string &what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + what + " '" + path + "'");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace tessera::cli
