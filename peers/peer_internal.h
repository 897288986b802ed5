/* Internal to peers/: the peer descriptors each library file defines, and the
 * helpers they share (problem checks, the separate epilogue pass, OpenMP
 * thread-count save/restore).  Not part of the peers interface (peer.h). */
#ifndef DT_PEERS_PEER_INTERNAL_H
#define DT_PEERS_PEER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/target.h"
#include "peers/peer.h"

/* Defined only when the library was found (DTUNE_HAVE_<NAME>). */
extern const dt_peer_desc dt_peer_onednn_desc;
extern const dt_peer_desc dt_peer_onednn_rt_desc;
extern const dt_peer_desc dt_peer_onednn_bf16_desc;
extern const dt_peer_desc dt_peer_dnnl_sgemm_desc;
extern const dt_peer_desc dt_peer_onednn_conv_desc;
extern const dt_peer_desc dt_peer_openblas_desc;
extern const dt_peer_desc dt_peer_libxsmm_desc;

/* Checks the fields of p (dims >= 1; constant weights: batch 1, stored
 * N x K, a known activation; threads >= 1; a known dtype; byte sizes fit in
 * int64 and size_t; int8: constant weights (else DT_EUNSUPPORTED), scales
 * finite and > 0, zp_a in 0..255, scale_b given).  DT_EINVAL,
 * DT_EOVERFLOW or DT_EUNSUPPORTED with a message that starts with `peer`. */
int dt_peer_check(const char *peer, const dt_peer_problem *p, dt_err *e);
/* dt_peer_check, then DT_EUNSUPPORTED for any dtype but f32 (the peers
 * whose library has no bf16 / int8 GEMM here). */
int dt_peer_f32_only(const char *peer, const dt_peer_problem *p, dt_err *e);
/* "f32", "bf16", "int8"; "?" for an out-of-range value. */
const char *dt_peer_dtype_name(dt_peer_dtype d);

/* This machine, detected once (no DTUNE_TARGET_* overrides: the probes
 * measure the hardware).  Zeroed (no features) if detection failed. */
const dt_target *dt_peer_machine(void);

/* The separate epilogue pass, for libraries that cannot fuse it: over the
 * row-major Y[M,N] (row stride ldy), Y += bias (if bias != NULL), then the
 * activation: dtune's micro-kernels' own code for it (peers/epilogue.c).  Parallel over rows with `threads` OpenMP threads
 * (one thread below 16K elements). */
void dt_peer_epilogue(float *y, int64_t M, int64_t N, int64_t ldy, const float *bias,
                      dt_peer_act act, int threads);

/* The same on one tile, in the calling thread (for drivers that apply the
 * epilogue tile by tile, while the tile is in cache). */
void dt_peer_epilogue_tile(float *y, int64_t rows, int64_t cols, int64_t ldy,
                           const float *bias, dt_peer_act act);

/* Sets the calling thread's OpenMP thread count (for OpenMP-threaded
 * libraries: oneDNN in Debian) and returns the previous one, to give back
 * to dt_peer_omp_leave. */
int dt_peer_omp_enter(int threads);
void dt_peer_omp_leave(int previous);

/* 64-byte aligned, zeroed (so already faulted in) allocation of n floats;
 * free with free(). */
float *dt_peer_alloc_floats(int64_t n);

#endif
