/* A workload key read for the TVM client: which op, which dims are
 * constants and which are a variable by themselves, the epilogue and the
 * arithmetic — what a call needs to turn its tensors' shapes into the
 * variable values of dtune_lookup_values.  Read from the canonical key
 * (dtune_workload_canonical), whose grammar is docs/workload-keys.md. */
#ifndef DTUNE_TVM_CLIENT_KEY_H
#define DTUNE_TVM_CLIENT_KEY_H

#include <stddef.h>
#include <stdint.h>

#include <dtune/dtune.h>

enum { DT_TVM_DENSE = 1, DT_TVM_BMM = 2 };
#define DT_TVM_MAX_VARS 8

typedef struct {
    char canonical[DTUNE_KEY_MAX];
    int op;                   /* DT_TVM_DENSE (dims M, N, K) or DT_TVM_BMM (B, M, N, K) */
    int ndims;                /* 3 or 4 */
    char dims[5];             /* the dims' one-letter names in order: "MNK", "BMNK" */
    /* per dim (the op's order): a constant (var < 0, value) or variable var */
    int dim_var[4];
    int64_t dim_value[4];
    int nvars;                /* sorted by name, as dtune_lookup_values takes them */
    char var[DT_TVM_MAX_VARS][33];
    int bias;                 /* the epilogue adds a bias (a bias tensor is passed) */
    int nt;                   /* batch_matmul layout NT */
    int math_bf16;            /* f32 operands, bf16 products (the _f32bf16 ABI) */
} dt_tvm_key;

/* Reads key (any spelling) into *k.  0, or a DTUNE_E* code (DTUNE_EINVAL
 * for a bad key) with the reason in dt_tvm_errmsg() (client_err.h):
 * (malformed key, an op other than dense and batch_matmul, a dtype other
 * than f32 or math=bf16, a dim given by an expression of several
 * variables). */
int dt_tvm_key_read(const char *key, dt_tvm_key *k);

#endif
