# cmake -DOUT=<file.cpp> -DINPUTS="a.json;b.json" -P embed_targets.cmake
# Writes a .cpp holding each target JSON as a raw string literal, so the installed library knows
# its built-in targets without the source tree.
set(body "// Generated from chipsim/targets/*.json by embed_targets.cmake. Do not edit.\n")
string(APPEND body "#include <map>\n#include <string>\n\nnamespace tessera::chipsim {\n\n")
string(APPEND body "const std::map<std::string, std::string> &builtin_target_sources() {\n")
string(APPEND body "    static const std::map<std::string, std::string> sources = {\n")
foreach(input ${INPUTS})
  get_filename_component(name ${input} NAME_WE)
  file(READ ${input} text)
  string(FIND "${text}" ")tessera_json\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${input} contains the raw-string delimiter")
  endif()
  string(APPEND body "        {\"${name}\", R\"tessera_json(${text})tessera_json\"},\n")
endforeach()
string(APPEND body "    };\n    return sources;\n}\n\n} // namespace tessera::chipsim\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
