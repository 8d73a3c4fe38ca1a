// lower(): the passes in order (lower.h), and the readable printout of the result.
#include "tessera/lower.h"

#include <sstream>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_printer.h"
#include "tessera/simplify.h"

namespace tessera {

namespace {

/// Prints allocations with their layout and double buffering, which the plain IR printer
/// does not know about.
class ModulePrinter : public IRPrinter {
public:
    ModulePrinter(std::ostream &os, const std::map<std::string, std::string> &notes) : IRPrinter(os), notes_(notes) {}
    using IRPrinter::visit;
    void visit(const Allocate *op) override {
        print_indent();
        os_ << "allocate " << op->name << '[' << op->type.to_string();
        for (const Expr &e : op->extents) {
            os_ << " * ";
            print(e);
        }
        os_ << "] in " << memory_kind_name(op->memory);
        if (op->bank >= 0) os_ << " bank " << op->bank;
        auto it = notes_.find(op->name);
        if (it != notes_.end()) os_ << "  // " << it->second;
        print_braced_body(op->body);
    }

private:
    const std::map<std::string, std::string> &notes_;
};

LoweredModule lower_impl(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> *shapes,
                         bool flatten = true) {
    using namespace internal;
    LoweringEnv env = build_lowering_env(p);
    if (shapes && shapes->size() != env.outputs.size())
        throw Error("lower: " + std::to_string(shapes->size()) + " output shapes given for " +
                    std::to_string(env.outputs.size()) + " outputs");
    IntervalScope known;
    if (shapes)
        for (size_t i = 0; i < env.outputs.size(); ++i) {
            const LoweredFunc &f = env.at(env.outputs[i]);
            for (size_t d = 0; d < f.contents.args.size() && d < (*shapes)[i].size(); ++d) {
                known[f.region_min(d)] = Interval::single_point(Expr(0));
                known[f.region_extent(d)] = Interval::single_point(Expr(static_cast<int>((*shapes)[i][d])));
            }
        }
    Stmt s = schedule_functions(env, known);
    if (flatten) s = flatten_storage(s, env, known);
    LoweredModule m;
    m.target = target;
    m.name = join_names(env.outputs);
    for (size_t i = 0; i < env.outputs.size(); ++i) {
        const LoweredFunc &f = env.at(env.outputs[i]);
        LoweredBuffer b;
        b.name = f.name();
        b.type = f.contents.type;
        b.args = f.contents.args;
        if (shapes && (*shapes)[i].size() != f.contents.args.size())
            throw Error("lower: output " + f.name() + " has " + std::to_string(f.contents.args.size()) +
                        " dimensions but its shape has " + std::to_string((*shapes)[i].size()));
        for (size_t d = 0; d < f.contents.args.size(); ++d) {
            if (shapes) {
                b.min.push_back(Expr(0));
                b.shape.push_back(Expr(static_cast<int>((*shapes)[i][d])));
            } else {
                b.min.push_back(loop_var(f.region_min(d)));
                b.shape.push_back(loop_var(f.region_extent(d)));
            }
        }
        m.outputs.push_back(b);
    }
    if (shapes)
        for (auto it = m.outputs.rbegin(); it != m.outputs.rend(); ++it) {
            const LoweredFunc &f = env.at(it->name);
            for (size_t d = f.contents.args.size(); d-- > 0;) {
                s = LetStmt::make(f.region_extent(d), it->shape[d], s);
                s = LetStmt::make(f.region_min(d), it->min[d], s);
            }
        }
    // Twice: the first pass substitutes constant lets, which lets the second decide guards.
    s = simplify(simplify(s));
    s = trim_no_op_iterations(s);
    // For the host's code generator only: chip code generators map loop nests onto units as
    // lowered, and the interpreter gains nothing from it (its printout stays one loop per loop).
    if (target.kind() == Target::Kind::Host) s = partition_loops(s);
    check_lowered_legality(s, env);
    m.body = s;
    for (const auto &in : env.inputs) {
        LoweredBuffer b;
        b.name = in.name();
        b.type = in.type();
        b.shape = in.shape();
        m.inputs.push_back(b);
    }
    for (const auto &pi : env.params) m.params.emplace_back(pi.name, pi.type);
    for (const auto &[name, f] : env.funcs) {
        std::string note;
        if (!f.layout.is_default()) note = "layout " + f.layout.to_string();
        if (f.double_buffer) note += std::string(note.empty() ? "" : ", ") + "double_buffer";
        if (!note.empty()) m.storage_notes[name] = note;
    }
    return m;
}

} // namespace

LoweredModule lower(const Pipeline &p, const Target &target) { return lower_impl(p, target, nullptr); }

LoweredModule lower(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes) {
    return lower_impl(p, target, &output_shapes);
}

LoweredModule lower_unflattened(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes) {
    return lower_impl(p, target, &output_shapes, /*flatten=*/false);
}

std::string LoweredModule::to_string() const {
    std::ostringstream os;
    os << "// " << name << ", lowered for " << target.name() << "\n";
    for (const auto &in : inputs) {
        os << "// input  " << in.name << ": " << in.type.to_string() << "[";
        for (size_t d = 0; d < in.shape.size(); ++d) os << (d ? ", " : "") << in.shape[d];
        os << "]\n";
    }
    for (const auto &o : outputs) {
        os << "// output " << o.name << ": " << o.type.to_string() << "[";
        for (size_t d = 0; d < o.shape.size(); ++d) os << (d ? ", " : "") << o.args[d] << ": " << o.shape[d];
        os << "]\n";
    }
    for (const auto &[n, t] : params) os << "// param  " << n << ": " << t.to_string() << "\n";
    ModulePrinter pr(os, storage_notes);
    pr.print(body);
    return os.str();
}

} // namespace tessera
