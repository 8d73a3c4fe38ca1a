#pragma once
// The Z3 model of what a chip allows a matmul's (or a conv's implicit GEMM's) chip schedule:
// the output tile against the accumulator's capacity, the tile width against the MXM's unit
// shape, an explicit accumulator bank against the banks that exist and against an interleaved
// accumulator (where no bank can be chosen). Every number is read from the chipsim target the
// model is built from; the constraints are the ones the chip backend enforces (gemm_codegen.cpp),
// so a candidate the model approves compiles and one it refuses would be refused there.
// Private to tessera_autotune: no Z3 header here.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/chipsim/target.h"

namespace tessera::internal::autotune {

/// The chip directives of one candidate (0 / -1: the backend's or library schedule's own).
struct ChipMatmulChoice {
    int64_t tile_m = 0;  ///< accumulator rows per output tile (tile i); 0: the library's
    int64_t tile_n = 0;  ///< output tile columns (tile j); 0: the library's
    int acc_bank = -1;   ///< store_in(ACC, bank); -1: any
    int64_t blocks_per_row = 0; ///< blocks_per_row(n) (chip_blocks_per_row_values); 0: the backend's rule
    std::string tile_order;     ///< tile_order(order) (chip_tile_order_values); empty: the backend's rule
    int double_buffer = -1;     ///< double_buffer(false) when 0 (chip_double_buffer_values); -1: the library's
    bool operator<(const ChipMatmulChoice &o) const;
    bool operator==(const ChipMatmulChoice &o) const;
    std::string to_string() const;
};

class ChipConstraintModel {
public:
    /// For a product of `n` columns computed from `in_dtype` operands on `target`.
    ChipConstraintModel(const chipsim::Target &target, chipsim::DType in_dtype, int64_t n);
    ~ChipConstraintModel();
    ChipConstraintModel(const ChipConstraintModel &) = delete;
    ChipConstraintModel &operator=(const ChipConstraintModel &) = delete;

    /// Empty when the choice satisfies every constraint; otherwise the constraints of Z3's
    /// unsat core in plain words with their numbers ("an output tile of 2048 rows needs 2048
    /// accumulator rows; an ACC bank of tsp-mini holds 1024").
    std::optional<std::string> why_infeasible(const ChipMatmulChoice &choice) const;
    /// The accumulator banks the solver's models allow for these tile sizes, -1 (any) first;
    /// empty when the tile itself is infeasible.
    std::vector<int> feasible_banks(int64_t tile_m, int64_t tile_n) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace tessera::internal::autotune
