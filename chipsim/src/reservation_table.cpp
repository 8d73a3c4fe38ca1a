#include "tessera/chipsim/reservation_table.h"

#include <algorithm>
#include <climits>

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

namespace {

/// The holds of every lane that overlap [begin, end).
std::vector<Interval> overlapping(const std::vector<Lane> &lanes, int64_t begin, int64_t end) {
    std::vector<Interval> found;
    for (const Lane &lane : lanes)
        for (auto it = first_ending_after(lane, begin); it != lane.end() && it->begin < end; ++it) found.push_back(*it);
    return found;
}

/// The first cycle of [begin, end) at which `limit` or more of `holds` overlap, and the hold
/// of those that ends first (the earliest a lane comes free there); none when there is none.
std::optional<Interval> first_full(std::vector<Interval> holds, int64_t begin, int64_t end, int limit) {
    std::sort(holds.begin(), holds.end(), [](const Interval &a, const Interval &b) { return a.begin < b.begin; });
    // Sweep the starts in order, keeping the holds still active (ends in a min-heap).
    auto later_end = [](const Interval &a, const Interval &b) { return a.end > b.end; };
    std::vector<Interval> active;
    for (const Interval &h : holds) {
        const int64_t at = std::max(h.begin, begin);
        while (!active.empty() && active.front().end <= at) {
            std::pop_heap(active.begin(), active.end(), later_end);
            active.pop_back();
        }
        active.push_back(h);
        std::push_heap(active.begin(), active.end(), later_end);
        if (int(active.size()) >= limit && at < end) return active.front();
    }
    return std::nullopt;
}

} // namespace

int ReservationTable::holders(int resource, int64_t begin, int64_t end) const {
    std::vector<Interval> holds = overlapping(lanes_.at(resource), begin, end);
    std::vector<std::pair<int64_t, int>> events;
    for (const Interval &h : holds) {
        events.push_back({std::max(h.begin, begin), +1});
        events.push_back({std::min(h.end, end), -1});
    }
    std::sort(events.begin(), events.end()); // at one cycle, ends (-1) before starts
    int now = 0, most = 0;
    for (auto &[t, d] : events) most = std::max(most, now += d);
    return most;
}

int64_t ReservationTable::next_free(int resource, int64_t not_before, int64_t duration, int needed) const {
    if (duration <= 0) return not_before;
    const auto &lanes = lanes_.at(resource);
    if (lanes.size() == 1) return lane_next_free(lanes[0], not_before, duration);
    const int limit = int(lanes.size()) - std::min(needed, int(lanes.size())) + 1; // holders at a cycle: no room
    // One sweep forward from not_before over the holds' starts (merged from the sorted lanes)
    // and ends (a min-heap of the holds covering `now`). A window [t, t + duration) fails at the
    // first cycle it holds `limit` holders, and then no start up to that cycle can succeed: the
    // next candidate is the first cycle after it with fewer. Each hold is visited once, and the
    // sweep stops at the first window that fits (holds far ahead are never read).
    std::vector<Lane::const_iterator> next_start;
    next_start.reserve(lanes.size());
    for (const Lane &lane : lanes) next_start.push_back(first_ending_after(lane, not_before));
    auto later_end = [](int64_t a, int64_t b) { return a > b; };
    std::vector<int64_t> active_ends; // min-heap
    int64_t t = not_before, now = not_before;
    while (true) {
        while (!active_ends.empty() && active_ends.front() <= now) {
            std::pop_heap(active_ends.begin(), active_ends.end(), later_end);
            active_ends.pop_back();
        }
        int64_t upcoming = INT64_MAX; // the next start after now
        for (size_t l = 0; l < lanes.size(); ++l) {
            auto &it = next_start[l];
            for (; it != lanes[l].end() && it->begin <= now; ++it) {
                if (it->end <= now) continue;
                active_ends.push_back(it->end);
                std::push_heap(active_ends.begin(), active_ends.end(), later_end);
            }
            if (it != lanes[l].end()) upcoming = std::min(upcoming, it->begin);
        }
        if (int(active_ends.size()) >= limit) {
            now = t = active_ends.front(); // full at now: the window starts once a holder leaves
            continue;
        }
        if (upcoming >= t + duration) return t;
        now = upcoming;
    }
}

std::optional<Interval> ReservationTable::blocker(int resource, int64_t begin, int64_t end, int needed) const {
    const auto &lanes = lanes_.at(resource);
    return first_full(overlapping(lanes, begin, end), begin, end, int(lanes.size()) - std::min(needed, int(lanes.size())) + 1);
}

void ReservationTable::add_to_any_lane(int resource, Interval interval) {
    if (interval.end <= interval.begin) return;
    const int lane = free_lane(resource, interval.begin, interval.end);
    if (lane >= 0) {
        add(resource, lane, interval);
        return;
    }
    std::vector<Lane> &lanes = lanes_.at(resource);
    std::vector<Interval> holds{interval};
    for (Lane &l : lanes) {
        holds.insert(holds.end(), l.begin(), l.end());
        l.clear();
    }
    std::sort(holds.begin(), holds.end(), [](const Interval &a, const Interval &b) { return a.begin < b.begin; });
    for (const Interval &h : holds) {
        // By start: a lane whose last hold has ended. There is one whenever no cycle has more
        // holds than lanes; otherwise the caller skipped its check, and the lane that frees
        // first takes it (an overlap, as before this re-assignment existed).
        size_t best = 0;
        for (size_t i = 0; i < lanes.size(); ++i) {
            const int64_t free_at = lanes[i].empty() ? INT64_MIN : lanes[i].back().end;
            const int64_t best_at = lanes[best].empty() ? INT64_MIN : lanes[best].back().end;
            if (free_at <= h.begin) {
                best = i;
                break;
            }
            if (free_at < best_at) best = i;
        }
        lanes[best].push_back(h);
    }
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
