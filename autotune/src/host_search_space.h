#pragma once
// The host search space of a pipeline (autotune.h), generated from its algorithm: for each
// producer whether it is inlined or computed at the root, and for each stage computed at the
// root its parallel loop, its vector width and — for a reduction over a 2-D or larger output
// (matmul, conv) — a register tile of unrolled rows × a vector of columns with the reduction
// inside it, and a block of the reduction outside the tile loops. A candidate is one value per
// knob; apply() records its directives on the pipeline.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/func.h"

namespace tessera::internal::autotune {

/// One choice of the space: its name ("matmul.s1.rows") and its values, as text.
struct Knob {
    std::string name;
    std::vector<std::string> values;
};

/// A point of the space: an index into each knob's values.
using Candidate = std::vector<int>;

class HostSearchSpace {
public:
    /// The space of `pipeline` for a CPU with `lanes` fp32 lanes per vector register.
    HostSearchSpace(const Pipeline &pipeline, int lanes);

    const std::vector<Knob> &knobs() const { return knobs_; }
    /// The number of candidates (the product of the knobs' sizes), saturating at 2^62.
    int64_t size() const;
    /// The candidate numbered `n` (mixed radix over the knobs), for exhaustive search.
    Candidate nth(int64_t n) const;
    /// "matmul.s1.rows=4 matmul.s1.vector=1x ...": what a person reads in the history.
    std::string describe(const Candidate &c) const;
    /// Replaces the pipeline's schedule by the candidate's directives. Throws tessera::Error
    /// (from the directives) where a combination is illegal for this pipeline.
    void apply(const Candidate &c, const Pipeline &pipeline) const;

private:
    struct StagePlan {
        std::string func;
        int stage = 0;
        std::vector<std::string> pure;  ///< the stage's pure loops, outermost first
        std::vector<std::string> rvars; ///< its reduction loops, innermost first (RDom order)
        int64_t first_rvar_extent = 0;  ///< 0 when unknown
        int parallel = -1, vector = -1, rows = -1, kblock = -1; ///< knob indices, -1: none
    };
    struct FuncPlan {
        std::string name;
        int compute = -1; ///< knob index of inline/root, -1: fixed
        bool root = true; ///< when fixed
    };
    int add_knob(std::string name, std::vector<std::string> values);
    int value(const Candidate &c, int knob) const { return knob < 0 ? 0 : c.at(size_t(knob)); }

    int lanes_;
    std::vector<Knob> knobs_;
    std::vector<FuncPlan> funcs_;
    std::vector<StagePlan> stages_;
};

} // namespace tessera::internal::autotune
