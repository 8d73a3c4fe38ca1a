// First-fit placement over bank row ranges (bank_allocator.h).
#include "bank_allocator.h"

#include <algorithm>

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
    chipsim::TileRef t;
    t.memory = memory;
    const int slice_flat = flat_bank / m.banks;
    if (m.hemispheres * m.slices > 1) {
        t.side = m.hemispheres == 2 ? (slice_flat / m.slices ? 'e' : 'w') : 's';
        t.slice = slice_flat % m.slices;
    }
    t.bank = flat_bank % m.banks;
    t.base = *base;
    t.count = rows;
    return t;
}

std::optional<chipsim::TileRef> BankAllocator::interleaved(const std::string &memory, int hemisphere, int bank, int64_t rows) {
    const int mi = memory_index(memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    const int64_t local = (rows + m.slices - 1) / m.slices;
    auto &banks = free_[size_t(mi)];
    // The same local rows must be free in every slice: try each free start of the first slice.
    const int first = (hemisphere * m.slices) * m.banks + bank;
    std::vector<int64_t> starts;
    for (auto &r : banks[size_t(first)]) starts.push_back(r.begin);
    for (int64_t s : starts) {
        bool ok = true;
        for (int sl = 0; sl < m.slices && ok; ++sl) {
            const auto &fr = banks[size_t((hemisphere * m.slices + sl) * m.banks + bank)];
            ok = std::any_of(fr.begin(), fr.end(), [&](const Range &r) { return r.begin <= s && s + local <= r.end; });
        }
        if (!ok) continue;
        for (int sl = 0; sl < m.slices; ++sl) take(banks[size_t((hemisphere * m.slices + sl) * m.banks + bank)], local, s);
        chipsim::TileRef t;
        t.memory = memory;
        t.side = m.hemispheres == 2 ? (hemisphere ? 'e' : 'w') : 's';
        t.slice = -1;
        t.bank = bank;
        t.base = s * m.slices;
        t.count = rows;
        return t;
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
    auto &banks = free_[size_t(mi)];
    if (m.interleaved) {
        give(banks[0], t.base, t.base + t.count);
        return;
    }
    const int h = t.side == 'e' ? 1 : 0;
    if (t.slice < 0 && m.hemispheres * m.slices > 1) {
        const int64_t local = (t.count + m.slices - 1) / m.slices, s = t.base / m.slices;
        for (int sl = 0; sl < m.slices; ++sl) give(banks[size_t((h * m.slices + sl) * m.banks + t.bank)], s, s + local);
        return;
    }
    const int slice = t.slice < 0 ? 0 : t.slice;
    give(banks[size_t((h * m.slices + slice) * m.banks + t.bank)], t.base, t.base + t.count);
}

void BankAllocator::claim(const chipsim::TileRef &t) {
    const int mi = memory_index(t.memory);
    const chipsim::MemoryDesc &m = target_.memories[size_t(mi)];
    auto &banks = free_[size_t(mi)];
    auto take_at = [&](std::vector<Range> &free, int64_t begin, int64_t rows) {
        if (!take(free, rows, begin))
            throw Error("chip backend: internal: rows " + std::to_string(begin) + ".." + std::to_string(begin + rows - 1) + " of " +
                        t.memory + " are taken twice");
    };
    if (m.interleaved) return take_at(banks[0], t.base, t.count);
    const int h = t.side == 'e' ? 1 : 0;
    if (t.slice < 0 && m.hemispheres * m.slices > 1) {
        const int64_t local = (t.count + m.slices - 1) / m.slices, s = t.base / m.slices;
        for (int sl = 0; sl < m.slices; ++sl) take_at(banks[size_t((h * m.slices + sl) * m.banks + t.bank)], s, local);
        return;
    }
    const int slice = t.slice < 0 ? 0 : t.slice;
    take_at(banks[size_t((h * m.slices + slice) * m.banks + t.bank)], t.base, t.count);
}

int64_t BankAllocator::free_rows(const std::string &memory, int flat_bank) const {
    const int mi = memory_index(memory);
    int64_t n = 0;
    for (auto &r : free_[size_t(mi)][size_t(flat_bank)]) n += r.end - r.begin;
    return n;
}

} // namespace tessera::internal::chip
