// Func::realize, Pipeline::realize and Binding: the one call that runs an algorithm on any
// target, dispatched through the realizer registry (realize.h).
#include "tessera/realize.h"

#include <map>
#include <mutex>

#include "tessera/error.h"
#include "tessera/reference.h"

namespace tessera {

namespace internal {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<Target::Kind, RealizerFn> realizers;
    ScheduleChooserFn chooser;
};

Registry &registry() {
    // Built on first use, so backends may register from static initializers in any order;
    // the reference evaluator is always there.
    static Registry r;
    static const bool reference_registered = [] {
        r.realizers[Target::Kind::Reference] = [](const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                                  const Bindings &bindings, const Target &) {
            return evaluate_reference(p, shapes, bindings);
        };
        return true;
    }();
    (void)reference_registered;
    return r;
}

/// The library that serves a kind of target, for the error when none is linked.
const char *library_for(Target::Kind kind) {
    switch (kind) {
    case Target::Kind::Reference: return "tessera_dsl";
    case Target::Kind::Interpreter: return "tessera_scheduler (the loop-IR interpreter)";
    case Target::Kind::Host: return "tessera_codegen (the LLVM host backend)";
    case Target::Kind::Chip: return "tessera_codegen (the chip backend)";
    }
    return "?";
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

} // namespace

void check_realize_request(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes) {
    const std::vector<Func> &outputs = p.outputs();
    if (outputs.empty()) throw Error("realize: the pipeline has no outputs");
    if (shapes.size() != outputs.size())
        throw Error("realize: " + std::to_string(shapes.size()) + " shapes given for " + std::to_string(outputs.size()) +
                    " outputs; pass one shape per output, in order");
    for (size_t i = 0; i < outputs.size(); ++i) {
        const Func &f = outputs[i];
        if (!f.defined())
            throw Error("realize: Func " + f.name() + " has no definition; define it (" + f.name() +
                        "(x, ...) = ...) before realizing it");
        if (static_cast<int>(shapes[i].size()) != f.dimensions())
            throw Error("realize: Func " + f.name() + " has " + std::to_string(f.dimensions()) +
                        " dimensions but the shape " + shape_text(shapes[i]) + " has " + std::to_string(shapes[i].size()));
        for (int64_t e : shapes[i])
            if (e < 0)
                throw Error("realize: the shape " + shape_text(shapes[i]) + " of Func " + f.name() +
                            " has a negative extent");
    }
}

void register_realizer(Target::Kind kind, RealizerFn fn) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.realizers[kind] = std::move(fn);
}

bool has_realizer(Target::Kind kind) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    return r.realizers.count(kind) != 0;
}

void register_schedule_chooser(ScheduleChooserFn fn) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.chooser = std::move(fn);
}

ChosenSchedule::ChosenSchedule(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &shapes,
                               const Target &target)
    : pipeline_(pipeline) {
    if (target.kind() != Target::Kind::Host && target.kind() != Target::Kind::Chip) return;
    ScheduleChooserFn chooser;
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        chooser = r.chooser;
    }
    if (!chooser) return;
    original_ = pipeline.schedule();
    description_ = chooser(pipeline, shapes, target);
}

ChosenSchedule::~ChosenSchedule() {
    // The caller's pipeline keeps its own schedule: a database record applies to one call.
    if (!description_.empty()) pipeline_.set_schedule(original_);
}

} // namespace internal

Binding::Binding(const Input &input, Buffer<> b) : name(input.name()), buffer(std::move(b)) {
    if (!buffer.defined())
        throw Error("Binding: Input " + name + " is bound to an undefined buffer; pass a Buffer of shape and type " +
                    input.type().to_string());
}

Binding::Binding(const internal::ParamBase &param, int value) : Binding(param, static_cast<int64_t>(value)) {}

Binding::Binding(const internal::ParamBase &param, int64_t value)
    : name(param.name()), is_param(true), param_type(param.type()), int_value(value),
      float_value(static_cast<double>(value)) {
    if (param_type.is_integer() && !param_type.can_represent(value))
        throw Error("Binding: Param " + name + " of type " + param_type.to_string() + " cannot hold the value " +
                    std::to_string(value));
}

Binding::Binding(const internal::ParamBase &param, double value)
    : name(param.name()), is_param(true), param_type(param.type()), float_value(value) {
    if (!param_type.is_float()) {
        if (!param_type.can_represent(value))
            throw Error("Binding: Param " + name + " of type " + param_type.to_string() +
                        " cannot hold the value " + std::to_string(value) + "; bind an integer value");
        int_value = static_cast<int64_t>(value);
    } else {
        int_value = static_cast<int64_t>(value);
    }
}

Buffer<> Func::realize(std::vector<int64_t> shape, const Bindings &bindings, const Target &target) const {
    return Pipeline(*this).realize({std::move(shape)}, bindings, target).at(0);
}

std::vector<Buffer<>> Pipeline::realize(std::vector<std::vector<int64_t>> shapes, const Bindings &bindings,
                                        const Target &target) const {
    internal::check_realize_request(*this, shapes);
    internal::RealizerFn fn;
    {
        internal::Registry &r = internal::registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        auto it = r.realizers.find(target.kind());
        if (it != r.realizers.end()) fn = it->second;
    }
    if (!fn)
        throw Error("realize: no backend for target '" + target.name() + "' is linked into this program; link " +
                    internal::library_for(target.kind()) + " (or the umbrella target Tessera::tessera)");
    const internal::ChosenSchedule chosen(*this, shapes, target);
    return fn(*this, shapes, bindings, target);
}

} // namespace tessera
