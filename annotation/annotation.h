/* Annotations, the values: the type, its names, its JSON and the PRNG the
 * search space draws from (DESIGN.md, "CPU micro-kernels").  The rules —
 * validation, sampling, mutation, crossover — are the search space's
 * (space/annotation.h), a unit's own rules its back-end's (backends/unit.h).
 *
 * A sketch is a loop structure; an annotation fills it with numbers.  A
 * micro-kernel is (op with its attributes) + annotation; nothing in it depends
 * on M, so one build serves every shape.
 *
 *   blocked  parallel (par): N's strips or M's MC blocks split evenly into one
 *            range per thread, or a grid of MC×NC blocks (mn); in a range,
 *            NC-wide column blocks; for each KC block of K: A packed MR-tall with zero padding (local
 *            padding), B prepacked once (constant) or packed here (dynamic);
 *            inner loops over NR strips and MR strips in `order`.
 *   stream   for small M: no K blocking, A read directly from X and broadcast
 *            (in a boundary M tile the rows past M re-read the last valid row:
 *            computed in full in registers, never stored), the prepacked
 *            weights streamed once in chunks of NC columns with a wide NR; M
 *            tiles innermost.
 *
 * Register tile: MR rows × NR columns = MR·(NR/VL) vector accumulators, where
 * VL is the back-end's vector width in floats.
 *
 * Ownership: plain values, no pointers; copy freely. */
#ifndef DT_ANNOTATION_ANNOTATION_H
#define DT_ANNOTATION_ANNOTATION_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "common/target.h"

/* DT_SKETCH_COUNT counts the sketches of every op's GEMM view (blocked,
 * stream): what a sample draws from when no sketch is pinned.  After them,
 * up to DT_SKETCH_ALL, the sketches an op offers of its own, drawn only
 * where its kernels offer them (microkernel/mk_op.h, dt_mk_op_offers):
 *   channel  conv2d with groups > 1 (depthwise and narrow groups): the
 *            vectors along the output channels (nr of them a block, nc a
 *            pass), mr output pixels a tile, the window's taps summed in
 *            registers (unroll: taps unrolled), threads over the output
 *            rows (m), the channel blocks (n) or both (mn); no K blocking
 *            (kc = mc = 0), no prefetch, vector unit only. */
typedef enum {
    DT_SKETCH_BLOCKED = 0,
    DT_SKETCH_STREAM,
    DT_SKETCH_COUNT,
    DT_SKETCH_CHANNEL = DT_SKETCH_COUNT,
    DT_SKETCH_ALL
} dt_sketch_kind;
typedef enum { DT_PAR_N = 0, DT_PAR_M, DT_PAR_MN, DT_PAR_COUNT } dt_par_axis;
/* How the partial tile at the N boundary is stored: vector masks, or via a
 * scratch tile copied out element by element. */
typedef enum { DT_STORE_MASK = 0, DT_STORE_SCRATCH, DT_STORE_COUNT } dt_store_kind;
/* Which of the two inner loops (over MR strips, over NR strips) is innermost. */
typedef enum { DT_ORDER_M_INNER = 0, DT_ORDER_N_INNER, DT_ORDER_COUNT } dt_loop_order;
/* The execution unit of the kernel: the isa's vector registers (every
 * back-end before AMX), AMX tiles (issue 29: the back-end is searched), or
 * the f32 FMA on values widened to 32-bit lanes where the isa's vector
 * unit is the dtype's own dot product (fma: bf16 widened on AVX-512,
 * issue 44).  Together with the workload's dtype and the isa it names the
 * back-end row (backends/backend.h, dt_backend_of_unit); a unit's rules
 * beyond the common ones are its back-end's (backends/unit.h).  A name
 * here is the unit's word in the annotation's JSON: append only. */
typedef enum { DT_UNIT_VEC = 0, DT_UNIT_AMX, DT_UNIT_FMA, DT_UNIT_COUNT } dt_unit;

typedef struct dt_annotation {
    dt_sketch_kind sketch;
    dt_isa isa;           /* back-end: generic (GCC vectors), avx2, avx512 */
    int mr, nr;           /* register tile; nr a multiple of the vector width */
    int kc;               /* K block (blocked); 0 in stream (whole K) */
    int mc;               /* M block, a multiple of mr (blocked); 0 in stream */
    int nc;               /* N cache block (blocked); grid column width (par mn);
                             a multiple of nr */
    int unroll;           /* K loop unroll: 1, 2, 4 or 8 */
    int prefetch;         /* prefetch distance in K steps, 0 = none */
    dt_store_kind store;
    dt_loop_order order;  /* stream: always DT_ORDER_M_INNER */
    dt_par_axis par;
    int threads;          /* OpenMP threads, 1..target cores */
    /* vec, or amx: then mr and nr are 16 × the C tiles' rows and columns
     * (mr = 16 rows of tiles per A tile, nr = 16 f32 columns per C tile),
     * kc a multiple of 64, unroll 1, prefetch 0, store mask (the tiles
     * are stored through a scratch tile).  Written to JSON only when amx,
     * so every vector annotation keeps its text and its kernels' hashes. */
    dt_unit unit;
} dt_annotation;

const char *dt_sketch_name(dt_sketch_kind s);
int dt_sketch_from_name(const char *name, dt_sketch_kind *out);
const char *dt_par_name(dt_par_axis p);
const char *dt_store_name(dt_store_kind s);
const char *dt_order_name(dt_loop_order o);
const char *dt_unit_name(dt_unit u);
int dt_unit_from_name(const char *name, dt_unit *out);
/* "vec, amx, fma": every unit's name, for error messages. */
const char *dt_unit_names(void);

/* Deterministic PRNG state for sampling (splitmix64/xorshift; seedable). */
typedef struct dt_rng {
    uint64_t s;
} dt_rng;
void dt_rng_seed(dt_rng *r, uint64_t seed);
uint64_t dt_rng_next(dt_rng *r);
int dt_rng_below(dt_rng *r, int n); /* uniform in [0, n) */

/* Stable JSON: fixed key order, every field present.  to_json returns a new
 * reference; from_json checks types, names and ranges (not the target). */
json_t *dt_annotation_to_json(const dt_annotation *a);
int dt_annotation_from_json(const json_t *j, dt_annotation *out, dt_err *e);
/* from_json of JSON text (e.g. a kernels.annotation column); DT_EINVAL with
 * jansson's message when the text is not JSON. */
int dt_annotation_from_text(const char *text, dt_annotation *out, dt_err *e);
/* Compact canonical text of to_json (malloc'ed). */
char *dt_annotation_to_string(const dt_annotation *a);
int dt_annotation_equal(const dt_annotation *a, const dt_annotation *b);

#endif
