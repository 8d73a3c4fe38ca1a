// First-fit placement over bank row ranges (bank_allocator.h).
#include "bank_allocator.h"

#include <algorithm>

#include "tessera/chipsim/timing_model.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

BankAllocator::BankAllocator(const chipsim::Target &target) : target_(target) {
    for (auto &m : target_.memories) {
        std::vector<std::vector<Range>> banks;
        if (m.interleaved) banks.push_back({{0, m.total_rows()}});
        else
            for (int b = 0; b < m.total_banks(); ++b) banks.push_back({{0, m.rows_per_bank}});
        free_.push_back(std::move(banks));
    }
}

int BankAllocator::memory_index(const std::string &memory) const {
    for (size_t i = 0; i < target_.memories.size(); ++i)
        if (target_.memories[i].name == memory) return int(i);
    throw Error("chip backend: " + target_.name + " has no memory " + memory);
}

std::optional<int64_t> BankAllocator::take(std::vector<Range> &free, int64_t rows, int64_t at) {
    for (size_t i = 0; i < free.size(); ++i) {
        Range &r = free[i];
        int64_t b = at >= 0 ? at : r.begin;
        if (b < r.begin || b + rows > r.end) continue;
        if (b == r.begin) {
            r.begin += rows;
            if (r.begin == r.end) free.erase(free.begin() + long(i));
        } else {
            Range tail{b + rows, r.end};
            r.end = b;
            if (tail.begin < tail.end) free.insert(free.begin() + long(i) + 1, tail);
        }
        return b;
    }
    return std::nullopt;
}

void BankAllocator::give(std::vector<Range> &free, int64_t begin, int64_t end) {
    free.push_back({begin, end});
    std::sort(free.begin(), free.end(), [](const Range &a, const Range &b) { return a.begin < b.begin; });
    std::vector<Range> merged;
    for (auto &r : free) {
        if (!merged.empty() && merged.back().end >= r.begin) merged.back().end = std::max(merged.back().end, r.end);
        else merged.push_back(r);
    }
    free = std::move(merged);
}

std::optional<chipsim::TileRef> BankAllocator::in_bank(const std::string &memory, int flat_bank, int64_t rows) {
    const int mi = memory_index(memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    if (m.interleaved || flat_bank < 0 || flat_bank >= m.total_banks())
        throw Error("chip backend: bank " + std::to_string(flat_bank) + " is not a bank of " + memory + " on " + target_.name +
                    " (banks 0.." + std::to_string(m.total_banks() - 1) + ")");
    auto base = take(free_[size_t(mi)][size_t(flat_bank)], rows);
    if (!base) return std::nullopt;
    return chipsim::bank_tile(m, flat_bank, *base, rows);
}

std::optional<chipsim::TileRef> BankAllocator::interleaved(const std::string &memory, int hemisphere, int bank, int64_t rows) {
    const int mi = memory_index(memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    const int64_t local = m.rows_per_slice(rows);
    auto &banks = free_[size_t(mi)];
    // The same local rows must be free in every slice: try each free start of the first slice.
    std::vector<int64_t> starts;
    for (auto &r : banks[size_t(m.flat_bank(hemisphere, 0, bank))]) starts.push_back(r.begin);
    for (int64_t s : starts) {
        bool ok = true;
        for (int sl = 0; sl < m.slices && ok; ++sl) {
            const auto &fr = banks[size_t(m.flat_bank(hemisphere, sl, bank))];
            ok = std::any_of(fr.begin(), fr.end(), [&](const Range &r) { return r.begin <= s && s + local <= r.end; });
        }
        if (!ok) continue;
        for (int sl = 0; sl < m.slices; ++sl) take(banks[size_t(m.flat_bank(hemisphere, sl, bank))], local, s);
        return chipsim::slice_interleaved_tile(m, hemisphere, bank, s, rows);
    }
    return std::nullopt;
}

std::optional<chipsim::TileRef> BankAllocator::flat(const std::string &memory, int64_t rows) {
    const int mi = memory_index(memory);
    auto base = take(free_[size_t(mi)][0], rows);
    if (!base) return std::nullopt;
    chipsim::TileRef t;
    t.memory = memory;
    t.base = *base;
    t.count = rows;
    return t;
}

void BankAllocator::release(const chipsim::TileRef &t) {
    const int mi = memory_index(t.memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    // An interleaved memory's span (bank -1) is its one flat row space, free_[memory][0].
    for (const chipsim::BankSpan &span : chipsim::bank_spans(m, t))
        give(free_[size_t(mi)][size_t(std::max(span.bank, 0))], span.begin, span.end);
}

void BankAllocator::claim(const chipsim::TileRef &t) {
    const int mi = memory_index(t.memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    for (const chipsim::BankSpan &span : chipsim::bank_spans(m, t))
        if (!take(free_[size_t(mi)][size_t(std::max(span.bank, 0))], span.end - span.begin, span.begin))
            throw Error("chip backend: internal: rows " + std::to_string(span.begin) + ".." + std::to_string(span.end - 1) +
                        " of " + t.memory + " are taken twice");
}

std::vector<chipsim::BankSpan> BankAllocator::take_free(const chipsim::TileRef &t) {
    const int mi = memory_index(t.memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    std::vector<chipsim::BankSpan> taken;
    for (const chipsim::BankSpan &span : chipsim::bank_spans(m, t)) {
        std::vector<Range> &free = free_[size_t(mi)][size_t(std::max(span.bank, 0))];
        std::vector<Range> inside;
        for (const Range &r : free)
            if (std::max(r.begin, span.begin) < std::min(r.end, span.end)) inside.push_back({std::max(r.begin, span.begin), std::min(r.end, span.end)});
        for (const Range &r : inside) {
            take(free, r.end - r.begin, r.begin);
            taken.push_back({span.bank, r.begin, r.end});
        }
    }
    return taken;
}

void BankAllocator::release_spans(const std::string &memory, const std::vector<chipsim::BankSpan> &spans) {
    const int mi = memory_index(memory);
    for (const chipsim::BankSpan &span : spans) give(free_[size_t(mi)][size_t(std::max(span.bank, 0))], span.begin, span.end);
}

int64_t BankAllocator::free_rows(const std::string &memory, int flat_bank) const {
    const int mi = memory_index(memory);
    int64_t n = 0;
    for (auto &r : free_[size_t(mi)][size_t(flat_bank)]) n += r.end - r.begin;
    return n;
}

} // namespace tessera::internal::chip
