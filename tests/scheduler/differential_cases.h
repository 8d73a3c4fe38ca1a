#pragma once
// The scheduler's differential suite, shared by every executor that runs lowered pipelines (the
// loop-IR interpreter in tests/scheduler, the host JIT in tests/codegen): a generator of random
// legal schedules, the operator cases on odd shapes, and the check that each random schedule
// reproduces the reference evaluator — exactly for integer dtypes, within Tolerance::for_type
// for floats. A failure prints the op, the seed and the schedule as JSON, which
// Pipeline::set_schedule(Schedule::from_json(...)) replays.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "tessera/func.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"
#include "tessera/ops.h"
#include "tessera/reference.h"

namespace tessera::difftest {

inline int env_int(const char *name, int fallback) {
    const char *v = std::getenv(name);
    return v && *v ? std::atoi(v) : fallback;
}

/// Draws random legal schedules for a pipeline.
class ScheduleGenerator {
public:
    explicit ScheduleGenerator(uint64_t seed) : rng_(seed) {}

    void apply(const Pipeline &p) {
        p.set_schedule(Schedule{});
        funcs_ = p.functions();
        outputs_.clear();
        for (const auto &o : p.outputs())
            outputs_.insert(o.name());
        level_.clear();
        at_.clear();
        // Consumers first, so a producer can pick among its consumer's final loops.
        for (auto it = funcs_.rbegin(); it != funcs_.rend(); ++it)
            schedule_func(*it);
        for (const auto &input : p.inputs())
            maybe_stage_input(input);
    }

private:
    enum class Level { Inline, Root, At };

    int pick(int n) { return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng_)); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    std::string fresh() { return "v" + std::to_string(counter_++); }

    const Func *find(const std::string &name) const {
        for (const auto &f : funcs_)
            if (f.name() == name) return &f;
        return nullptr;
    }

    /// Stages of `consumer` whose definitions call `producer` (a Func, or an Input).
    std::vector<int> calling_stages(const Func &consumer, const std::string &producer) const {
        std::vector<int> out;
        const auto &c = *consumer.contents();
        for (int s = 0; s < c.num_stages(); ++s) {
            bool calls = false;
            for (const auto &e : internal::definition_exprs(c.stage(s))) {
                for (const auto &f : internal::called_functions(e))
                    calls = calls || f.name() == producer;
                for (const auto &in : internal::find_inputs(e))
                    calls = calls || in.name() == producer;
            }
            if (calls) out.push_back(s);
        }
        return out;
    }

    /// Sometimes stages an Input for one Func that reads it directly from one stage (an
    /// inlined reader has no loops to stage at), at one of that stage's loops, into a random
    /// memory with a random layout of the copy.
    void maybe_stage_input(Input input) {
        std::vector<std::pair<const Func *, int>> readers;
        for (const auto &f : funcs_) {
            auto lv = level_.find(f.name());
            if (lv != level_.end() && lv->second == Level::Inline) continue;
            auto stages = calling_stages(f, input.name());
            if (stages.size() == 1) readers.emplace_back(&f, stages[0]);
        }
        if (readers.empty() || !chance(0.3)) return;
        const auto &[consumer, stage] =
            readers[static_cast<size_t>(pick(static_cast<int>(readers.size())))];
        auto loops = loops_of(*consumer, stage).loops;
        std::vector<std::string> args;
        for (int d = 0; d < input.dimensions(); ++d)
            args.push_back("d" + std::to_string(d));
        const MemoryKind mems[] = {MemoryKind::Stack, MemoryKind::Host, MemoryKind::SPAD};
        input.stage(Stage(consumer->contents(), stage),
                    loops[static_cast<size_t>(pick(static_cast<int>(loops.size())))], mems[pick(3)],
                    chance(0.5) && !args.empty() ? random_layout(args) : Layout{});
    }

    /// The non-inlined Funcs that read `name` (through inlined ones), with the stage that does.
    std::vector<std::pair<std::string, int>> effective_consumers(const std::string &name) const {
        std::vector<std::pair<std::string, int>> out;
        for (const auto &f : funcs_) {
            if (f.name() == name) continue;
            auto stages = calling_stages(f, name);
            if (stages.empty()) continue;
            auto lv = level_.find(f.name());
            if (lv != level_.end() && lv->second == Level::Inline) {
                for (const auto &c : effective_consumers(f.name()))
                    out.push_back(c);
            } else {
                for (int s : stages)
                    out.emplace_back(f.name(), s);
            }
        }
        return out;
    }

    internal::StageLoopNames loops_of(const Func &f, int s) const {
        auto n = internal::initial_loop_names(*f.contents(), s);
        return internal::replay_loop_names(internal::stage_display_name(f.name(), s), n,
                                           f.contents()->schedule.stage(s));
    }

    void schedule_func(Func f) {
        const auto &c = *f.contents();
        const bool is_output = outputs_.count(f.name()) > 0;
        auto consumers = effective_consumers(f.name());
        std::set<std::string> consumer_funcs;
        for (const auto &[n, s] : consumers)
            consumer_funcs.insert(n);
        const bool single_consumer = consumers.size() == 1;
        // With several consumers, a loop of one of them that encloses the others' reads: each
        // other consumer computed at that consumer's stage, at this loop or inside it.
        size_t host = 0;
        int outermost_reader = std::numeric_limits<int>::max();
        bool shared_loop = false;
        if (!single_consumer && consumer_funcs.size() == consumers.size())
            for (size_t h = 0; h < consumers.size() && !shared_loop; ++h) {
                shared_loop = true;
                outermost_reader = std::numeric_limits<int>::max();
                for (size_t q = 0; q < consumers.size() && shared_loop; ++q) {
                    if (q == h) continue;
                    auto it = at_.find(consumers[q].first);
                    shared_loop = it != at_.end() && it->second.func == consumers[h].first &&
                                  it->second.stage == consumers[h].second;
                    if (shared_loop) outermost_reader = std::min(outermost_reader, it->second.loop);
                }
                if (shared_loop) host = h;
            }

        Level level = Level::Root;
        if (!is_output) {
            std::vector<Level> options = {Level::Root};
            if (c.updates.empty())
                options.push_back(Level::Inline), options.push_back(Level::Inline);
            if (single_consumer || shared_loop) options.push_back(Level::At), options.push_back(Level::At);
            level = options[static_cast<size_t>(pick(static_cast<int>(options.size())))];
        }
        // Staging a root Func for its only consumer: the consumer reads a copy made at one of
        // its loops.
        if (!is_output && level == Level::Root && single_consumer && chance(0.25)) {
            const auto &[cname, cstage] = consumers[0];
            auto loops = loops_of(*find(cname), cstage).loops;
            const MemoryKind mems[] = {MemoryKind::SPAD, MemoryKind::MEM, MemoryKind::Host};
            f.stage(*find(cname), loops[static_cast<size_t>(pick(static_cast<int>(loops.size())))],
                    mems[pick(3)]);
        }
        level_[f.name()] = level;
        if (level == Level::Inline) {
            if (chance(0.5)) f.compute_inline();
            return;
        }
        if (level == Level::At) {
            const auto &[cname, cstage] = consumers[host];
            const Func &consumer = *find(cname);
            auto loops = loops_of(consumer, cstage).loops;
            const int at = pick(shared_loop ? std::min(static_cast<int>(loops.size()), outermost_reader + 1)
                                            : static_cast<int>(loops.size()));
            at_[f.name()] = {cname, cstage, at};
            f.compute_at(Stage(consumer.contents(), cstage), loops[static_cast<size_t>(at)]);
            if (chance(0.3))
                f.store_at(Stage(consumer.contents(), cstage),
                           loops[static_cast<size_t>(pick(at + 1))]);
        } else if (!is_output && (c.updates.empty() || chance(0.5))) {
            f.compute_root(); // a pure Func would be inlined by default
        }
        for (int s = 0; s < c.num_stages(); ++s) {
            const int n = pick(4);
            for (int k = 0; k < n; ++k)
                loop_directive(f, s, is_output);
        }
        if (!is_output) {
            if (chance(0.3)) f.layout(random_layout(f.args()));
            if (chance(0.2)) {
                const MemoryKind mems[] = {MemoryKind::Host, MemoryKind::Stack, MemoryKind::SPAD,
                                           MemoryKind::ACC};
                f.store_in(mems[pick(4)], chance(0.5) ? pick(4) : -1);
            }
            if (chance(0.1)) f.double_buffer();
        }
    }

    Layout random_layout(std::vector<std::string> args) {
        Layout l;
        std::shuffle(args.begin(), args.end(), rng_);
        l.order = args;
        if (chance(0.5))
            l.blocks.push_back(
                {args[static_cast<size_t>(pick(static_cast<int>(args.size())))], 2 + pick(3)});
        if (chance(0.3)) l.padding[args[0]] = 1 + pick(2);
        if (chance(0.3)) l.alignment = 1 << pick(3);
        if (chance(0.3)) l.order.clear();
        return l;
    }

    void loop_directive(Func &f, int s, bool is_output) {
        Stage st(f.contents(), s);
        auto names = loops_of(f, s);
        std::vector<int> pure, all;
        for (size_t i = 0; i < names.loops.size(); ++i) {
            all.push_back(static_cast<int>(i));
            if (!names.is_reduction[i]) pure.push_back(static_cast<int>(i));
        }
        if (all.empty()) return;
        auto name = [&](int i) { return names.loops[static_cast<size_t>(i)]; };
        auto has_loop = [&](const std::string &n) {
            return std::find(names.loops.begin(), names.loops.end(), n) != names.loops.end();
        };
        // Loops with a kind already, or already split by a vectorize/unroll factor (whose
        // inner loop name would repeat), are not chosen again.
        auto unmarked = [&](const std::vector<int> &from) {
            std::vector<int> out;
            for (int i : from)
                if (!marked_.count(f.name() + "#" + std::to_string(s) + "#" + name(i)) &&
                    !has_loop(name(i) + ".v") && !has_loop(name(i) + ".u"))
                    out.push_back(i);
            return out;
        };
        auto mark = [&](const std::string &n) {
            marked_.insert(f.name() + "#" + std::to_string(s) + "#" + n);
        };
        auto tail = [&](bool reduction) {
            if (s > 0 || reduction)
                return chance(0.5) ? TailStrategy::Auto : TailStrategy::GuardWithIf;
            const TailStrategy pure_tails[] = {TailStrategy::Auto, TailStrategy::GuardWithIf,
                                               TailStrategy::ShiftInwards};
            return pure_tails[pick(3)];
        };
        (void)is_output;
        switch (pick(7)) {
        case 0: { // split
            int i = all[static_cast<size_t>(pick(static_cast<int>(all.size())))];
            st.split(name(i), fresh(), fresh(), 1 + pick(5),
                     tail(names.is_reduction[static_cast<size_t>(i)]));
            break;
        }
        case 1: { // reorder the pure loops among themselves
            if (pure.size() < 2) return;
            std::vector<VarOrRVar> order;
            std::vector<int> perm = pure;
            std::shuffle(perm.begin(), perm.end(), rng_);
            for (int i : perm)
                order.emplace_back(name(i));
            st.reorder(order);
            break;
        }
        case 2: { // fuse two adjacent loops of the same kind
            std::vector<int> starts;
            for (size_t i = 0; i + 1 < names.loops.size(); ++i)
                if (names.is_reduction[i] == names.is_reduction[i + 1])
                    starts.push_back(static_cast<int>(i));
            if (starts.empty()) return;
            int i = starts[static_cast<size_t>(pick(static_cast<int>(starts.size())))];
            if (chance(0.5))
                st.fuse(name(i), name(i + 1), fresh());
            else
                st.fuse(name(i + 1), name(i), fresh());
            break;
        }
        case 3: { // tile two pure loops
            if (pure.size() < 2) return;
            int a = pure[static_cast<size_t>(pick(static_cast<int>(pure.size()) - 1))];
            int b = pure[static_cast<size_t>(pick(static_cast<int>(pure.size())))];
            if (a == b) return;
            st.tile(name(a), name(b), fresh(), fresh(), fresh(), fresh(), 2 + pick(3), 2 + pick(3),
                    tail(false));
            break;
        }
        case 4: { // vectorize a pure loop by a factor
            auto cand = unmarked(pure);
            if (cand.empty()) return;
            std::string v = name(cand[static_cast<size_t>(pick(static_cast<int>(cand.size())))]);
            st.vectorize(v, 2 + pick(3), tail(false));
            mark(v + ".v");
            break;
        }
        case 5: { // unroll any loop by a factor
            auto cand = unmarked(all);
            if (cand.empty()) return;
            int i = cand[static_cast<size_t>(pick(static_cast<int>(cand.size())))];
            st.unroll(name(i), 2 + pick(2), tail(names.is_reduction[static_cast<size_t>(i)]));
            mark(name(i) + ".u");
            break;
        }
        case 6: { // parallel over a pure loop
            auto cand = unmarked(pure);
            if (cand.empty()) return;
            std::string v = name(cand[static_cast<size_t>(pick(static_cast<int>(cand.size())))]);
            st.parallel(v);
            mark(v);
            break;
        }
        }
    }

    std::mt19937_64 rng_;
    int counter_ = 0;
    std::vector<Func> funcs_;
    std::set<std::string> outputs_;
    std::map<std::string, Level> level_;
    /// Where each Func computed at a loop is: the consumer, its stage and the loop's position.
    struct AtLoop {
        std::string func;
        int stage = 0;
        int loop = 0;
    };
    std::map<std::string, AtLoop> at_;
    std::set<std::string> marked_;
};

/// One operator instance: its output, inputs with data, and the reduction length for the
/// float tolerance.
struct OpCase {
    std::string name;
    Func out;
    std::vector<int64_t> shape;
    Bindings bindings;
    int64_t reduction_length = 1;
};

inline Buffer<> random_buffer(Type t, std::vector<int64_t> shape, uint64_t seed) {
    Buffer<> b(t, std::move(shape));
    b.fill_random(seed);
    return b;
}

inline std::vector<std::function<OpCase()>> op_cases() {
    using namespace tessera::ops;
    std::vector<std::function<OpCase()>> cases;
    cases.push_back([] {
        Input A(Int(32), {5, 7}, "A"), B(Int(32), {7, 3}, "B");
        Tensor c = matmul(A, B);
        return OpCase{
            "matmul_i32",
            c,
            {5, 3},
            {{A, random_buffer(Int(32), {5, 7}, 1)}, {B, random_buffer(Int(32), {7, 3}, 2)}}};
    });
    cases.push_back([] {
        Input A(Float(32), {3, 6}, "A"), B(Float(32), {6, 5}, "B");
        Tensor c = relu(matmul(A, B));
        return OpCase{
            "matmul_relu_f32",
            c,
            {3, 5},
            {{A, random_buffer(Float(32), {3, 6}, 3)}, {B, random_buffer(Float(32), {6, 5}, 4)}},
            6};
    });
    cases.push_back([] {
        Input X(Int(32), {1, 2, 7, 6}, "X"), W(Int(32), {3, 2, 3, 2}, "W");
        Conv2dOptions o;
        o.stride = {1, 2};
        o.padding = Padding2d(1);
        o.dilation = {2, 1};
        Tensor c = conv2d(X, W, o);
        auto shape = c.concrete_shape();
        return OpCase{"conv2d_i32_strided_dilated_padded",
                      c,
                      shape,
                      {{X, random_buffer(Int(32), {1, 2, 7, 6}, 5)},
                       {W, random_buffer(Int(32), {3, 2, 3, 2}, 6)}}};
    });
    cases.push_back([] {
        Input X(Int(32), {1, 2, 7, 5}, "X");
        Pool2dOptions o;
        o.kernel = {3, 2};
        o.stride = {2, 1};
        o.padding = Padding2d(1, 1);
        Tensor c = max_pool2d(X, o);
        return OpCase{"max_pool2d_i32",
                      c,
                      c.concrete_shape(),
                      {{X, random_buffer(Int(32), {1, 2, 7, 5}, 7)}}};
    });
    cases.push_back([] {
        Input X(Float(32), {1, 2, 6, 5}, "X");
        Pool2dOptions o;
        o.kernel = {2, 3};
        Tensor c = avg_pool2d(X, o);
        return OpCase{"avg_pool2d_f32",
                      c,
                      c.concrete_shape(),
                      {{X, random_buffer(Float(32), {1, 2, 6, 5}, 8)}},
                      6};
    });
    cases.push_back([] {
        Input X(Float(32), {3, 7}, "X");
        Tensor c = softmax(X);
        return OpCase{"softmax_f32", c, {3, 7}, {{X, random_buffer(Float(32), {3, 7}, 9)}}, 7};
    });
    cases.push_back([] {
        Input X(Float(32), {4, 6}, "X");
        Tensor c = layernorm(X);
        return OpCase{"layernorm_f32", c, {4, 6}, {{X, random_buffer(Float(32), {4, 6}, 10)}}, 6};
    });
    cases.push_back([] {
        Input A(Int(32), {5, 1}, "A"), B(Int(32), {1, 6}, "B");
        Tensor c = relu(add(A, B));
        return OpCase{
            "add_broadcast_relu_i32",
            c,
            {5, 6},
            {{A, random_buffer(Int(32), {5, 1}, 11)}, {B, random_buffer(Int(32), {1, 6}, 12)}}};
    });
    cases.push_back([] {
        Input X(Float(32), {3, 5}, "X");
        Tensor c = gelu(X);
        return OpCase{"gelu_f32", c, {3, 5}, {{X, random_buffer(Float(32), {3, 5}, 13)}}};
    });
    cases.push_back([] {
        Input X(Int(16), {4, 7}, "X");
        Tensor c = transpose(X);
        return OpCase{"transpose_i16", c, {7, 4}, {{X, random_buffer(Int(16), {4, 7}, 14)}}};
    });
    cases.push_back([] {
        Input X(Int(32), {3, 4, 5}, "X");
        Tensor c = reduce_sum(X, {1});
        return OpCase{
            "reduce_sum_i32", c, c.concrete_shape(), {{X, random_buffer(Int(32), {3, 4, 5}, 15)}}};
    });
    cases.push_back([] {
        Input X(Int(8), {5, 6}, "X");
        Tensor c = reduce_max(X, {0});
        return OpCase{
            "reduce_max_i8", c, c.concrete_shape(), {{X, random_buffer(Int(8), {5, 6}, 16)}}};
    });
    cases.push_back([] {
        Input A(Int(32), {2, 3}, "A"), B(Int(32), {2, 4}, "B");
        Tensor c = concat({A, B}, 1);
        return OpCase{
            "concat_i32",
            c,
            {2, 7},
            {{A, random_buffer(Int(32), {2, 3}, 17)}, {B, random_buffer(Int(32), {2, 4}, 18)}}};
    });
    cases.push_back([] {
        Input X(Float(32), {3, 5}, "X");
        Tensor c = rmsnorm(X);
        return OpCase{"rmsnorm_f32", c, {3, 5}, {{X, random_buffer(Float(32), {3, 5}, 19)}}, 5};
    });
    cases.push_back([] {
        Input X(Float(32), {1, 3, 4, 5}, "X");
        Tensor c = global_avg_pool2d(X);
        return OpCase{"global_avg_pool2d_f32",
                      c,
                      c.concrete_shape(),
                      {{X, random_buffer(Float(32), {1, 3, 4, 5}, 20)}},
                      20};
    });
    return cases;
}

/// Runs `seeds` random legal schedules (from `first_seed`) of every op case on `target` and
/// compares each result with the reference evaluator; stops an op after three failures.
inline void check_random_schedules(const Target &target, int seeds, int first_seed) {
    auto cases = op_cases();
    ASSERT_GE(cases.size(), 12u);
    int checked = 0;
    for (const auto &make : cases) {
        OpCase op = make();
        SCOPED_TRACE(op.name);
        Pipeline p(op.out);
        p.set_schedule(Schedule{});
        Buffer<> ref = evaluate_reference(op.out, op.shape, op.bindings);
        const Tolerance tol = Tolerance::for_type(ref.type(), op.reduction_length);
        int failures = 0;
        for (int seed = first_seed; seed < first_seed + seeds && failures < 3; ++seed) {
            ScheduleGenerator gen(static_cast<uint64_t>(seed) * 7919 +
                                  std::hash<std::string>{}(op.name));
            std::string json;
            try {
                gen.apply(p);
                json = p.schedule().to_json(-1);
                Buffer<> got = op.out.realize(op.shape, op.bindings, target);
                Comparison c = compare(got, ref, tol);
                if (!c.equal) {
                    ++failures;
                    ADD_FAILURE() << op.name << " seed " << seed << ": " << c.message
                                  << "\nschedule: " << json << "\n"
                                  << lower(p, target, {op.shape}).to_string();
                }
            } catch (const std::exception &e) {
                ++failures;
                if (json.empty()) json = p.schedule().to_json(-1);
                ADD_FAILURE() << op.name << " seed " << seed << ": " << e.what()
                              << "\nschedule: " << json;
            }
            ++checked;
        }
    }
    EXPECT_GE(checked, static_cast<int>(cases.size()) * std::min(seeds, 1));
}

} // namespace tessera::difftest
