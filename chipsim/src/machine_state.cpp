#include "machine_state.h"

#include "tessera/chipsim/error.h"

#include <algorithm>
#include <cstring>

namespace tessera::chipsim::internal {

bool DramImage::read(int64_t address, uint8_t *out, int64_t n) const {
    bool all_written = true;
    while (n > 0) {
        int64_t page = address >> 12, off = address & 4095, take = std::min<int64_t>(n, 4096 - off);
        auto it = pages_.find(page);
        if (it == pages_.end()) {
            std::memset(out, 0, size_t(take));
            all_written = false;
        } else {
            std::memcpy(out, it->second.bytes.data() + off, size_t(take));
            for (int64_t g = off >> 6; g <= (off + take - 1) >> 6; ++g)
                if (!((it->second.written >> g) & 1u)) all_written = false;
        }
        address += take;
        out += take;
        n -= take;
    }
    return all_written;
}

void DramImage::write(int64_t address, const uint8_t *in, int64_t n) {
    while (n > 0) {
        int64_t page = address >> 12, off = address & 4095, take = std::min<int64_t>(n, 4096 - off);
        Page &p = pages_[page];
        std::memcpy(p.bytes.data() + off, in, size_t(take));
        // A burst counts as written once any byte of it is; partial bursts keep DMA granular.
        for (int64_t g = off >> 6; g <= (off + take - 1) >> 6; ++g) p.written |= uint64_t(1) << g;
        address += take;
        in += take;
        n -= take;
    }
}

MachineState::MachineState(const Target &t, const Program &program, const std::map<std::string, TensorData> &inputs)
    : target(t), dram(t.dram.bytes) {
    for (auto &m : t.memories) {
        MemoryImage img;
        img.row_bytes = m.row_bytes;
        img.bytes.assign(size_t(m.capacity_bytes()), 0);
        img.written.assign(size_t(m.total_rows()), 0);
        memories.push_back(std::move(img));
    }
    weights.assign(size_t(t.mxm.count), std::vector<WeightBuffer>(size_t(t.mxm.weight_buffers)));
    for (auto &decl : program.tensors) {
        TensorImage img;
        img.decl = decl;
        if (decl.is_output || decl.is_buffer) {
            img.bytes.assign(size_t(decl.bytes()), 0);
            img.written.assign(size_t(decl.bytes()), 0);
        } else {
            auto it = inputs.find(decl.name);
            if (it == inputs.end())
                throw SimError("input '" + decl.name + "' has no data: give it with --input " + decl.name +
                               "=FILE.npy or file= in its .input directive");
            const TensorData &d = it->second;
            if (d.dtype != decl.dtype || d.shape != decl.shape) {
                auto shape_text = [](const std::vector<int64_t> &s) {
                    std::string r = "[";
                    for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
                    return r + "]";
                };
                throw SimError("input '" + decl.name + "' is " + dtype_name(d.dtype) + " " + shape_text(d.shape) +
                               " but the program declares " + dtype_name(decl.dtype) + " " + shape_text(decl.shape));
            }
            if (int64_t(d.bytes.size()) != decl.bytes())
                throw SimError("input '" + decl.name + "' has " + std::to_string(d.bytes.size()) + " bytes, expected " +
                               std::to_string(decl.bytes()));
            img.bytes = d.bytes;
        }
        tensors.emplace(decl.name, std::move(img));
    }
}

} // namespace tessera::chipsim::internal
