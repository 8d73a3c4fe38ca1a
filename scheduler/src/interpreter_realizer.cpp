// Target::interpreter(): Func::realize / Pipeline::realize lower the pipeline for the requested
// output shapes and run the result on the loop-IR interpreter.
#include <map>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/interpreter.h"
#include "tessera/lower.h"
#include "tessera/realize.h"
#include "tessera/simplify.h"

namespace tessera {

namespace {

std::vector<Buffer<>> realize_on_interpreter(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                             const Bindings &bindings, const Target &target) {
    internal::check_realize_request(p, shapes);
    LoweredModule m = lower(p, target, shapes);
    std::map<std::string, double> params;
    std::map<std::string, Expr> param_values;
    std::map<std::string, Buffer<>> buffers;
    for (const auto &b : bindings) {
        if (b.is_param) {
            double v = b.param_type.is_float() ? b.float_value : static_cast<double>(b.int_value);
            params[b.name] = v;
            param_values[b.name] = b.param_type.is_float() ? Expr(b.float_value) : Expr(static_cast<int>(b.int_value));
        }
    }
    for (const auto &[name, t] : m.params)
        if (!params.count(name)) throw Error("realize: Param " + name + " (" + t.to_string() + ") has no value; bind it");
    for (const auto &in : m.inputs) {
        const Binding *found = nullptr;
        for (const auto &b : bindings)
            if (!b.is_param && b.name == in.name) found = &b;
        if (!found) throw Error("realize: Input " + in.name + " has no buffer; bind it ({" + in.name + ", buffer})");
        const Buffer<> &buf = found->buffer;
        if (buf.type() != in.type)
            throw Error("realize: Input " + in.name + " is " + in.type.to_string() + " but its buffer is " +
                        buf.type().to_string());
        if (buf.dimensions() != static_cast<int>(in.shape.size()))
            throw Error("realize: Input " + in.name + " has " + std::to_string(in.shape.size()) +
                        " dimensions but its buffer has " + std::to_string(buf.dimensions()));
        for (size_t d = 0; d < in.shape.size(); ++d) {
            auto extent = as_const_int(simplify(internal::substitute(param_values, in.shape[d])));
            if (extent && *extent != buf.dim(static_cast<int>(d)))
                throw Error("realize: Input " + in.name + " has extent " + std::to_string(*extent) + " in dimension " +
                            std::to_string(d) + " but its buffer has " + std::to_string(buf.dim(static_cast<int>(d))));
        }
        buffers[in.name] = buf.is_dense() ? buf : buf.copy();
    }
    std::vector<Buffer<>> outs;
    for (size_t i = 0; i < m.outputs.size(); ++i) {
        Buffer<> b(m.outputs[i].type, shapes[i]);
        buffers[m.outputs[i].name] = b;
        outs.push_back(b);
    }
    run_lowered(m, buffers, params);
    return outs;
}

const internal::RealizerRegistration registration(Target::Kind::Interpreter, realize_on_interpreter);

} // namespace

} // namespace tessera
