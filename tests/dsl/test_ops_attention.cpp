// scaled_dot_product_attention (with and without the causal mask, batched, Lq != Lk) and
// lstm_cell against loops in double; fp32 and bf16; errors.
#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

/// softmax(Q Kᵀ · scale, masked) V per leading index, by definition.
std::vector<double> attention_loops(const Buffer<> &q, const Buffer<> &k, const Buffer<> &v, bool causal, double scale) {
    const auto &qs = q.shape(), &vs = v.shape();
    const int64_t lq = qs[qs.size() - 2], d = qs.back(), lk = vs[vs.size() - 2], dv = vs.back();
    const int64_t batch = count(qs) / (lq * d);
    const auto qv = values(q), kv = values(k), vv = values(v);
    std::vector<double> out;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < lq; ++i) {
            std::vector<double> p(static_cast<size_t>(lk));
            double m = -std::numeric_limits<double>::infinity(), sum = 0;
            for (int64_t j = 0; j < lk; ++j) {
                double s = 0;
                for (int64_t e = 0; e < d; ++e)
                    s += qv[static_cast<size_t>((b * lq + i) * d + e)] * kv[static_cast<size_t>((b * lk + j) * d + e)];
                p[static_cast<size_t>(j)] = causal && j > i ? -std::numeric_limits<double>::infinity() : s * scale;
                m = std::max(m, p[static_cast<size_t>(j)]);
            }
            for (double &x : p) sum += (x = std::exp(x - m));
            for (int64_t e = 0; e < dv; ++e) {
                double o = 0;
                for (int64_t j = 0; j < lk; ++j) o += p[static_cast<size_t>(j)] / sum * vv[static_cast<size_t>((b * lk + j) * dv + e)];
                out.push_back(o);
            }
        }
    return out;
}

void run_attention(Type type, std::vector<int64_t> lead, int64_t lq, int64_t lk, int64_t d, int64_t dv, bool causal,
                   std::optional<double> scale, uint64_t seed) {
    auto shape = [&](int64_t a, int64_t b) {
        std::vector<int64_t> s = lead;
        s.push_back(a);
        s.push_back(b);
        return s;
    };
    auto exprs = [](const std::vector<int64_t> &s) { return std::vector<Expr>(s.begin(), s.end()); };
    Input Q(type, exprs(shape(lq, d)), "Q"), K(type, exprs(shape(lk, d)), "K"), V(type, exprs(shape(lk, dv)), "V");
    ops::AttentionOptions o;
    o.causal = causal;
    o.scale = scale;
    const ops::Tensor out = ops::scaled_dot_product_attention(Q, K, V, o);
    EXPECT_EQ(out.type(), Float(32));
    Buffer<> q = random_buffer(type, shape(lq, d), seed), k = random_buffer(type, shape(lk, d), seed + 1),
             v = random_buffer(type, shape(lk, dv), seed + 2);
    const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d));
    expect_matches(out.realize({{Q, q}, {K, k}, {V, v}}), shape(lq, dv), attention_loops(q, k, v, causal, s), Float(32), lk);
}

TEST(OpsAttention, Fp32) {
    run_attention(Float(32), {}, 7, 7, 5, 3, false, std::nullopt, 1);
    run_attention(Float(32), {}, 7, 7, 5, 3, true, std::nullopt, 4);
    run_attention(Float(32), {2, 3}, 5, 9, 4, 6, true, 0.3, 7);
    run_attention(Float(32), {2}, 1, 13, 8, 1, false, std::nullopt, 10);
    run_attention(Float(32), {3}, 6, 4, 2, 5, true, std::nullopt, 13); // Lq > Lk: later queries see all keys
}

TEST(OpsAttention, Bf16ComputesInFp32) {
    run_attention(BFloat(16), {2}, 7, 7, 8, 4, true, std::nullopt, 20);
}

TEST(OpsAttention, Errors) {
    Input Q(Float(32), {2, 7, 5}, "Q"), K(Float(32), {2, 9, 5}, "K"), V(Float(32), {2, 8, 3}, "V"), Kd(Float(32), {2, 9, 4}, "Kd");
    Input Qi(Int(8), {2, 7, 5}, "Qi"), K2(Float(32), {9, 5}, "K2"), Vb(Float(32), {3, 9, 3}, "Vb"), Vok(Float(32), {2, 9, 3}, "Vok");
    const std::string op = "ops::scaled_dot_product_attention 'attention'";
    EXPECT_OPS_ERROR(ops::scaled_dot_product_attention(Q, K, V), op, "number of keys", "[2, 9, 5]", "[2, 8, 3]");
    EXPECT_OPS_ERROR(ops::scaled_dot_product_attention(Q, Kd, Vok), op, "feature size D");
    EXPECT_OPS_ERROR(ops::scaled_dot_product_attention(Qi, K, Vok), op, "'Qi'", "floating-point");
    EXPECT_OPS_ERROR(ops::scaled_dot_product_attention(Q, K2, Vok), op, "same rank");
    EXPECT_OPS_ERROR(ops::scaled_dot_product_attention(Q, K, Vb), op, "leading dimension 0");
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(OpsLstm, CellMatchesLoops) {
    const int64_t n = 3, in = 7, hid = 5;
    for (bool with_bias : {true, false}) {
        Input X(Float(32), {3, 7}, "x"), H(Float(32), {3, 5}, "h"), C(Float(32), {3, 5}, "c");
        Input Wih(Float(32), {20, 7}, "w_ih"), Whh(Float(32), {20, 5}, "w_hh"), Bih(Float(32), {20}, "b_ih"), Bhh(Float(32), {20}, "b_hh");
        Buffer<> x = random_buffer(Float(32), {n, in}, 1), h = random_buffer(Float(32), {n, hid}, 2), c = random_buffer(Float(32), {n, hid}, 3),
                 wih = random_buffer(Float(32), {4 * hid, in}, 4), whh = random_buffer(Float(32), {4 * hid, hid}, 5),
                 bih = random_buffer(Float(32), {4 * hid}, 6), bhh = random_buffer(Float(32), {4 * hid}, 7);
        const auto xv = values(x), hv = values(h), cv = values(c), wi = values(wih), wh = values(whh), bi = values(bih), bh = values(bhh);
        std::vector<double> h_next, c_next;
        for (int64_t b = 0; b < n; ++b) {
            std::vector<double> gates(static_cast<size_t>(4 * hid));
            for (int64_t g = 0; g < 4 * hid; ++g) {
                double s = with_bias ? bi[static_cast<size_t>(g)] + bh[static_cast<size_t>(g)] : 0.0;
                for (int64_t k = 0; k < in; ++k) s += xv[static_cast<size_t>(b * in + k)] * wi[static_cast<size_t>(g * in + k)];
                for (int64_t k = 0; k < hid; ++k) s += hv[static_cast<size_t>(b * hid + k)] * wh[static_cast<size_t>(g * hid + k)];
                gates[static_cast<size_t>(g)] = s;
            }
            for (int64_t u = 0; u < hid; ++u) {
                const double i = sigmoid(gates[static_cast<size_t>(u)]), f = sigmoid(gates[static_cast<size_t>(hid + u)]);
                const double gg = std::tanh(gates[static_cast<size_t>(2 * hid + u)]), o = sigmoid(gates[static_cast<size_t>(3 * hid + u)]);
                const double cn = f * cv[static_cast<size_t>(b * hid + u)] + i * gg;
                c_next.push_back(cn);
                h_next.push_back(o * std::tanh(cn));
            }
        }
        const ops::LstmState next = with_bias ? ops::lstm_cell(X, H, C, Wih, Whh, Bih, Bhh) : ops::lstm_cell(X, H, C, Wih, Whh);
        const Bindings bindings{{X, x}, {H, h}, {C, c}, {Wih, wih}, {Whh, whh}, {Bih, bih}, {Bhh, bhh}};
        const Bindings no_bias{{X, x}, {H, h}, {C, c}, {Wih, wih}, {Whh, whh}};
        expect_matches(next.c.realize(with_bias ? bindings : no_bias), {n, hid}, c_next, Float(32), in + hid);
        expect_matches(next.h.realize(with_bias ? bindings : no_bias), {n, hid}, h_next, Float(32), in + hid);
        // Both outputs of one step in one pipeline, sharing the gates.
        const auto both = Pipeline({next.h.func(), next.c.func()}).realize({{n, hid}, {n, hid}}, with_bias ? bindings : no_bias);
        expect_matches(both[0], {n, hid}, h_next, Float(32), in + hid);
        expect_matches(both[1], {n, hid}, c_next, Float(32), in + hid);
    }
}

TEST(OpsLstm, Errors) {
    Input X(Float(32), {3, 7}, "x"), H(Float(32), {3, 5}, "h"), C(Float(32), {3, 4}, "c");
    Input Wih(Float(32), {20, 7}, "w_ih"), Whh(Float(32), {20, 5}, "w_hh"), Wbad(Float(32), {16, 7}, "w_bad");
    Input Cok(Float(32), {3, 5}, "c_ok"), Bbad(Float(32), {5}, "b");
    EXPECT_OPS_ERROR(ops::lstm_cell(X, H, C, Wih, Whh), "ops::lstm_cell 'lstm'", "c 'c'", "[3, 4]", "[3, 5]");
    EXPECT_OPS_ERROR(ops::lstm_cell(X, H, Cok, Wbad, Whh), "ops::lstm_cell", "w_ih 'w_bad'", "[20, 7]");
    EXPECT_OPS_ERROR(ops::lstm_cell(X, H, Cok, Wih, Whh, Bbad), "ops::lstm_cell", "b_ih 'b'", "[20]");
}

} // namespace
