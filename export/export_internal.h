/* Private to export/: the plan of one exported file (what dt_export_write
 * loads from the database) and the pieces that turn it into C text.
 *
 *   export_plan.c      the dispatch table, its kernels (annotations, C
 *                      identifiers), the packing groups and the C names of
 *                      the workload's variables
 *   export_op.h        the per-(op, dtype) hooks: the entry point's tensors,
 *                      NAME_pack's parameters and a region's fill, its
 *                      documentation and a kernel's call (op_<name>*.c)
 *   export_kernel.c    one kernel's translation unit, renamed so that several
 *                      fit in one file
 *   export_dispatch.c  the nested ifs over the table's boxes
 *   export_emit.c      the header, packing and the entry point
 *   export_file.c      writing both files atomically
 *
 * Ownership: a dt_export_plan owns everything it points to
 * (dt_export_plan_free). */
#ifndef DT_EXPORT_EXPORT_INTERNAL_H
#define DT_EXPORT_EXPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "dispatch/dispatch.h"
#include "dispatch/dispatch_stats.h"
#include "export/export.h"
#include "export/export_op.h"
#include "microkernel/codegen.h"

#define DT_EXPORT_NAME_MAX 64

typedef struct dt_export_kernel {
    int64_t id;          /* kernels.id */
    dt_annotation ann;   /* threads = the schedule's */
    int pack_group;      /* constant weights: index into the plan's packing groups */
} dt_export_kernel;

/* Constant weights packed once per distinct layout: the packed layout
 * [strip][K/KG][NR][KG] (then, for a quantized dtype, per-column data)
 * depends on nothing but the panel width NR and the K group KG (1; bf16 2
 * and int8 4 on AVX-512) and its K padding (KG; AMX: whole tiles of K):
 * one region per (NR, KG, padding). */
typedef struct dt_export_pack {
    int nr, kg, kpad;
    /* 1: the layout of an op's own sketch (the row of hooks that packs it,
     * dt_mk_op_for: conv2d's channel kernels), its weights packed whole in
     * one call (G = 1: bytes = group_bytes); 0: the GEMM view's panels */
    int whole;
    int kernel;          /* the kernel whose pack function fills the region */
    int64_t offset;      /* bytes from the start of the buffer (a multiple of 64) */
    int64_t bytes;       /* size of the region: G * dt_mk_packed_bytes(Ng, Kg) */
    int64_t group_bytes; /* dt_mk_packed_bytes(Ng, Kg): one group's packing (the
                          * kernel's packed_size entry point, not rounded) */
} dt_export_pack;

typedef struct dt_export_plan {
    char name[DT_EXPORT_NAME_MAX + 1];
    char target_key[256];
    dt_dispatch *d;      /* owned */
    const dt_workload *w;/* d->w */
    dt_kernel_op kop;
    const dt_export_op *xop; /* the op's export hooks */
    dt_gemm g;           /* the op's GEMM view (flags; sizes 0) */
    int64_t N, K;        /* constant weights (g.b_const): the constant N and K */
    /* The view's B as G diagonal blocks of Ng x Kg = N/G x K/G (a grouped
     * convolution's; G = 1, Ng = N, Kg = K otherwise): the weights are
     * stored block after block and each region of the packed buffer is G
     * packings of Ng x Kg, one after another (plan_packing). */
    int64_t G, Ng, Kg;
    int nk;
    dt_export_kernel *k; /* nk, in order of first use by the ranges */
    int *range_kernel;   /* d->n: index into k */
    int npack;
    dt_export_pack *pack;
    int64_t packed_bytes; /* the sum of the regions, each rounded up to 64 bytes */
    char (*var)[48];     /* w->nvars C parameter names of the variables */
    dt_dispatch_stats stats; /* objective and loss of the table (the ABI comment) */
} dt_export_plan;

/* 1 when s may be NAME: a C identifier of at most DT_EXPORT_NAME_MAX
 * characters that is not a keyword and neither is nor makes (NAME_pack, …) a
 * name of the C library, POSIX, OpenMP or dtune, nor one they reserve
 * (export_names.c); else 0 with the reason in why[0..n). */
int dt_export_name_check(const char *s, char *why, size_t n);

int dt_export_plan_load(dt_db *db, const dt_export_opts *o, const char *name,
                        dt_export_plan **out, dt_err *e);
void dt_export_plan_free(dt_export_plan *p);

/* Appends kernel k's translation unit with every file-scope identifier
 * renamed NAME_k<k>_... and every macro it defines undefined after it. */
int dt_export_emit_kernel(dt_strbuf *sb, const dt_export_plan *p, int k, dt_err *e);

/* Appends `static int NAME_select(<vars>)`: nested ifs over the variables
 * that return the kernel index dt_dispatch_find would pick for the shape
 * (a balanced tree over segments with one variable, a decision tree over
 * the grid of domain indices with several). */
void dt_export_emit_select(dt_strbuf *sb, const dt_export_plan *p);

/* The activation of p's GEMM view as words for a doc comment: ", then
 * ReLU", ", then GELU (erf form)" or "". */
const char *dt_export_act_text(const dt_export_plan *p);

/* An op's doc paragraph with its @FIELD@ placeholders filled in: each
 * fields[i].field ("@NAME@") written as fields[i].value; other text as is. */
typedef struct dt_export_field {
    const char *field, *value;
} dt_export_field;
void dt_export_fill(dt_strbuf *sb, const char *text, const dt_export_field *fields, size_t n);

/* Where a packing region `offset` (bytes) starts in the text: in floats on a
 * float pointer (unit 4: f32, whose text predates the other dtypes), else
 * bytes through a cast ("const char *", "char *"). */
void dt_export_offset_text(char *buf, size_t n, int unit, const char *cast, int64_t offset);

/* The whole C file and the header (malloc'ed). */
int dt_export_emit_c(const dt_export_plan *p, char **out, dt_err *e);
int dt_export_emit_h(const dt_export_plan *p, char **out, dt_err *e);

/* Writes the n files (paths[i] gets texts[i]) through temporary names and
 * renames them into place only when all were written; on failure none of
 * the paths is created or changed. */
int dt_export_write_files(const char *const *paths, const char *const *texts, int n,
                          dt_err *e);

#endif
