#pragma once
// Magnitude pruning at load time: zeroes the weights of smallest magnitude of a (rows x cols)
// row-major f32 matrix, in place, before it is packed into a sparse format.
#include <cstdint>
#include <string>
#include <vector>

namespace cibench {

// Block shape of the "block" pattern: 1 x kPruneBlockCols (the int8_bs format's blocks).
constexpr int64_t kPruneBlockCols = 16;

// Patterns:
//   "unstructured"  per row: the round(sparsity * cols) smallest |w| become zero, so every row
//                   keeps the same number of weights (ties broken towards the lower column);
//   "block"         per row: the round(sparsity * n_blocks) 1x16 blocks (the last one ragged when
//                   16 does not divide cols) of smallest L2 norm become zero;
//   "2:4"           in every group of 4 consecutive columns of a row the 2 smallest |w| become
//                   zero (a ragged last group of n < 4 keeps min(n, 2)); exactly 50 %, so
//                   `sparsity` only has to be in (0, 1).
// Throws Error on an unknown pattern or a sparsity outside [0, 1). sparsity == 0 is a no-op.
void prune_magnitude(float* w, int64_t rows, int64_t cols, double sparsity,
                     const std::string& pattern);

// One matrix of a model for global pruning: `w` is (rows x cols), row-major.
struct PruneTarget {
  float* w;
  int64_t rows;
  int64_t cols;
};

// Global magnitude pruning: one threshold across every target, so round(sparsity * total
// weights) of smallest |w| become zero and layers whose weights are small lose more (the
// per-layer patterns above give every row the same count). Ties are broken towards the earlier
// target, then the lower index. Throws Error on a sparsity outside [0, 1).
void prune_magnitude_global(const std::vector<PruneTarget>& targets, double sparsity);

// True for the patterns that prune one matrix at a time (unstructured, block, 2:4); "global"
// prunes the model's projections together (prune_magnitude_global).
bool is_per_matrix_prune_pattern(const std::string& pattern);

// Prunes `targets` with `pattern` (unstructured, block, 2:4 per matrix, or global); throws Error
// naming the pattern when it is none of these.
void prune_targets(const std::vector<PruneTarget>& targets, double sparsity, const std::string& pattern);

// The pattern a format wants: "*_24" -> "2:4", "*_bs" -> "block", anything else ->
// "unstructured".
const char* prune_pattern_for_format(const std::string& format_name);

}  // namespace cibench
