#pragma once
// Where a pipeline runs. A Target is a value; backends register how they realize pipelines
// for their kind of target, so the DSL names every target without depending on any backend.
#include <string>

namespace tessera {

class Target {
public:
    enum class Kind {
        Reference,   ///< the reference evaluator: the algorithm's meaning, schedule ignored
        Interpreter, ///< the loop-IR interpreter on lowered code
        Host,        ///< the host CPU through LLVM
        Chip,        ///< a simulated chip on chipsim, by built-in name or JSON path
    };

    static Target reference();
    static Target interpreter();
    static Target host();
    /// "reference", "interpreter", "host", a built-in chip name ("tsp-mini", "npu-edge") or a
    /// path to a chip JSON file.
    static Target named(const std::string &name);

    Kind kind() const { return kind_; }
    /// "reference", "interpreter", "host", or the chip name / path as given.
    const std::string &name() const { return name_; }
    bool operator==(const Target &o) const { return kind_ == o.kind_ && name_ == o.name_; }

private:
    Target(Kind kind, std::string name) : kind_(kind), name_(std::move(name)) {}
    Kind kind_;
    std::string name_;
};

} // namespace tessera
