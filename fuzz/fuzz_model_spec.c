/* libFuzzer target: model-spec parsing (shape/model.h) and workload-key
 * parsing (shape/workload.h).  The input is parsed as a spec; each
 * workload key of a parsed model must parse back to the same key.  The
 * input (up to its first NUL) is also parsed as a workload key, and a key
 * that parses must be canonical: parsing its canonical form gives it back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shape/model.h"
#include "shape/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

/* key parses to a workload whose canonical key is key again. */
static void key_roundtrip(const char *key)
{
    dt_workload *w = NULL;
    dt_err e;
    check(dt_workload_parse_key(key, &w, &e) == 0);
    char again[DT_KEY_MAX];
    size_t n = dt_workload_key(w, again, sizeof again);
    check(n < sizeof again && !strcmp(again, key));
    dt_workload_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dt_err e;
    dt_model *m = NULL;
    if (dt_model_parse((const char *)data, size, "fuzz.json", &m, &e) == 0) {
        check(m != NULL && m->nworkloads >= 1);
        for (int i = 0; i < m->nworkloads; i++)
            key_roundtrip(m->workloads[i].key);
        dt_model_free(m);
    }
    if (size > 4096)
        return 0;
    char *key = malloc(size + 1);
    if (!key)
        return 0;
    memcpy(key, data, size);
    key[size] = '\0';
    dt_workload *w = NULL;
    if (dt_workload_parse_key(key, &w, &e) == 0) {
        char canon[DT_KEY_MAX];
        size_t n = dt_workload_key(w, canon, sizeof canon);
        check(n < sizeof canon);
        dt_workload_free(w);
        key_roundtrip(canon);
    }
    free(key);
    return 0;
}
