/* The runtime of shape-dispatching kernel libraries (shape_dispatch.h): one entry point per op
 * reads the runtime extents from the caller's buffers, checks them against the library's
 * ranges, picks the first kernel of the table (kept in preference order) whose bucket covers
 * them, and, where the bucket is larger than the call, pads the inputs with zeros into the
 * bucket's shape and crops the outputs back. Plain C and libc only, compiled without
 * sanitizers and embedded in every dispatch library (like tessera_runtime.c), so host and chip
 * libraries share it.
 *
 * The table is an int64_t array written by the generator (codegen/cpu/dispatch_library.cpp):
 *   num_args, num_params, num_buckets,
 *   per param: lo, hi,
 *   per argument: is_output, dimensions, type_code, type_bits, then per dimension
 *                 (param index, scale, offset): extent = scale * value + offset, scale >= 1,
 *                 or (-1, 0, fixed extent),
 *   per bucket: one value per param.
 * A parameter's value is read from the first buffer carrying it by inverting its map. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/tessera/codegen/buffer_abi.h"

#define TESSERA_DISPATCH_MAX_ARGS 8
#define TESSERA_DISPATCH_MAX_DIMS 8
#define TESSERA_DISPATCH_MAX_PARAMS 8

typedef int (*tessera_dispatch_kernel_fn)();
typedef const char *(*tessera_dispatch_message_fn)(int);

static _Thread_local char last_message[512];
static _Thread_local int last_code;

/* Records the message of `code` for <name>_error_message and returns the code. */
static int fail(int code, const char *format, ...) {
    va_list list;
    va_start(list, format);
    vsnprintf(last_message, sizeof last_message, format, list);
    va_end(list);
    last_code = code;
    return code;
}

const char *tessera_dispatch_error_message(int code) {
    if (code != 0 && code == last_code) return last_message;
    switch (TESSERA_ERROR_KIND(code)) {
    case TESSERA_OK: return "success";
    case TESSERA_ERROR_NULL_BUFFER: return "a buffer pointer or its data/shape pointer is NULL";
    case TESSERA_ERROR_TYPE: return "a buffer's element type differs from the library's";
    case TESSERA_ERROR_DIMENSIONS: return "a buffer's number of dimensions differs from the library's";
    case TESSERA_ERROR_SHAPE: return "a buffer's extent is outside the library's range or disagrees with another buffer's";
    case TESSERA_ERROR_STRIDES: return "a buffer is not dense row-major";
    case TESSERA_ERROR_ALIASING: return "an output overlaps another argument";
    case TESSERA_ERROR_OUT_OF_MEMORY: return "padding buffers could not be allocated";
    default: return "unknown error code";
    }
}

/* The table decoded. */
typedef struct {
    int64_t num_args, num_params, num_buckets;
    const int64_t *ranges;  /* lo, hi per param */
    const int64_t *args[TESSERA_DISPATCH_MAX_ARGS];
    const int64_t *buckets; /* num_params values per bucket */
} table_t;

static void decode(const int64_t *t, table_t *d) {
    d->num_args = t[0];
    d->num_params = t[1];
    d->num_buckets = t[2];
    d->ranges = t + 3;
    const int64_t *p = d->ranges + 2 * d->num_params;
    for (int64_t a = 0; a < d->num_args; ++a) {
        d->args[a] = p;
        p += 4 + 3 * p[1];
    }
    d->buckets = p;
}

/* "H", "H - 2", "2*M + 1": the map scale * name + offset in words, for messages. */
static void map_text(char *text, size_t size, int64_t scale, int64_t offset, const char *name) {
    char scaled[48] = "";
    if (scale != 1) snprintf(scaled, sizeof scaled, "%lld*", (long long)scale);
    if (offset == 0) snprintf(text, size, "%s%s", scaled, name);
    else snprintf(text, size, "%s%s %c %llu", scaled, name, offset < 0 ? '-' : '+',
                  offset < 0 ? 0ull - (unsigned long long)offset : (unsigned long long)offset);
}

/* The bucket for these param values: the first in the table that covers them, or -1. */
static int64_t choose(const table_t *d, const int64_t *values) {
    for (int64_t b = 0; b < d->num_buckets; ++b) {
        const int64_t *v = d->buckets + b * d->num_params;
        int covers = 1;
        for (int64_t p = 0; p < d->num_params; ++p) covers &= v[p] >= values[p];
        if (covers) return b;
    }
    return -1;
}

const char *tessera_dispatch_select(const int64_t *table, const char *const *names, const int64_t *values) {
    table_t d;
    decode(table, &d);
    if (!values) return NULL;
    for (int64_t p = 0; p < d.num_params; ++p)
        if (values[p] < d.ranges[2 * p] || values[p] > d.ranges[2 * p + 1]) return NULL;
    const int64_t b = choose(&d, values);
    return b < 0 ? NULL : names[b];
}

/* This thread's padding buffers, one per argument position, grown as needed and kept: a
 * padded call allocates only when it needs more than any earlier call on the thread. */
static _Thread_local void *scratch[TESSERA_DISPATCH_MAX_ARGS];
static _Thread_local size_t scratch_size[TESSERA_DISPATCH_MAX_ARGS];

static void *scratch_buffer(int64_t a, size_t bytes) {
    if (bytes > scratch_size[a]) {
        free(scratch[a]);
        scratch[a] = malloc(bytes);
        scratch_size[a] = scratch[a] ? bytes : 0;
    }
    return scratch[a];
}

static size_t element_bytes(int64_t bits) { return bits == 1 ? 1 : (size_t)(bits / 8); }

/* Copies the `inner` corner (extents `small`) between a buffer of extents `small` and one of
 * extents `big` (both dense row-major), row by row; to_big says which way. */
static void copy_corner(char *small_data, char *big_data, const int64_t *small, const int64_t *big, int64_t dims, size_t bytes,
                        int to_big) {
    int64_t index[TESSERA_DISPATCH_MAX_DIMS] = {0};
    const size_t row = (size_t)small[dims - 1] * bytes;
    for (int64_t d = 0; d < dims; ++d)
        if (small[d] == 0) return;
    for (;;) {
        int64_t small_offset = 0, big_offset = 0;
        for (int64_t d = 0; d + 1 < dims; ++d) {
            small_offset = small_offset * small[d] + index[d];
            big_offset = big_offset * big[d] + index[d];
        }
        small_offset *= small[dims - 1];
        big_offset *= big[dims - 1];
        char *s = small_data + (size_t)small_offset * bytes, *b = big_data + (size_t)big_offset * bytes;
        if (to_big) memcpy(b, s, row);
        else memcpy(s, b, row);
        int64_t d = dims - 2;
        for (; d >= 0; --d) {
            if (++index[d] < small[d]) break;
            index[d] = 0;
        }
        if (d < 0) return;
    }
}

static int call_kernel(tessera_dispatch_kernel_fn f, int64_t n, void **a) {
    switch (n) {
    case 1: return ((int (*)(void *))f)(a[0]);
    case 2: return ((int (*)(void *, void *))f)(a[0], a[1]);
    case 3: return ((int (*)(void *, void *, void *))f)(a[0], a[1], a[2]);
    case 4: return ((int (*)(void *, void *, void *, void *))f)(a[0], a[1], a[2], a[3]);
    case 5: return ((int (*)(void *, void *, void *, void *, void *))f)(a[0], a[1], a[2], a[3], a[4]);
    case 6: return ((int (*)(void *, void *, void *, void *, void *, void *))f)(a[0], a[1], a[2], a[3], a[4], a[5]);
    case 7: return ((int (*)(void *, void *, void *, void *, void *, void *, void *))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
    default:
        return ((int (*)(void *, void *, void *, void *, void *, void *, void *, void *))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                                                              a[7]);
    }
}

/* The entry point's body. arg_names and param_names name things in messages; *last receives
 * the bucket called (for <name>_last_report of chip libraries). */
int tessera_dispatch_call(const int64_t *table, void *const *kernels, void *const *messages, const char *const *names,
                          const char *const *arg_names, const char *const *param_names, int64_t *last, void **args) {
    table_t d;
    decode(table, &d);
    int64_t values[TESSERA_DISPATCH_MAX_PARAMS];
    int64_t from_arg[TESSERA_DISPATCH_MAX_PARAMS], from_dim[TESSERA_DISPATCH_MAX_PARAMS];
    for (int64_t p = 0; p < d.num_params; ++p) {
        values[p] = -1;
        from_arg[p] = from_dim[p] = -1;
    }
    for (int64_t a = 0; a < d.num_args; ++a) {
        const tessera_buffer_t *buf = (const tessera_buffer_t *)args[a];
        const int64_t *spec = d.args[a];
        const int code = (int)((a + 1) << 8);
        if (!buf || !buf->data || !buf->shape)
            return fail(code | TESSERA_ERROR_NULL_BUFFER, "%s: the buffer, its data or its shape is NULL", arg_names[a]);
        if (buf->dimensions != spec[1])
            return fail(code | TESSERA_ERROR_DIMENSIONS, "%s: %d dimensions, the library takes %lld", arg_names[a], (int)buf->dimensions,
                        (long long)spec[1]);
        if (buf->type_code != spec[2] || buf->type_bits != spec[3])
            return fail(code | TESSERA_ERROR_TYPE, "%s: element type code %d of %d bits, the library takes code %lld of %lld bits",
                        arg_names[a], (int)buf->type_code, (int)buf->type_bits, (long long)spec[2], (long long)spec[3]);
        /* Unsigned: a caller's huge extents wrap instead of overflowing (the shape check below
         * refuses them anyway). */
        uint64_t dense = 1;
        for (int64_t dim = spec[1] - 1; dim >= 0 && buf->strides; --dim) {
            if (buf->shape[dim] != 1 && (uint64_t)buf->strides[dim] != dense)
                return fail(code | TESSERA_ERROR_STRIDES, "%s: dimension %lld has stride %lld; the library takes dense row-major buffers",
                            arg_names[a], (long long)dim, (long long)buf->strides[dim]);
            dense *= (uint64_t)buf->shape[dim];
        }
        for (int64_t dim = 0; dim < spec[1]; ++dim) {
            const int64_t param = spec[4 + 3 * dim], scale = spec[5 + 3 * dim], offset = spec[6 + 3 * dim], extent = buf->shape[dim];
            char map[96];
            if (param < 0) {
                if (extent != offset)
                    return fail(code | TESSERA_ERROR_SHAPE, "%s: dimension %lld is %lld; the library takes %lld", arg_names[a], (long long)dim,
                                (long long)extent, (long long)offset);
            } else if (from_arg[param] < 0) { /* unset: a negative extent is a value, refused below */
                int64_t difference = 0;
                if (__builtin_sub_overflow(extent, offset, &difference) || difference % scale != 0) {
                    map_text(map, sizeof map, scale, offset, param_names[param]);
                    return fail(code | TESSERA_ERROR_SHAPE, "%s: dimension %lld is %lld, which is %s for no integer %s", arg_names[a],
                                (long long)dim, (long long)extent, map, param_names[param]);
                }
                values[param] = difference / scale;
                from_arg[param] = a;
                from_dim[param] = dim;
            } else {
                int64_t expected = 0;
                const int overflow = __builtin_mul_overflow(scale, values[param], &expected) || __builtin_add_overflow(expected, offset, &expected);
                if (overflow || expected != extent) {
                    char consequence[160] = "";
                    if (scale != 1 || offset != 0) {
                        map_text(map, sizeof map, scale, offset, param_names[param]);
                        if (overflow) snprintf(consequence, sizeof consequence, ", so %s overflows", map);
                        else snprintf(consequence, sizeof consequence, ", so it must be %lld (%s)", (long long)expected, map);
                    }
                    return fail(code | TESSERA_ERROR_SHAPE, "%s: dimension %lld is %lld but %s's dimension %lld makes %s %lld%s", arg_names[a],
                                (long long)dim, (long long)extent, arg_names[from_arg[param]], (long long)from_dim[param], param_names[param],
                                (long long)values[param], consequence);
                }
            }
        }
    }
    for (int64_t p = 0; p < d.num_params; ++p) {
        /* A table whose parameter no buffer carries (write_dispatch_library refuses one). */
        if (from_arg[p] < 0)
            return fail(TESSERA_ERROR_SHAPE, "no buffer's extent gives %s, so the library cannot dispatch on it", param_names[p]);
        if (values[p] < d.ranges[2 * p] || values[p] > d.ranges[2 * p + 1]) {
            return fail((int)((from_arg[p] + 1) << 8) | TESSERA_ERROR_SHAPE, "%s = %lld (from %s's dimension %lld) is outside the range %lld..%lld this library serves",
                     param_names[p], (long long)values[p], arg_names[from_arg[p]], (long long)from_dim[p], (long long)d.ranges[2 * p],
                     (long long)d.ranges[2 * p + 1]);
        }
    }
    const int64_t b = choose(&d, values);
    if (b < 0) return fail(TESSERA_ERROR_SHAPE, "no kernel of the library covers this shape");
    if (last) *last = b;
    const int64_t *bucket = d.buckets + b * d.num_params;
    int exact = 1;
    for (int64_t p = 0; p < d.num_params; ++p) exact &= bucket[p] == values[p];
    int code = 0;
    if (exact) {
        code = call_kernel((tessera_dispatch_kernel_fn)kernels[b], d.num_args, args);
    } else {
        /* The bucket is larger: the buffers it makes larger are copied, zero-padded, into this
         * thread's scratch buffers of the bucket's shape (kept for the next call), and the outputs
         * cropped back; the others are passed as they are. */
        tessera_buffer_t padded[TESSERA_DISPATCH_MAX_ARGS];
        int64_t shapes[TESSERA_DISPATCH_MAX_ARGS][TESSERA_DISPATCH_MAX_DIMS];
        void *padded_args[TESSERA_DISPATCH_MAX_ARGS];
        int grown[TESSERA_DISPATCH_MAX_ARGS];
        for (int64_t a = 0; a < d.num_args; ++a) {
            const tessera_buffer_t *buf = (const tessera_buffer_t *)args[a];
            const int64_t *spec = d.args[a];
            size_t elements = 1;
            grown[a] = 0;
            for (int64_t dim = 0; dim < spec[1]; ++dim) {
                const int64_t param = spec[4 + 3 * dim];
                shapes[a][dim] = param < 0 ? spec[6 + 3 * dim] : spec[5 + 3 * dim] * bucket[param] + spec[6 + 3 * dim];
                elements *= (size_t)shapes[a][dim];
                grown[a] |= shapes[a][dim] != buf->shape[dim];
            }
            padded_args[a] = args[a];
            if (!grown[a]) continue;
            const size_t bytes = (elements ? elements : 1) * element_bytes(spec[3]);
            void *data = scratch_buffer(a, bytes);
            if (!data) return fail(TESSERA_ERROR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes to pad %s into", names[b], bytes, arg_names[a]);
            padded[a] = *buf;
            padded[a].shape = shapes[a];
            padded[a].strides = NULL;
            padded[a].data = data;
            padded_args[a] = &padded[a];
            if (!spec[0]) {
                memset(data, 0, bytes);
                copy_corner((char *)buf->data, (char *)data, buf->shape, shapes[a], spec[1], element_bytes(spec[3]), 1);
            }
        }
        code = call_kernel((tessera_dispatch_kernel_fn)kernels[b], d.num_args, padded_args);
        if (code == 0)
            for (int64_t a = 0; a < d.num_args; ++a)
                if (d.args[a][0] && grown[a])
                    copy_corner((char *)((tessera_buffer_t *)args[a])->data, (char *)padded[a].data, ((tessera_buffer_t *)args[a])->shape,
                                shapes[a], d.args[a][1], element_bytes(d.args[a][3]), 0);
    }
    if (code != 0) return fail(code, "%s: %s", names[b], ((tessera_dispatch_message_fn)messages[b])(code));
    return 0;
}
