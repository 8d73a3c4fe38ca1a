#pragma once
// How well a cost model's predictions match measurements: Spearman's rank correlation (ties
// get their mean rank) and the mean relative error |predicted - measured| / measured.
#include <vector>

namespace tessera::internal::autotune {

/// In [-1, 1]; 0 for fewer than 2 pairs or a constant side. Throws tessera::Error when the
/// vectors differ in length.
double spearman(const std::vector<double> &predicted, const std::vector<double> &measured);
double mean_relative_error(const std::vector<double> &predicted, const std::vector<double> &measured);

} // namespace tessera::internal::autotune
