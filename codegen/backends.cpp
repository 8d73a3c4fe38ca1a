// The anchor that tessera/codegen/backends.h references (why: see there).
#include "tessera/codegen/backends.h"

namespace tessera::internal {

int link_backends() { return 0; }

} // namespace tessera::internal
