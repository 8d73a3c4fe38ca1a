#pragma once
// The learned host cost model: gradient-boosted regression trees (XGBoost, the model TVM's
// tuners use) from a candidate's loop-nest features (loop_nest_features.h) to the logarithm of
// its measured time, so that it learns ratios, which is what ranking needs. Trained on this
// run's measurements and on the tuning database's earlier records of the same workload and
// target. XGBoost stays inside learned_cost_model.cpp.
#include <memory>
#include <vector>

namespace tessera::internal::autotune {

class LearnedCostModel {
public:
    LearnedCostModel();
    ~LearnedCostModel();
    LearnedCostModel(const LearnedCostModel &) = delete;
    LearnedCostModel &operator=(const LearnedCostModel &) = delete;

    /// One measured sample. Every sample has as many features as the first.
    void add(std::vector<float> features, double seconds);
    int samples() const { return static_cast<int>(labels_.size()); }
    /// Fits the trees to every sample so far (deterministically). Needs at least 4 samples;
    /// returns whether it trained.
    bool train();
    bool trained() const { return booster_ != nullptr; }
    /// Predicted seconds of each row; throws tessera::Error before train().
    std::vector<double> predict_seconds(const std::vector<std::vector<float>> &rows) const;

private:
    std::vector<float> data_; ///< row-major samples
    std::vector<float> labels_;
    size_t columns_ = 0;
    void *booster_ = nullptr; ///< BoosterHandle
};

} // namespace tessera::internal::autotune
