// Boundary conditions: constant_exterior and repeat_edge over Inputs and Funcs.
#include "tessera/boundary.h"

#include <functional>

#include "tessera/error.h"
#include "tessera/ir_operator.h"

namespace tessera {

namespace {

/// The source being padded: its name, element type, dimension Vars, bounds and a reader.
struct Source {
    std::string name;
    Type type;
    std::vector<Var> vars;
    std::vector<Range> bounds;
    std::function<Expr(const std::vector<Expr> &)> read;
};

Source source_of(const Input &in) {
    Source s{in.name(), in.type(), {}, {}, [in](const std::vector<Expr> &args) { return in(args); }};
    for (int d = 0; d < in.dimensions(); ++d) {
        s.vars.emplace_back("d" + std::to_string(d));
        s.bounds.push_back({Expr(0), in.shape()[static_cast<size_t>(d)]});
    }
    return s;
}

Source source_of(const Func &f, const std::vector<Range> &bounds, const char *condition) {
    if (!f.defined())
        throw Error(std::string(condition) + ": Func " + f.name() + " has no definition; define it before padding it");
    if (static_cast<int>(bounds.size()) != f.dimensions())
        throw Error(std::string(condition) + ": Func " + f.name() + " has " + std::to_string(f.dimensions()) +
                    " dimensions but " + std::to_string(bounds.size()) + " bounds were given; give one Range per dimension");
    Source s{f.name(), f.type(), {}, {}, [f](const std::vector<Expr> &args) { return Expr(f(args)); }};
    for (size_t d = 0; d < bounds.size(); ++d) {
        if (!bounds[d].min.defined() || !bounds[d].extent.defined())
            throw Error(std::string(condition) + ": bound " + std::to_string(d) + " of Func " + f.name() +
                        " has an undefined min or extent");
        if (!bounds[d].min.type().is_integer() || !bounds[d].extent.type().is_integer())
            throw Error(std::string(condition) + ": bound " + std::to_string(d) + " of Func " + f.name() +
                        " must have integer min and extent");
        s.vars.emplace_back(f.args()[d]);
        s.bounds.push_back({cast(Int(32), bounds[d].min), cast(Int(32), bounds[d].extent)});
    }
    return s;
}

/// The source read at its Vars clamped into bounds.
Expr clamped_read(const Source &s) {
    std::vector<Expr> args;
    for (size_t d = 0; d < s.vars.size(); ++d) {
        const Range &r = s.bounds[d];
        args.push_back(clamp(s.vars[d], r.min, r.min + r.extent - 1));
    }
    return s.read(args);
}

std::vector<Expr> var_exprs(const Source &s) { return {s.vars.begin(), s.vars.end()}; }

Func make_constant_exterior(const Source &s, Expr value, const std::string &name) {
    Func f(name.empty() ? s.name + "_constant_exterior" : name);
    value = convert_for_assignment(value, s.type, "the exterior value of constant_exterior(" + s.name + ")");
    Expr inside = Expr(true);
    for (size_t d = 0; d < s.vars.size(); ++d) {
        const Range &r = s.bounds[d];
        Expr in_dim = Expr(s.vars[d]) >= r.min && Expr(s.vars[d]) < r.min + r.extent;
        inside = d == 0 ? in_dim : (inside && in_dim);
    }
    f(var_exprs(s)) = select(inside, clamped_read(s), value);
    return f;
}

Func make_repeat_edge(const Source &s, const std::string &name) {
    Func f(name.empty() ? s.name + "_repeat_edge" : name);
    f(var_exprs(s)) = clamped_read(s);
    return f;
}

} // namespace

Func constant_exterior(const Input &in, Expr value, const std::string &name) {
    return make_constant_exterior(source_of(in), std::move(value), name);
}

Func constant_exterior(const Func &source, const std::vector<Range> &bounds, Expr value, const std::string &name) {
    return make_constant_exterior(source_of(source, bounds, "constant_exterior"), std::move(value), name);
}

Func repeat_edge(const Input &in, const std::string &name) { return make_repeat_edge(source_of(in), name); }

Func repeat_edge(const Func &source, const std::vector<Range> &bounds, const std::string &name) {
    return make_repeat_edge(source_of(source, bounds, "repeat_edge"), name);
}

} // namespace tessera
