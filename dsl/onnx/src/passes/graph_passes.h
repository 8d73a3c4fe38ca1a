#pragma once
// Target-independent clean-up of an ONNX graph before it is converted to Funcs, one pass per
// file, each one entry function that rewrites the graph in place and returns how many nodes it
// removed. They keep every graph output's name and value (within float rounding for the
// BatchNorm fold). Private to tessera_onnx.
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

namespace tessera::onnx::internal {

/// Removes nodes none of whose outputs reach a graph output (dead_node_elimination.cpp).
int eliminate_dead_nodes(::onnx::GraphProto &graph);

/// Replaces a node by an earlier one with the same op type, domain, inputs and attributes
/// (common_subexpression_elimination.cpp).
int eliminate_common_subexpressions(::onnx::GraphProto &graph);

/// Composes Transpose pairs into one Transpose (removed when the composition is the identity)
/// and Reshape chains into one Reshape (transpose_reshape_folding.cpp).
int fold_transposes_and_reshapes(::onnx::GraphProto &graph);

/// Folds an inference BatchNormalization whose input is a 2-D Conv's only use into the conv's
/// weights and bias, when the weights and the BatchNorm's parameters are fp32 initializers
/// (batchnorm_folding.cpp).
int fold_batchnorm_into_conv(::onnx::GraphProto &graph);

/// The domain of the nodes the passes introduce (ai.tessera::Gelu).
inline constexpr const char *kTesseraDomain = "ai.tessera";

/// Replaces the nodes of GELU's Erf form (five) or Tanh form (eight or nine; the node then has
/// approximation="tanh"), as PyTorch exports them, by one ai.tessera::Gelu node
/// (gelu_recognition.cpp). Returns how many it replaced.
int recognise_gelu(::onnx::GraphProto &graph);

/// Turns DequantizeLinear pairs around a Conv or MatMul into an integer kernel: ConvInteger or
/// MatMulInteger of the quantised operands and zero points (int8/uint8), then Cast to float and
/// the scales (and a float bias) applied to the int32 accumulator, so a QuantizeLinear after it
/// requantises as QLinearConv/QLinearMatMul do (qdq_fusion.cpp). The operand's scale is one
/// value; the weight's one value or one per output channel (Conv: axis 0, MatMul: the last).
/// Returns how many convs and matmuls it turned.
int fuse_qdq_into_integer_kernels(::onnx::GraphProto &graph);

/// The value of `name` when it is an initializer or a Constant node's output, else nullptr
/// (graph_queries.cpp).
const ::onnx::TensorProto *constant_tensor(const ::onnx::GraphProto &graph, const std::string &name);

/// Uses of every value name: how many node inputs and graph outputs read it.
std::map<std::string, int> value_uses(const ::onnx::GraphProto &graph);

} // namespace tessera::onnx::internal
