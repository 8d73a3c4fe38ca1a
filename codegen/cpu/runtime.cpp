#include "tessera/codegen/runtime.h"

#include "runtime/tessera_runtime.h"

namespace tessera {

void set_num_threads(int n) { tessera_rt_set_num_threads(n); }

int num_threads() { return tessera_rt_get_num_threads(); }

} // namespace tessera
