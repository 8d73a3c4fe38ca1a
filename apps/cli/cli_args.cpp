#include "cli_args.h"

namespace tessera::cli {

ArgParser::ArgParser(std::string command, std::string usage) : command_(std::move(command)), usage_(std::move(usage)) {
    flag("help");
    flag("json");
}

ArgParser &ArgParser::flag(const std::string &name) {
    flags_[name] = false;
    return *this;
}

ArgParser &ArgParser::option(const std::string &name, bool repeatable) {
    flags_[name] = true;
    repeatable_[name] = repeatable;
    return *this;
}

void ArgParser::parse(const std::vector<std::string> &args) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        if (a == "-h") {
            seen_["help"].push_back("");
            continue;
        }
        if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
            positionals_.push_back(a);
            continue;
        }
        std::string name = a.substr(2), value;
        bool has_value = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_value = true;
        }
        auto it = flags_.find(name);
        if (it == flags_.end())
            throw UsageError("unknown option '--" + name + "' for 'tessera " + command_ + "'");
        if (it->second) {
            if (!has_value) {
                if (i + 1 >= args.size()) throw UsageError("option '--" + name + "' needs a value");
                value = args[++i];
            }
            if (!repeatable_[name] && !seen_[name].empty())
                throw UsageError("option '--" + name + "' given twice");
        } else if (has_value) {
            throw UsageError("option '--" + name + "' takes no value");
        }
        seen_[name].push_back(value);
    }
}

bool ArgParser::has(const std::string &name) const {
    auto it = seen_.find(name);
    return it != seen_.end() && !it->second.empty();
}

std::string ArgParser::value(const std::string &name, const std::string &fallback) const {
    auto it = seen_.find(name);
    return it == seen_.end() || it->second.empty() ? fallback : it->second.back();
}

std::vector<std::string> ArgParser::values(const std::string &name) const {
    auto it = seen_.find(name);
    return it == seen_.end() ? std::vector<std::string>{} : it->second;
}

void ArgParser::expect_positionals(size_t lo, size_t hi) const {
    if (positionals_.size() < lo || positionals_.size() > hi) {
        std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
        throw UsageError("'tessera " + command_ + "' takes " + want + " argument(s), got " +
                         std::to_string(positionals_.size()));
    }
}

} // namespace tessera::cli
