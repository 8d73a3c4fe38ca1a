#ifndef TESSERA_BUFFER_ABI_H
#define TESSERA_BUFFER_ABI_H
/* The C ABI of Tessera host kernels: how a buffer is passed and what the error codes mean.
 * Plain C, so that generated kernel headers embed this text verbatim and C programs use it.
 * JIT kernels (tessera::CompiledKernel) and ahead-of-time kernel libraries share it. */
#include <stdint.h>

/* Element type codes of tessera_buffer_t::type_code (the same order as tessera::TypeCode). */
#define TESSERA_TYPE_INT 0
#define TESSERA_TYPE_UINT 1
#define TESSERA_TYPE_FLOAT 2
#define TESSERA_TYPE_BFLOAT 3
#define TESSERA_TYPE_BOOL 4

/* A dense or strided n-dimensional array, row-major: shape[0] is the outermost dimension and
 * shape[dimensions - 1] the contiguous one. A kernel checks every field against what it was
 * compiled for before it touches `data`, and returns an error code on any mismatch. */
typedef struct tessera_buffer_t {
    void *data;             /* the first element; must not be NULL */
    const int64_t *shape;   /* `dimensions` extents, outermost first */
    const int64_t *strides; /* `dimensions` strides in elements, or NULL for dense row-major;
                               kernels accept only dense layouts (a stride of an extent-1
                               dimension is ignored) */
    int32_t dimensions;
    uint8_t type_code;      /* TESSERA_TYPE_* */
    uint8_t type_bits;      /* 8, 16, 32 or 64 (1 for bool, stored one byte per element) */
    uint16_t reserved;      /* zero */
} tessera_buffer_t;

/* Kernel return codes: 0 is success. Any other code carries its kind in the low byte
 * (TESSERA_ERROR_KIND(code)) and identifies the failed check in the bits above it; the
 * kernel's <name>_error_message(code) function describes it in words. */
#define TESSERA_OK 0
#define TESSERA_ERROR_NULL_BUFFER 1   /* a buffer pointer or its data/shape pointer is NULL */
#define TESSERA_ERROR_TYPE 2          /* the element type differs from the compiled one */
#define TESSERA_ERROR_DIMENSIONS 3    /* the number of dimensions differs */
#define TESSERA_ERROR_SHAPE 4         /* an extent differs from the compiled one */
#define TESSERA_ERROR_STRIDES 5       /* the buffer is not dense row-major */
#define TESSERA_ERROR_ALIASING 6      /* an output overlaps another argument */
#define TESSERA_ERROR_OUT_OF_MEMORY 7 /* a temporary buffer could not be allocated */
#define TESSERA_ERROR_KIND(code) ((code) & 0xff)

#endif
