#pragma once
// The entry point of a whole model's host library (model_entry.cpp): what aot.cpp hands it.
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/codegen/compiled_kernel.h"

namespace tessera::internal {

/// Where one argument of the model's graph kernel comes from: the entry point's argument
/// `entry_index`, or (entry_index < 0) a constant embedded in the library.
struct ModelKernelArgument {
    int entry_index = -1;
    Buffer<> constant;
};

/// An object defining <name>(entry_arguments buffers), <name>_argv and <name>_error_message,
/// which call <name>_graph_argv with `graph_arguments` (constants embedded).
std::string emit_model_entry_object(const std::string &name, size_t entry_arguments, const std::vector<ModelKernelArgument> &graph_arguments,
                                    const CpuOptions &options);

} // namespace tessera::internal
