// The op words of `tessera run OP key=value...`, through the op registry as the CLI uses it.
// The input is split into words at white space; when the first word names a registered op it is
// the op, otherwise the first byte picks one from op_registry() and every word is a parameter
// (so mutations of any byte reach every op). The op is built with ops::build_op_from_words and
// lowered for the interpreter; small instances also run on the interpreter and are checked
// against the reference evaluator.
//
// What is checked: a refusal is a tessera::Error (sizes that are zero, negative, beyond 32 bits,
// whose products overflow, shapes that do not fit together); an op that builds lowers (sizes are
// validated where the op is built, never first in a backend); and what runs matches its meaning.
//
// Extents the input leaves out take min(default, 3) rather than the CLI's defaults (256, 1024...):
// then most inputs are small enough to run, and the fuzzer spends its time on op and parameter
// combinations. Extents the input gives are used as given, but an instance runs only when its
// work is at most kMaxRunWork, so no input asks for more than milliseconds of interpretation.
#include <algorithm>
#include <sstream>

#include "fuzz_util.h"
#include "tessera/lower.h"
#include "tessera/ops/registry.h"
#include "tessera/verify.h"

using namespace tessera;

namespace {

/// Output points × reduction length + input elements above which an instance is only lowered.
constexpr double kMaxRunWork = 1 << 15;

double elements(const std::vector<int64_t> &shape) {
    double n = 1;
    for (int64_t d : shape) n *= double(d); // double: huge shapes must not overflow the estimate
    return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const auto &registry = ops::op_registry();
    std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    const ops::OpSpec *spec = nullptr;
    for (const ops::OpSpec &s : registry)
        if (!words.empty() && s.name == words[0]) spec = &s;
    if (spec) words.erase(words.begin());
    else spec = &registry[data[0] % registry.size()];

    // Small extents for the ones not given (see the top of the file).
    std::vector<std::string> key_values = words;
    for (const ops::OpParam &p : spec->params) {
        if (p.kind != ops::OpParam::Kind::Extent) continue;
        const bool given = std::any_of(words.begin(), words.end(), [&](const std::string &w) { return w.rfind(p.name + "=", 0) == 0; });
        if (!given) key_values.push_back(p.name + "=" + std::to_string(std::min<int64_t>(std::stoll(p.default_value), 3)));
    }

    ops::OpInstance op;
    if (!fuzz::accepted([&] { op = ops::build_op_from_words(spec->name, key_values); })) return 0;
    const std::string what = op.description();
    LoweredModule lowered;
    fuzz::require(fuzz::accepted([&] { lowered = lower(op.pipeline, Target::interpreter(), op.output_shapes); }),
                  "an op that builds does not lower for the interpreter: " + what);

    double work = 0;
    for (const auto &s : op.output_shapes) work += elements(s) * double(op.reduction_length);
    for (const ops::OpInput &i : op.inputs) work += elements(i.shape);
    if (work > kMaxRunWork) return 0;

    const Bindings inputs = op.random_inputs(1);
    std::vector<Buffer<>> got;
    fuzz::require(fuzz::accepted([&] { got = op.pipeline.realize(op.output_shapes, inputs, Target::interpreter()); }),
                  "an op that lowers does not run on the interpreter: " + what);
    VerifyOptions options;
    options.mode = VerifyMode::Full;
    options.reduction_length = op.reduction_length;
    Verification v;
    fuzz::require(fuzz::accepted([&] { v = verify_outputs(op.pipeline, op.output_shapes, inputs, got, options); }),
                  "the interpreter's outputs of an op cannot be verified: " + what);
    fuzz::require(v.passed, "the interpreter disagrees with the reference on " + what + ": " + v.mismatch);
    return 0;
}
