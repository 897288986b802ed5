/* Authentication pieces of the wire (measure/wire.h): the shared token file,
 * nonces and HMAC-SHA256 (libsodium), constant-time comparison. */
#include "measure/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file.h"
#include "common/log.h"

#define DT_TOKEN_FILE_MAX 4096 /* a token file larger than this is a mistake */

/* sodium_init is idempotent and thread-safe; without it randombytes is not
 * safe to use, so failing here is fatal (libsodium's own advice). */
static void dt_sodium_ready(void)
{
    if (sodium_init() < 0) {
        dt_log_error("libsodium failed to initialise; cannot make nonces");
        abort();
    }
}

int dt_token_read(const char *path, char **token, size_t *len, dt_err *e)
{
    *token = NULL;
    *len = 0;
    /* the one checked opening of user files: a FIFO does not block, and
     * anything but a regular file is refused */
    int fd;
    int64_t size;
    int rc = dt_open_regular(path, &fd, &size, e);
    if (rc) {
        if (rc == DT_EIO) /* unreadable (permissions): the file given is wrong, exit 2 */
            e->code = rc = DT_EINVAL;
        dt_err_prefix(e, "token file");
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return dt_errf(e, DT_EIO, "cannot stat token file %s: %s", path, strerror(err));
    }
    if (st.st_mode & 077) {
        close(fd);
        return dt_errf(e, DT_EINVAL,
                       "token file %s is accessible by group or others (mode %04o); "
                       "run 'chmod 600 %s'",
                       path, (unsigned)(st.st_mode & 07777), path);
    }
    if (st.st_size > DT_TOKEN_FILE_MAX) {
        close(fd);
        return dt_errf(e, DT_EINVAL, "token file %s is %lld bytes; at most %d are accepted", path,
                       (long long)st.st_size, DT_TOKEN_FILE_MAX);
    }
    char *buf = malloc(DT_TOKEN_FILE_MAX + 1);
    if (!buf) {
        close(fd);
        return dt_errf(e, DT_ENOMEM, "out of memory reading token file %s", path);
    }
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, DT_TOKEN_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            close(fd);
            sodium_memzero(buf, DT_TOKEN_FILE_MAX + 1);
            free(buf);
            return dt_errf(e, DT_EIO, "cannot read token file %s: %s", path, strerror(err));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > DT_TOKEN_FILE_MAX) { /* grew while being read */
            close(fd);
            sodium_memzero(buf, DT_TOKEN_FILE_MAX + 1);
            free(buf);
            return dt_errf(e, DT_EINVAL, "token file %s is over %d bytes", path,
                           DT_TOKEN_FILE_MAX);
        }
    }
    close(fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    /* The token is used with its length everywhere, but a NUL byte in it is
     * a broken file (e.g. made from /dev/zero or a binary key) and would cut
     * it short wherever it meets a C string; a control character (a line
     * break inside, an escape) cannot travel in an HTTP header and is no
     * more a typed secret than a NUL is.  So only bytes 0x20..0x7e and
     * 0x80..0xff pass, whatever the token is for. */
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch >= 0x20 && ch != 0x7f)
            continue;
        char what[32];
        if (ch == 0)
            snprintf(what, sizeof what, "a NUL byte");
        else if (ch == '\n' || ch == '\r')
            snprintf(what, sizeof what, "a line break");
        else
            snprintf(what, sizeof what, "a control character (0x%02x)", ch);
        sodium_memzero(buf, DT_TOKEN_FILE_MAX + 1);
        free(buf);
        return dt_errf(e, DT_EINVAL,
                       "token file %s has %s at byte offset %zu; a token is one line of "
                       "printable characters (make one with: "
                       "head -c 32 /dev/urandom | base64 > FILE)",
                       path, what, i);
    }
    if (n < DT_TOKEN_MIN) {
        sodium_memzero(buf, DT_TOKEN_FILE_MAX + 1);
        free(buf);
        return dt_errf(e, DT_EINVAL,
                       "token in %s is %zu bytes; at least %d are required "
                       "(make one with: head -c 32 /dev/urandom | base64 > FILE)",
                       path, n, DT_TOKEN_MIN);
    }
    *token = buf;
    *len = n;
    return 0;
}

void dt_nonce_new(char out[65])
{
    unsigned char raw[32];
    dt_sodium_ready();
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(out, 65, raw, sizeof raw);
}

void dt_auth_mac(const char *token, size_t token_len, const char *label, const char *a,
                 const char *b, char out[65])
{
    crypto_auth_hmacsha256_state st;
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    dt_sodium_ready();
    crypto_auth_hmacsha256_init(&st, (const unsigned char *)(token ? token : ""),
                                token ? token_len : 0);
    const char *parts[3] = {label, a, b};
    for (int i = 0; i < 3; i++)
        if (parts[i])
            crypto_auth_hmacsha256_update(&st, (const unsigned char *)parts[i],
                                          strlen(parts[i]));
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
    sodium_bin2hex(out, 65, mac, sizeof mac);
}

int dt_auth_equal(const char *mac_a, const char *mac_b)
{
    if (!mac_a || !mac_b)
        return 0;
    /* the length of a MAC is no secret; its bytes are */
    size_t la = strlen(mac_a), lb = strlen(mac_b);
    if (la != 2 * crypto_auth_hmacsha256_BYTES || lb != la)
        return 0;
    dt_sodium_ready();
    return sodium_memcmp(mac_a, mac_b, la) == 0;
}
