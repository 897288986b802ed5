/* Captures kernel sources from the v1 libdtune: "<kernel id> <workload key|-> <blake2b of source+NUL>" */
#include <dtune/dtune.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
static void hash(const char *s, char out[65]) {
    unsigned char h[32];
    crypto_generichash(h, 32, (const unsigned char *)s, strlen(s) + 1, NULL, 0);
    sodium_bin2hex(out, 65, h, 32);
}
int main(int argc, char **argv) {
    dtune *db; if (dtune_open(argv[1], &db)) { fprintf(stderr, "%s\n", dtune_errmsg()); return 1; }
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' '); *sp = 0;
        long long k = atoll(line); const char *w = sp + 1;
        char *src; if (dtune_kernel_source(db, k, strcmp(w, "-") ? w : NULL, &src)) { fprintf(stderr, "%s\n", dtune_errmsg()); return 1; }
        char h[65]; hash(src, h); printf("%lld %s %s\n", k, w, h); dtune_free(src);
    }
    dtune_close(db); return 0;
}
