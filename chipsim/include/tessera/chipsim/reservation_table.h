#pragma once
// Who holds which resource when. A resource has one or more lanes (a stream direction has 8, the
// VXM has 16 ALU slots); each lane is a sorted list of disjoint half-open intervals [begin, end).
// The simulator, the chip code generator's list scheduler and the autotuner's cost model all
// place instructions into one of these through the TimingModel.
//
// Lanes are not named by the ISA: a hold takes some lane for its whole interval, and whether a
// hold fits is a count — at every cycle of it, fewer holders than lanes. Holds arrive in issue
// order, not in the order their intervals begin (a drain's write-back starts cycles after its
// issue), so the first free lane for each as it comes can leave no single lane free for a
// later one although no cycle is full; the table then re-assigns the resource's lanes (by
// interval start, any free lane: the greedy colouring that needs no more lanes than the
// largest number of holds at one cycle).
#include <cstdint>
#include <optional>
#include <vector>

namespace tessera::chipsim {

/// A half-open cycle interval held by `owner` (an instruction index, or -1).
struct Interval {
    int64_t begin = 0, end = 0;
    int32_t owner = -1;
};

/// Reservations of every resource of one target.
class ReservationTable {
public:
    ReservationTable() = default;
    /// One entry per resource: its lane count (from TimingModel::resources()).
    explicit ReservationTable(const std::vector<int> &lanes_per_resource);

    /// Resources tracked.
    int resource_count() const { return int(lanes_.size()); }
    /// Lanes of a resource.
    int lanes(int resource) const { return int(lanes_.at(resource).size()); }
    /// A lane of `resource` free over [begin, end), or -1.
    int free_lane(int resource, int64_t begin, int64_t end) const;
    /// The largest number of holds of `resource` at one cycle of [begin, end).
    int holders(int resource, int64_t begin, int64_t end) const;
    /// The earliest t >= not_before at which `needed` more holds fit over [t, t + duration).
    int64_t next_free(int resource, int64_t not_before, int64_t duration, int needed = 1) const;
    /// A hold that keeps `needed` more from fitting over [begin, end), if any.
    std::optional<Interval> blocker(int resource, int64_t begin, int64_t end, int needed = 1) const;
    /// Records a hold on a lane; the caller checked the lane is free.
    void add(int resource, int lane, Interval interval);
    /// Records a hold on a free lane, re-assigning the resource's lanes when no single lane is
    /// free over the whole interval; the caller checked that it fits (holders() < lanes()).
    void add_to_any_lane(int resource, Interval interval);
    /// Serves `amount` cycles of a shared-bandwidth resource (lane 0) from `not_before` on,
    /// filling free gaps of at least `granule` cycles (pieces are multiples of the granule but the
    /// last). Returns the pieces; does not record them.
    std::vector<Interval> fill_gaps(int resource, int64_t not_before, int64_t amount, int64_t granule) const;
    /// All intervals of a lane, sorted by begin.
    const std::vector<Interval> &intervals(int resource, int lane) const { return lanes_.at(resource).at(lane); }
    /// Sum of held cycles over all lanes of a resource.
    int64_t busy_cycles(int resource) const;

private:
    std::vector<std::vector<std::vector<Interval>>> lanes_; // resource -> lane -> intervals
};

} // namespace tessera::chipsim
