// Rank statistics of cost-model predictions (rank_statistics.h).
#include "rank_statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tessera/error.h"

namespace tessera::internal::autotune {

namespace {

std::vector<double> ranks(const std::vector<double> &v) {
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
        for (size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * double(i + j);
        i = j + 1;
    }
    return r;
}

void check_lengths(const std::vector<double> &a, const std::vector<double> &b) {
    if (a.size() != b.size())
        throw Error("rank statistics: " + std::to_string(a.size()) + " predictions for " + std::to_string(b.size()) + " measurements");
}

} // namespace

double spearman(const std::vector<double> &predicted, const std::vector<double> &measured) {
    check_lengths(predicted, measured);
    if (predicted.size() < 2) return 0;
    const std::vector<double> a = ranks(predicted), b = ranks(measured);
    const double n = double(a.size()), mean = (n - 1) / 2;
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += (a[i] - mean) * (b[i] - mean);
        aa += (a[i] - mean) * (a[i] - mean);
        bb += (b[i] - mean) * (b[i] - mean);
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0;
}

double mean_relative_error(const std::vector<double> &predicted, const std::vector<double> &measured) {
    check_lengths(predicted, measured);
    if (predicted.empty()) return 0;
    double sum = 0;
    for (size_t i = 0; i < predicted.size(); ++i) sum += std::abs(predicted[i] - measured[i]) / measured[i];
    return sum / double(predicted.size());
}

} // namespace tessera::internal::autotune
