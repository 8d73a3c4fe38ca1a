#pragma once
// How Func::realize and Pipeline::realize reach a backend. The DSL names every target but
// depends on no backend: each backend library registers a realizer for its kind of target
// when it is loaded, and realize() dispatches through this registry. The reference kind is
// always present (the reference evaluator lives in the DSL library).
#include <functional>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/func.h"
#include "tessera/target.h"

namespace tessera::internal {

/// Realizes `pipeline`'s outputs over [0, shapes[i]) with `bindings` on `target`, returning one
/// buffer per output, in order. Shapes and output count are already checked by the caller.
using RealizerFn = std::function<std::vector<Buffer<>>(const Pipeline &pipeline,
                                                       const std::vector<std::vector<int64_t>> &shapes,
                                                       const Bindings &bindings, const Target &target)>;

/// Makes `fn` the realizer of every target of `kind`, replacing any earlier one. Thread-safe.
void register_realizer(Target::Kind kind, RealizerFn fn);

/// Whether a realizer is registered for `kind`.
bool has_realizer(Target::Kind kind);

/// Checks what every realizer relies on: at least one output, one shape per output, each
/// output defined, each shape of the output's rank with extents >= 0. Throws tessera::Error
/// naming the Func otherwise.
void check_realize_request(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes);

/// Chooses the schedule a realize or compile_to_library uses on a host or chip target: may set
/// another schedule on `pipeline` (the tuning database's best record for it) and returns what
/// it used for reports ("tuned record #12 (137 cycles)"), or "" when it left the schedule
/// alone. The DSL and the backends cannot depend on the autotuner that owns the database, so
/// the autotuner registers this hook (tuned_schedule.h).
using ScheduleChooserFn = std::function<std::string(const Pipeline &pipeline,
                                                    const std::vector<std::vector<int64_t>> &shapes,
                                                    const Target &target)>;

/// Makes `fn` the schedule chooser, replacing any earlier one. Thread-safe.
void register_schedule_chooser(ScheduleChooserFn fn);

/// Runs the chooser on `pipeline` for a host or chip target, returning its description ("" for
/// other targets, without a chooser, or when it kept the schedule). While the returned guard
/// lives the chosen schedule stays on the pipeline; the guard restores the caller's schedule.
class ChosenSchedule {
public:
    ChosenSchedule(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &shapes, const Target &target);
    ~ChosenSchedule();
    ChosenSchedule(const ChosenSchedule &) = delete;
    ChosenSchedule &operator=(const ChosenSchedule &) = delete;
    /// "" when the pipeline's own schedule is used.
    const std::string &description() const { return description_; }

private:
    Pipeline pipeline_;
    Schedule original_;
    std::string description_;
};

/// Registers a realizer from a static initializer of a backend library:
/// `static const RealizerRegistration reg(Target::Kind::Host, realize_on_host);`
struct RealizerRegistration {
    RealizerRegistration(Target::Kind kind, RealizerFn fn) { register_realizer(kind, std::move(fn)); }
};

} // namespace tessera::internal
