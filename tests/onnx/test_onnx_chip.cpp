// Whole models on the chips and the graph compiler's fusion (issue 16): the small models of
// small_models.py partitioned into fused chip kernels (compile_model_for_chip), run in sequence
// on chipsim and checked against the reference evaluator on the unfused graph, within the chips'
// bf16 tolerance 3e-2 × max(1, max|y|); and the fusion schedule on the host, which must not
// change any value.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "onnx_test_util.h"
#include "tessera/codegen/backends.h"
#include "tessera/codegen/chip_artifact.h"
#include "tessera/codegen/chip_model.h"
#include "tessera/fusion.h"
#include "tessera/onnx.h"
#include "tessera/ops.h"
#include "tessera/tuned_schedule.h"
#include "tessera/tuning_db.h"
#include "tessera/workload.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

const fs::path &models_dir() { return onnx_test::small_models_dir(); }

onnx::Model import_model(const std::string &name) {
    return onnx::import((models_dir() / (name + ".onnx")).string(), {.dims = {{"N", 2}}});
}

std::map<std::string, Buffer<>> model_inputs(const onnx::Model &m, const std::string &name) {
    return {{m.inputs.at(0).name, Buffer<>::load_npy((models_dir() / (name + ".in_0.npy")).string())}};
}

using onnx_test::within;

using ChipCase = std::tuple<std::string, std::string>; // model, target

class ModelOnChip : public testing::TestWithParam<ChipCase> {};

TEST(ModelOnChipTuned, AKernelTakesTheTuningDatabasesRecordForItsWorkload) {
    const onnx::Model m = import_model("conv_net");
    const Target npu = Target::named("npu-edge");
    const ChipModelProgram plain = compile_model_for_chip(m.pipeline, m.values, npu);
    // A record for the workload of the first kernel with a library schedule (a conv): the
    // backend's default tiling (no directives), another schedule than the library's, claimed
    // fastest.
    const Schedule none;
    const auto with_library_schedule = std::find_if(plain.kernels.begin(), plain.kernels.end(), [&](const ChipModelKernel &k) {
        return k.pipeline.schedule().to_json() != none.to_json();
    });
    ASSERT_NE(with_library_schedule, plain.kernels.end()) << "no kernel of conv_net has a library schedule";
    const size_t index = size_t(with_library_schedule - plain.kernels.begin());
    const ChipModelKernel &k = *with_library_schedule;
    const fs::path work = onnx_test::work_dir(); // beside the models, not over them
    const std::string db_path = (work / "tuning.db").string();
    int64_t id = 0;
    {
        TuningDatabase db(db_path);
        MeasuredSchedule record;
        record.schedule = none;
        record.measurement = Measurement::chip_cycles(1);
        id = db.add(Workload::of(k.pipeline, {k.shape}), TargetIdentity::of(npu), record);
    }
    ASSERT_GT(id, 0);
    set_tuning_database(db_path);
    const ChipModelProgram tuned = compile_model_for_chip(m.pipeline, m.values, npu);
    set_tuning_database("");
    ASSERT_EQ(tuned.kernels.size(), plain.kernels.size());
    EXPECT_EQ(tuned.kernels[index].pipeline.schedule().to_json(), none.to_json()) << "the record's schedule, kept on the kernel";
    EXPECT_EQ(plain.kernels[index].schedule_source, "");
    EXPECT_NE(tuned.kernels[index].schedule_source.find("#" + std::to_string(id)), std::string::npos) << tuned.kernels[index].schedule_source;
    // tessera compile's artifact of that kernel's program names the record.
    ModelInterface interface;
    for (size_t i = 0; i < m.inputs.size(); ++i) {
        interface.input_names.push_back(m.inputs[i].name);
        interface.inputs.push_back(m.input_params[i]);
    }
    for (const onnx::ModelTensor &t : m.outputs) interface.output_names.push_back(t.name);
    interface.constants = m.constants;
    const ModelArtifactFiles files = write_model_artifacts(tuned, interface, npu, "tuned", (work / "artifacts").string());
    int checked = 0;
    for (size_t p = 0; p < tuned.programs.size(); ++p) {
        if (tuned.programs[p].kernels != std::vector<size_t>{index}) continue;
        std::ifstream f(files.artifacts.at(p), std::ios::binary);
        const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
        EXPECT_EQ(decode_chip_artifact(bytes.data(), bytes.size(), files.artifacts[p]).tuning_record_id, id);
        ++checked;
    }
    EXPECT_EQ(checked, 1) << "the tuned kernel is a program of its own on npu-edge";
    // Still the model's values.
    const Bindings bindings = m.bindings(model_inputs(m, "conv_net"));
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    EXPECT_EQ(within(run_model_on_chip(tuned, bindings).outputs.at(0), reference.at(0), 3e-2), "");
}

TEST_P(ModelOnChip, RunsAsFusedKernelsWithinBf16ToleranceOfTheReference) {
    const auto &[name, target] = GetParam();
    const onnx::Model m = import_model(name);
    const Bindings bindings = m.bindings(model_inputs(m, name));
    const ChipModelProgram program = compile_model_for_chip(m.pipeline, m.values, Target::named(target));
    const ChipModelResult r = run_model_on_chip(program, bindings);
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    ASSERT_EQ(r.outputs.size(), reference.size());
    for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(within(r.outputs[i], reference[i], 3e-2), "") << "output " << i;
    ASSERT_EQ(r.kernels.size(), program.kernels.size());
    ASSERT_EQ(r.programs.size(), program.programs.size());
    size_t fused = 0;
    for (size_t k = 0; k < r.kernels.size(); ++k) {
        // A kernel that only moves data (BERT's merge of the heads, a reshape) has all its
        // cycles on the host link.
        EXPECT_GT(r.kernels[k].report.cycles + r.kernels[k].report.host_io_cycles, 0) << r.kernels[k].label;
        fused += program.kernels[k].fused.size();
    }
    EXPECT_EQ(fused, m.values.size()) << "every graph value is computed in exactly one kernel";
    // Every kernel runs in exactly one program, in order; a linked program's kernels inside its
    // run, none before the inputs arrive or after the outputs leave. On npu-edge they run one
    // after another (a barrier between them); tsp-mini schedules a linked program as a whole,
    // so a kernel's first instructions may run beside the last ones of the kernel before.
    const bool one_after_another = chipsim::load_target(target).issue == chipsim::IssueKind::Dynamic;
    int64_t cycles = 0, host_io = 0;
    size_t next_kernel = 0;
    for (size_t g = 0; g < r.programs.size(); ++g) {
        const chipsim::Report &rep = r.programs[g].report;
        cycles += rep.cycles;
        host_io += rep.host_io_cycles;
        int64_t at = 0;
        for (size_t k : r.programs[g].kernels) {
            EXPECT_EQ(k, next_kernel++);
            EXPECT_EQ(r.kernels[k].program, g);
            EXPECT_LE(one_after_another ? at : 0, r.kernels[k].begin_cycle) << r.kernels[k].label;
            EXPECT_EQ(r.kernels[k].end_cycle - r.kernels[k].begin_cycle, r.kernels[k].report.cycles + r.kernels[k].report.host_io_cycles)
                << r.kernels[k].label;
            at = std::max(at, r.kernels[k].end_cycle);
        }
        EXPECT_LE(at, rep.total_cycles);
    }
    EXPECT_EQ(next_kernel, r.kernels.size());
    EXPECT_EQ(r.cycles, cycles);
    EXPECT_EQ(r.host_io_cycles, host_io);
}

// On a chip with DRAM the kernels of a model share programs where an intermediate's chip layout
// is the same on both sides: it stays in DRAM as a .buffer, and the host link carries less than
// when every kernel is a program of its own — by exactly those intermediates, out and back in,
// and the inputs two kernels of one program share.
TEST(ModelLinkedOnChip, IntermediatesInOneLayoutStayInDramAndLeaveTheHostLink) {
    const onnx::Model m = import_model("lstm_cell");
    const Bindings bindings = m.bindings(model_inputs(m, "lstm_cell"));
    const Target npu = Target::named("npu-edge");
    const ChipModelProgram linked = compile_model_for_chip(m.pipeline, m.values, npu);
    const ChipModelProgram apart = compile_model_for_chip(m.pipeline, m.values, npu, {.link = false});
    ASSERT_EQ(linked.kernels.size(), 2u);
    ASSERT_EQ(linked.programs.size(), 1u) << "lstm_cell's two kernels share one program";
    ASSERT_EQ(apart.programs.size(), 2u);
    const ChipModelSegment &seg = linked.programs[0];
    ASSERT_EQ(seg.buffers.size(), 1u);
    EXPECT_EQ(seg.buffers[0], linked.kernels[0].head);
    int64_t buffer_bytes = 0;
    for (const chipsim::TensorDecl &d : seg.program.program.tensors)
        if (d.is_buffer) buffer_bytes += d.bytes();
    EXPECT_GT(buffer_bytes, 0);
    EXPECT_NE(seg.program.assembly().find(".buffer "), std::string::npos);

    const ChipModelResult one = run_model_on_chip(linked, bindings), two = run_model_on_chip(apart, bindings);
    ASSERT_EQ(one.outputs.size(), 1u);
    EXPECT_EQ(within(one.outputs[0], two.outputs[0], 0), "") << "linking changes no value";
    auto host_bytes = [](const ChipModelResult &r) {
        int64_t b = 0;
        for (const ChipProgramRun &g : r.programs) b += g.report.bytes.at("HOST");
        return b;
    };
    int64_t shared_inputs = 0; // inputs of the second kernel the first one's tensor serves
    for (const ChipTensorMap &mp : linked.kernels[1].program.tensors)
        if (!mp.is_output && mp.source != linked.kernels[0].head)
            for (const ChipTensorMap &first : linked.kernels[0].program.tensors)
                if (!first.is_output && first.source == mp.source && first.chip_shape == mp.chip_shape)
                    shared_inputs += linked.kernels[1].program.program.tensor(mp.tensor)->bytes();
    EXPECT_EQ(host_bytes(one) + 2 * buffer_bytes + shared_inputs, host_bytes(two));
    EXPECT_LT(one.host_io_cycles, two.host_io_cycles);
}

namespace {

/// Two NCHW convs (64 channels: bf16 rows of whole vectors), c2 reading c1; the model's output
/// is c2, or c2 + c1 when `residual` (c1 then has a reader that takes it in fp32).
struct TwoConvs {
    Input x{Float(32), {1, 64, 6, 6}, "x"}, w1{Float(32), {64, 64, 3, 3}, "w1"}, w2{Float(32), {64, 64, 3, 3}, "w2"};
    std::vector<int64_t> shape{1, 64, 6, 6};
    std::vector<GraphValue> values;
    Pipeline model;
    Bindings bindings;
    explicit TwoConvs(bool residual) {
        ops::Conv2dOptions same;
        same.padding = 1;
        ops::Conv2dOptions second = same;
        same.name = "c1";
        second.name = "c2";
        const ops::Tensor c1 = ops::conv2d(x, w1, same), c2 = ops::conv2d(c1, w2, second);
        values = {{c1, shape, "c1"}, {c2, shape, "c2"}};
        if (residual) {
            const ops::Tensor sum = ops::add(c2, c1);
            values.push_back({sum, shape, "sum"});
            model = Pipeline(sum);
        } else {
            model = Pipeline(c2);
        }
        auto random = [](std::vector<int64_t> s, uint64_t seed) {
            Buffer<> b(Float(32), std::move(s));
            b.fill_random(seed);
            return b;
        };
        bindings = {{x, random({1, 64, 6, 6}, 1)}, {w1, random({64, 64, 3, 3}, 2)}, {w2, random({64, 64, 3, 3}, 3)}};
    }
};

/// Random fp32 buffers for `inputs` (Input, shape), seeds `seed`, `seed` + 1, ...
Bindings random_fp32_bindings(const std::vector<std::pair<Input, std::vector<int64_t>>> &inputs, uint64_t seed) {
    Bindings bindings;
    for (const auto &[in, shape] : inputs) {
        Buffer<> b(Float(32), shape);
        b.fill_random(seed++);
        bindings.emplace_back(in, b);
    }
    return bindings;
}

/// The dtype kernel `k` stores its value in.
chipsim::DType stored_dtype(const ChipModelKernel &k) {
    for (const ChipTensorMap &mp : k.program.tensors)
        if (mp.is_output && mp.source == k.head) return k.program.program.tensor(mp.tensor)->dtype;
    ADD_FAILURE() << "the kernel of " << k.head << " has no output map for it";
    return chipsim::DType::Int8;
}

} // namespace

// Before linking, a kernel is compiled again asking for what its neighbours have: of two NCHW
// convs the second reads the first one's NHWC result as it is — no layout change on chip — and
// the first, whose one reader rounds its result to bf16 for the MXM, stores bf16. The value then
// stays in DRAM: one program, no value changed (the host rounded it the same way before), no
// kernel slower.
TEST(ModelLinkedOnChip, AConvReadsTheLayoutTheConvBeforeWrote) {
    const TwoConvs two(false);
    const Pipeline &model = two.model;
    const std::vector<GraphValue> &values = two.values;
    const Bindings &bindings = two.bindings;
    const std::vector<int64_t> &shape = two.shape;
    const Target npu = Target::named("npu-edge");
    const ChipModelProgram agreed = compile_model_for_chip(model, values, npu);
    const ChipModelProgram as_is = compile_model_for_chip(model, values, npu, {.link = false});
    ASSERT_EQ(agreed.kernels.size(), 2u);
    ASSERT_EQ(as_is.kernels.size(), 2u);
    auto dims_of = [](const ChipModelKernel &k, const std::string &source, bool output) {
        for (const ChipTensorMap &mp : k.program.tensors)
            if (mp.source == source && mp.is_output == output) return mp.chip_dim_of_source;
        return std::vector<int>{};
    };
    const std::string first = agreed.kernels[0].head;
    const std::vector<int> written = dims_of(agreed.kernels[0], first, true);
    EXPECT_EQ(written, (std::vector<int>{0, 3, 1, 2})) << "the conv writes NHWC";
    EXPECT_EQ(dims_of(agreed.kernels[1], first, false), written);
    EXPECT_NE(dims_of(as_is.kernels[1], first, false), written);
    const ChipModelResult r = run_model_on_chip(agreed, bindings), before = run_model_on_chip(as_is, bindings);
    const Buffer<> reference = model.realize({shape}, bindings, Target::reference())[0];
    EXPECT_EQ(within(r.outputs.at(0), reference, 3e-2), "");
    for (size_t k = 0; k < 2; ++k)
        EXPECT_LE(r.kernels[k].report.cycles, before.kernels[k].report.cycles) << r.kernels[k].label;
    EXPECT_LT(r.kernels[1].report.cycles, before.kernels[1].report.cycles) << "the image's layout change left the kernel";
    EXPECT_EQ(stored_dtype(agreed.kernels[0]), chipsim::DType::BF16);
    EXPECT_EQ(stored_dtype(as_is.kernels[0]), chipsim::DType::FP32);
    ASSERT_EQ(agreed.programs.size(), 1u) << "c1 stays in DRAM";
    EXPECT_EQ(agreed.programs[0].buffers, std::vector<std::string>{first});
    EXPECT_EQ(within(r.outputs.at(0), before.outputs.at(0), 0), "") << "no value changes";
}

// A value one of whose readers takes it in fp32 (here a residual add) keeps its fp32 store, and
// so would a model output: only what every reader would round anyway is stored narrower. Its
// writer stores a bf16 copy beside it for the conv that rounds it (ChipProgram::copies), kept
// because the model then runs as one program in fewer cycles end to end; no value changes.
// On tsp-mini the same model is one program with c1 in MEM: the residual add reads c1 in bf16
// (ChipLayoutRequests::input_dtype), widened on chip by an unpacking vxm.cast, so c1's writer
// stores it in bf16 and both readers read the same bytes. The host link carries the model's
// input, weights and output, exactly what the model run one kernel a program moves less c1;
// the output stays within the chips' tolerance of the reference.
TEST(ModelLinkedOnChip, OnTspMiniAResidualIsReadInBf16SoItsValueStaysInMem) {
    const TwoConvs two(true);
    const Target tsp = Target::named("tsp-mini");
    const ChipModelProgram linked = compile_model_for_chip(two.model, two.values, tsp);
    ASSERT_EQ(linked.programs.size(), 1u);
    const ChipModelSegment &seg = linked.programs[0];
    ASSERT_EQ(seg.kernels.size(), linked.kernels.size());
    EXPECT_NE(std::find(seg.buffers.begin(), seg.buffers.end(), two.values[0].func.name()), seg.buffers.end()) << "c1 stays in MEM";
    EXPECT_EQ(stored_dtype(linked.kernels[0]), chipsim::DType::BF16);
    bool widened = false;
    for (const chipsim::Instruction &in : seg.program.program.instructions)
        widened = widened || (in.op == chipsim::Opcode::Vxm && chipsim::vxm_rows_unpacked(in) == 2);
    EXPECT_TRUE(widened) << "the residual is widened on chip";
    // Only the model's input, weights and output cross the link (the conv's NCHW image rows,
    // 72 bytes a channel, travel in whole 64-byte rows, as in the kernel alone).
    for (const ChipTensorMap &mp : seg.program.tensors)
        EXPECT_TRUE(mp.source == two.x.name() || mp.source == two.w1.name() || mp.source == two.w2.name() ||
                    mp.source == two.model.outputs()[0].name())
            << mp.source;
    const ChipModelProgram apart = compile_model_for_chip(two.model, two.values, tsp, {.link = false});
    const ChipModelResult r = run_model_on_chip(linked, two.bindings), one_by_one = run_model_on_chip(apart, two.bindings);
    int64_t apart_bytes = 0;
    for (const ChipProgramRun &g : one_by_one.programs) apart_bytes += g.report.bytes.at("HOST");
    // The one-by-one run moves c1 out of its kernel and into each reader; the linked one does not.
    int64_t c1_bytes = 0;
    for (const ChipModelSegment &g : apart.programs) {
        std::set<std::string> tensors;
        for (const ChipTensorMap &mp : g.program.tensors)
            if (mp.source == two.values[0].func.name()) tensors.insert(mp.tensor);
        for (const chipsim::Instruction &in : g.program.program.instructions)
            if ((in.op == chipsim::Opcode::DmaLoad || in.op == chipsim::Opcode::DmaStore) && tensors.count(in.view.tensor))
                c1_bytes += in.view.total_bytes();
    }
    EXPECT_GT(c1_bytes, 0);
    EXPECT_EQ(r.programs.at(0).report.bytes.at("HOST") + c1_bytes, apart_bytes);
    const Buffer<> reference = two.model.realize({two.shape}, two.bindings, Target::reference())[0];
    EXPECT_EQ(within(r.outputs.at(0), reference, 3e-2), "");
}

// A residual block's sum read by a later conv stays in MEM too, in the rows of the value it
// adds (c1, read for the last time by the kernel that computes the sum, which reads each row of
// it before writing that row): c1 → conv → + c1 → conv. Every intermediate stays on chip.
TEST(ModelLinkedOnChip, OnTspMiniASumTakesTheRowsOfTheResidualItReplaces) {
    Input x{Float(32), {1, 64, 6, 6}, "x"}, w1{Float(32), {64, 64, 3, 3}, "w1"}, w2{Float(32), {64, 64, 1, 1}, "w2"},
        w3{Float(32), {64, 64, 1, 1}, "w3"};
    const std::vector<int64_t> shape{1, 64, 6, 6};
    ops::Conv2dOptions same, one;
    same.padding = 1;
    same.name = "c1";
    one.name = "c2";
    const ops::Tensor c1 = ops::conv2d(x, w1, same), c2 = ops::conv2d(c1, w2, one);
    const ops::Tensor sum = ops::relu(ops::add(c2, c1));
    one.name = "c3";
    const ops::Tensor c3 = ops::conv2d(sum, w3, one);
    const std::vector<GraphValue> values{{c1, shape, "c1"}, {c2, shape, "c2"}, {sum, shape, "sum"}, {c3, shape, "c3"}};
    const Pipeline model(c3);
    const Bindings bindings = random_fp32_bindings({{x, shape}, {w1, {64, 64, 3, 3}}, {w2, {64, 64, 1, 1}}, {w3, {64, 64, 1, 1}}}, 11);
    const ChipModelProgram linked = compile_model_for_chip(model, values, Target::named("tsp-mini"));
    ASSERT_EQ(linked.programs.size(), 1u);
    const ChipModelSegment &seg = linked.programs[0];
    const std::string c1_name = c1.func().name();
    std::string sum_head; // the kernel that computes the sum (c2 and the add fused, or the add alone)
    for (const ChipModelKernel &k : linked.kernels)
        for (const ChipTensorMap &mp : k.program.tensors)
            if (!mp.is_output && mp.source == c1_name && k.head != c1_name) sum_head = k.head;
    ASSERT_TRUE(seg.regions.count(c1_name));
    ASSERT_TRUE(seg.regions.count(sum_head)) << sum_head;
    EXPECT_EQ(seg.regions.at(sum_head).first_row, seg.regions.at(c1_name).first_row);
    EXPECT_EQ(seg.regions.at(sum_head).rows, seg.regions.at(c1_name).rows);
    for (const ChipTensorMap &mp : seg.program.tensors) EXPECT_FALSE(seg.regions.count(mp.source)) << mp.source << " crosses the link";
    const ChipModelResult r = run_model_on_chip(linked, bindings);
    const Buffer<> reference = model.realize({shape}, bindings, Target::reference())[0];
    EXPECT_EQ(within(r.outputs.at(0), reference, 3e-2), "");
}

// A value its reader takes in another layout than its writer stored it in stays in MEM too, the
// layout changed on chip (region_layout.h): y = x·W is stored row-major, the row-wise
// reduction after it (rmsnorm of y + x, compiled from its loop nest) reads y down the lanes, 16
// tokens of one column a row, so each block of 16 of its rows is one sxm.transpose of y's rows;
// y is read again, row-major, by the sum at the end. The kernels share one program, y never
// crosses the link, and the values are the reference's.
TEST(ModelLinkedOnChip, OnTspMiniAValueReadInAnotherLayoutIsTurnedOnChip) {
    Input x{Float(32), {64, 128}, "x"}, w{Float(32), {128, 128}, "w"}, g{Float(32), {128}, "g"};
    ops::MatmulOptions named;
    named.name = "y";
    const ops::Tensor y = ops::matmul(x, w, named);
    const ops::Tensor s = ops::add(y, x, "s"), n = ops::rmsnorm(s, g), z = ops::add(n, y, "z");
    const std::vector<int64_t> shape{64, 128};
    const std::vector<GraphValue> values{{y, shape, "y"}, {s, shape, "s"}, {n, shape, "n"}, {z, shape, "z"}};
    const Pipeline model(z);
    const Bindings bindings = random_fp32_bindings({{x, shape}, {w, {128, 128}}, {g, {128}}}, 21);
    const ChipModelProgram linked = compile_model_for_chip(model, values, Target::named("tsp-mini"));
    ASSERT_EQ(linked.programs.size(), 1u);
    const ChipModelSegment &seg = linked.programs[0];
    ASSERT_EQ(seg.kernels.size(), linked.kernels.size());
    ASSERT_GE(linked.kernels.size(), 2u);
    const std::string y_name = y.func().name();
    EXPECT_TRUE(seg.regions.count(y_name)) << "y stays in MEM";
    for (const ChipTensorMap &mp : seg.program.tensors) EXPECT_NE(mp.source, y_name) << "y crosses the link";
    // The reader alone gathers y's elements from the host; linked, it transposes y's rows.
    const ChipModelKernel &reader = linked.kernels.at(1);
    std::vector<int> y_dims_written, y_dims_read;
    for (const ChipTensorMap &mp : linked.kernels.at(0).program.tensors)
        if (mp.is_output) y_dims_written = mp.chip_dim_of_source;
    for (const ChipTensorMap &mp : reader.program.tensors)
        if (!mp.is_output && mp.source == y_name) y_dims_read = mp.chip_dim_of_source;
    auto transposes = [](const ChipProgram &p) {
        return std::count_if(p.program.instructions.begin(), p.program.instructions.end(),
                             [](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::SxmTranspose; });
    };
    EXPECT_GT(transposes(seg.program), transposes(linked.kernels.at(0).program) + transposes(reader.program))
        << "y read " << ::testing::PrintToString(y_dims_read) << ", written " << ::testing::PrintToString(y_dims_written);
    const ChipModelResult r = run_model_on_chip(linked, bindings);
    const Buffer<> reference = model.realize({shape}, bindings, Target::reference())[0];
    EXPECT_EQ(within(r.outputs.at(0), reference, 3e-2), "");
}

TEST(ModelLinkedOnChip, AValueAReaderTakesInFp32KeepsItsStoreAndGetsABf16Copy) {
    const TwoConvs two(true);
    const Target npu = Target::named("npu-edge");
    const ChipModelProgram agreed = compile_model_for_chip(two.model, two.values, npu);
    const ChipModelProgram apart = compile_model_for_chip(two.model, two.values, npu, {.link = false});
    ASSERT_GE(agreed.kernels.size(), 2u);
    for (const ChipModelKernel &k : agreed.kernels) EXPECT_EQ(stored_dtype(k), chipsim::DType::FP32) << k.label;
    const ChipModelKernel &first = agreed.kernels[0];
    ASSERT_EQ(first.head, two.values[0].func.name());
    ASSERT_EQ(first.program.copies.size(), 1u);
    const ChipTensorMap &copy = first.program.copies[0];
    EXPECT_EQ(copy.source, first.head);
    const chipsim::TensorDecl *decl = first.program.program.tensor(copy.tensor);
    ASSERT_NE(decl, nullptr);
    EXPECT_TRUE(decl->is_buffer);
    EXPECT_EQ(decl->dtype, chipsim::DType::BF16);
    for (const ChipModelKernel &k : apart.kernels) EXPECT_TRUE(k.program.copies.empty()) << "unlinked kernels take no copies";
    ASSERT_EQ(agreed.programs.size(), 1u) << "the conv reading c1 reads its copy in DRAM";

    const ChipModelResult linked = run_model_on_chip(agreed, two.bindings), one_by_one = run_model_on_chip(apart, two.bindings);
    EXPECT_EQ(within(linked.outputs.at(0), one_by_one.outputs.at(0), 0), "") << "no value changes";
    const Buffer<> reference = two.model.realize({two.shape}, two.bindings, Target::reference())[0];
    EXPECT_EQ(within(linked.outputs.at(0), reference, 3e-2), "");
    EXPECT_LT(linked.cycles + linked.host_io_cycles, one_by_one.cycles + one_by_one.host_io_cycles);
}

// A layernorm between two matmuls (a transformer block's tail, both matmuls with a residual
// add). Alone, the chip's layernorm reads its rows transposed by the host; asked to read them as
// the matmul before wrote them, it turns them on chip with the SXM — a little slower alone, so
// the model is linked both ways and the faster kept — and stores a bf16 copy of its result for
// the matmul after, which takes it whole too, for its residual add. The three kernels share one
// program, no value changes, and the model runs in fewer cycles end to end.
TEST(ModelLinkedOnChip, ALayernormBetweenMatmulsTurnsItsRowsOnChipAndSharesTheirProgram) {
    const int64_t S = 64, D = 128;
    Input x(Float(32), {S, D}, "x"), w1(Float(32), {D, D}, "w1"), w2(Float(32), {D, D}, "w2"), g(Float(32), {D}, "g"),
        b(Float(32), {D}, "b");
    ops::MatmulOptions mm1, mm2;
    mm1.name = "mm1";
    mm2.name = "mm2";
    const ops::Tensor h = ops::add(ops::matmul(x, w1, mm1), x, "h"), n = ops::layernorm(h, g, b, 1, 1e-5, "n"),
                      y = ops::add(ops::matmul(n, w2, mm2), n, "y");
    const std::vector<GraphValue> values{{h, {S, D}, "h"}, {n, {S, D}, "n"}, {y, {S, D}, "y"}};
    const Pipeline model(y);
    auto random = [](std::vector<int64_t> s, uint64_t seed) {
        Buffer<> buf(Float(32), std::move(s));
        buf.fill_random(seed);
        return buf;
    };
    const Bindings bindings{{x, random({S, D}, 1)}, {w1, random({D, D}, 2)}, {w2, random({D, D}, 3)}, {g, random({D}, 4)}, {b, random({D}, 5)}};
    const Target npu = Target::named("npu-edge");
    // A kernel a value (at this size the layernorm would join the matmul before it).
    const ChipModelProgram linked = compile_model_for_chip(model, values, npu, {.fuse = false});
    const ChipModelProgram apart = compile_model_for_chip(model, values, npu, {.fuse = false, .link = false});
    ASSERT_EQ(linked.kernels.size(), 3u);
    const ChipModelKernel &norm = linked.kernels[1];
    ASSERT_EQ(norm.head, n.func().name());
    EXPECT_NE(norm.program.summary.find("turned into columns and back by the SXM"), std::string::npos) << norm.program.summary;
    EXPECT_EQ(apart.kernels[1].program.summary.find("by the SXM"), std::string::npos) << "alone, the host transposes";
    ASSERT_EQ(norm.program.copies.size(), 1u);
    EXPECT_EQ(stored_dtype(norm), chipsim::DType::FP32);
    ASSERT_EQ(linked.programs.size(), 1u);
    EXPECT_EQ(linked.programs[0].buffers.size(), 2u) << "h and n's copy stay in DRAM";

    const ChipModelResult one = run_model_on_chip(linked, bindings), three = run_model_on_chip(apart, bindings);
    EXPECT_EQ(within(one.outputs.at(0), three.outputs.at(0), 0), "") << "no value changes";
    EXPECT_EQ(within(one.outputs.at(0), model.realize({{S, D}}, bindings, Target::reference())[0], 3e-2), "");
    EXPECT_LT(one.cycles + one.host_io_cycles, three.cycles + three.host_io_cycles);
}

// The barrier between two linked kernels takes two semaphores above those the kernels use; on a
// DRAM chip with no two to spare, each kernel is a program of its own, and the model still runs.
TEST(ModelLinkedOnChip, AChipWithoutTwoSpareSemaphoresRunsEachKernelAlone) {
    const onnx::Model m = import_model("lstm_cell");
    const Bindings bindings = m.bindings(model_inputs(m, "lstm_cell"));
    const ChipModelProgram roomy = compile_model_for_chip(m.pipeline, m.values, Target::named("npu-edge"));
    ASSERT_EQ(roomy.programs.size(), 1u);
    int highest = -1;
    for (const ChipModelKernel &k : roomy.kernels)
        for (const chipsim::Instruction &in : k.program.program.instructions)
            if (in.op == chipsim::Opcode::SyncWait) highest = std::max(highest, int(in.count));
    chipsim::Target t = chipsim::load_target("npu-edge");
    t.name = "npu-edge-few-semaphores";
    t.semaphores = highest + 2; // the kernels fit, the barrier's second semaphore does not
    const fs::path file = onnx_test::work_dir() / "npu-edge-few-semaphores.json";
    std::ofstream(file) << t.to_json();
    const ChipModelProgram tight = compile_model_for_chip(m.pipeline, m.values, Target::named(file.string()));
    ASSERT_EQ(tight.kernels.size(), roomy.kernels.size());
    EXPECT_EQ(tight.programs.size(), tight.kernels.size());
    const ChipModelResult r = run_model_on_chip(tight, bindings), reference = run_model_on_chip(roomy, bindings);
    EXPECT_EQ(within(r.outputs.at(0), reference.outputs.at(0), 0), "");
}

// tsp-mini has no DRAM: a value kernels pass each other in the same bytes stays in MEM
// (link_in_mem), the kernels one statically scheduled program. Against every kernel a program of
// its own: no tensor of the program holds such a value, copies in and out of its region are
// mem.copy, the outputs stay within the chips' tolerance of the reference, the host link
// carries at least those values less (out and back in), and the model takes fewer cycles end
// to end. At least one kernel starts before the one before it has finished.
TEST(ModelLinkedOnChip, OnTspMiniValuesKernelsPassEachOtherStayInMem) {
    bool overlapped = false;
    for (const std::string name : {"lstm_cell", "mlp_gelu", "bert_layer"}) {
        SCOPED_TRACE(name);
        const onnx::Model m = import_model(name);
        const Bindings bindings = m.bindings(model_inputs(m, name));
        const Target tsp = Target::named("tsp-mini");
        const ChipModelProgram linked = compile_model_for_chip(m.pipeline, m.values, tsp);
        const ChipModelProgram apart = compile_model_for_chip(m.pipeline, m.values, tsp, {.link = false});
        size_t kept = 0;
        int64_t kept_bytes = 0;
        for (const ChipModelSegment &seg : linked.programs) {
            if (seg.kernels.size() < 2) continue;
            for (const std::string &v : seg.buffers) {
                ++kept;
                for (const ChipTensorMap &mp : seg.program.tensors) EXPECT_NE(mp.source, v) << "no host tensor holds it";
                for (size_t k : seg.kernels)
                    if (linked.kernels[k].head == v)
                        for (const ChipTensorMap &mp : linked.kernels[k].program.tensors)
                            if (mp.is_output && mp.source == v) kept_bytes += linked.kernels[k].program.program.tensor(mp.tensor)->bytes();
            }
            const auto &ins = seg.program.program.instructions;
            EXPECT_TRUE(std::any_of(ins.begin(), ins.end(), [](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::MemCopy; }));
        }
        EXPECT_GE(kept, 1u);
        EXPECT_GT(kept_bytes, 0);
        const ChipModelResult one = run_model_on_chip(linked, bindings), two = run_model_on_chip(apart, bindings);
        const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
        for (size_t o = 0; o < reference.size(); ++o) EXPECT_EQ(within(one.outputs.at(o), reference[o], 3e-2), "") << "output " << o;
        auto host_bytes = [](const ChipModelResult &r) {
            int64_t b = 0;
            for (const ChipProgramRun &g : r.programs) b += g.report.bytes.count("HOST") ? g.report.bytes.at("HOST") : 0;
            return b;
        };
        EXPECT_LE(host_bytes(one) + 2 * kept_bytes, host_bytes(two));
        EXPECT_LT(one.cycles + one.host_io_cycles, two.cycles + two.host_io_cycles);
        for (size_t k = 1; k < one.kernels.size(); ++k)
            overlapped = overlapped || (one.kernels[k].program == one.kernels[k - 1].program && one.kernels[k].begin_cycle < one.kernels[k - 1].end_cycle);
    }
    EXPECT_TRUE(overlapped);
}

// On tsp-mini a value that does not stay in MEM crosses the host link out of its kernel and back
// into the next. A kernel whose every reader rounds its value to bf16 for the MXM (BERT's head
// splits, its context) is asked to store bf16 there too, halving what crosses out (or the MEM its
// region takes); it is kept only where that kernel is no slower end to end (cycles + host I/O),
// which a kernel alone in its program shows. The values the readers get are the
// ones they got before (the host rounded them the same way), so no output changes.
TEST(ModelOnChip, OnTspMiniAValueEveryReaderRoundsToBf16CrossesTheLinkAsBf16) {
    const onnx::Model m = import_model("bert_layer");
    const Bindings bindings = m.bindings(model_inputs(m, "bert_layer"));
    const Target tsp = Target::named("tsp-mini");
    const ChipModelProgram agreed = compile_model_for_chip(m.pipeline, m.values, tsp);
    const ChipModelProgram as_is = compile_model_for_chip(m.pipeline, m.values, tsp, {.link = false});
    ASSERT_EQ(agreed.kernels.size(), as_is.kernels.size());
    std::map<std::string, std::set<chipsim::DType>> read_as;
    for (const ChipModelKernel &k : agreed.kernels)
        for (const ChipTensorMap &mp : k.program.tensors)
            if (!mp.is_output && mp.constant.empty()) read_as[mp.source].insert(k.program.program.tensor(mp.tensor)->dtype);
    const ChipModelResult r = run_model_on_chip(agreed, bindings), before = run_model_on_chip(as_is, bindings);
    int narrowed = 0;
    for (size_t k = 0; k < agreed.kernels.size(); ++k) {
        const ChipModelKernel &now = agreed.kernels[k];
        if (stored_dtype(now) != chipsim::DType::BF16 || stored_dtype(as_is.kernels[k]) != chipsim::DType::FP32) continue;
        ++narrowed;
        EXPECT_EQ(read_as[now.head], std::set{chipsim::DType::BF16}) << now.label << ": every reader rounds it to bf16";
        EXPECT_EQ(std::count(agreed.outputs.begin(), agreed.outputs.end(), now.head), 0) << now.label << " is no model output";
        if (agreed.programs[r.kernels[k].program].kernels.size() > 1) continue; // its value stays in MEM
        EXPECT_LE(r.kernels[k].report.total_cycles, before.kernels[k].report.total_cycles) << now.label;
        EXPECT_LT(r.kernels[k].report.bytes.at("HOST"), before.kernels[k].report.bytes.at("HOST")) << now.label;
    }
    EXPECT_GE(narrowed, 1);
    for (size_t o = 0; o < r.outputs.size(); ++o) EXPECT_EQ(within(r.outputs[o], before.outputs[o], 0), "") << "no value changes";
    EXPECT_LT(r.cycles + r.host_io_cycles, before.cycles + before.host_io_cycles);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelOnChip,
                         testing::Combine(testing::Values("mlp", "mlp_gelu", "conv_net", "resnet_block", "cleanup", "shape_arithmetic", "mlp_gelu_tanh",
                                                          "qdq_matmul_symmetric", "bert_layer", "lstm_cell", "lstm", "inverted_residual",
                                                          "qdq_matmul", "qdq_matmul_per_row", "qdq_matmul_asymmetric", "qdq_conv",
                                                          "qdq_conv_per_channel", "qdq_conv_asymmetric"),
                                          testing::Values("tsp-mini", "npu-edge")),
                         [](const testing::TestParamInfo<ChipCase> &i) {
                             std::string s = std::get<0>(i.param) + "_" + std::get<1>(i.param);
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

// model, target, the refused node, and words of the backend's reason for refusing it alone
using RefusedCase = std::tuple<std::string, std::string, std::string, std::string>;

class ModelRefusedByChip : public testing::TestWithParam<RefusedCase> {};

// Models with a node the chip backends cannot yet place: the graph compiler names the node and
// passes on the backend's reason for refusing it as a kernel of its own (not a merged kernel's
// reason), never falling back to the host.
TEST_P(ModelRefusedByChip, NamesTheNodeTheChipCannotRun) {
    const auto &[name, target, node, reason] = GetParam();
    const onnx::Model m = import_model(name);
    try {
        compile_model_for_chip(m.pipeline, m.values, Target::named(target));
        FAIL() << "expected " << node << " to be refused on " << target;
    } catch (const Error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(node + " cannot run on " + target + " even as a kernel of its own: chip backend: "), std::string::npos)
            << what;
        EXPECT_NE(what.find(reason), std::string::npos) << what;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelRefusedByChip,
    testing::Values(
        // fp64: the chips' lanes are 32 bits. (Until 7 December the Reshape of shape_arithmetic
        // was the example here; its lanes past the row's end now continue its run.)
        RefusedCase{"double_relu", "tsp-mini", "node 'relu64' (Relu)", "the VXM computes in 32-bit lanes"},
        RefusedCase{"double_relu", "npu-edge", "node 'relu64' (Relu)", "the VXM computes in 32-bit lanes"}),
    [](const testing::TestParamInfo<RefusedCase> &i) {
        std::string s = std::get<0>(i.param) + "_" + std::get<1>(i.param);
        std::replace(s.begin(), s.end(), '-', '_');
        return s;
    });

TEST(ModelOnChip, AnMlpBecomesOneKernelWithEveryLayerFused) {
    // Three matmuls with their bias and ReLU: merged kernels are no slower end to end than the
    // kernels they replace (each kernel's intermediates cross the host link), so on both chips
    // the whole MLP is one program, its nodes producers first.
    const onnx::Model m = import_model("mlp");
    for (const char *chip : {"tsp-mini", "npu-edge"}) {
        const ChipModelProgram program = compile_model_for_chip(m.pipeline, m.values, Target::named(chip));
        ASSERT_EQ(program.kernels.size(), 1u) << chip;
        const std::vector<std::string> &fused = program.kernels[0].fused;
        ASSERT_EQ(fused.size(), m.values.size()) << chip;
        EXPECT_EQ(std::vector<std::string>(fused.begin(), fused.begin() + 3),
                  (std::vector<std::string>{"node 'fc1' (MatMul)", "node 'bias1' (Add)", "node 'relu1' (Relu)"}))
            << chip;
        EXPECT_EQ(program.kernels[0].label, "node 'fc3' (Gemm)") << chip;
    }
}

TEST(ModelOnChip, AHostTargetIsRefused) {
    const onnx::Model m = import_model("mlp");
    try {
        compile_model_for_chip(m.pipeline, m.values, Target::host());
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("is not a chip"), std::string::npos) << e.what();
    }
}

using onnx_test::work_dir;

/// `tessera run-model` on a small model with --trace and --json: the report and the trace, parsed.
struct TracedRun {
    nlohmann::json report, trace;
};

TracedRun run_model_with_trace(const std::string &name, const std::string &target) {
    const fs::path trace = work_dir() / "model.trace.json";
    const auto r = tessera_test::run_command("'" TESSERA_BINARY_DIR "/apps/cli/tessera' run-model '" + (models_dir() / (name + ".onnx")).string() +
                                             "' --dim N=2 --target " + target + " --trace '" + trace.string() + "' --json");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    std::ifstream f(trace);
    return {nlohmann::json::parse(r.out), nlohmann::json::parse(f)};
}

class ModelTraceOnChip : public testing::TestWithParam<ChipCase> {};

TEST_P(ModelTraceOnChip, PlacesEveryKernelOneAfterAnotherOverTheReportedTotalCycles) {
    const auto &[name, target] = GetParam();
    const TracedRun run = run_model_with_trace(name, target);
    const nlohmann::json &kernels = run.report.at("kernels");
    const int64_t total = run.report.at("total_cycles").get<int64_t>();
    EXPECT_EQ(total, run.report.at("cycles").get<int64_t>() + run.report.at("host_io_cycles").get<int64_t>());
    // The kernels track: one box per kernel of the report, in order, each starting where the
    // one before ended, each as long as its cycles and host I/O.
    std::vector<nlohmann::json> kernel_boxes;
    std::map<std::string, int> instructions_per_kernel;
    int64_t latest_end = 0;
    for (const nlohmann::json &e : run.trace.at("traceEvents")) {
        if (e.at("ph") != "X") continue;
        const int64_t begin = e.at("args").at("begin_cycle"), end = e.at("args").at("end_cycle");
        EXPECT_LE(0, begin);
        EXPECT_LE(begin, end) << e.dump();
        latest_end = std::max(latest_end, end);
        if (e.at("tid") == 1) kernel_boxes.push_back(e);
        else if (e.at("args").contains("instruction")) ++instructions_per_kernel[e.at("args").at("kernel").get<std::string>()];
    }
    ASSERT_EQ(kernel_boxes.size(), kernels.size());
    int64_t offset = 0;
    for (size_t k = 0; k < kernels.size(); ++k) {
        const nlohmann::json &box = kernel_boxes[k];
        const std::string label = kernels[k].at("kernel");
        EXPECT_NE(box.at("name").get<std::string>().find(label), std::string::npos) << box.dump();
        EXPECT_EQ(box.at("args").at("fused"), kernels[k].at("fused"));
        EXPECT_EQ(box.at("args").at("begin_cycle").get<int64_t>(), offset) << label;
        offset += kernels[k].at("cycles").get<int64_t>() + kernels[k].at("host_io_cycles").get<int64_t>();
        EXPECT_EQ(box.at("args").at("end_cycle").get<int64_t>(), offset) << label;
        EXPECT_GT(instructions_per_kernel[label], 0) << "no instruction of " << label << " in the trace";
    }
    EXPECT_EQ(offset, total);
    EXPECT_EQ(latest_end, total) << "the trace spans the model's total cycles";
    EXPECT_EQ(run.trace.at("otherData").at("total_cycles").get<int64_t>(), total);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelTraceOnChip,
                         testing::Combine(testing::Values("mlp", "conv_net"), testing::Values("tsp-mini", "npu-edge")),
                         [](const testing::TestParamInfo<ChipCase> &i) {
                             std::string s = std::get<0>(i.param) + "_" + std::get<1>(i.param);
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

TEST(ModelTraceOnChip, ShowsTheHostLinkTransfersOfADramChipAsTheirOwnBoxes) {
    const TracedRun run = run_model_with_trace("mlp", "npu-edge");
    int64_t link_cycles = 0;
    for (const nlohmann::json &e : run.trace.at("traceEvents"))
        if (e.at("ph") == "X" && e.at("tid") == 2) link_cycles += e.at("args").at("end_cycle").get<int64_t>() - e.at("args").at("begin_cycle").get<int64_t>();
    EXPECT_EQ(link_cycles, run.report.at("host_io_cycles").get<int64_t>());
    EXPECT_GT(link_cycles, 0);
}

TEST(ModelTraceOnHost, HasOneTimedBoxPerFusionGroupOneAfterAnother) {
    const TracedRun run = run_model_with_trace("mlp", "host");
    std::vector<nlohmann::json> boxes;
    for (const nlohmann::json &e : run.trace.at("traceEvents"))
        if (e.at("ph") == "X") boxes.push_back(e);
    // mlp: three layers, each a matmul with its bias and activation fused.
    ASSERT_EQ(boxes.size(), 3u) << run.trace.dump();
    EXPECT_EQ(boxes[0].at("args").at("fused"), (nlohmann::json{"node 'fc1' (MatMul)", "node 'bias1' (Add)", "node 'relu1' (Relu)"}));
    double at = 0;
    for (const nlohmann::json &b : boxes) {
        EXPECT_DOUBLE_EQ(b.at("ts").get<double>(), at);
        EXPECT_GT(b.at("dur").get<double>(), 0);
        at += b.at("dur").get<double>();
    }
    EXPECT_EQ(run.report.at("verified"), true);
}

TEST(ModelTrace, AnUnwritableTraceFileIsAClearError) {
    const fs::path missing = work_dir() / "no such dir" / "t.json";
    const auto r = tessera_test::run_command("'" TESSERA_BINARY_DIR "/apps/cli/tessera' run-model '" + (models_dir() / "mlp.onnx").string() +
                                             "' --dim N=2 --target tsp-mini --trace '" + missing.string() + "'");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("tessera: error: run-model: cannot write the trace"), std::string::npos) << r.err;
}

class FusionSchedule : public testing::TestWithParam<std::string> {};

TEST_P(FusionSchedule, KeepsEveryValueOnTheHost) {
    const std::string name = GetParam();
    const onnx::Model m = import_model(name);
    const Bindings bindings = m.bindings(model_inputs(m, name));
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    apply_fusion_schedule(m.pipeline);
    const std::vector<Buffer<>> fused = m.pipeline.realize(m.realize_shapes(), bindings, Target::host());
    for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(onnx_test::compare(fused[i], reference[i]), "") << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, FusionSchedule,
                         testing::Values("resnet_block", "mlp_gelu", "inverted_residual", "qdq_conv", "cleanup", "shape_arithmetic", "mlp", "conv_net",
                                         "bert_layer", "lstm", "lstm_cell", "mlp_gelu_tanh", "qdq_matmul", "qdq_conv_per_channel", "qdq_matmul_symmetric"));

TEST(FusionSchedule, FusesTheMatmulIntoItsEpilogueAndInlinesElementwiseChains) {
    const onnx::Model m = import_model("mlp");
    apply_fusion_schedule(m.pipeline);
    const std::string s = m.pipeline.schedule().to_json();
    EXPECT_NE(s.find("compute_at"), std::string::npos) << s;
    EXPECT_NE(s.find("compute_inline"), std::string::npos) << s;
}

} // namespace
