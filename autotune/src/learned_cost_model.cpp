// The learned host cost model (learned_cost_model.h) on XGBoost's C API.
#include "learned_cost_model.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <string>

#include "tessera/error.h"

namespace tessera::internal::autotune {

namespace {

void check(int status, const char *what) {
    if (status != 0) throw Error(std::string("learned cost model: XGBoost ") + what + " failed: " + XGBGetLastError());
}

/// A DMatrix freed when it goes out of scope.
struct Matrix {
    DMatrixHandle handle = nullptr;
    Matrix(const float *data, size_t rows, size_t columns) {
        check(XGDMatrixCreateFromMat(data, bst_ulong(rows), bst_ulong(columns), NAN, &handle), "DMatrix creation");
    }
    ~Matrix() { XGDMatrixFree(handle); }
    Matrix(const Matrix &) = delete;
    Matrix &operator=(const Matrix &) = delete;
};

} // namespace

LearnedCostModel::LearnedCostModel() = default;

LearnedCostModel::~LearnedCostModel() {
    if (booster_) XGBoosterFree(booster_);
}

void LearnedCostModel::add(std::vector<float> features, double seconds) {
    if (columns_ == 0) columns_ = features.size();
    if (features.size() != columns_ || columns_ == 0)
        throw Error("learned cost model: a sample has " + std::to_string(features.size()) + " features, the others " +
                    std::to_string(columns_));
    if (!(seconds > 0) || !std::isfinite(seconds)) throw Error("learned cost model: a measured time must be positive");
    data_.insert(data_.end(), features.begin(), features.end());
    labels_.push_back(float(std::log(seconds)));
}

bool LearnedCostModel::train() {
    if (labels_.size() < 4) return false;
    Matrix m(data_.data(), labels_.size(), columns_);
    check(XGDMatrixSetFloatInfo(m.handle, "label", labels_.data(), bst_ulong(labels_.size())), "labels");
    BoosterHandle booster = nullptr;
    check(XGBoosterCreate(&m.handle, 1, &booster), "booster creation");
    // Small, shallow trees: a run has tens to hundreds of samples. One thread and a fixed seed
    // make a fit depend only on its samples.
    const char *params[][2] = {{"objective", "reg:squarederror"}, {"max_depth", "4"}, {"eta", "0.2"},
                               {"min_child_weight", "1"}, {"nthread", "1"}, {"seed", "0"}, {"verbosity", "0"}};
    for (const auto &p : params) check(XGBoosterSetParam(booster, p[0], p[1]), "parameter");
    for (int round = 0; round < 80; ++round) check(XGBoosterUpdateOneIter(booster, round, m.handle), "training");
    if (booster_) XGBoosterFree(booster_);
    booster_ = booster;
    return true;
}

std::vector<double> LearnedCostModel::predict_seconds(const std::vector<std::vector<float>> &rows) const {
    if (!booster_) throw Error("learned cost model: predict_seconds() before train()");
    if (rows.empty()) return {};
    std::vector<float> flat;
    flat.reserve(rows.size() * columns_);
    for (const auto &r : rows) {
        if (r.size() != columns_) throw Error("learned cost model: a row has " + std::to_string(r.size()) + " features, not " + std::to_string(columns_));
        flat.insert(flat.end(), r.begin(), r.end());
    }
    Matrix m(flat.data(), rows.size(), columns_);
    bst_ulong n = 0;
    const float *out = nullptr;
    check(XGBoosterPredict(booster_, m.handle, 0, 0, 0, &n, &out), "prediction");
    std::vector<double> seconds(n);
    for (bst_ulong i = 0; i < n; ++i) seconds[i] = std::exp(double(out[i]));
    return seconds;
}

} // namespace tessera::internal::autotune
