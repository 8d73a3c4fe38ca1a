#pragma once
// Workloads: what a tuning record measured, named independently of the names a user gave.
//
// A tuning record must be found again by a later compile of the same computation — built by
// ops::matmul in C++, by `tessera tune matmul ...` on the command line, or written by hand with
// other Func, Var, RDom, Input and Param names. dsl's structural hash (ir_equality.h) hashes
// names, so it cannot serve as the key. A Workload is the pipeline's *canonical form*: the
// same serialisation of its definitions with every name replaced by its role —
//   Funcs   f0, f1, ...   in producers-first (topological) order, outputs last;
//   Inputs  in0, in1, ... in order of first use;
//   Params  p0, p1, ...   in order of first use;
//   pure Vars of a Func x0, x1, ... by argument position; its RVars r0, r1, ... in order of
//   first appearance in its RDoms; Let names l0, l1, ... in order of appearance —
// plus the output shapes. The key is a hash of that text, so renaming anything leaves the key
// unchanged while any change of algorithm, dtype or shape (of an Input or an output) changes
// it. The canonical text itself is kept beside the key so that a hash collision is detected
// rather than answered with another workload's schedule.
//
// Schedules name Funcs, Inputs and loops, so the tuning database stores them in canonical
// names: to_canonical() renames a schedule written for this pipeline, from_canonical() renames
// a stored one back into this pipeline's names. Loops a schedule creates (split and tile
// outputs) become t0, t1, ... per Func in canonical order on the way in; on the way out they
// keep those names unless one collides with a name the Func already uses, which gets a '_'
// appended until it is free. The implicit loops "<v>.v" and "<v>.u" of vectorize/unroll with a
// factor follow their loop's name. An Input copy's dimensions (d0, d1, ...) keep their names.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/schedule.h"

namespace tessera {

/// Version of the canonical serialisation, its first line. Changing the serialisation
/// invalidates stored workload keys: bump it when you do.
inline constexpr int kWorkloadFormatVersion = 1;

namespace internal {
struct WorkloadNames;
}

/// A pipeline at given output shapes, in canonical names (see the file comment).
class Workload {
public:
    /// The workload of `pipeline` computing outputs of these shapes (one per output, as
    /// realize takes them). `description` is kept for people (e.g. "matmul M=512 N=384
    /// K=256 dtype=fp32"); empty makes one from the pipeline's own names and shapes. Throws
    /// tessera::Error when a shape is missing or of the wrong rank, an output is undefined, or
    /// two different Funcs (or Inputs) share a name, since schedules could not tell them apart.
    static Workload of(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                       const std::string &description = "");

    /// 16 lowercase hex digits: FNV-1a (64-bit) of canonical_form().
    const std::string &key() const { return key_; }
    /// The canonical serialisation (several lines of text).
    const std::string &canonical_form() const { return canonical_; }
    const std::string &description() const { return description_; }

    /// `s` (in this pipeline's names) renamed into canonical names. Throws tessera::Error when
    /// it schedules a Func or Input this pipeline lacks.
    Schedule to_canonical(const Schedule &s) const;
    /// A stored schedule (in canonical names) renamed into this pipeline's names. Throws
    /// tessera::Error when it schedules a Func or Input this workload lacks.
    Schedule from_canonical(const Schedule &s) const;

private:
    std::string key_, canonical_, description_;
    std::shared_ptr<const internal::WorkloadNames> names_;
};

/// FNV-1a (64-bit) of `text` as 16 lowercase hex digits; the workload key and the target hash.
std::string fnv1a_hex(const std::string &text);

} // namespace tessera
