#pragma once
// The host search space of a pipeline (autotune.h), generated from its algorithm: for each
// producer whether it is inlined or computed at the root, and for each stage computed at the
// root its parallel loop and its vector width. A reduction over a 2-D or larger output (matmul,
// conv) gets tiles at each level of the memory hierarchy, as a BLIS-style kernel has them:
//  - registers: a tile of unrolled rows (and, with 3+ dimensions, unrolled planes: a conv's
//    output channels) x half a vector or 1-3 vectors of columns, with the reduction inside it,
//    its loops in the declared order or reversed;
//  - L1: a block of the innermost reduction loop outside the tile loops;
//  - L2: strips of columns outside the reduction block;
// the order of the row and column tile loops, which loop runs in parallel (row tiles or
// column strips), and packing: the input read with the columns as its last coordinate (B of a
// matmul) staged per block into contiguous column panels (Input::stage with a blocked layout).
// Reductions along the rows that only the output and each other read (a norm's statistics, a
// softmax's maximum and sum) are computed at the root or, together, at blocks of the output's
// rows, vectorized across the block's rows with the reduction inside: the block's rows are still
// in cache when the output reads them again (what Halide's Adams2019 picks for RMSNorm).
// A candidate is one value per knob; apply() records its directives on the pipeline.
#include <cstdint>
#include <string>
#include <vector>

#include "host_machine.h"
#include "tessera/func.h"

namespace tessera::internal::autotune {

/// One choice of the space: its name ("matmul.s1.rows") and its values, as text.
struct Knob {
    std::string name;
    std::vector<std::string> values;
};

/// How many candidates the knobs make (their value counts multiplied), at most 2^62.
int64_t candidate_count(const std::vector<Knob> &knobs);

/// A point of the space: an index into each knob's values.
using Candidate = std::vector<int>;

class HostSearchSpace {
public:
    /// The space of `pipeline` for a CPU with `lanes` fp32 lanes per vector register; the
    /// output shapes bound the tile sizes of the outputs' stages.
    HostSearchSpace(const Pipeline &pipeline, int lanes, const std::vector<std::vector<int64_t>> &output_shapes = {});

    const std::vector<Knob> &knobs() const { return knobs_; }
    /// The number of candidates (the product of the knobs' sizes), saturating at 2^62.
    int64_t size() const;
    /// The candidate numbered `n` (mixed radix over the knobs), for exhaustive search.
    Candidate nth(int64_t n) const;
    /// "matmul.s1.rows=4 matmul.s1.vector=1x ...": what a person reads in the history.
    std::string describe(const Candidate &c) const;
    /// The search's first candidate, from the machine's registers and caches (no op's name or
    /// library schedule): each tiled stage's register tile as many rows of two vectors as leave
    /// a vector of the column operand and a broadcast free in the vector registers, one plane;
    /// the reduction blocked so that a block of the column operand's panel fills half of L1,
    /// column strips whose packed panels fill half of L2, the column operand packed, row tiles
    /// in parallel; other stages one vector wide and parallel; producers inlined.
    Candidate register_and_cache_rule(const HostMachine &machine) const;
    /// Replaces the pipeline's schedule by the candidate's directives. Throws tessera::Error
    /// (from the directives) where a combination is illegal for this pipeline.
    void apply(const Candidate &c, const Pipeline &pipeline) const;

private:
    struct StagePlan {
        std::string func;
        int stage = 0;
        std::vector<std::string> pure;  ///< the stage's pure loops, outermost first
        std::vector<std::string> rvars; ///< its reduction loops, innermost first (RDom order)
        std::vector<int64_t> extents;   ///< of the pure loops, 0 when unknown
        int64_t first_rvar_extent = 0;  ///< 0 when unknown
        ///< knob indices, -1: none
        int parallel = -1, vector = -1, rows = -1, planes = -1, kblock = -1, strip = -1, order = -1, reduction_order = -1, pack = -1;
    };
    struct FuncPlan {
        std::string name;
        int compute = -1; ///< knob index of inline/root, -1: fixed
        bool root = true; ///< when fixed
    };
    int add_knob(std::string name, std::vector<std::string> values);
    int value(const Candidate &c, int knob) const { return knob < 0 ? 0 : c.at(size_t(knob)); }
    /// The knob's value as a number (0 for "off" or no knob).
    int64_t number(const Candidate &c, int knob) const;
    void apply_reduction(const Candidate &c, const StagePlan &sp, const Func &f, Stage st) const;

    int lanes_;
    /// Row reductions (a norm's statistics, a softmax's maximum and sum) read only at their
    /// readers' rows: the output they may be computed at, them, and the knob choosing the root or
    /// a block of the output's rows (-1: no such reductions).
    std::string rows_output_;
    std::vector<std::string> row_reductions_;
    int row_blocks_ = -1;
    std::vector<Knob> knobs_;
    std::vector<FuncPlan> funcs_;
    std::vector<StagePlan> stages_;
};

} // namespace tessera::internal::autotune
