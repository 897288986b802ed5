/* The measurement session: kernels and shapes to batches, batches to
 * results, results to records (see measurer.h). */
#include "tuner/measurer.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "measure/pool.h"
#include "measure/runner.h"
#include "measure/wire.h"
#include "microkernel/build.h"
#include "microkernel/codegen.h"

typedef struct {
    const char *uid;
    int trial;
} uid_ref;

/* One dt_measurer_measure call. */
typedef struct {
    dt_mrun *r;
    dt_batch *b;               /* [nb] */
    int nb;
    int *batch_of;             /* [n] trial -> batch */
    int *slot_of;              /* [n] trial -> its slot in its batch */
    int **trial_of;            /* [nb][ntrials] batch slot -> trial */
    int *left;                 /* [nb] results still to come */
    uid_ref *index;            /* [n] sorted by uid */
    int64_t done;
    int db_failed;
    dt_err db_err;             /* the first database failure */
} run_state;

struct dt_measurer {
    dt_measurer_opts o;
    dt_db *db;
    int64_t target_id;
    dt_builder builder;
    dt_runner runner;
    dt_pool *pool;
    pthread_mutex_t mu;        /* guards cur, the run's trials and the database while a
                                * pool delivers */
    run_state *cur;            /* the run pool results belong to */
    int cores;                 /* the target's, for the impossible-time bound */
    double deadline;           /* dt_now_s after which pool waits stop (0: none) */
    int64_t faults;            /* results refused as impossible here (local) */
    int64_t trials;
    double seconds;
};

/* ---- registration ------------------------------------------------------------ */

int dt_measurer_register(dt_db *db, const dt_target *tg, const char *target_key,
                         const dt_workload *w, int64_t *target_id, int64_t *workload_id,
                         dt_err *e)
{
    int rc = 0;
    if (tg) {
        json_t *tj = dt_target_to_json(tg);
        char *tinfo = tj ? json_dumps(tj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(tj);
        int64_t id = 0;
        rc = tinfo ? dt_db_target_upsert(db, target_key, dt_isa_name(tg->isa), tinfo, &id, e)
                   : dt_errf(e, DT_ENOMEM, "out of memory");
        free(tinfo);
        if (!rc && target_id)
            *target_id = id;
    }
    if (!rc && w) {
        char key[DT_KEY_MAX], *sset = dt_workload_shape_set_json(w);
        int64_t id = 0;
        dt_workload_key(w, key, sizeof key);
        rc = sset ? dt_db_workload_upsert(db, key, w->op->name, sset, &id, e)
                  : dt_errf(e, DT_ENOMEM, "out of memory");
        free(sset);
        if (!rc && workload_id)
            *workload_id = id;
    }
    return rc;
}

/* ---- the session -------------------------------------------------------------- */

static int cmp_ref(const void *x, const void *y)
{
    return strcmp(((const uid_ref *)x)->uid, ((const uid_ref *)y)->uid);
}

static void record_batch(dt_measurer *m, run_state *st, int b);

/* Takes one result (any thread, under m->mu): the first for its trial is
 * kept, a repeated one dropped; a batch whose last result arrived is
 * recorded. */
static void take_result(dt_measurer *m, run_state *st, const dt_trial_result *res)
{
    dt_mrun *r = st->r;
    uid_ref key = {.uid = res->uid};
    uid_ref *ref = bsearch(&key, st->index, (size_t)r->n, sizeof *st->index, cmp_ref);
    if (!ref) {
        dt_log_warn("measure: a result for unknown trial %s was dropped", res->uid);
        return;
    }
    dt_mtrial *t = &r->trials[ref->trial];
    if (t->got) {
        dt_log_warn("measure: a second result for trial %s was dropped", res->uid);
        return;
    }
    t->got = 1;
    t->res = *res;
    t->res.error = NULL;
    char why[256];
    if (res->status == DT_TRIAL_OK &&
        !dt_trial_result_possible(r->w, &st->b[st->batch_of[ref->trial]]
                                              .trials[st->slot_of[ref->trial]],
                                  res, m->cores, why, sizeof why)) {
        /* a time no CPU could reach (the pool refuses those from workers
         * already; this is the local runner, or a check of last resort):
         * nothing may take it for a fast kernel */
        char msg[400];
        snprintf(msg, sizeof msg, "worker fault: %s reported an impossible time: %s",
                 m->pool ? "a worker" : "the local runner", why);
        dt_log_warn("measure: trial %s (shape %s): %s", res->uid, t->text, msg);
        m->faults++;
        t->res.status = DT_TRIAL_WORKER_LOST;
        t->res.min_ns = t->res.median_ns = NAN;
        t->res.error = strdup(msg);
    } else if (res->status != DT_TRIAL_OK) {
        t->res.error = strdup(res->error && res->error[0] ? res->error : "no detail");
    }
    st->done++;
    if (m->o.progress)
        m->o.progress(st->done, r->n, m->o.ud);
    int b = st->batch_of[ref->trial];
    if (--st->left[b] == 0)
        record_batch(m, st, b);
}

/* Records the trials of batch b that have a result and no record yet, in
 * one transaction (under m->mu).  The first failure stops all recording. */
static void record_batch(dt_measurer *m, run_state *st, int b)
{
    if (st->db_failed)
        return;
    dt_mrun *r = st->r;
    dt_err e;
    int rc = dt_db_begin(m->db, &e);
    int nrec = 0;
    for (int i = 0; !rc && i < st->b[b].ntrials; i++) {
        dt_mtrial *t = &r->trials[st->trial_of[b][i]];
        if (!t->got || t->recorded)
            continue;
        int ok = t->res.status == DT_TRIAL_OK;
        dt_db_measurement rec = {
            .kernel_id = r->kernels[t->kernel].id,
            .target_id = m->target_id,
            .workload_id = r->workload_id,
            .shape = t->text,
            .threads = t->threads,
            .status = t->res.status,
            .min_ns = ok ? t->res.min_ns : NAN,
            .median_ns = ok ? t->res.median_ns : NAN,
            .error = ok ? NULL : t->res.error,
            .trial_uid = t->uid,
        };
        bool already = false;
        rc = dt_db_measurement_insert(m->db, &rec, NULL, &already, &e);
        t->already = already;
        nrec++;
    }
    if (!rc)
        rc = dt_db_commit(m->db, &e);
    else
        dt_db_rollback(m->db, NULL);
    if (rc) {
        st->db_failed = 1;
        st->db_err = e;
        return;
    }
    for (int i = 0; i < st->b[b].ntrials; i++) {
        dt_mtrial *t = &r->trials[st->trial_of[b][i]];
        if (t->got)
            t->recorded = 1;
    }
    m->trials += nrec;
}

static void pool_result(const dt_trial_result *res, void *ud)
{
    dt_measurer *m = ud;
    pthread_mutex_lock(&m->mu);
    if (m->cur)
        take_result(m, m->cur, res);
    else
        dt_log_warn("measure: a result for trial %s arrived after its run; dropped", res->uid);
    pthread_mutex_unlock(&m->mu);
}

int dt_measurer_open(const dt_measurer_opts *o, dt_db *db, const dt_target *tg,
                     const char *target_key, dt_measurer **out, dt_err *e)
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
    if (tg)
        m->cores = tg->cores > tg->logical_cpus ? tg->cores : tg->logical_cpus;
    pthread_mutex_init(&m->mu, NULL);
    int rc = dt_measurer_register(db, tg, target_key, NULL, &m->target_id, NULL, e);
    if (rc) {
        dt_measurer_close(m);
        return rc;
    }
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
                           .batch_deadline_s = m->o.batch_deadline_s,
                           .cores = m->cores,
                           .on_result = pool_result,
                           .ud = m};
        rc = dt_pool_open(&po, &m->pool, e);
        explicit_bzero(token, token_len); /* a memset before free may be elided */
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
void dt_measurer_set_deadline(dt_measurer *m, double at) { m->deadline = at > 0 ? at : 0; }
int64_t dt_measurer_faults(const dt_measurer *m)
{
    return m->faults + (m->pool ? dt_pool_faults(m->pool) : 0);
}
double dt_measurer_seconds(const dt_measurer *m) { return m->seconds; }

void dt_mtrials_free(dt_mtrial *trials, int n)
{
    for (int i = 0; trials && i < n; i++)
        dt_trial_result_free(&trials[i].res);
}

int dt_measurer_plan(const dt_mtrial *trials, int n, int max_trials, int *batch_of)
{
    if (max_trials <= 0 || max_trials > DT_BATCH_MAX_TRIALS)
        max_trials = DT_BATCH_MAX_TRIALS;
    int nk = 0;
    for (int i = 0; i < n; i++)
        if (trials[i].kernel < 0)
            return DT_EINVAL;
        else if (trials[i].kernel >= nk)
            nk = trials[i].kernel + 1;
    /* per kernel: its trials, then its first batch in order of first appearance */
    int *cnt = calloc((size_t)nk + 1, sizeof *cnt), *base = malloc(((size_t)nk + 1) * sizeof *base);
    if (!cnt || !base) {
        free(cnt);
        free(base);
        return DT_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        cnt[trials[i].kernel]++;
    for (int k = 0; k < nk; k++)
        base[k] = -1;
    int nb = 0;
    for (int i = 0; i < n; i++) {
        int k = trials[i].kernel;
        if (base[k] < 0) {
            base[k] = nb;
            nb += (cnt[k] + max_trials - 1) / max_trials;
            cnt[k] = 0; /* from here on: trials of k placed so far */
        }
        batch_of[i] = base[k] + cnt[k]++ / max_trials;
    }
    free(cnt);
    free(base);
    return nb;
}

/* ---- one run -------------------------------------------------------------------- */

static void state_free(run_state *st)
{
    for (int b = 0; st->b && b < st->nb; b++)
        dt_batch_free(&st->b[b]);
    for (int b = 0; st->trial_of && b < st->nb; b++)
        free(st->trial_of[b]);
    free(st->b);
    free(st->batch_of);
    free(st->slot_of);
    free(st->trial_of);
    free(st->left);
    free(st->index);
}

/* The generated source src[k] and its hash for every kernel with a trial
 * (src[k] stays NULL for the others); the ids of those not in the database
 * yet, interned in one transaction. */
static int prepare_kernels(dt_measurer *m, dt_mrun *r, char **src, dt_err *e)
{
    dt_kernel_op kop = dt_kernel_op_of_workload(r->w);
    int rc = 0, intern = 0;
    for (int i = 0; i < r->n; i++) {
        int k = r->trials[i].kernel;
        if (src[k])
            continue;
        if ((rc = dt_codegen(&kop, &r->kernels[k].a, &src[k], e))) {
            dt_err_prefix(e, "kernel %d", k);
            return rc;
        }
        const char *s = src[k];
        dt_hash_strings(&s, 1, r->kernels[k].source_hash);
        intern |= r->kernels[k].id <= 0;
    }
    if (!intern)
        return 0;
    if ((rc = dt_db_begin(m->db, e)))
        return rc;
    for (int k = 0; !rc && k < r->nk; k++) {
        if (!src[k] || r->kernels[k].id > 0)
            continue;
        char *ann = dt_annotation_to_string(&r->kernels[k].a);
        char *attrs = dt_kernel_op_attrs_json(&kop); /* the kernel's identity: op + attrs */
        if (!ann || !attrs) {
            free(ann);
            free(attrs);
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
            break;
        }
        rc = dt_db_kernel_intern_attrs(m->db, r->w->op->name, dt_dtype_name(kop.dtype), attrs,
                                       dt_sketch_name(r->kernels[k].a.sketch), ann,
                                       r->kernels[k].source_hash, &r->kernels[k].id, e);
        free(ann);
        free(attrs);
    }
    if (rc) {
        dt_db_rollback(m->db, NULL);
        return rc;
    }
    return dt_db_commit(m->db, e);
}

/* Batches, uids and the uid index of run r. */
static int make_batches(dt_measurer *m, run_state *st, char **src, dt_err *e)
{
    dt_mrun *r = st->r;
    int n = r->n;
    st->batch_of = malloc((size_t)n * sizeof *st->batch_of);
    st->slot_of = malloc((size_t)n * sizeof *st->slot_of);
    st->index = malloc((size_t)n * sizeof *st->index);
    if (!st->batch_of || !st->slot_of || !st->index)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    st->nb = dt_measurer_plan(r->trials, n, DT_BATCH_MAX_TRIALS, st->batch_of);
    if (st->nb < 0) {
        int code = st->nb;
        st->nb = 0;
        return dt_errf(e, code, code == DT_ENOMEM ? "out of memory" : "a trial names no kernel");
    }
    st->b = calloc((size_t)st->nb, sizeof *st->b);
    st->trial_of = calloc((size_t)st->nb, sizeof *st->trial_of);
    st->left = calloc((size_t)st->nb, sizeof *st->left);
    if (!st->b || !st->trial_of || !st->left)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        st->left[st->batch_of[i]]++;
    char wkey[DT_KEY_MAX];
    dt_workload_key(r->w, wkey, sizeof wkey);
    for (int b = 0; b < st->nb; b++) {
        dt_batch *bt = &st->b[b];
        snprintf(bt->workload, sizeof bt->workload, "%s", wkey);
        dt_timing_default(&bt->timing);
        bt->timing.min_time_s = m->o.min_time_s;
        bt->timing.seed = m->o.seed;
        bt->timing.flush_cache = m->o.flush_cache;
        bt->trials = calloc((size_t)st->left[b], sizeof *bt->trials);
        st->trial_of[b] = malloc((size_t)st->left[b] * sizeof *st->trial_of[b]);
        if (!bt->trials || !st->trial_of[b])
            return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        dt_mtrial *t = &r->trials[i];
        dt_batch *bt = &st->b[st->batch_of[i]];
        if (!bt->source && !(bt->source = strdup(src[t->kernel])))
            return dt_errf(e, DT_ENOMEM, "out of memory");
        dt_trial *tr = &bt->trials[bt->ntrials];
        int rc = dt_trial_init_values(tr, r->w, t->shape, t->threads, e);
        if (rc) {
            char text[128];
            dt_shape_format(r->w, t->shape, text, sizeof text);
            dt_err_prefix(e, "shape %s", text);
            return rc;
        }
        memcpy(t->uid, tr->uid, sizeof t->uid);
        memcpy(t->text, tr->shape, sizeof t->text);
        st->trial_of[st->batch_of[i]][bt->ntrials] = i;
        st->slot_of[i] = bt->ntrials;
        bt->ntrials++;
        st->index[i] = (uid_ref){t->uid, i};
    }
    qsort(st->index, (size_t)n, sizeof *st->index, cmp_ref);
    return 0;
}

static int run_local(dt_measurer *m, run_state *st, dt_err *e)
{
    const dt_batch **bp = malloc((size_t)st->nb * sizeof *bp);
    if (!bp)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int b = 0; b < st->nb; b++)
        bp[b] = &st->b[b];
    int rc = dt_runner_build_many(&m->runner, bp, st->nb, e);
    free(bp);
    for (int b = 0; !rc && b < st->nb && !st->db_failed; b++) {
        dt_trial_result *res = calloc((size_t)st->b[b].ntrials, sizeof *res);
        if (!res)
            return dt_errf(e, DT_ENOMEM, "out of memory");
        rc = dt_runner_run(&m->runner, &st->b[b], res, e);
        pthread_mutex_lock(&m->mu);
        for (int i = 0; !rc && i < st->b[b].ntrials; i++)
            take_result(m, st, &res[i]);
        pthread_mutex_unlock(&m->mu);
        for (int i = 0; i < st->b[b].ntrials; i++)
            dt_trial_result_free(&res[i]);
        free(res);
    }
    return rc;
}

/* Between waits for the workers: progress; stop when the database failed. */
static int drain_tick(void *ud)
{
    dt_measurer *m = ud;
    pthread_mutex_lock(&m->mu);
    if (m->o.progress)
        m->o.progress(m->cur->done, m->cur->r->n, m->o.ud);
    int failed = m->cur->db_failed;
    pthread_mutex_unlock(&m->mu);
    return failed;
}

static int run_pool(dt_measurer *m, run_state *st, dt_err *e)
{
    if (m->deadline > 0 && dt_now_s() >= m->deadline) {
        st->r->timed_out = 1; /* nothing is sent once the time is up */
        return 0;
    }
    pthread_mutex_lock(&m->mu);
    m->cur = st;
    pthread_mutex_unlock(&m->mu);
    int rc = 0;
    for (int b = 0; !rc && b < st->nb; b++)
        rc = dt_pool_submit(m->pool, &st->b[b], e);
    if (!rc)
        rc = dt_pool_drain_patient(m->pool, m->o.no_worker_grace_s, m->deadline, drain_tick, m,
                                   e);
    if (rc == DT_EBUSY && m->deadline > 0 && dt_now_s() >= m->deadline - 1e-3) {
        /* the time is up with batches in flight: stop waiting, abandon them
         * (their trials are not recorded: they were not measured) */
        dt_log_warn("measure: %s; not waiting for them", e->msg);
        rc = 0;
        st->r->timed_out = 1;
    }
    if (dt_pool_outstanding(m->pool) > 0)
        dt_pool_cancel(m->pool); /* nothing of this run may reach the next one */
    pthread_mutex_lock(&m->mu);
    m->cur = NULL;
    /* what arrived of batches left incomplete (the pool gave up) is recorded too */
    for (int b = 0; b < st->nb; b++)
        if (st->left[b] > 0 && st->left[b] < st->b[b].ntrials)
            record_batch(m, st, b);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int dt_measurer_measure(dt_measurer *m, dt_mrun *r, dt_err *e)
{
    if (r->n <= 0)
        return 0;
    double t0 = dt_now_s();
    for (int i = 0; i < r->n; i++) {
        dt_mtrial *t = &r->trials[i];
        if (t->kernel < 0 || t->kernel >= r->nk)
            return dt_errf(e, DT_EINVAL, "trial %d names kernel %d of %d", i, t->kernel, r->nk);
        t->got = t->recorded = t->already = 0;
        r->timed_out = 0;
        t->uid[0] = t->text[0] = '\0';
        dt_trial_result_free(&t->res);
        memset(&t->res, 0, sizeof t->res);
        t->res.status = DT_TRIAL_WORKER_LOST;
        t->res.min_ns = t->res.median_ns = NAN;
    }
    run_state st = {.r = r};
    char **src = calloc((size_t)r->nk, sizeof *src);
    int rc = 0;
    if (!src)
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
    if (!rc && r->workload_id <= 0)
        rc = dt_measurer_register(m->db, NULL, NULL, r->w, NULL, &r->workload_id, e);
    if (!rc)
        rc = prepare_kernels(m, r, src, e);
    if (!rc)
        rc = make_batches(m, &st, src, e);
    for (int k = 0; src && k < r->nk; k++)
        free(src[k]);
    free(src);
    if (!rc)
        rc = m->pool ? run_pool(m, &st, e) : run_local(m, &st, e);
    if (!rc && st.db_failed) {
        *e = st.db_err;
        rc = e->code ? e->code : DT_EDB;
    }
    state_free(&st);
    m->seconds += dt_now_s() - t0;
    return rc;
}

/* ---- the tuner's form ------------------------------------------------------------- */

int dt_measurer_run(dt_measurer *m, dt_task *t, dt_mreq *reqs, int n, dt_err *e)
{
    if (n <= 0)
        return 0;
    int *kmap = malloc((size_t)t->nk * sizeof *kmap);
    dt_mkernel *ks = calloc((size_t)n, sizeof *ks);
    dt_mtrial *ts = calloc((size_t)n, sizeof *ts);
    int nk = 0, rc = 0;
    if (!kmap || !ks || !ts) {
        rc = dt_errf(e, DT_ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < t->nk; k++)
        kmap[k] = -1;
    for (int i = 0; i < n; i++) {
        int k = reqs[i].k;
        if (kmap[k] < 0) {
            kmap[k] = nk;
            ks[nk++] = (dt_mkernel){.a = t->k[k].a, .id = t->k[k].id};
        }
        ts[i].kernel = kmap[k];
        dt_workload_shape_at(t->w, reqs[i].s, ts[i].shape, NULL);
        ts[i].threads = t->threads;
        reqs[i].status = DT_TRIAL_WORKER_LOST;
        reqs[i].ns = NAN;
        reqs[i].recorded = 0;
    }
    dt_mrun run = {.w = t->w, .workload_id = t->workload_id, .kernels = ks, .nk = nk,
                   .trials = ts, .n = n};
    rc = dt_measurer_measure(m, &run, e);
    for (int k = 0; k < t->nk; k++)
        if (kmap[k] >= 0 && ks[kmap[k]].id > 0)
            t->k[k].id = ks[kmap[k]].id;
    for (int i = 0; i < n; i++) {
        if (!ts[i].recorded)
            continue;
        int ok = ts[i].res.status == DT_TRIAL_OK;
        reqs[i].recorded = 1;
        reqs[i].status = ts[i].res.status;
        reqs[i].ns = ok ? ts[i].res.min_ns : NAN;
        if (dt_task_record(t, reqs[i].k, reqs[i].s, ok ? reqs[i].ns : INFINITY)) {
            if (!rc)
                rc = dt_errf(e, DT_ENOMEM, "out of memory");
            break;
        }
        t->trials++;
    }
out:
    dt_mtrials_free(ts, n);
    free(kmap);
    free(ks);
    free(ts);
    return rc;
}
