#pragma once
// The whole user API of Tessera in one include (DESIGN.md §1):
//
//     #include <tessera/tessera.h>
//     using namespace tessera;
//
// It pulls in no LLVM, Z3 or Halide header. It sits above every library (DESIGN §2): it needs the
// umbrella target Tessera::tessera, which links them all; a program of one library includes
// that library's headers instead.

#include "tessera/error.h"
#include "tessera/half.h"
#include "tessera/type.h"

// The IR and its tools.
#include "tessera/expr.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

// The front end: Var, RDom, Func, Input, Param, Pipeline, boundary conditions, schedules.
#include "tessera/boundary.h"
#include "tessera/func.h"
#include "tessera/schedule.h"

// Data, targets and running.
#include "tessera/buffer.h"
#include "tessera/npy.h"
#include "tessera/realize.h"
#include "tessera/reference.h"
#include "tessera/verify.h"
#include "tessera/target.h"

// The operator library.
#include "tessera/ops.h"

// Lowering, the interpreter, the host JIT and ahead-of-time libraries, the chip backend and the
// library schedules. backends.h also keeps the backends linked (see there).
#include "tessera/interpreter.h"
#include "tessera/lower.h"

#include "tessera/codegen/aot.h"
#include "tessera/codegen/backends.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/jit.h"

// The autotuner and the tuning database.
#include "tessera/autotune.h"
#include "tessera/tuned_schedule.h"
#include "tessera/tuning_db.h"
#include "tessera/workload.h"
