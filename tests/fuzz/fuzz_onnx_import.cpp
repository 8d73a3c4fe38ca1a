// ONNX models: what tessera::onnx::import accepts (symbolic dimensions bound to 2) must be a
// pipeline the reference evaluator runs on random inputs, when it is small (at most 2^15 output
// elements and 2^16 MACs); every refusal must be a tessera::Error.
// The MAC cap keeps one execution under half a second in the sanitized build: the reference
// evaluator costs about 6 µs a MAC there, and the ResNet-block seed's 230,400 MACs (1.3 s
// unloaded) ran past libFuzzer's 30 s timeout on a loaded machine.
#include "fuzz_util.h"
#include "tessera/onnx.h"

using namespace tessera;

namespace {

/// Symbolic dimensions a seed or a mutation may use, bound so that most models import.
const std::map<std::string, int64_t> kDims = {{"N", 2}, {"batch", 2}, {"seq", 2}, {"M", 2}};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::vector<uint8_t> bytes(data, data + size);
    onnx::Model m;
    if (!fuzz::accepted([&] { m = onnx::import(bytes, {.dims = kDims}, "fuzz.onnx"); })) return 0;
    fuzz::require(m.outputs.size() == m.pipeline.outputs().size(), "a model's outputs and its pipeline's differ in number");
    int64_t points = 0, macs = 0;
    for (const auto &shape : m.realize_shapes()) {
        int64_t n = 1;
        for (int64_t e : shape) n *= e;
        points += n;
    }
    for (const onnx::ModelNode &node : m.nodes) macs += node.macs;
    if (points > (1 << 15) || macs > (1 << 16)) return 0;
    std::map<std::string, Buffer<>> inputs;
    uint64_t seed = 1;
    for (const onnx::ModelTensor &in : m.inputs) {
        Buffer<> b(in.type, in.shape);
        b.fill_random(seed++);
        inputs[in.name] = b;
    }
    // Running may refuse (an input too large for the evaluator's limits) but must not crash.
    fuzz::accepted([&] {
        const std::vector<Buffer<>> out = m.run(inputs, Target::reference());
        fuzz::require(out.size() == m.outputs.size(), "run returned the wrong number of outputs");
        for (size_t i = 0; i < out.size(); ++i)
            fuzz::require(out[i].shape() == m.outputs[i].shape, "an output's shape differs from the model's");
    });
    return 0;
}
