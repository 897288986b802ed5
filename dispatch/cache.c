/* The dispatch-table cache (dispatch/cache.h): a hash map from
 * (workload key as spelled, target key, threads) to a loaded table and the
 * stored annotation of each of its ranges' kernels, behind a read-mostly
 * lock, refreshed by PRAGMA data_version. */
#include "dispatch/cache.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "db/db.h"
#include "dispatch/dispatch.h"
#include "backends/backend.h"

#define NSLOTS (2 * DT_DISPATCH_CACHE_MAX_ENTRIES) /* a power of two; load <= 1/2 */

typedef struct kinfo {
    char op[DT_DISPATCH_NAME_MAX];
    char sketch[DT_DISPATCH_NAME_MAX];
    char backend[DT_DISPATCH_NAME_MAX]; /* "bf16/amx"; "?" when the annotation names none */
    char *ann;       /* owned */
    size_t ann_len;
} kinfo;

typedef struct entry {
    uint64_t hash;
    char *wkey;      /* as the caller spelled it (owned) */
    char tkey[DT_TARGET_KEY_MAX];
    int threads;     /* as asked (0: highest) */
    unsigned gen;    /* cache generation when loaded */
    int rc;          /* 0: d is the table; < 0: a cached miss, msg says why */
    char *msg;       /* owned */
    dt_dispatch *d;  /* owned */
    kinfo *k;        /* d->n, one per range (owned) */
    size_t key_len, tkey_len;
} entry;

struct dt_dispatch_cache {
    pthread_rwlock_t lock;   /* slots and the entries in them */
    pthread_mutex_t dbmu;    /* db and data_version; taken before lock */
    dt_db *db;
    int64_t data_version;
    _Atomic int64_t last_check_ns;
    _Atomic int64_t interval_ns;
    _Atomic unsigned gen;
    _Atomic uint64_t loads, changes;
    entry *slots[NSLOTS];
    size_t nentries;
    char local[DT_TARGET_KEY_MAX];
};

/* ---- small helpers --------------------------------------------------------- */

static int64_t coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_of(const char *wkey, size_t wlen, const char *tkey, size_t tlen,
                        int threads)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, wkey, wlen + 1); /* with the NUL as separator */
    h = fnv(h, tkey, tlen);
    return (h ^ (uint64_t)(unsigned)threads) * 0x100000001b3ull;
}

static void entry_free(entry *en)
{
    if (!en)
        return;
    if (en->d)
        for (int i = 0; i < en->d->n; i++)
            free(en->k[i].ann);
    free(en->k);
    dt_dispatch_free(en->d);
    free(en->msg);
    free(en->wkey);
    free(en);
}

/* The entry of (wkey, tkey, threads) or NULL; caller holds lock. */
static entry *find(dt_dispatch_cache *c, uint64_t h, const char *wkey, const char *tkey,
                   int threads)
{
    DT_ASSERT(c->nentries <= DT_DISPATCH_CACHE_MAX_ENTRIES && c->nentries < NSLOTS,
              "the cache map is at most half full, so a probe meets an empty slot");
    for (size_t i = h & (NSLOTS - 1);; i = (i + 1) & (NSLOTS - 1)) {
        entry *en = c->slots[i];
        if (!en)
            return NULL;
        if (en->hash == h && en->threads == threads && strcmp(en->wkey, wkey) == 0 &&
            strcmp(en->tkey, tkey) == 0)
            return en;
    }
}

/* Inserts ne, replacing (and returning in *old) an entry with the same
 * triple; empties the map first when it is full.  Caller holds lock for
 * writing. */
static void insert(dt_dispatch_cache *c, entry *ne, entry **old)
{
    *old = NULL;
    size_t i = ne->hash & (NSLOTS - 1);
    for (; c->slots[i]; i = (i + 1) & (NSLOTS - 1)) {
        entry *en = c->slots[i];
        if (en->hash == ne->hash && en->threads == ne->threads &&
            strcmp(en->wkey, ne->wkey) == 0 && strcmp(en->tkey, ne->tkey) == 0) {
            *old = en;
            c->slots[i] = ne;
            return;
        }
    }
    if (c->nentries >= DT_DISPATCH_CACHE_MAX_ENTRIES) {
        for (size_t j = 0; j < NSLOTS; j++) {
            entry_free(c->slots[j]);
            c->slots[j] = NULL;
        }
        c->nentries = 0;
        i = ne->hash & (NSLOTS - 1);
    }
    DT_ASSERT(!c->slots[i], "a new cache entry goes into an empty slot");
    c->slots[i] = ne;
    c->nentries++;
    DT_ASSERT(c->nentries <= DT_DISPATCH_CACHE_MAX_ENTRIES,
              "the cache holds at most DT_DISPATCH_CACHE_MAX_ENTRIES tables");
}

/* ---- freshness ------------------------------------------------------------- */

/* PRAGMA data_version of db: it moves when another connection commits. */
static int probe_version(dt_dispatch_cache *c, int64_t *v, dt_err *e)
{
    return dt_db_data_version(c->db, v, e);
}

/* At most once per interval: a changed data_version makes every entry stale. */
static void maybe_check(dt_dispatch_cache *c)
{
    int64_t now = coarse_ns(), iv = atomic_load_explicit(&c->interval_ns, memory_order_relaxed);
    if (now - atomic_load_explicit(&c->last_check_ns, memory_order_relaxed) < iv)
        return;
    if (pthread_mutex_trylock(&c->dbmu) != 0)
        return; /* another thread checks or loads right now */
    if (now - atomic_load(&c->last_check_ns) >= iv) {
        int64_t v;
        atomic_store(&c->last_check_ns, now);
        if (probe_version(c, &v, NULL) == 0 && v != c->data_version) {
            c->data_version = v;
            atomic_fetch_add(&c->gen, 1);
            atomic_fetch_add(&c->changes, 1);
        }
    }
    pthread_mutex_unlock(&c->dbmu);
}

/* ---- loading --------------------------------------------------------------- */

/* Fills en->k from the kernels rows of en->d's ranges. */
static int load_kernels(dt_dispatch_cache *c, entry *en, dt_err *e)
{
    const dt_dispatch *d = en->d;
    if (!(en->k = calloc(d->n ? (size_t)d->n : 1, sizeof *en->k)))
        return dt_errf(e, DT_ENOMEM, "out of memory");
    for (int i = 0; i < d->n; i++) {
        dt_db_kernel row;
        int rc = dt_db_kernel_get(c->db, d->r[i].kernel_id, &row, e);
        if (rc)
            return dt_err_prefix(e, "kernel %lld of the schedule of %s",
                                 (long long)d->r[i].kernel_id, d->key);
        DT_ASSERT(row.id == d->r[i].kernel_id, "a kernel read by its id is that kernel");
        kinfo *k = &en->k[i];
        k->ann_len = strlen(row.annotation);
        if (k->ann_len >= DT_DISPATCH_ANNOTATION_MAX || strlen(row.op) >= sizeof k->op ||
            strlen(row.sketch) >= sizeof k->sketch)
            rc = dt_errf(e, DT_EOVERFLOW, "kernel %lld: annotation, op or sketch too long",
                         (long long)row.id);
        else if (!(k->ann = strdup(row.annotation)))
            rc = dt_errf(e, DT_ENOMEM, "out of memory");
        else {
            memcpy(k->op, row.op, strlen(row.op) + 1);
            memcpy(k->sketch, row.sketch, strlen(row.sketch) + 1);
            /* named once per table, not per lookup */
            dt_err ae;
            if (dt_backend_name_of_text(d->w->dtype, row.annotation, k->backend,
                                        (int)sizeof k->backend, &ae))
                snprintf(k->backend, sizeof k->backend, "?");
        }
        dt_db_kernel_free(&row);
        if (rc)
            return rc;
    }
    return 0;
}

/* Makes sure a fresh entry for the triple is in the map (a table, or a
 * cached miss).  Errors other than a miss are returned, not cached. */
static int load(dt_dispatch_cache *c, const char *wkey, const char *tkey, int threads,
                uint64_t h, dt_err *e)
{
    dt_workload *w = NULL;
    int rc = dt_workload_parse_key(wkey, &w, e); /* malformed keys never reach the db */
    dt_workload_free(w);
    if (rc)
        return rc;
    pthread_mutex_lock(&c->dbmu);
    unsigned g = atomic_load(&c->gen);
    pthread_rwlock_rdlock(&c->lock);
    entry *en = find(c, h, wkey, tkey, threads);
    int fresh = en && en->gen == g;
    pthread_rwlock_unlock(&c->lock);
    if (fresh) {
        pthread_mutex_unlock(&c->dbmu);
        return 0; /* another thread loaded it meanwhile */
    }
    entry *ne = calloc(1, sizeof *ne);
    if (!ne || !(ne->wkey = strdup(wkey))) {
        free(ne);
        pthread_mutex_unlock(&c->dbmu);
        return dt_errf(e, DT_ENOMEM, "out of memory");
    }
    ne->hash = h;
    ne->threads = threads;
    ne->gen = g;
    ne->tkey_len = strlen(tkey);
    memcpy(ne->tkey, tkey, ne->tkey_len + 1);
    atomic_fetch_add(&c->loads, 1);
    rc = dt_dispatch_load(c->db, wkey, tkey, threads, &ne->d, e);
    DT_ASSERT(rc != 0 || ne->d, "a successful load yields a table");
    if (rc == DT_ENOTFOUND) {
        ne->rc = rc;
        rc = (ne->msg = strdup(e->msg)) ? 0 : dt_errf(e, DT_ENOMEM, "out of memory");
    } else if (rc == 0) {
        ne->key_len = strlen(ne->d->key);
        rc = load_kernels(c, ne, e);
    }
    if (rc) {
        pthread_mutex_unlock(&c->dbmu);
        entry_free(ne);
        return rc;
    }
    entry *old;
    pthread_rwlock_wrlock(&c->lock);
    insert(c, ne, &old);
    pthread_rwlock_unlock(&c->lock);
    pthread_mutex_unlock(&c->dbmu);
    entry_free(old);
    return 0;
}

/* ---- answering ------------------------------------------------------------- */

/* The answer of q from en; caller holds lock for reading. */
static int answer(const entry *en, const dt_dispatch_query *q, dt_dispatch_cache_result *out,
                  dt_err *e)
{
    if (en->rc)
        return dt_errf(e, en->rc, "%s", en->msg);
    const dt_dispatch *d = en->d;
    DT_ASSERT(d && en->k, "a cache entry that is not a miss has its table and kernels");
    char buf[DT_DISPATCH_SHAPE_MAX];
    const char *shape = q->shape;
    if (!shape) {
        if (q->nvals != d->w->nvars || (q->nvals > 0 && !q->vals))
            return dt_errf(e, DT_EINVAL, "%s has %d variable%s; %d value%s given", d->key,
                           d->w->nvars, d->w->nvars == 1 ? "" : "s", q->nvals,
                           q->nvals == 1 ? "" : "s");
        if (dt_shape_format(d->w, q->vals, buf, sizeof buf) >= sizeof buf)
            return dt_errf(e, DT_EINVAL, "shape of %s too long", d->key);
        shape = buf;
    }
    int64_t vals[DT_MAX_VARS];
    int in_domain;
    int rc = dt_shape_parse(d->w, shape, vals, &in_domain, e);
    if (rc)
        return dt_err_prefix(e, "%s", d->key);
    dt_dispatch_hit hit;
    if (dt_dispatch_find(d, vals, &hit))
        return dt_errf(e, DT_ENOTFOUND, "the schedule of %s for target %s is empty", d->key,
                       en->tkey);
    const dt_dispatch_range *r = hit.range;
    DT_ASSERT(r - d->r >= 0 && r - d->r < d->n, "a lookup's box is one of the cached table's");
    const kinfo *k = &en->k[r - d->r];
    out->kernel_id = r->kernel_id;
    memcpy(out->op, k->op, sizeof out->op);
    memcpy(out->sketch, k->sketch, sizeof out->sketch);
    memcpy(out->backend, k->backend, sizeof out->backend);
    memcpy(out->annotation, k->ann, k->ann_len + 1);
    out->predicted_ns = r->predicted_ns;
    out->measured_ns = r->measured_ns;
    out->extrapolated = hit.extrapolated;
    out->threads = d->threads;
    dt_shape_format(d->w, vals, out->shape, sizeof out->shape);
    memcpy(out->range_lo, r->shape_lo, sizeof out->range_lo);
    memcpy(out->range_hi, r->shape_hi, sizeof out->range_hi);
    memcpy(out->workload_key, d->key, en->key_len + 1);
    memcpy(out->target_key, en->tkey, en->tkey_len + 1);
    return 0;
}

int dt_dispatch_cache_lookup(dt_dispatch_cache *c, const dt_dispatch_query *q,
                             dt_dispatch_cache_result *out, dt_err *e)
{
    dt_err local;
    if (!e)
        e = &local; /* load() keeps the message of a miss */
    if (!c || !q || !out || !q->workload_key)
        return dt_errf(e, DT_EINVAL, "dispatch cache lookup: NULL cache, query, result or key");
    if (!q->shape && q->nvals > 0 && !q->vals)
        return dt_errf(e, DT_EINVAL, "dispatch cache lookup: no shape text and no values");
    if (q->threads < 0)
        return dt_errf(e, DT_EINVAL, "threads must be >= 0 (0: the highest), not %d",
                       q->threads);
    const char *tkey = q->target_key ? q->target_key : c->local;
    size_t tlen = strlen(tkey);
    if (tlen == 0 || tlen >= DT_TARGET_KEY_MAX)
        return dt_errf(e, DT_EINVAL, "target key '%.40s' is empty or too long", tkey);
    maybe_check(c);
    uint64_t h = hash_of(q->workload_key, strlen(q->workload_key), tkey, tlen, q->threads);
    for (int attempt = 0;; attempt++) {
        pthread_rwlock_rdlock(&c->lock);
        entry *en = find(c, h, q->workload_key, tkey, q->threads);
        /* after two reloads, answer from what is there even if a newer
         * change came in meanwhile */
        if (en && (en->gen == atomic_load(&c->gen) || attempt >= 2)) {
            int rc = answer(en, q, out, e);
            pthread_rwlock_unlock(&c->lock);
            return rc;
        }
        pthread_rwlock_unlock(&c->lock);
        int rc = load(c, q->workload_key, tkey, q->threads, h, e);
        if (rc == DT_EINVAL || rc == DT_ENOMEM || rc == DT_EOVERFLOW)
            return rc;
        if (rc) {
            /* the database could not be read (busy, I/O): a stale table is
             * a better answer than none */
            pthread_rwlock_rdlock(&c->lock);
            en = find(c, h, q->workload_key, tkey, q->threads);
            if (en) {
                dt_err_clear(e);
                rc = answer(en, q, out, e);
            }
            pthread_rwlock_unlock(&c->lock);
            return rc;
        }
    }
}

/* ---- open / close ------------------------------------------------------------ */

int dt_dispatch_cache_open(const char *db_path, dt_dispatch_cache **out, dt_err *e)
{
    *out = NULL;
    dt_dispatch_cache *c = calloc(1, sizeof *c);
    if (!c)
        return dt_errf(e, DT_ENOMEM, "out of memory");
    /* writers (a reload's insert) must not starve behind a steady stream
     * of lookups, which glibc's default reader preference allows */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&c->dbmu, NULL);
    atomic_init(&c->interval_ns, (int64_t)DT_DISPATCH_CACHE_CHECK_MS * 1000000);
    atomic_init(&c->last_check_ns, coarse_ns());
    dt_target tg;
    int rc = dt_db_open(db_path, DT_DB_READONLY, &c->db, e);
    if (rc)
        goto fail;
    if ((rc = dt_target_detect_key(&tg, c->local, sizeof c->local, e)))
        goto fail;
    if ((rc = probe_version(c, &c->data_version, e)))
        goto fail;
    *out = c;
    return 0;
fail:
    dt_dispatch_cache_close(c);
    return rc;
}

void dt_dispatch_cache_close(dt_dispatch_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < NSLOTS; i++)
        entry_free(c->slots[i]);
    dt_db_close(c->db);
    pthread_rwlock_destroy(&c->lock);
    pthread_mutex_destroy(&c->dbmu);
    free(c);
}

void dt_dispatch_cache_set_check_interval(dt_dispatch_cache *c, int ms)
{
    atomic_store(&c->interval_ns, (int64_t)(ms < 0 ? 0 : ms) * 1000000);
}

const char *dt_dispatch_cache_local_target(const dt_dispatch_cache *c) { return c->local; }

void dt_dispatch_cache_stats(dt_dispatch_cache *c, uint64_t *loads, uint64_t *changes)
{
    if (loads)
        *loads = atomic_load(&c->loads);
    if (changes)
        *changes = atomic_load(&c->changes);
}
