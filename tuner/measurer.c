/* Measuring a task's trials and recording them (see measurer.h). */
#include "tuner/measurer.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "measure/pool.h"
#include "measure/runner.h"
#include "measure/wire.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"

struct dt_measurer {
    dt_measurer_opts o;
    dt_db *db;
    dt_builder builder;
    dt_runner runner;
    dt_pool *pool;
    /* results from the pool's thread, under mu */
    pthread_mutex_t mu;
    dt_batch *batches;
    int nb;
    dt_trial_result *slots; /* [sum of trials], in batch order */
    int *base;              /* first slot of each batch */
    int64_t trials;
    double seconds;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pool_result(const dt_trial_result *r, void *ud)
{
    dt_measurer *m = ud;
    pthread_mutex_lock(&m->mu);
    for (int b = 0; b < m->nb; b++)
        for (int i = 0; i < m->batches[b].ntrials; i++)
            if (strcmp(m->batches[b].trials[i].uid, r->uid) == 0) {
                dt_trial_result *slot = &m->slots[m->base[b] + i];
                if (!slot->uid[0]) { /* exactly once: a late duplicate is dropped */
                    *slot = *r;
                    slot->error = r->error ? strdup(r->error) : NULL;
                }
                pthread_mutex_unlock(&m->mu);
                return;
            }
    pthread_mutex_unlock(&m->mu);
    dt_log_warn("tune: a result for unknown trial %s was dropped", r->uid);
}

int dt_measurer_open(const dt_measurer_opts *o, const char *target_key, dt_db *db,
                     dt_measurer **out, dt_err *e)
{
    *out = NULL;
    dt_measurer *m = calloc(1, sizeof *m);
    if (!m)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    m->o = *o;
    if (!(m->o.min_time_s > 0))
        m->o.min_time_s = 0.005;
    if (!(m->o.no_worker_grace_s > 0))
        m->o.no_worker_grace_s = 30;
    m->db = db;
    pthread_mutex_init(&m->mu, NULL);
    int rc = 0;
    if (!o->workers) {
        if ((rc = dt_builder_init(&m->builder, NULL, NULL, NULL, e)) ||
            (rc = dt_runner_init(&m->runner, &m->builder, o->runner_exe, e))) {
            dt_measurer_close(m);
            return rc;
        }
    } else {
        char *token = NULL;
        size_t token_len = 0;
        if ((rc = dt_token_read(o->token_file, &token, &token_len, e))) {
            dt_measurer_close(m);
            return rc == DT_ENOTFOUND ? (e->code = DT_EINVAL) : rc;
        }
        dt_pool_opts po = {.workers = o->workers,
                           .token = token,
                           .token_len = token_len,
                           .target_key = target_key,
                           .inflight = 1,
                           .batch_deadline_s = 600,
                           .on_result = pool_result,
                           .ud = m};
        rc = dt_pool_open(&po, &m->pool, e);
        memset(token, 0, token_len);
        free(token);
        if (rc) {
            dt_measurer_close(m);
            return rc;
        }
    }
    *out = m;
    return 0;
}

void dt_measurer_close(dt_measurer *m)
{
    if (!m)
        return;
    dt_pool_close(m->pool);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int64_t dt_measurer_trials(const dt_measurer *m) { return m->trials; }
double dt_measurer_seconds(const dt_measurer *m) { return m->seconds; }

/* ---- one run ------------------------------------------------------------------ */

/* Interns kernel k in the database (once) and returns its generated source. */
static int kernel_source(dt_measurer *m, dt_task *t, int k, char **src, dt_err *e)
{
    dt_kernel_op kop = {.op = t->w->op};
    memcpy(kop.attrs, t->w->attrs, sizeof kop.attrs);
    int rc = dt_codegen(&kop, &t->k[k].a, src, e);
    if (rc || t->k[k].id > 0)
        return rc;
    char hash[65], *ann = dt_annotation_to_string(&t->k[k].a);
    if (!ann)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    const char *s = *src;
    dt_hash_strings(&s, 1, hash);
    rc = dt_db_kernel_intern(m->db, t->w->op->name, dt_sketch_name(t->k[k].a.sketch), ann, hash,
                             &t->k[k].id, e);
    free(ann);
    return rc;
}

/* Records the results of batch b (one transaction). */
static int record_batch(dt_measurer *m, dt_task *t, const dt_batch *b, const int *req_of,
                        dt_mreq *reqs, dt_trial_result *res, dt_err *e)
{
    int rc = dt_db_begin(m->db, e);
    for (int i = 0; !rc && i < b->ntrials; i++) {
        dt_mreq *q = &reqs[req_of[i]];
        dt_trial_result *r = &res[i];
        if (!r->uid[0]) { /* never answered (a pool that gave up) */
            r->status = DT_TRIAL_WORKER_LOST;
            snprintf(r->uid, sizeof r->uid, "%s", b->trials[i].uid);
        }
        int ok = r->status == DT_TRIAL_OK && r->min_ns > 0;
        dt_meas_status ms;
        if (dt_meas_status_parse(dt_trial_status_name(r->status), &ms) != 0)
            ms = DT_MEAS_WORKER_LOST;
        if (r->status == DT_TRIAL_OK && !ok)
            ms = DT_MEAS_WRONG_ANSWER; /* an ok without a time cannot be used */
        dt_db_measurement rec = {
            .kernel_id = t->k[q->k].id,
            .target_id = t->target_id,
            .workload_id = t->workload_id,
            .shape = b->trials[i].shape,
            .threads = b->trials[i].threads,
            .status = ms,
            .min_ns = ok ? r->min_ns : NAN,
            .median_ns = ok ? r->median_ns : NAN,
            .error = ok ? NULL : (r->error ? r->error : "no time"),
            .trial_uid = b->trials[i].uid,
        };
        rc = dt_db_measurement_insert(m->db, &rec, NULL, NULL, e);
        q->status = r->status;
        q->ns = ok ? r->min_ns : NAN;
    }
    if (rc) {
        dt_db_rollback(m->db, NULL);
        return rc;
    }
    if ((rc = dt_db_commit(m->db, e)))
        return rc;
    for (int i = 0; i < b->ntrials; i++) {
        dt_mreq *q = &reqs[req_of[i]];
        if (dt_task_record(t, q->k, q->s, q->status == DT_TRIAL_OK ? q->ns : INFINITY))
            return dt_errf(e, DT_ENOMEM, "out of memory");
        t->trials++;
        m->trials++;
    }
    return 0;
}

int dt_measurer_run(dt_measurer *m, dt_task *t, dt_mreq *reqs, int n, dt_err *e)
{
    if (n <= 0)
        return 0;
    double t0 = now_s();
    int *kern = malloc((size_t)n * sizeof *kern), nb = 0;   /* distinct kernels */
    int *req_of = malloc((size_t)n * sizeof *req_of);       /* slot -> request */
    int *base = calloc((size_t)n + 1, sizeof *base);
    dt_batch *batches = calloc((size_t)n, sizeof *batches);
    dt_trial_result *slots = calloc((size_t)n, sizeof *slots);
    int rc = 0;
    if (!kern || !req_of || !base || !batches || !slots) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < nb && kern[j] != reqs[i].k)
            j++;
        if (j == nb)
            kern[nb++] = reqs[i].k;
        reqs[i].status = DT_TRIAL_WORKER_LOST;
        reqs[i].ns = NAN;
    }
    /* batches: one per kernel, its requests in order */
    int slot = 0;
    for (int b = 0; b < nb && !rc; b++) {
        dt_batch *bt = &batches[b];
        base[b] = slot;
        if ((rc = kernel_source(m, t, kern[b], &bt->source, e)))
            break;
        snprintf(bt->workload, sizeof bt->workload, "%s", t->key);
        dt_timing_default(&bt->timing);
        bt->timing.min_time_s = m->o.min_time_s;
        bt->timing.seed = m->o.seed;
        int cnt = 0;
        for (int i = 0; i < n; i++)
            cnt += reqs[i].k == kern[b];
        if (!(bt->trials = calloc((size_t)cnt, sizeof *bt->trials))) {
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
            break;
        }
        for (int i = 0; i < n && !rc; i++) {
            if (reqs[i].k != kern[b])
                continue;
            char shape[128];
            int64_t vals[DT_MAX_VARS];
            dt_workload_shape_at(t->w, reqs[i].s, vals, NULL);
            dt_shape_format(t->w, vals, shape, sizeof shape);
            dt_trial *tr = &bt->trials[bt->ntrials];
            if ((rc = dt_trial_init(tr, t->w, shape, t->threads, e)))
                break;
            dt_trial_uid_new(tr->uid);
            req_of[slot++] = i;
            bt->ntrials++;
        }
    }
    base[nb] = slot;
    if (rc)
        goto out;

    if (!m->pool) {
        const dt_batch **bp = malloc((size_t)nb * sizeof *bp);
        if (!bp) {
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
            goto out;
        }
        for (int b = 0; b < nb; b++)
            bp[b] = &batches[b];
        rc = dt_runner_build_many(&m->runner, bp, nb, e);
        free(bp);
        for (int b = 0; b < nb && !rc; b++) {
            if ((rc = dt_runner_run(&m->runner, &batches[b], slots + base[b], e)))
                break;
            rc = record_batch(m, t, &batches[b], req_of + base[b], reqs, slots + base[b], e);
        }
    } else {
        pthread_mutex_lock(&m->mu);
        m->batches = batches;
        m->nb = nb;
        m->slots = slots;
        m->base = base;
        pthread_mutex_unlock(&m->mu);
        for (int b = 0; b < nb && !rc; b++)
            rc = dt_pool_submit(m->pool, &batches[b], e);
        if (!rc)
            rc = dt_pool_drain_patient(m->pool, m->o.no_worker_grace_s, NULL, NULL, e);
        pthread_mutex_lock(&m->mu);
        m->batches = NULL;
        m->nb = 0;
        pthread_mutex_unlock(&m->mu);
        /* what arrived is recorded even when the pool gave up */
        for (int b = 0; b < nb; b++) {
            int any = 0;
            for (int i = base[b]; i < base[b + 1]; i++)
                any |= slots[i].uid[0] != 0;
            if (!any && rc)
                continue;
            dt_err e2;
            int rc2 = record_batch(m, t, &batches[b], req_of + base[b], reqs, slots + base[b],
                                   rc ? &e2 : e);
            if (rc2 && !rc)
                rc = rc2;
        }
    }
out:
    if (slots)
        for (int i = 0; i < n; i++)
            dt_trial_result_free(&slots[i]);
    if (batches)
        for (int b = 0; b < nb; b++)
            dt_batch_free(&batches[b]);
    free(kern);
    free(req_of);
    free(base);
    free(batches);
    free(slots);
    m->seconds += now_s() - t0;
    return rc;
}
