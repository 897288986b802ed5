/* The wire (measure/wire.h): frames, the incremental decoder and its limits,
 * token files, nonces and MACs. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "measure/wire.h"
#include "tests/dt_test.h"

static char *g_dir;

static int setup(void)
{
    g_dir = dt_test_tmpdir();
    return g_dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static json_t *obj(const char *text)
{
    json_error_t jerr;
    return json_loads(text, 0, &jerr);
}

/* A raw frame: length prefix computed from the payload unless flen >= 0. */
static size_t raw_frame(uint8_t *out, long flen, int version, int type, const char *payload)
{
    size_t n = strlen(payload);
    uint32_t l = flen >= 0 ? (uint32_t)flen : (uint32_t)(n + 2);
    out[0] = (uint8_t)(l >> 24);
    out[1] = (uint8_t)(l >> 16);
    out[2] = (uint8_t)(l >> 8);
    out[3] = (uint8_t)l;
    out[4] = (uint8_t)version;
    out[5] = (uint8_t)type;
    memcpy(out + 6, payload, n);
    return n + 6;
}

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(dt_msg_name(DT_MSG_HELLO), "HELLO");
    CU_ASSERT_STRING_EQUAL(dt_msg_name(DT_MSG_AUTH_OK), "AUTH_OK");
    CU_ASSERT_STRING_EQUAL(dt_msg_name(DT_MSG_PONG), "PONG");
    CU_ASSERT_STRING_EQUAL(dt_msg_name((dt_msg_type)0), "?");
    CU_ASSERT_STRING_EQUAL(dt_msg_name((dt_msg_type)99), "?");
}

static void test_encode_layout(void)
{
    json_t *p = obj("{\"a\":1}");
    uint8_t *buf;
    size_t len;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_wire_encode(DT_MSG_PING, p, &buf, &len, &e), 0);
    CU_ASSERT_EQUAL(len, 6 + 7);
    static const uint8_t want[] = {0, 0, 0, 9, DT_WIRE_VERSION, DT_MSG_PING};
    CU_ASSERT_EQUAL(memcmp(buf, want, sizeof want), 0);
    CU_ASSERT_EQUAL(memcmp(buf + 6, "{\"a\":1}", 7), 0);
    free(buf);
    json_decref(p);

    /* only objects, only known types */
    json_t *arr = obj("[1]");
    CU_ASSERT_EQUAL(dt_wire_encode(DT_MSG_PING, arr, &buf, &len, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(buf);
    json_decref(arr);
    p = json_object();
    CU_ASSERT_EQUAL(dt_wire_encode((dt_msg_type)0, p, &buf, &len, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_wire_encode((dt_msg_type)9, p, &buf, &len, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_wire_encode(DT_MSG_PING, NULL, &buf, &len, &e), DT_EINVAL);
    json_decref(p);
}

static void test_round_trip(void)
{
    const char *texts[] = {"{}", "{\"nonce\":\"ab\",\"n\":[1,2.5,null,true],\"s\":\"\\u00e9\\n\"}",
                           "{\"deep\":{\"x\":{\"y\":[{}]}}}"};
    for (int t = DT_MSG_HELLO; t <= DT_MSG_PONG; t++) {
        json_t *p = obj(texts[t % 3]);
        uint8_t *buf;
        size_t len;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_wire_encode((dt_msg_type)t, p, &buf, &len, &e), 0);
        dt_wire_decoder d;
        dt_wire_decoder_init(&d);
        CU_ASSERT_EQUAL(dt_wire_feed(&d, buf, len, &e), 0);
        dt_msg_type got;
        json_t *q = NULL;
        CU_ASSERT_EQUAL(dt_wire_next(&d, &got, &q, &e), 1);
        CU_ASSERT_EQUAL((int)got, (int)t);
        CU_ASSERT_TRUE(json_equal(p, q));
        json_decref(q);
        CU_ASSERT_EQUAL(dt_wire_next(&d, &got, &q, &e), 0);
        CU_ASSERT_EQUAL(d.len, 0);
        dt_wire_decoder_free(&d);
        free(buf);
        json_decref(p);
    }
}

/* Three frames as one stream. */
static uint8_t *three_frames(size_t *len)
{
    json_t *p[3] = {obj("{\"i\":0}"), obj("{\"i\":1,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxx\"}"),
                    obj("{\"i\":2,\"a\":[]}")};
    uint8_t *all = NULL;
    *len = 0;
    for (int i = 0; i < 3; i++) {
        uint8_t *buf;
        size_t n;
        dt_wire_encode(i == 1 ? DT_MSG_BATCH : DT_MSG_PING, p[i], &buf, &n, NULL);
        all = realloc(all, *len + n);
        memcpy(all + *len, buf, n);
        *len += n;
        free(buf);
        json_decref(p[i]);
    }
    return all;
}

/* Takes every ready frame; checks they are the expected sequence. */
static int take_all(dt_wire_decoder *d, int *next_i)
{
    dt_msg_type t;
    json_t *p;
    dt_err e;
    int r;
    while ((r = dt_wire_next(d, &t, &p, &e)) == 1) {
        int i = (int)json_integer_value(json_object_get(p, "i"));
        CU_ASSERT_EQUAL(i, *next_i);
        CU_ASSERT_EQUAL(t, i == 1 ? DT_MSG_BATCH : DT_MSG_PING);
        (*next_i)++;
        json_decref(p);
    }
    return r;
}

static void test_split_every_boundary(void)
{
    size_t len;
    uint8_t *all = three_frames(&len);
    for (size_t k = 0; k <= len; k++) {
        dt_wire_decoder d;
        dt_wire_decoder_init(&d);
        int next = 0;
        dt_err e;
        CU_ASSERT_EQUAL(dt_wire_feed(&d, all, k, &e), 0);
        CU_ASSERT_EQUAL(take_all(&d, &next), 0);
        CU_ASSERT_EQUAL(dt_wire_feed(&d, all + k, len - k, &e), 0);
        CU_ASSERT_EQUAL(take_all(&d, &next), 0);
        CU_ASSERT_EQUAL(next, 3);
        CU_ASSERT_EQUAL(d.len, 0);
        dt_wire_decoder_free(&d);
    }
    /* and one byte at a time */
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    int next = 0;
    for (size_t k = 0; k < len; k++) {
        CU_ASSERT_EQUAL(dt_wire_feed(&d, all + k, 1, NULL), 0);
        CU_ASSERT_EQUAL(take_all(&d, &next), 0);
    }
    CU_ASSERT_EQUAL(next, 3);
    dt_wire_decoder_free(&d);
    free(all);
}

static void test_several_in_one_feed(void)
{
    size_t len;
    uint8_t *all = three_frames(&len);
    uint8_t *twice = malloc(2 * len);
    memcpy(twice, all, len);
    memcpy(twice + len, all, len);
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    /* six frames but the last is 3 bytes short: five come out, in order */
    CU_ASSERT_EQUAL(dt_wire_feed(&d, twice, 2 * len - 3, NULL), 0);
    int seen[8], n = 0;
    dt_msg_type t;
    json_t *p;
    while (n < 8 && dt_wire_next(&d, &t, &p, NULL) == 1) {
        seen[n++] = (int)json_integer_value(json_object_get(p, "i"));
        json_decref(p);
    }
    CU_ASSERT_EQUAL(n, 5);
    for (int i = 0; i < n; i++)
        CU_ASSERT_EQUAL(seen[i], i % 3);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, twice + 2 * len - 3, 3, NULL), 0);
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, NULL), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(p, "i")), 2);
    json_decref(p);
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, NULL), 0);
    CU_ASSERT_EQUAL(d.len, 0);
    dt_wire_decoder_free(&d);
    free(twice);
    free(all);
}

static void test_oversized_prefix(void)
{
    /* 1 GiB claimed: refused on the 4 bytes of the prefix, nothing reserved */
    static const uint8_t gib[] = {0x40, 0x00, 0x00, 0x00};
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    dt_err e;
    dt_err_clear(&e);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, gib, 4, &e), DT_EINVAL);
    CU_ASSERT_TRUE(d.failed);
    CU_ASSERT_TRUE(d.cap < 4096);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "1073741824"));
    dt_msg_type t;
    json_t *p;
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, &e), DT_EINVAL);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, "x", 1, &e), DT_EINVAL); /* stays failed */
    dt_wire_decoder_free(&d);

    /* the same prefix after a good frame in the same feed */
    uint8_t buf[64];
    size_t n = raw_frame(buf, -1, DT_WIRE_VERSION, DT_MSG_PING, "{}");
    memcpy(buf + n, gib, 4);
    dt_wire_decoder_init(&d);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, buf, n + 4, &e), DT_EINVAL);
    dt_wire_decoder_free(&d);

    /* one over the limit is refused, the limit itself is accepted */
    uint8_t h[6];
    dt_wire_decoder_init(&d);
    raw_frame(h, DT_WIRE_MAX_FRAME + 1L, DT_WIRE_VERSION, DT_MSG_PING, "");
    CU_ASSERT_EQUAL(dt_wire_feed(&d, h, 6, &e), DT_EINVAL);
    dt_wire_decoder_free(&d);
    dt_wire_decoder_init(&d);
    raw_frame(h, DT_WIRE_MAX_FRAME, DT_WIRE_VERSION, DT_MSG_PING, "");
    CU_ASSERT_EQUAL(dt_wire_feed(&d, h, 6, &e), 0);
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, &e), 0);
    dt_wire_decoder_free(&d);

    /* lengths 0 and 1 cannot hold version and type */
    for (long l = 0; l < 2; l++) {
        dt_wire_decoder_init(&d);
        raw_frame(h, l, DT_WIRE_VERSION, DT_MSG_PING, "");
        CU_ASSERT_EQUAL(dt_wire_feed(&d, h, 4, &e), DT_EINVAL);
        dt_wire_decoder_free(&d);
    }
}

static void test_largest_frame(void)
{
    /* a payload of exactly the limit round-trips; one byte more is refused */
    size_t n = DT_WIRE_MAX_FRAME - 2 - 8; /* {"s":""} is 8 bytes */
    char *s = malloc(n + 2);
    memset(s, 'x', n);
    s[n] = '\0';
    json_t *p = json_object();
    json_object_set_new(p, "s", json_string(s));
    uint8_t *buf;
    size_t len;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_wire_encode(DT_MSG_BATCH, p, &buf, &len, &e), 0);
    CU_ASSERT_EQUAL(len, 4 + DT_WIRE_MAX_FRAME);
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    for (size_t off = 0; off < len; off += 65536)
        CU_ASSERT_EQUAL(dt_wire_feed(&d, buf + off, len - off < 65536 ? len - off : 65536, &e), 0);
    dt_msg_type t;
    json_t *q = NULL;
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &q, &e), 1);
    CU_ASSERT_TRUE(json_equal(p, q));
    json_decref(q);
    dt_wire_decoder_free(&d);
    free(buf);
    s[n - 1] = '\0';
    strcat(s, "yy");
    json_object_set_new(p, "s", json_string(s));
    CU_ASSERT_EQUAL(dt_wire_encode(DT_MSG_BATCH, p, &buf, &len, &e), DT_EINVAL);
    json_decref(p);
    free(s);
}

/* Feeds one raw frame; returns what feed, then next, said. */
static int decode_raw(const uint8_t *buf, size_t n, dt_err *e)
{
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    int rc = dt_wire_feed(&d, buf, n, e);
    if (rc == 0) {
        dt_msg_type t;
        json_t *p = NULL;
        rc = dt_wire_next(&d, &t, &p, e);
        json_decref(p);
    }
    int failed = d.failed;
    dt_wire_decoder_free(&d);
    if (rc < 0)
        CU_ASSERT_TRUE(failed);
    return rc;
}

static void test_bad_frames(void)
{
    uint8_t buf[256];
    dt_err e;
    size_t n = raw_frame(buf, -1, 2, DT_MSG_PING, "{}");
    CU_ASSERT_EQUAL(decode_raw(buf, n, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "version"));
    /* the version is refused as soon as its byte arrives */
    dt_wire_decoder d;
    dt_wire_decoder_init(&d);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, buf, 5, &e), DT_EINVAL);
    dt_wire_decoder_free(&d);

    n = raw_frame(buf, -1, DT_WIRE_VERSION, 0, "{}");
    CU_ASSERT_EQUAL(decode_raw(buf, n, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "type"));
    n = raw_frame(buf, -1, DT_WIRE_VERSION, DT_MSG_PONG + 1, "{}");
    CU_ASSERT_EQUAL(decode_raw(buf, n, &e), DT_EINVAL);
    n = raw_frame(buf, -1, DT_WIRE_VERSION, 255, "{}");
    CU_ASSERT_EQUAL(decode_raw(buf, n, &e), DT_EINVAL);

    const char *bad[] = {"[1,2]", "\"s\"", "3", "null", "", "{", "garbage", "{} {}",
                         "{\"a\":1,\"a\":2}", "{\"a\":\"\xff\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = raw_frame(buf, -1, DT_WIRE_VERSION, DT_MSG_HELLO, bad[i]);
        dt_err_clear(&e);
        CU_ASSERT_EQUAL(decode_raw(buf, n, &e), DT_EINVAL);
        CU_ASSERT_TRUE(e.msg[0] != '\0');
    }
    n = raw_frame(buf, -1, DT_WIRE_VERSION, DT_MSG_HELLO, "[]");
    decode_raw(buf, n, &e);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "not a JSON object"));

    /* a good frame, then garbage: the good one is still delivered */
    n = raw_frame(buf, -1, DT_WIRE_VERSION, DT_MSG_PING, "{}");
    memcpy(buf + n, "\x00\x00\x00\x05\x01\x07xyz", 9);
    dt_wire_decoder_init(&d);
    CU_ASSERT_EQUAL(dt_wire_feed(&d, buf, n + 9, &e), 0);
    dt_msg_type t;
    json_t *p;
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, &e), 1);
    json_decref(p);
    CU_ASSERT_EQUAL(dt_wire_next(&d, &t, &p, &e), DT_EINVAL);
    dt_wire_decoder_free(&d);
}

static void test_random_bytes(void)
{
    /* any byte soup is either waited on or refused; never a crash */
    uint64_t s = 42;
    for (int round = 0; round < 2000; round++) {
        uint8_t buf[64];
        size_t n = 1 + (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            buf[i] = (uint8_t)(s >> 56);
        }
        if (round % 2) { /* plausible header, random body */
            buf[0] = buf[1] = 0;
            buf[2] = 0;
            if (n > 3)
                buf[3] = (uint8_t)(n - 4);
            if (n > 4)
                buf[4] = DT_WIRE_VERSION;
        }
        dt_err e;
        int rc = decode_raw(buf, n, &e);
        CU_ASSERT_TRUE(rc == 0 || rc == 1 || rc == DT_EINVAL);
    }
}

/* ---- tokens and MACs ---- */

static char *token_file(const char *name, const char *text, mode_t mode)
{
    char *path = dt_test_write_file(g_dir, name, text);
    chmod(path, mode);
    return path;
}

static void test_token_file(void)
{
    char *tok;
    size_t len;
    dt_err e;
    char *p = token_file("good", "0123456789abcdefXYZ\n", 0600);
    CU_ASSERT_EQUAL_FATAL(dt_token_read(p, &tok, &len, &e), 0);
    CU_ASSERT_EQUAL(len, 19);
    CU_ASSERT_STRING_EQUAL(tok, "0123456789abcdefXYZ");
    free(tok);
    free(p);

    p = token_file("crlf", "0123456789abcdef\r\n", 0400);
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), 0);
    CU_ASSERT_EQUAL(len, 16);
    free(tok);
    free(p);

    p = token_file("open", "0123456789abcdefXYZ\n", 0644);
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(tok);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "chmod 600"));
    free(p);
    p = token_file("group", "0123456789abcdefXYZ\n", 0640);
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), DT_EINVAL);
    free(p);

    p = token_file("short", "0123456789abcde\n", 0600); /* 15 bytes */
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at least 16"));
    free(p);
    p = token_file("empty", "\n", 0600);
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), DT_EINVAL);
    free(p);

    char big[5000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    p = token_file("big", big, 0600);
    CU_ASSERT_EQUAL(dt_token_read(p, &tok, &len, &e), DT_EINVAL);
    free(p);

    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing", g_dir);
    CU_ASSERT_EQUAL(dt_token_read(missing, &tok, &len, &e), DT_ENOTFOUND);
    CU_ASSERT_EQUAL(dt_token_read(g_dir, &tok, &len, &e), DT_EINVAL); /* a directory */
}

static void test_nonce(void)
{
    char a[65], b[65];
    dt_nonce_new(a);
    dt_nonce_new(b);
    CU_ASSERT_EQUAL(strlen(a), 64);
    CU_ASSERT_EQUAL(strspn(a, "0123456789abcdef"), 64);
    CU_ASSERT_STRING_NOT_EQUAL(a, b);
}

static void test_mac_known_answers(void)
{
    char out[65];
    /* RFC 4231 test case 2: a 4-byte key */
    dt_auth_mac("Jefe", 4, "what do ya want ", "for ", "nothing?", out);
    CU_ASSERT_STRING_EQUAL(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* RFC 4231 test case 6: a 131-byte key (longer than the block) */
    char key[131];
    memset(key, 0xaa, sizeof key);
    dt_auth_mac(key, sizeof key, "Test Using Larger Than Block-Size Key", " - Hash Key",
                " First", out);
    CU_ASSERT_STRING_EQUAL(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    /* the MAC is over label | a | b: how the message is split does not matter */
    dt_auth_mac("Jefe", 4, "what do ya want for nothing?", "", "", out);
    CU_ASSERT_STRING_EQUAL(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_mac_consistency(void)
{
    const char *tok = "0123456789abcdef0123456789abcdef";
    char n1[65], n2[65], m[65], again[65], other[65];
    dt_nonce_new(n1);
    dt_nonce_new(n2);
    dt_auth_mac(tok, strlen(tok), "dtune-auth-c", n1, n2, m);
    dt_auth_mac(tok, strlen(tok), "dtune-auth-c", n1, n2, again);
    CU_ASSERT_STRING_EQUAL(m, again);
    CU_ASSERT_TRUE(dt_auth_equal(m, again));
    /* the worker's answer differs from the client's proof */
    dt_auth_mac(tok, strlen(tok), "dtune-auth-w", n2, n1, other);
    CU_ASSERT_FALSE(dt_auth_equal(m, other));
    dt_auth_mac(tok, strlen(tok), "dtune-auth-c", n2, n1, other);
    CU_ASSERT_FALSE(dt_auth_equal(m, other));
    /* one byte of the token */
    dt_auth_mac(tok, strlen(tok) - 1, "dtune-auth-c", n1, n2, other);
    CU_ASSERT_FALSE(dt_auth_equal(m, other));
    /* one flipped digit, other lengths, NULL */
    strcpy(other, m);
    other[10] = other[10] == '0' ? '1' : '0';
    CU_ASSERT_FALSE(dt_auth_equal(m, other));
    other[10] = m[10];
    CU_ASSERT_TRUE(dt_auth_equal(m, other));
    other[63] = '\0';
    CU_ASSERT_FALSE(dt_auth_equal(m, other));
    CU_ASSERT_FALSE(dt_auth_equal(m, ""));
    CU_ASSERT_FALSE(dt_auth_equal(m, NULL));
    CU_ASSERT_FALSE(dt_auth_equal(NULL, NULL));
}

int main(void)
{
    CU_TestInfo wire_tests[] = {
        {"message names", test_names},
        {"encode: layout and refusals", test_encode_layout},
        {"round trip, every type", test_round_trip},
        {"split at every byte boundary", test_split_every_boundary},
        {"several frames in one feed", test_several_in_one_feed},
        {"oversized length prefix", test_oversized_prefix},
        {"largest frame", test_largest_frame},
        {"bad version, type, payload", test_bad_frames},
        {"random bytes", test_random_bytes},
        CU_TEST_INFO_NULL,
    };
    CU_TestInfo auth_tests[] = {
        {"token file", test_token_file},
        {"nonce", test_nonce},
        {"MAC known answers", test_mac_known_answers},
        {"MAC consistency and mismatch", test_mac_consistency},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"wire", NULL, NULL, NULL, NULL, wire_tests},
        {"auth", setup, teardown, NULL, NULL, auth_tests},
        CU_SUITE_INFO_NULL,
    };
    return dt_test_main(suites);
}
