#pragma once
// The chip search space of a pipeline the chip's loop-nest compiler takes (vector pipelines,
// and matrix stages: updates f += a * b the library matmul does not take, as an MLP block's two
// matmuls with work between), generated from its algorithm. The knobs are the choices that
// compiler honours:
//  - which loop of the output runs in the VXM's lanes (the chip's default rule, the rows: the
//    output's first dimension, or the columns: its last) and its row blocks: a split of its row
//    loop (in the lanes when the rows are), each stage of the output split alike so that
//    producers can be computed per block;
//  - per producer: inline (a pure one), root, or computed at the row loop (the row block when
//    there is one) of a Func that reads it, directly or through pure Funcs that may be inlined;
//  - per producer computed at the root: row blocks of its own;
//  - per reduction: a split of its innermost reduction loop (the VXM reduces each part in turn).
// A candidate is one value per knob; apply() records its directives on the pipeline. Which
// combinations the backend refuses is its business: a refused candidate is counted, never
// ranked. The one target rule a knob can break before compiling, a row block in the lanes that
// is not a multiple of the lanes, is the Z3 model's (chip_loop_nest_constraints.h).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "host_search_space.h"
#include "tessera/func.h"

namespace tessera::internal::autotune {

class ChipLoopNestSpace {
public:
    /// The space of `pipeline` on a chip whose vector registers hold `vector_bytes`; the output
    /// shapes bound the row blocks and reduction splits.
    ChipLoopNestSpace(const Pipeline &pipeline, int vector_bytes, const std::vector<std::vector<int64_t>> &output_shapes);

    const std::vector<Knob> &knobs() const { return knobs_; }
    /// The number of candidates (the product of the knobs' sizes), saturating at 2^62.
    int64_t size() const;
    /// At most `limit` distinct candidates, nearest the default rule first: the default (every
    /// knob's first value), then by the number of knobs changed, in an order drawn with `seed`
    /// within each count (the same seed, the same list): the few-knob changes the backend
    /// most often takes are compiled before the many-knob ones.
    std::vector<Candidate> candidates(size_t limit, uint64_t seed) const;
    /// False where a producer is computed at a Func the candidate inlines (no loop to be
    /// computed at), or at a loop some other reader of it runs outside (a softmax's maximum at
    /// the output's rows while its sum of exponentials is computed at the root): such a
    /// combination is no candidate, candidates() leaves it out.
    bool coherent(const Candidate &c) const;
    /// "out.vector=rows/32 sum_squares.compute=at out": what a person reads.
    std::string describe(const Candidate &c) const;
    /// The candidate's row block of the output with the rows in the lanes (0: none), and the
    /// lanes of the output's element type: what the Z3 model checks.
    int64_t lane_row_block(const Candidate &c) const;
    int output_lanes() const { return output_lanes_; }
    /// Replaces the pipeline's schedule by the candidate's directives. Throws tessera::Error
    /// (from the directives) where a combination is illegal for this pipeline.
    void apply(const Candidate &c, const Pipeline &pipeline) const;

private:
    struct ProducerPlan {
        std::string func;
        bool pure = true;                   ///< no update: it may be inlined
        std::vector<std::string> consumers; ///< compute_at choices, in the order of the knob's values
        std::set<std::string> readers;      ///< every Func reading it, through pure Funcs that may be inlined
        int compute = -1, row_block = -1;   ///< knob indices
    };
    struct ReductionPlan {
        std::string func;
        int stage = 1;
        std::string rvar;
        int split = -1;
    };
    int add_knob(std::string name, std::vector<std::string> values);
    const std::string &text(const Candidate &c, int knob) const { return knobs_[size_t(knob)].values[size_t(c[size_t(knob)])]; }
    int64_t number(const Candidate &c, int knob) const;

    std::vector<Knob> knobs_;
    std::string output_;
    std::vector<std::string> output_args_;
    int output_stages_ = 1;
    int output_lanes_ = 16;
    int lanes_ = -1; ///< the output's vector knob: its lanes and row blocks
    std::vector<ProducerPlan> producers_;
    std::vector<ReductionPlan> reductions_;
};

} // namespace tessera::internal::autotune
