#include "tessera/chipsim/reservation_table.h"

#include <algorithm>

namespace tessera::chipsim {

namespace {

using Lane = std::vector<Interval>;

/// First interval of the lane whose end is after t (intervals are disjoint and sorted, so ends
/// are sorted too).
Lane::const_iterator first_ending_after(const Lane &lane, int64_t t) {
    return std::upper_bound(lane.begin(), lane.end(), t, [](int64_t v, const Interval &i) { return v < i.end; });
}

bool lane_free(const Lane &lane, int64_t begin, int64_t end) {
    auto it = first_ending_after(lane, begin);
    return it == lane.end() || it->begin >= end;
}

int64_t lane_next_free(const Lane &lane, int64_t t, int64_t duration) {
    for (auto it = first_ending_after(lane, t); it != lane.end() && it->begin < t + duration; ++it) t = it->end;
    return t;
}

} // namespace

ReservationTable::ReservationTable(const std::vector<int> &lanes_per_resource) {
    for (int n : lanes_per_resource) lanes_.emplace_back(size_t(std::max(1, n)));
}

int ReservationTable::free_lane(int resource, int64_t begin, int64_t end) const {
    const auto &ls = lanes_.at(resource);
    for (size_t i = 0; i < ls.size(); ++i)
        if (lane_free(ls[i], begin, end)) return int(i);
    return -1;
}

int64_t ReservationTable::next_free(int resource, int64_t not_before, int64_t duration) const {
    if (duration <= 0) return not_before;
    int64_t best = INT64_MAX;
    for (const Lane &lane : lanes_.at(resource)) best = std::min(best, lane_next_free(lane, not_before, duration));
    return best;
}

std::optional<Interval> ReservationTable::blocker(int resource, int64_t begin, int64_t end) const {
    if (free_lane(resource, begin, end) >= 0) return std::nullopt;
    const Lane &lane = lanes_.at(resource).at(0);
    auto it = first_ending_after(lane, begin);
    return *it;
}

void ReservationTable::add(int resource, int lane, Interval interval) {
    if (interval.end <= interval.begin) return;
    Lane &l = lanes_.at(resource).at(lane);
    auto it = std::upper_bound(l.begin(), l.end(), interval.begin,
                               [](int64_t v, const Interval &i) { return v < i.begin; });
    l.insert(it, interval);
}

std::vector<Interval> ReservationTable::fill_gaps(int resource, int64_t t, int64_t amount, int64_t granule) const {
    std::vector<Interval> pieces;
    const Lane &lane = lanes_.at(resource).at(0);
    granule = std::max<int64_t>(1, granule);
    auto it = first_ending_after(lane, t);
    while (amount > 0) {
        while (it != lane.end() && it->begin <= t) { // intervals covering t push it forward
            t = std::max(t, it->end);
            ++it;
        }
        int64_t gap = it == lane.end() ? amount : it->begin - t;
        int64_t take = amount <= gap ? amount : gap / granule * granule;
        if (take > 0) {
            pieces.push_back({t, t + take, -1});
            amount -= take;
        }
        if (amount == 0) break;
        t = it->end;
        ++it;
    }
    return pieces;
}

int64_t ReservationTable::busy_cycles(int resource) const {
    int64_t total = 0;
    for (const Lane &lane : lanes_.at(resource))
        for (auto &i : lane) total += i.end - i.begin;
    return total;
}

} // namespace tessera::chipsim
