#pragma once
// The front end: Var, RVar, RDom, Param, Input, Func and Pipeline — the names a user writes
// algorithms with (DESIGN.md §1). Schedules are recorded on Funcs and Stages but never change
// what is computed.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/expr.h"
#include "tessera/schedule.h"
#include "tessera/target.h"
#include "tessera/type.h"

namespace tessera {

namespace internal {
struct FunctionContents;
struct InputContents;
struct ReductionDomainContents;
} // namespace internal

/// A pure variable of a Func (an Int(32) loop index). Two Vars with the same name are the
/// same variable. A default-constructed Var gets a fresh unique name ("_v0", "_v1", ...; a
/// leading underscore keeps them apart from names users write).
class Var {
public:
    Var();
    explicit Var(const std::string &name);
    const std::string &name() const { return name_; }
    operator Expr() const;

private:
    std::string name_;
};

class RDom;

/// One dimension of a reduction domain.
class RVar {
public:
    RVar() = default;
    const std::string &name() const;
    Expr min() const;
    Expr extent() const;
    /// The domain this dimension belongs to.
    RDom domain() const;
    operator Expr() const;

private:
    friend class RDom;
    RVar(std::shared_ptr<internal::ReductionDomainContents> dom, int index);
    std::shared_ptr<internal::ReductionDomainContents> dom_;
    int index_ = 0;
};

/// A reduction domain: one or more dimensions, each [min, min + extent), iterated with the
/// first dimension innermost (as Halide does), optionally restricted by where-predicates.
/// Mins and extents are integer constants or Exprs of Params (never of Vars, RVars, Funcs or
/// Inputs); a constant extent must not be negative.
///
/// Names: the RVar of a one-dimensional RDom carries the RDom's own name (`RDom k(0, 256, "k")`
/// reads as `k` in printed IR, errors and schedules); the RVars of a multi-dimensional RDom r
/// are r.x, r.y, r.z, r.w, then r.4, r.5, ...; an unnamed RDom gets a unique name "_r<n>".
/// where() must be called before a definition uses the RDom. A predicate may use this RDom's
/// RVars, Params, Funcs, Inputs and the pure Vars of the update it is used in (`r.where(r <= i)`
/// gives a triangular domain per i).
class RDom {
public:
    RDom() = default;
    /// RDom(min0, extent0 [, min1, extent1, ...] [, name]) — as Halide's RDom.
    RDom(Expr min0, Expr extent0, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, const std::string &name = "");
    RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, Expr min3, Expr extent3, const std::string &name = "");
    /// Any number of dimensions.
    RDom(const std::vector<Range> &ranges, const std::string &name = "");

    /// Restricts the domain to points where `predicate` (a Bool Expr of its RVars) holds.
    /// May be called several times; the predicates are and-ed.
    void where(Expr predicate);

    int dimensions() const;
    RVar operator[](int i) const;
    const std::string &name() const;
    bool defined() const { return dom_ != nullptr; }
    /// A one-dimensional RDom used as an Expr is its only RVar.
    operator Expr() const;
    operator RVar() const;

    RVar x, y, z, w;

    const std::shared_ptr<internal::ReductionDomainContents> &contents() const { return dom_; }
    explicit RDom(std::shared_ptr<internal::ReductionDomainContents> dom);

private:
    void init_dimension_names();
    std::shared_ptr<internal::ReductionDomainContents> dom_;
};

namespace internal {
/// What every Param<T> shares: a name, a type and an Expr that reads it.
class ParamBase {
public:
    ParamBase(Type type, const std::string &name);
    const std::string &name() const { return name_; }
    Type type() const { return type_; }
    operator Expr() const;

private:
    Type type_;
    std::string name_;
};
} // namespace internal

/// A scalar parameter bound at realize time, e.g. `Param<int> N("N")` used in an Input's shape
/// or an RDom's extent.
template <typename T> class Param : public internal::ParamBase {
public:
    explicit Param(const std::string &name) : ParamBase(type_of<T>(), name) {}
};

class Func;
class Stage;
class VarOrRVar;

/// A named input tensor with a dtype and a shape (outermost dimension first). Shape entries are
/// constants or Exprs of Params.
class Input {
public:
    Input(Type type, std::vector<Expr> shape, const std::string &name);
    /// A handle to existing contents (as found in a Call).
    explicit Input(std::shared_ptr<const internal::InputContents> contents);
    const std::string &name() const;
    Type type() const;
    int dimensions() const;
    const std::vector<Expr> &shape() const;
    /// An element: A(i, k). Wrong argument counts throw tessera::Error naming the Input.
    Expr operator()(std::vector<Expr> args) const;
    template <typename... Args> Expr operator()(Expr first, Args... rest) const {
        return (*this)(std::vector<Expr>{first, Expr(rest)...});
    }
    /// The element of a zero-dimensional Input.
    Expr operator()() const { return (*this)(std::vector<Expr>{}); }

    const std::shared_ptr<const internal::InputContents> &contents() const { return contents_; }

    // ---- Scheduling (scheduler; dsl/src/func_schedule.cpp) -----------------------------------
    /// Data: inside the consumer's loop `var`, copy the region of this Input the consumer reads
    /// there into `memory`, stored with `layout`, and make the consumer read the copy (Halide's
    /// `ImageParam::in(consumer)` computed at that loop). The copy is a Func
    /// "<Input>_in_<consumer>" whose arguments are d0, d1, ... (outermost first); the layout
    /// names them, e.g. B(k, n) packed into column panels [n / 16][k][16] is
    /// `Layout{{"d1", "d0"}, {{"d1", 16}}}`. Recorded under the Input's name in the pipeline's
    /// Schedule (stage 0), like a Func's stage().
    Input &stage(const Func &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout = {});
    Input &stage(const Stage &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout = {});
    /// This Input's directives as a Schedule (one entry, by this Input's name; empty if none).
    Schedule schedule() const;
    // ---- end scheduling -----------------------------------------------------------------------

private:
    std::shared_ptr<const internal::InputContents> contents_;
};

// ---- Scheduling: loop names (scheduler; defined in dsl/src/func_schedule.cpp) ----------------
/// A loop named by a Var or an RVar, as scheduling directives take them (Halide's VarOrRVar).
class VarOrRVar {
public:
    VarOrRVar(const Var &v) : name_(v.name()) {}
    VarOrRVar(const RVar &r) : name_(r.name()), is_rvar_(true) {}
    /// A one-dimensional RDom names its only RVar.
    VarOrRVar(const RDom &r);
    /// A loop by name (e.g. one made by a split).
    VarOrRVar(const std::string &name) : name_(name) {}
    VarOrRVar(const char *name) : name_(name) {}
    const std::string &name() const { return name_; }
    bool is_rvar() const { return is_rvar_; }

private:
    std::string name_;
    bool is_rvar_ = false;
};
// ---- end scheduling ---------------------------------------------------------------------------

/// `f(x, y)` on either side of a definition. As an rvalue it is a Call to f; as an lvalue it
/// adds a definition:
/// - `=` on a Func without a definition is its pure definition: the arguments must be
///   distinct Vars, the value may use only those Vars (and Params, Inputs, other defined
///   Funcs), and its type becomes the Func's type.
/// - `=` on a defined Func adds an update, as in Halide (`f(x) = max(f(x), g(r))`). Arguments
///   are int32 coordinates (narrower integers widen; floats and int64 need cast<int>()); a pure
///   Var may appear only as itself in its own position; the value converts to the Func's type
///   by the assignment rule of ir_operator.h (never narrowing); RVars must come from one RDom.
/// - `+=`, `-=`, `*=`, `/=` are updates `f(args) = f(args) op value`; on a Func without a
///   definition they first define it as 0 (for + and -) or 1 (for * and /) of the value's
///   type, over the Vars standing in the arguments (other positions get Vars "_<position>").
/// - A Func used in another Func's definition takes no more updates (they would silently
///   change the consumer).
class FuncRef {
public:
    FuncRef(std::shared_ptr<internal::FunctionContents> func, std::vector<Expr> args);

    Stage operator=(Expr value);
    Stage operator=(const FuncRef &other);
    Stage operator+=(Expr value);
    Stage operator-=(Expr value);
    Stage operator*=(Expr value);
    Stage operator/=(Expr value);
    /// The value of the Func at these coordinates.
    operator Expr() const;

private:
    std::shared_ptr<internal::FunctionContents> func_;
    std::vector<Expr> args_;
};

/// One stage of a Func: its pure definition (index 0) or an update (index i + 1). Schedule
/// directives are recorded on a stage.
class Stage {
public:
    Stage(std::shared_ptr<internal::FunctionContents> func, int stage_index);
    const std::string &func_name() const;
    /// 0 for the pure definition, i + 1 for update i.
    int index() const { return stage_index_; }
    /// Readable name "C" or "C.update(0)" for error messages.
    std::string name() const;

    // ---- Scheduling: loop directives (scheduler; dsl/src/func_schedule.cpp) -------------------
    // Each records a Directive on this stage (see schedule.h) and checks at once that the loops
    // it names exist; the rest of legality is checked by lower(). Loop lists are outermost first.
    /// Splits `old` into `outer` (extent ceil(extent / factor)) and `inner` (extent factor).
    Stage &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor,
                 TailStrategy tail = TailStrategy::Auto);
    /// Fuses two adjacent loops (in either order) into one loop named `fused`.
    Stage &fuse(const VarOrRVar &a, const VarOrRVar &b, const VarOrRVar &fused);
    /// Puts these loops in this order, outermost first, in the slots they occupy.
    Stage &reorder(const std::vector<VarOrRVar> &vars);
    template <typename... Vs> Stage &reorder(const VarOrRVar &a, const VarOrRVar &b, const Vs &...rest) {
        return reorder(std::vector<VarOrRVar>{a, b, VarOrRVar(rest)...});
    }
    /// Splits x and y and orders the loops xo, yo, xi, yi (outermost first).
    Stage &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                const VarOrRVar &xi, const VarOrRVar &yi, int xfactor, int yfactor,
                TailStrategy tail = TailStrategy::Auto);
    /// n-D tile: loops outers..., inners... (outermost first).
    Stage &tile(const std::vector<VarOrRVar> &vars, const std::vector<VarOrRVar> &outers,
                const std::vector<VarOrRVar> &inners, const std::vector<int> &factors,
                TailStrategy tail = TailStrategy::Auto);
    /// Marks a loop vectorized; with a factor, splits it first and vectorizes the inner loop.
    Stage &vectorize(const VarOrRVar &v);
    Stage &vectorize(const VarOrRVar &v, int factor, TailStrategy tail = TailStrategy::Auto);
    /// Marks a loop unrolled; with a factor, splits it first and unrolls the inner loop.
    Stage &unroll(const VarOrRVar &v);
    Stage &unroll(const VarOrRVar &v, int factor, TailStrategy tail = TailStrategy::Auto);
    /// Marks a loop parallel.
    Stage &parallel(const VarOrRVar &v);
    /// Maps the innermost loops `vars` onto a chip unit (e.g. "mxm"); recorded and shape-checked
    /// here, implemented by the chip backend.
    Stage &tensorize(const std::string &unit, const std::vector<VarOrRVar> &vars);
    /// This stage's directives.
    const std::vector<Directive> &directives() const;
    /// The Func this stage belongs to.
    const std::shared_ptr<internal::FunctionContents> &function() const { return func_; }
    // ---- end scheduling -----------------------------------------------------------------------

protected:
    std::shared_ptr<internal::FunctionContents> func_;
    int stage_index_;
};

/// An Input or Param bound to a value for one realize call.
struct Binding {
    Binding(const Input &input, Buffer<> buffer);
    Binding(const internal::ParamBase &param, int value);
    Binding(const internal::ParamBase &param, int64_t value);
    Binding(const internal::ParamBase &param, double value);

    std::string name;
    Buffer<> buffer;          ///< for an Input
    bool is_param = false;
    Type param_type;
    int64_t int_value = 0;    ///< for an integer Param
    double float_value = 0.0; ///< for a float Param
};
using Bindings = std::vector<Binding>;

/// A function of integer coordinates defined by a pure definition and then any number of
/// update definitions, applied in order.
class Func {
public:
    /// A fresh Func with a unique name.
    Func();
    explicit Func(const std::string &name);
    explicit Func(std::shared_ptr<internal::FunctionContents> contents);

    const std::string &name() const;
    /// The element type (of the pure definition); throws if the Func has no definition.
    Type type() const;
    bool defined() const;
    /// Number of pure arguments; throws if undefined.
    int dimensions() const;
    /// The names of the pure arguments of the pure definition.
    std::vector<std::string> args() const;
    int num_updates() const;
    /// The pure value of f(args).
    Expr value() const;

    FuncRef operator()(std::vector<Expr> args) const;
    template <typename... Args> FuncRef operator()(Expr first, Args... rest) const {
        return (*this)(std::vector<Expr>{first, Expr(rest)...});
    }
    FuncRef operator()() const { return (*this)(std::vector<Expr>{}); }

    /// Update definition i as a Stage (for scheduling); throws naming the Func if out of range.
    Stage update(int i = 0) const;

    /// Computes the Func over [0, shape[d]) in each dimension on `target`.
    Buffer<> realize(std::vector<int64_t> shape, const Bindings &bindings = {},
                     const Target &target = Target::reference()) const;

    const std::shared_ptr<internal::FunctionContents> &contents() const { return contents_; }

    // ---- Scheduling (scheduler; dsl/src/func_schedule.cpp) -----------------------------------
    // Loop directives on the pure definition (use update(i) for an update), as on Stage.
    Func &split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor,
                TailStrategy tail = TailStrategy::Auto);
    Func &fuse(const VarOrRVar &a, const VarOrRVar &b, const VarOrRVar &fused);
    Func &reorder(const std::vector<VarOrRVar> &vars);
    template <typename... Vs> Func &reorder(const VarOrRVar &a, const VarOrRVar &b, const Vs &...rest) {
        return reorder(std::vector<VarOrRVar>{a, b, VarOrRVar(rest)...});
    }
    Func &tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
               const VarOrRVar &xi, const VarOrRVar &yi, int xfactor, int yfactor,
               TailStrategy tail = TailStrategy::Auto);
    Func &tile(const std::vector<VarOrRVar> &vars, const std::vector<VarOrRVar> &outers,
               const std::vector<VarOrRVar> &inners, const std::vector<int> &factors,
               TailStrategy tail = TailStrategy::Auto);
    Func &vectorize(const VarOrRVar &v);
    Func &vectorize(const VarOrRVar &v, int factor, TailStrategy tail = TailStrategy::Auto);
    Func &unroll(const VarOrRVar &v);
    Func &unroll(const VarOrRVar &v, int factor, TailStrategy tail = TailStrategy::Auto);
    Func &parallel(const VarOrRVar &v);
    Func &tensorize(const std::string &unit, const std::vector<VarOrRVar> &vars);

    /// Fusion: substitute this Func into its consumers (the default for a pure Func).
    Func &compute_inline();
    /// Fusion: compute all of this Func before its consumers (the default with updates).
    Func &compute_root();
    /// Fusion: compute the region a consumer needs inside the consumer's loop `var`.
    /// The stage is the consumer's stage that calls this Func (use the Stage overload to pick).
    /// A Func read by several consumers may be computed at a loop of one of them when the others
    /// read it inside that loop too (computed at it, or inlined into a Func that is); lower()
    /// names the readers outside otherwise.
    Func &compute_at(const Func &consumer, const VarOrRVar &var);
    Func &compute_at(const Stage &consumer, const VarOrRVar &var);
    /// Storage: allocate at the root (default) or inside the consumer's loop `var`, which must
    /// enclose the compute level.
    Func &store_root();
    Func &store_at(const Func &consumer, const VarOrRVar &var);
    Func &store_at(const Stage &consumer, const VarOrRVar &var);
    /// Data: inside the consumer's loop `var`, copy the region of this Func the consumer needs
    /// there into `memory`, stored with `layout` (the copy's arguments are this Func's), and
    /// make the consumer read the copy.
    Func &stage(const Func &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout = {});
    /// Data: keep this Func's storage in `memory` (on a chip, optionally in bank `bank`).
    Func &store_in(MemoryKind memory, int bank = -1);
    /// Data: the storage layout (dimension order, blocking, padding, alignment).
    Func &layout(const Layout &layout);
    /// Data: allocate two buffers at the storage level and alternate between them per
    /// iteration of the enclosing loop, so the next tile can be filled while this one is used.
    /// `double_buffer(false)` asks for one buffer (JSON {"op":"double_buffer","factors":[0]}).
    /// On a chip the matmul's accumulators are double-buffered unless this says false, and
    /// only where two output tiles fit (codegen/chip_backend.h, chip_double_buffer_values).
    Func &double_buffer(bool on = true);
    /// Chip: how many of the matrix unit's operand blocks (K blocks of A, column blocks of B)
    /// share one on-chip row of this Func's matmul (1 or 2). On npu-edge an int8 block is 32
    /// bytes of a 64-byte scratchpad row: 2 moves A and B over DRAM once instead of twice, and a
    /// shift brings the second block to the array's lanes. Unset: the backend's rule
    /// (codegen/chip_backend.h, chip_blocks_per_row_values lists the legal values).
    Func &blocks_per_row(int n);
    /// Chip: the order in which this Func's matmul walks its output tiles: "rows_snake" (row
    /// bands in order, every other band walking its column tiles backwards, so a band starts
    /// with the B tiles the previous one ended with), "rows", "columns_snake" or "columns"
    /// (column tiles outermost: each B tile loads once, the A bands again per column).
    /// Unset: the backend's rule (codegen/chip_backend.h, chip_tile_order_values lists the
    /// legal values per target).
    Func &tile_order(const std::string &order);

    /// This Func's directives as a Schedule (one entry, by this Func's name).
    Schedule schedule() const;
    /// Replaces this Func's directives with the entry for its name in `s` (none: cleared);
    /// throws naming them if `s` schedules other Funcs or stages this Func lacks.
    void set_schedule(const Schedule &s);
    // ---- end scheduling -----------------------------------------------------------------------

private:
    std::shared_ptr<internal::FunctionContents> contents_;
};

/// One or more output Funcs computed together.
class Pipeline {
public:
    Pipeline() = default;
    Pipeline(Func output);
    Pipeline(std::vector<Func> outputs);
    const std::vector<Func> &outputs() const { return outputs_; }

    // ---- Scheduling (scheduler; dsl/src/func_schedule.cpp) -----------------------------------
    /// The directives of every Func and Input of the pipeline.
    Schedule schedule() const;
    /// Replaces the directives of every Func and Input of the pipeline (those absent from `s`
    /// get none). Throws tessera::Error, changing nothing, if `s` names a Func or Input that is
    /// not in the pipeline, a stage it lacks, a loop directive naming an unknown loop, or gives
    /// an Input a directive other than stage().
    void set_schedule(const Schedule &s) const;
    // ---- end scheduling -----------------------------------------------------------------------
    /// Every Func the outputs depend on (outputs included), producers before consumers.
    std::vector<Func> functions() const;
    /// Every Input the outputs read, by name.
    std::vector<Input> inputs() const;

    std::vector<Buffer<>> realize(std::vector<std::vector<int64_t>> shapes, const Bindings &bindings = {},
                                  const Target &target = Target::reference()) const;

private:
    std::vector<Func> outputs_;
};

} // namespace tessera
