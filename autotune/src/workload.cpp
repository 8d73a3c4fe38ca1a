// The canonical form of a workload and the renaming of schedules in and out of it (workload.h).
//
// The serialisation is an s-expression per definition with every name replaced by its role, so
// equal text means the same computation up to a consistent renaming, and the renaming is
// one-to-one within each scope (a Func's Vars and RVars, the pipeline's Funcs, Inputs and
// Params): two different algorithms never print the same text.
#include "tessera/workload.h"

#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/realize.h"

namespace tessera {

namespace internal {

/// The loop names of one Func (or Input) between a pipeline's names and canonical ones.
struct LoopNames {
    /// Pipeline name -> canonical name of the names the algorithm defines (pure Vars, RVars).
    std::map<std::string, std::string> known;
};

/// Everything Workload needs to rename schedules.
struct WorkloadNames {
    /// Pipeline name -> canonical name, and back, for Funcs and Inputs.
    std::map<std::string, std::string> to_canonical, from_canonical;
    /// Canonical Func / Input names in canonical order (f0, f1, ..., in0, in1, ...).
    std::vector<std::string> canonical_order;
    /// Loop names per canonical Func name (Inputs have none of their own).
    std::map<std::string, LoopNames> loops;
    /// The pipeline's Func and Input names, for error messages.
    std::vector<std::string> func_names, input_names;
};

} // namespace internal

std::string fnv1a_hex(const std::string &text) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    std::ostringstream s;
    s << std::hex << std::setw(16) << std::setfill('0') << h;
    return s.str();
}

namespace {

using internal::FunctionContents;
using internal::InputContents;

const char *node_token(IRNodeType t) {
    switch (t) {
    case IRNodeType::Add: return "add";
    case IRNodeType::Sub: return "sub";
    case IRNodeType::Mul: return "mul";
    case IRNodeType::Div: return "div";
    case IRNodeType::Mod: return "mod";
    case IRNodeType::Min: return "min";
    case IRNodeType::Max: return "max";
    case IRNodeType::EQ: return "eq";
    case IRNodeType::NE: return "ne";
    case IRNodeType::LT: return "lt";
    case IRNodeType::LE: return "le";
    case IRNodeType::GT: return "gt";
    case IRNodeType::GE: return "ge";
    case IRNodeType::And: return "and";
    case IRNodeType::Or: return "or";
    default: return nullptr;
    }
}

/// The operands of a binary node (each node type is its own class: no common base to cast to).
std::pair<Expr, Expr> binary_operands(const Expr &e) {
    auto of = [](const auto *b) { return std::pair<Expr, Expr>{b->a, b->b}; };
    switch (e.node->node_type) {
    case IRNodeType::Add: return of(e.as<Add>());
    case IRNodeType::Sub: return of(e.as<Sub>());
    case IRNodeType::Mul: return of(e.as<Mul>());
    case IRNodeType::Div: return of(e.as<Div>());
    case IRNodeType::Mod: return of(e.as<Mod>());
    case IRNodeType::Min: return of(e.as<Min>());
    case IRNodeType::Max: return of(e.as<Max>());
    case IRNodeType::EQ: return of(e.as<EQ>());
    case IRNodeType::NE: return of(e.as<NE>());
    case IRNodeType::LT: return of(e.as<LT>());
    case IRNodeType::LE: return of(e.as<LE>());
    case IRNodeType::GT: return of(e.as<GT>());
    case IRNodeType::GE: return of(e.as<GE>());
    case IRNodeType::And: return of(e.as<And>());
    case IRNodeType::Or: return of(e.as<Or>());
    default: throw InternalError("workload: not a binary node");
    }
}

/// Writes the canonical text of a pipeline and records the name maps it used.
class CanonicalWriter {
public:
    explicit CanonicalWriter(internal::WorkloadNames &names) : names_(names) {}

    std::string write(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes) {
        const std::vector<Func> order = internal::topological_order(p.outputs());
        for (size_t i = 0; i < order.size(); ++i) {
            const FunctionContents *c = order[i].contents().get();
            funcs_[c] = "f" + std::to_string(i);
            claim_name(c->name, funcs_[c], "Func");
            names_.func_names.push_back(c->name);
        }
        const std::vector<Input> inputs = internal::find_inputs(order);
        for (size_t i = 0; i < inputs.size(); ++i) {
            const InputContents *c = inputs[i].contents().get();
            inputs_[c] = "in" + std::to_string(i);
            claim_name(c->name, inputs_[c], "Input");
            names_.input_names.push_back(c->name);
        }
        const std::vector<internal::ParamInfo> params = internal::find_params(order);
        for (size_t i = 0; i < params.size(); ++i) params_[params[i].name] = "p" + std::to_string(i);

        out_ << "tessera-workload " << kWorkloadFormatVersion << "\n";
        for (const auto &pi : params) out_ << "param " << params_[pi.name] << " " << pi.type.to_string() << "\n";
        for (const Input &in : inputs) {
            out_ << "input " << inputs_[in.contents().get()] << " " << in.type().to_string() << " [";
            for (size_t d = 0; d < in.shape().size(); ++d) {
                if (d) out_ << " ";
                expr(in.shape()[d]);
            }
            out_ << "]\n";
        }
        for (const Func &f : order) write_func(*f.contents());
        for (size_t o = 0; o < p.outputs().size(); ++o) {
            out_ << "output " << funcs_[p.outputs()[o].contents().get()] << " [";
            for (size_t d = 0; d < shapes[o].size(); ++d) out_ << (d ? " " : "") << shapes[o][d];
            out_ << "]\n";
        }
        for (size_t i = 0; i < order.size(); ++i) names_.canonical_order.push_back("f" + std::to_string(i));
        for (size_t i = 0; i < inputs.size(); ++i) names_.canonical_order.push_back("in" + std::to_string(i));
        return out_.str();
    }

private:
    void claim_name(const std::string &name, const std::string &canonical, const char *what) {
        auto [it, fresh] = names_.to_canonical.emplace(name, canonical);
        if (!fresh)
            throw Error("workload: two different Funcs or Inputs are both named '" + name +
                        "'; schedules refer to them by name, so give each " + what + " a name of its own");
        names_.from_canonical[canonical] = name;
    }

    void write_func(const FunctionContents &f) {
        const std::string &self = funcs_.at(&f);
        internal::LoopNames &loops = names_.loops[self];
        vars_.clear();
        rvars_.clear();
        lets_.clear();
        for (size_t d = 0; d < f.args.size(); ++d) {
            vars_[f.args[d]] = "x" + std::to_string(d);
            loops.known[f.args[d]] = vars_[f.args[d]];
        }
        // RVars in order of first appearance over the updates' domains, so that the names do
        // not matter but which dimension is which does.
        for (const auto &u : f.updates)
            if (u.rdom)
                for (const auto &v : u.rdom->vars)
                    if (!rvars_.count(v.name)) {
                        rvars_[v.name] = "r" + std::to_string(rvars_.size());
                        loops.known.emplace(v.name, rvars_[v.name]);
                    }

        out_ << "func " << self << " " << f.type.to_string() << " (";
        for (size_t d = 0; d < f.args.size(); ++d) out_ << (d ? " " : "") << vars_[f.args[d]];
        out_ << ")\n";
        write_definition("  init", f.init);
        for (size_t u = 0; u < f.updates.size(); ++u) write_definition("  update " + std::to_string(u), f.updates[u]);
    }

    void write_definition(const std::string &label, const internal::Definition &d) {
        out_ << label;
        if (d.rdom) {
            out_ << " over [";
            for (size_t i = 0; i < d.rdom->vars.size(); ++i) {
                const auto &v = d.rdom->vars[i];
                out_ << (i ? " " : "") << "(" << rvars_.at(v.name) << " ";
                expr(v.min);
                out_ << " ";
                expr(v.extent);
                out_ << ")";
            }
            out_ << "]";
            if (d.rdom->predicate.defined()) {
                out_ << " where ";
                expr(d.rdom->predicate);
            }
        }
        out_ << " (";
        for (size_t i = 0; i < d.args.size(); ++i) {
            if (i) out_ << " ";
            expr(d.args[i]);
        }
        out_ << ") = ";
        expr(d.value);
        out_ << "\n";
    }

    /// A name of a scope, given in order of first appearance when the algorithm did not
    /// declare it (a Var outside the Func's arguments cannot be written, but the text must be
    /// total).
    static const std::string &local(std::map<std::string, std::string> &m, const std::string &name, const char *prefix) {
        auto it = m.find(name);
        if (it == m.end()) it = m.emplace(name, prefix + std::to_string(m.size())).first;
        return it->second;
    }

    void expr(const Expr &e) {
        if (!e.defined()) {
            out_ << "_";
            return;
        }
        const BaseExprNode *n = e.node.get();
        const std::string type = n->type.to_string();
        switch (n->node_type) {
        case IRNodeType::IntImm: out_ << type << ":" << static_cast<const IntImm *>(n)->value; return;
        case IRNodeType::UIntImm: out_ << type << ":" << static_cast<const UIntImm *>(n)->value; return;
        case IRNodeType::FloatImm: {
            // The bits, so that every value (NaN, -0.0) prints exactly and distinctly.
            const double v = static_cast<const FloatImm *>(n)->value;
            uint64_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            out_ << type << ":0x" << std::hex << bits << std::dec;
            return;
        }
        case IRNodeType::Variable: {
            const auto *v = static_cast<const Variable *>(n);
            switch (v->kind) {
            case VariableKind::Pure: out_ << local(vars_, v->name, "u"); break;
            case VariableKind::Reduction: out_ << local(rvars_, v->name, "s"); break;
            case VariableKind::Param: out_ << local(params_, v->name, "q"); break;
            case VariableKind::Let: out_ << local(lets_, v->name, "l"); break;
            case VariableKind::Loop: out_ << "loop:" << local(lets_, v->name, "l"); break;
            }
            return;
        }
        case IRNodeType::Cast:
            out_ << "(cast " << type << " ";
            expr(static_cast<const Cast *>(n)->value);
            out_ << ")";
            return;
        case IRNodeType::Not:
            out_ << "(not ";
            expr(static_cast<const Not *>(n)->a);
            out_ << ")";
            return;
        case IRNodeType::Select: {
            const auto *s = static_cast<const Select *>(n);
            out_ << "(select " << type << " ";
            expr(s->condition);
            out_ << " ";
            expr(s->true_value);
            out_ << " ";
            expr(s->false_value);
            out_ << ")";
            return;
        }
        case IRNodeType::Let: {
            const auto *l = static_cast<const Let *>(n);
            out_ << "(let " << local(lets_, l->name, "l") << " ";
            expr(l->value);
            out_ << " ";
            expr(l->body);
            out_ << ")";
            return;
        }
        case IRNodeType::Call: {
            const auto *c = static_cast<const Call *>(n);
            out_ << "(";
            switch (c->call_type) {
            case CallType::Func: out_ << funcs_.at(c->func.get().get()); break;
            case CallType::Input: out_ << inputs_.at(c->input.get()); break;
            case CallType::Intrinsic: out_ << intrinsic_name(c->intrinsic); break;
            }
            out_ << " " << type;
            for (const Expr &a : c->args) {
                out_ << " ";
                expr(a);
            }
            out_ << ")";
            return;
        }
        case IRNodeType::Load:
            // Loads come from lowering, never from an algorithm.
            throw InternalError("workload: a Load in an algorithm");
        default: break;
        }
        if (const char *op = node_token(n->node_type)) {
            const auto [a, b] = binary_operands(e);
            out_ << "(" << op << " " << type << " ";
            expr(a);
            out_ << " ";
            expr(b);
            out_ << ")";
            return;
        }
        throw InternalError("workload: unknown expression node");
    }

    internal::WorkloadNames &names_;
    std::ostringstream out_;
    std::map<const FunctionContents *, std::string> funcs_;
    std::map<const InputContents *, std::string> inputs_;
    std::map<std::string, std::string> params_, vars_, rvars_, lets_;
};

std::string default_description(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes) {
    auto shape_text = [](const std::vector<int64_t> &s) {
        std::string t = "[";
        for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
        return t + "]";
    };
    std::string d;
    for (size_t o = 0; o < p.outputs().size(); ++o)
        d += (o ? ", " : "") + p.outputs()[o].name() + " " + p.outputs()[o].type().to_string() + shape_text(shapes[o]);
    d += " from ";
    const std::vector<Input> ins = p.inputs();
    if (ins.empty()) d += "no inputs";
    for (size_t i = 0; i < ins.size(); ++i) {
        d += (i ? ", " : "") + ins[i].name() + " " + ins[i].type().to_string() + "[";
        for (size_t k = 0; k < ins[i].shape().size(); ++k) {
            const Expr &e = ins[i].shape()[k];
            const auto *imm = e.as<IntImm>();
            d += (k ? ", " : "") + (imm ? std::to_string(imm->value) : std::string("?"));
        }
        d += "]";
    }
    const size_t funcs = p.functions().size();
    return d + " (" + std::to_string(funcs) + (funcs == 1 ? " Func)" : " Funcs)");
}

/// Renames the loop names of one Func's scope in one direction. `known` maps the names the
/// algorithm defines; every other name is a loop a schedule made and gets a fresh name.
class LoopRenamer {
public:
    /// `to_canonical`: fresh names are t0, t1, ...; otherwise fresh names keep their canonical
    /// text, made unique against `reserved` (the Func's own names in the pipeline).
    LoopRenamer(std::map<std::string, std::string> known, bool to_canonical, std::set<std::string> reserved)
        : map_(std::move(known)), to_canonical_(to_canonical), used_(std::move(reserved)) {
        for (const auto &[from, to] : map_) used_.insert(to);
    }

    std::string operator()(const std::string &name) {
        auto it = map_.find(name);
        if (it != map_.end()) return it->second;
        // The implicit inner loop of vectorize/unroll with a factor is named after its loop.
        const size_t dot = name.rfind('.');
        if (dot != std::string::npos && (name.substr(dot) == ".v" || name.substr(dot) == ".u")) {
            auto base = map_.find(name.substr(0, dot));
            if (base != map_.end()) return map_[name] = base->second + name.substr(dot);
        }
        std::string fresh = to_canonical_ ? "t" + std::to_string(fresh_count_++) : name;
        while (!to_canonical_ && used_.count(fresh)) fresh += "_";
        used_.insert(fresh);
        return map_[name] = fresh;
    }

private:
    std::map<std::string, std::string> map_;
    bool to_canonical_;
    std::set<std::string> used_;
    int fresh_count_ = 0;
};

std::vector<std::string> rename_all(LoopRenamer &r, const std::vector<std::string> &names) {
    std::vector<std::string> out;
    for (const auto &n : names) out.push_back(r(n));
    return out;
}

Layout rename_layout(LoopRenamer &r, const Layout &l) {
    Layout out = l;
    out.order = rename_all(r, l.order);
    for (auto &b : out.blocks) b.dim = r(b.dim);
    out.padding.clear();
    for (const auto &[dim, pad] : l.padding) out.padding[r(dim)] = pad;
    return out;
}

bool names_consumer_loop(DirectiveKind k) {
    return k == DirectiveKind::ComputeAt || k == DirectiveKind::StoreAt || k == DirectiveKind::Stage;
}

/// Renames a whole schedule with the maps of `names`, to canonical names or back.
Schedule rename_schedule(const internal::WorkloadNames &names, const Schedule &s, bool to_canonical) {
    const auto &entity_map = to_canonical ? names.to_canonical : names.from_canonical;
    auto entity = [&](const std::string &name) -> const std::string & {
        auto it = entity_map.find(name);
        if (it != entity_map.end()) return it->second;
        std::string known;
        if (to_canonical) {
            known = "its Funcs are " + internal::join_names(names.func_names);
            if (!names.input_names.empty()) known += " and its Inputs " + internal::join_names(names.input_names);
            throw Error("workload: the schedule names '" + name + "', which is not a Func or Input of this pipeline; " +
                        known);
        }
        throw Error("workload: the stored schedule names '" + name + "', which is not a canonical Func or Input of this "
                    "workload (" + internal::join_names(names.canonical_order) + "); the record does not belong to it");
    };
    // Canonical names of the scheduled entities, in canonical order: the fresh loop names must
    // come out the same whatever the pipeline's names (a std::map of pipeline names would
    // iterate in an order that depends on them).
    std::map<std::string, std::string> canonical_of; // canonical -> name in `s`
    for (const auto &[name, fs] : s.funcs) canonical_of[to_canonical ? entity(name) : name] = name;
    if (!to_canonical)
        for (const auto &[name, fs] : s.funcs) entity(name); // reject unknown names up front

    std::map<std::string, LoopRenamer> renamers; // by canonical Func name
    auto renamer = [&](const std::string &canonical) -> LoopRenamer & {
        auto it = renamers.find(canonical);
        if (it != renamers.end()) return it->second;
        std::map<std::string, std::string> known;
        std::set<std::string> reserved;
        auto loops = names.loops.find(canonical);
        if (loops != names.loops.end())
            for (const auto &[pipeline_name, canonical_name] : loops->second.known) {
                if (to_canonical) known[pipeline_name] = canonical_name;
                else known[canonical_name] = pipeline_name;
                reserved.insert(pipeline_name);
            }
        return renamers.emplace(canonical, LoopRenamer(std::move(known), to_canonical, std::move(reserved))).first->second;
    };
    // An Input copy's dimensions d0, d1, ... are the same in every pipeline.
    LoopRenamer identity({}, false, {});
    auto is_input = [&](const std::string &canonical) { return canonical.rfind("in", 0) == 0; };

    Schedule out;
    // Two passes: first each Func's own loops (so the loops its directives make are numbered
    // where they are made), then the directives that name another Func's loop.
    std::vector<std::string> order;
    for (const std::string &c : names.canonical_order)
        if (canonical_of.count(c)) order.push_back(c);
    for (int pass = 0; pass < 2; ++pass)
        for (const std::string &canonical : order) {
            const std::string &name = canonical_of.at(canonical);
            const std::string target_name = to_canonical ? canonical : entity(name);
            const bool input = is_input(canonical);
            for (const auto &[stage, directives] : s.funcs.at(name).stages) {
                auto &renamed = out.funcs[target_name].stages[stage];
                if (pass == 0) renamed = directives;
                for (size_t i = 0; i < directives.size(); ++i) {
                    const Directive &d = directives[i];
                    Directive &r = renamed[i];
                    const bool cross = names_consumer_loop(d.kind);
                    if (pass == 0 && !cross) {
                        if (!input) r.vars = rename_all(renamer(canonical), d.vars);
                        if (d.kind == DirectiveKind::SetLayout) r.layout = rename_layout(renamer(canonical), d.layout);
                    } else if (pass == 1 && cross) {
                        const std::string consumer = to_canonical ? entity(d.func) : d.func;
                        r.func = entity(d.func);
                        r.vars = rename_all(renamer(consumer), d.vars);
                        if (d.kind == DirectiveKind::Stage)
                            r.layout = rename_layout(input ? identity : renamer(canonical), d.layout);
                    }
                }
            }
        }
    return out;
}

} // namespace

Workload Workload::of(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                      const std::string &description) {
    internal::check_realize_request(pipeline, output_shapes);
    auto names = std::make_shared<internal::WorkloadNames>();
    Workload w;
    w.canonical_ = CanonicalWriter(*names).write(pipeline, output_shapes);
    w.key_ = fnv1a_hex(w.canonical_);
    w.description_ = description.empty() ? default_description(pipeline, output_shapes) : description;
    w.names_ = std::move(names);
    return w;
}

Schedule Workload::to_canonical(const Schedule &s) const { return rename_schedule(*names_, s, true); }

Schedule Workload::from_canonical(const Schedule &s) const { return rename_schedule(*names_, s, false); }

} // namespace tessera
