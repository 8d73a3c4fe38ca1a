#pragma once
// A small argument parser shared by the subcommands: `--flag`, `--option VALUE`,
// `--option=VALUE`, repeatable options, positionals, and `--help`/`--json` on every subcommand.
#include <tessera/error.h>

#include <map>
#include <string>
#include <vector>

namespace tessera::cli {

/// A command-line mistake: main prints it with a hint to run --help and exits with status 2.
class UsageError : public Error {
public:
    using Error::Error;
};

/// Declares the options a subcommand accepts, then parses its arguments.
class ArgParser {
public:
    /// `usage` is the full --help text.
    ArgParser(std::string command, std::string usage);
    /// A boolean --name.
    ArgParser &flag(const std::string &name);
    /// A --name VALUE option (repeatable when `repeatable`).
    ArgParser &option(const std::string &name, bool repeatable = false);
    /// Parses; throws UsageError on unknown options or missing values.
    void parse(const std::vector<std::string> &args);

    bool help() const { return has("help"); }
    bool json() const { return has("json"); }
    bool has(const std::string &name) const;
    /// The last value of an option, or `fallback`.
    std::string value(const std::string &name, const std::string &fallback = "") const;
    /// Every value of a repeatable option.
    std::vector<std::string> values(const std::string &name) const;
    const std::vector<std::string> &positionals() const { return positionals_; }
    const std::string &usage() const { return usage_; }
    /// Throws UsageError unless there are between lo and hi positionals.
    void expect_positionals(size_t lo, size_t hi) const;

private:
    std::string command_, usage_;
    std::map<std::string, bool> flags_;      // name -> takes a value
    std::map<std::string, bool> repeatable_;
    std::map<std::string, std::vector<std::string>> seen_;
    std::vector<std::string> positionals_;
};

} // namespace tessera::cli
