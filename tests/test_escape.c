/* common/escape.h: control characters escaped, UTF-8 kept; and every
 * dt_log line escaped (common/log.c), so a node name or a worker's message
 * holding ESC, CR, LF or BEL cannot forge a log line or drive a terminal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/escape.h"
#include "common/log.h"
#include "tests/dt_test.h"

static void expect(const char *in, const char *want)
{
    char buf[256];
    size_t n = dt_escape(in, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, want);
    CU_ASSERT_EQUAL(n, strlen(want));
    CU_ASSERT_EQUAL(dt_escape_needed(in), strcmp(in, want) != 0);
    char *d = dt_escape_dup(in);
    CU_ASSERT_STRING_EQUAL(d, want);
    free(d);
}

static void test_escape(void)
{
    expect("", "");
    expect("plain /a/b_c.onnx", "plain /a/b_c.onnx");
    expect("a\x1b[31mred", "a\\x1b[31mred");
    expect("cr\rlf\ntab\tbel\a", "cr\\rlf\\ntab\\tbel\\x07");
    expect("\x01\x7f", "\\x01\\x7f");
    expect("back\\slash", "back\\slash"); /* for reading: kept */
    /* UTF-8 intact: 2, 3 and 4 byte characters */
    expect("caf\xc3\xa9 \xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\xb3\xa8\xe6\x84\x8f \xf0\x9f\x98\x80");
    /* C1 controls (U+0085 NEL, U+009B CSI) */
    expect("x\xc2\x9b" "2J\xc2\x85", "x\\u009b2J\\u0085");
    expect("\xc2\xa0", "\xc2\xa0"); /* U+00A0 is not a control */
    /* not UTF-8: a lone CSI byte, a truncated sequence, overlong, surrogate */
    expect("\x9b" "2J", "\\x9b2J");
    expect("\xe6\xb3", "\\xe6\\xb3");
    expect("\xc0\xaf", "\\xc0\\xaf");
    expect("\xed\xa0\x80", "\\xed\\xa0\\x80");
    expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
    CU_ASSERT_EQUAL(dt_escape(NULL, NULL, 0), 0);

    /* cut like snprintf: NUL-terminated, never inside an escape or a
     * character, and the full length returned */
    char small[6];
    CU_ASSERT_EQUAL(dt_escape("ab\x1b" "cd", small, sizeof small), 8);
    CU_ASSERT_STRING_EQUAL(small, "ab");
    CU_ASSERT_EQUAL(dt_escape("a\xc3\xa9\xc3\xa9\xc3\xa9", small, sizeof small), 7);
    CU_ASSERT_STRING_EQUAL(small, "a\xc3\xa9\xc3\xa9");
    small[0] = 'z';
    CU_ASSERT_EQUAL(dt_escape("abc", small, 0), 3);
    CU_ASSERT_EQUAL(small[0], 'z');
}

/* What dt_log writes on stderr for one call. */
static char *log_line(const char *prefix, const char *arg)
{
    char path[] = "/tmp/dtune-log-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    dt_log_error("%s%s", prefix, arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    char *text = dt_test_slurp(path);
    unlink(path);
    return text;
}

static void test_log_line(void)
{
    const char *evil = "/dense\x1b[31m\x1b]0;pwned\x07\r\ndtune 00:00:00.000 error: forged";
    char *line = log_line("worker 127.0.0.1:1: trial failed: ", evil);
    /* one line, no raw control byte, the text readable */
    CU_ASSERT_EQUAL(strchr(line, '\n'), line + strlen(line) - 1);
    for (const char *p = line; *p; p++)
        CU_ASSERT(*p == '\n' || (unsigned char)*p >= 0x20);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "error: worker 127.0.0.1:1: trial failed: /dense\\x1b[31m"
                                        "\\x1b]0;pwned\\x07\\r\\ndtune 00:00:00.000 error: forged\n"));
    free(line);
    /* a message longer than the stack buffers is escaped whole */
    size_t n = 5000;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 100 == 99 ? '\x1b' : 'a';
    big[n] = '\0';
    line = log_line("", big);
    CU_ASSERT_PTR_NULL(strchr(line, '\x1b'));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "\\x1b\n"));
    CU_ASSERT(strlen(line) > n + 3 * (n / 100));
    free(line);
    free(big);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"dt_escape: controls escaped, UTF-8 kept, cut like snprintf", test_escape},
        {"dt_log: one escaped line", test_log_line},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"escape", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
