#include "tessera/ops/tensor.h"

#include <map>

#include "op_util.h"
#include "tessera/error.h"
#include "tessera/limits.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

const char *layout_name(Layout layout) { return layout == Layout::NCHW ? "NCHW" : "NHWC"; }

namespace {
/// Refuses a constant shape no tensor can have — an extent of 0 or less, or more elements or
/// bytes than limits.h allows — when the tensor enters the operator library, so an op never
/// builds loops over it and no backend divides by an empty extent or allocates 40 GB for it.
/// Symbolic extents (Exprs of Params) are checked when they are bound, at realize time.
void check_constant_shape(const std::vector<Expr> &shape, Type type, const std::string &kind, const std::string &name) {
    std::vector<int64_t> extents;
    for (const Expr &e : shape) {
        const std::optional<int64_t> v = const_int(e);
        if (!v) return;
        extents.push_back(*v);
    }
    std::string problem;
    if (!limits::tensor_size(extents, type.bytes(), &problem))
        throw Error("ops: " + kind + " '" + name + "' of shape " + shape_string(shape) + ": " + problem +
                    (problem.find("dimension") == 0 ? "" : "; make the operands smaller or split the op into pieces"));
}
} // namespace

Tensor::Tensor(const Input &input) : input_(input), type_(input.type()), shape_(input.shape()) {
    check_constant_shape(shape_, type_, "input", input.name());
}

Tensor::Tensor(Func func, std::vector<Expr> shape) : func_(std::move(func)), shape_(std::move(shape)) {
    if (!func_.defined())
        throw Error("ops::Tensor: Func '" + func_.name() + "' has no definition; define it before making a Tensor of it");
    if (func_.dimensions() != static_cast<int>(shape_.size()))
        throw Error("ops::Tensor: Func '" + func_.name() + "' has " + std::to_string(func_.dimensions()) +
                    " dimensions but the shape " + shape_string(shape_) + " has " + std::to_string(shape_.size()));
    for (const Expr &e : shape_)
        if (!e.defined() || !e.type().is_integer())
            throw Error("ops::Tensor: shape " + shape_string(shape_) + " of Func '" + func_.name() +
                        "' must consist of integer Exprs (constants or Exprs of Params)");
    type_ = func_.type();
    check_constant_shape(shape_, type_, "the result", func_.name());
}

const std::string &Tensor::name() const {
    if (input_) return input_->name();
    return func_.name();
}

Expr Tensor::dim(int d) const {
    const int n = dimensions();
    const int a = d < 0 ? d + n : d;
    if (a < 0 || a >= n)
        throw Error("ops::Tensor '" + name() + "': dimension " + std::to_string(d) + " is out of range for shape " +
                    shape_string(shape_));
    return shape_[static_cast<size_t>(a)];
}

Func Tensor::func() const {
    if (!defined()) throw Error("ops::Tensor: func() of an undefined Tensor");
    if (!input_) return func_;
    std::vector<Var> vars = make_vars(dimensions());
    Func copy(input_->name() + "_value");
    copy(as_exprs(vars)) = (*input_)(as_exprs(vars));
    return copy;
}

const Input &Tensor::input() const {
    if (!input_) throw Error("ops::Tensor '" + name() + "' is not an Input");
    return *input_;
}

Expr Tensor::operator()(const std::vector<Expr> &args) const {
    if (!defined()) throw Error("ops::Tensor: reading an undefined Tensor");
    if (static_cast<int>(args.size()) != dimensions())
        throw Error("ops::Tensor '" + name() + "': " + std::to_string(args.size()) + " coordinates given to a tensor of shape " +
                    shape_string(shape_));
    if (input_) return (*input_)(args);
    return func_(args);
}

std::vector<int64_t> Tensor::concrete_shape(const Bindings &bindings) const {
    std::map<std::string, int64_t> params;
    for (const Binding &b : bindings)
        if (b.is_param) params[b.name] = b.param_type.is_float() ? static_cast<int64_t>(b.float_value) : b.int_value;
    std::vector<int64_t> out;
    for (size_t d = 0; d < shape_.size(); ++d) {
        auto v = const_int(shape_[d], params);
        if (!v)
            throw Error("ops::Tensor '" + name() + "': dimension " + std::to_string(d) + " of shape " + shape_string(shape_) +
                        " cannot be evaluated; bind the Params it uses");
        out.push_back(*v);
    }
    return out;
}

Buffer<> Tensor::realize(const Bindings &bindings, const Target &target) const {
    return func().realize(concrete_shape(bindings), bindings, target);
}

std::string shape_string(const std::vector<Expr> &shape) {
    std::string s = "[";
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + dim_string(shape[d]);
    return s + "]";
}

Type accumulator_type(Type t) {
    if (t.is_integer()) {
        if (t.bits() < 32) return Int(32);
        return t;
    }
    if (t.is_bool()) return Int(32);
    return compute_type(t);
}

Type compute_type(Type t) {
    if (t.is_float() && t.bits() < 32) return Float(32);
    return t;
}

} // namespace tessera::ops
