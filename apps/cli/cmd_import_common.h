#pragma once
// What `tessera import` and `tessera run-model` share: the --dim words and the import itself.
#include <map>
#include <string>
#include <vector>

#include <tessera/onnx.h>

namespace tessera::cli {

/// "batch=4" words as a map; throws UsageError naming the word when one is not NAME=N with N a
/// positive integer, or a name is given twice.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string> &words);

/// Whether `target` (`name` on the command line) is a chip, after checking that it is the host
/// or a chip whose description loads (an unknown name or a bad file is a tessera::Error saying
/// so; another kind of target a UsageError naming `command`).
bool model_target_is_chip(const Target &target, const std::string &name, const std::string &command);

/// "[1, 3, 224, 224]".
std::string shape_text(const std::vector<int64_t> &shape);

} // namespace tessera::cli
