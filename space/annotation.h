/* Sketches and annotations: the shape-independent search space of
 * micro-kernels (DESIGN.md, "CPU micro-kernels").
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
#ifndef DT_SPACE_ANNOTATION_H
#define DT_SPACE_ANNOTATION_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "common/target.h"

typedef enum { DT_SKETCH_BLOCKED = 0, DT_SKETCH_STREAM, DT_SKETCH_COUNT } dt_sketch_kind;
typedef enum { DT_PAR_N = 0, DT_PAR_M, DT_PAR_MN, DT_PAR_COUNT } dt_par_axis;
/* How the partial tile at the N boundary is stored: vector masks, or via a
 * scratch tile copied out element by element. */
typedef enum { DT_STORE_MASK = 0, DT_STORE_SCRATCH, DT_STORE_COUNT } dt_store_kind;
/* Which of the two inner loops (over MR strips, over NR strips) is innermost. */
typedef enum { DT_ORDER_M_INNER = 0, DT_ORDER_N_INNER, DT_ORDER_COUNT } dt_loop_order;
/* The execution unit of the kernel: the isa's vector registers (every
 * back-end before AMX), or AMX tiles (issue 29: the back-end is searched).
 * Together with the workload's dtype and the isa it names the back-end row
 * (backends/backend.h, dt_backend_of_unit). */
typedef enum { DT_UNIT_VEC = 0, DT_UNIT_AMX, DT_UNIT_COUNT } dt_unit;

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

/* Checks a against the target: ISA supported, tile fits the vector register
 * file (accumulators + NR/VL B vectors + 1 broadcast <= registers), blocks
 * fit the cache level they are meant for, values in range.  DT_EINVAL with
 * the first reason ("mr*nr/16 + ... = 35 vector registers > 32") otherwise. */
int dt_annotation_validate(const dt_annotation *a, const dt_target *t, dt_err *e);

/* Deterministic PRNG state for sampling (splitmix64/xorshift; seedable). */
typedef struct dt_rng {
    uint64_t s;
} dt_rng;
void dt_rng_seed(dt_rng *r, uint64_t seed);
uint64_t dt_rng_next(dt_rng *r);
int dt_rng_below(dt_rng *r, int n); /* uniform in [0, n) */

/* Samples a valid annotation for the target: sketch chosen uniformly unless
 * sketch >= 0 pins it; threads fixed to `threads` when > 0.  Same seed, same
 * sequence.  Fails only if no valid annotation is found in many tries. */
int dt_annotation_sample(dt_rng *r, const dt_target *t, int sketch, int threads,
                         dt_annotation *out, dt_err *e);
/* dt_annotation_sample for an execution unit: DT_UNIT_VEC is exactly
 * dt_annotation_sample (same draws); DT_UNIT_AMX samples tile annotations
 * (the target must have AMX tiles: DT_EUNSUPPORTED otherwise). */
int dt_annotation_sample_unit(dt_rng *r, const dt_target *t, dt_unit unit, int sketch,
                              int threads, dt_annotation *out, dt_err *e);
/* A sample for a workload of dtype d: the back-end row drawn uniformly
 * among those the tuner searches on t (backends/backend.h,
 * dt_backend_searched: the row at the isa in use; for bf16 and int8 on
 * their own instruction also their widened portable row and, where AMX is
 * usable, their tile row), then an annotation of that row's isa and unit.
 * With one row it draws nothing more than dt_annotation_sample (same
 * sequence). */
int dt_annotation_sample_dtype(dt_rng *r, const dt_target *t, int dtype, int sketch, int threads,
                               dt_annotation *out, dt_err *e);
/* Changes one or two fields (tile sizes most often, then unroll, prefetch,
 * parallel axis, store, order) into a valid annotation. */
int dt_annotation_mutate(dt_rng *r, const dt_target *t, const dt_annotation *in,
                         dt_annotation *out, dt_err *e);
/* Each field from one parent or the other (same sketch and isa required),
 * repaired into a valid annotation. */
int dt_annotation_crossover(dt_rng *r, const dt_target *t, const dt_annotation *a,
                            const dt_annotation *b, dt_annotation *out, dt_err *e);

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
