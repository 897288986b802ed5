/* shape/expr: parsing, canonical printing, evaluation with overflow checks. */
#include <stdlib.h>
#include <string.h>

#include "shape/expr.h"
#include "tests/dt_test.h"

static char *canon(const char *text)
{
    static char buf[256];
    dt_expr *x = NULL;
    dt_err e;
    if (dt_expr_parse(text, &x, NULL, &e) || dt_expr_canonicalize(&x, &e)) {
        snprintf(buf, sizeof buf, "ERROR: %.200s", e.msg);
    } else {
        dt_expr_print(x, buf, sizeof buf);
    }
    dt_expr_free(x);
    return buf;
}

static void test_canonical_forms(void)
{
    static const char *cases[][2] = {
        {"seq", "seq"},
        {"batch*seq", "batch*seq"},
        {"seq * batch", "batch*seq"},
        {"(batch)*seq", "batch*seq"},
        {"batch*12", "12*batch"},
        {"3*batch*4", "12*batch"},
        {"1+seq", "seq+1"},
        {"seq+1+2", "seq+3"},
        {"seq*1", "seq"},
        {"seq+0", "seq"},
        {"0*seq", "0"},
        {"2*3+4", "10"},
        {"7/2", "3"},
        {"-7/2", "-4"},    /* floor division */
        {"1-5", "-4"},
        {"(H+2-3)/2+1", "(H-1)/2+1"},
        {"a-(b-c)", "a+c-b"},
        {"a-b-c", "a-(b+c)"},
        {"a*(b/c)", "a*(b/c)"},
        {"(a/b)*c", "a/b*c"},
        {"a+(b-c)", "a+b-c"},
        {"(a+b)*(c+d)", "(a+b)*(c+d)"},
        {"seq/1", "seq"},
        {"seq-0", "seq"},
        {"-seq", "-1*seq"},
        {"  x  +  y ", "x+y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = canon(cases[i][0]);
        if (strcmp(got, cases[i][1]) != 0)
            fprintf(stderr, "\n  %s -> %s (expected %s)\n", cases[i][0], got, cases[i][1]);
        CU_ASSERT_STRING_EQUAL(got, cases[i][1]);
    }
}

/* Issue 42, defect 7: one canonical text per sum, whatever the order of its
 * '+' and '-' (before, "x-1+2" kept its two constants while "x+-1+2" folded). */
static void test_sums_fold_in_any_order(void)
{
    static const char *cases[][2] = {
        {"x-1+2", "x+1"},         {"x+1-1+1", "x+1"},     {"x+-1+2", "x+1"},
        {"2+x-1", "x+1"},         {"x-1", "x-1"},         {"x+-4", "x-4"},
        {"x-1-1", "x-2"},         {"x+1-1", "x"},         {"1-x+x", "1"},
        {"3-x", "3-x"},           {"3-x-5", "-1*(x+2)"},  {"-x-y", "-1*(x+y)"},
        {"-(x-1)", "1-x"},        {"-1*(a-b)", "b-a"},    {"-4*x+y", "y-4*x"},
        {"y+-4*x", "y-4*x"},      {"2*a-3*b", "2*a-3*b"}, {"h-(c+1)", "h-(c+1)"},
        {"h-c-1", "h-(c+1)"},     {"a-(b+1)+1", "a-b"},   {"(x+2-3)/2", "(x-1)/2"},
        {"-2*(a+b)", "-2*(a+b)"}, {"b+a-c", "a+b-c"},     {"a-c+b", "a+b-c"},
        /* like terms combine; products are not distributed */
        {"x+x", "2*x"},           {"2*x+3*x", "5*x"},     {"x-x", "0"},
        {"a*b+b*a", "2*a*b"},     {"x+1-x", "1"},         {"3*x-x-2*x+y", "y"},
        {"x-2*x", "-1*x"},        {"2*(a+b)+a", "2*(a+b)+a"}, {"a/2+a/2", "2*(a/2)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = canon(cases[i][0]);
        if (strcmp(got, cases[i][1]) != 0)
            fprintf(stderr, "\n  %s -> %s (expected %s)\n", cases[i][0], got, cases[i][1]);
        CU_ASSERT_STRING_EQUAL(got, cases[i][1]);
    }
}

/* Any order of one sum's signed terms gives the same canonical text: a
 * random chain of variables, products and constants, each with a sign,
 * printed in two random orders (issue 42, defect 7, as a property). */
static void test_sum_order_does_not_matter(void)
{
    srand(42);
    /* "(a/2)": a leading "-a/2" would be floor(-a/2), another value */
    static const char *atoms[] = {"a", "b", "c", "2*a", "3*b*c", "(a/2)", "(b+1)", "(c-2)"};
    for (int iter = 0; iter < 500; iter++) {
        int n = 2 + rand() % 6, sign[8], term[8], order[8];
        for (int i = 0; i < n; i++) {
            sign[i] = rand() % 2;
            term[i] = rand() % 12; /* 8..11: a constant 1..4 */
            order[i] = i;
        }
        char text[2][256];
        for (int t = 0; t < 2; t++) {
            for (int i = n - 1; t && i > 0; i--) { /* shuffle the second */
                int j = rand() % (i + 1), x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            int len = 0;
            for (int k = 0; k < n; k++) {
                int i = order[k];
                char atom[16];
                if (term[i] < 8)
                    snprintf(atom, sizeof atom, "%s", atoms[term[i]]);
                else
                    snprintf(atom, sizeof atom, "%d", term[i] - 7);
                len += snprintf(text[t] + len, sizeof text[t] - (size_t)len, "%s%s",
                                sign[i] ? "-" : (k ? "+" : ""), atom);
            }
        }
        char first[256];
        snprintf(first, sizeof first, "%s", canon(text[0]));
        const char *second = canon(text[1]);
        if (strcmp(first, second) != 0)
            fprintf(stderr, "\n  %s -> %s but %s -> %s\n", text[0], first, text[1], second);
        CU_ASSERT_STRING_EQUAL(first, second);
    }
}

static void test_round_trip_is_fixed_point(void)
{
    /* canonical text parses back to the same tree and prints the same */
    static const char *texts[] = {"(H+2-3)/2+1", "a-(b-c)", "a*(b/c)", "12*batch",
                                  "-4*x+y",      "x+-4",    "x/-3",    "(a+b)*(c-d)/e"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char first[256], second[256];
        snprintf(first, sizeof first, "%s", canon(texts[i]));
        snprintf(second, sizeof second, "%s", canon(first));
        CU_ASSERT_STRING_EQUAL(first, second);
    }
}

static void test_random_round_trip(void)
{
    /* random trees over 3 variables: print(canon(x)) is stable and evaluates
     * like the original tree */
    srand(1234);
    const char *names[] = {"a", "b", "c"};
    for (int iter = 0; iter < 2000; iter++) {
        char text[512] = "";
        int len = 0;
        int depth = 0;
        int terms = 1 + rand() % 6;
        for (int t = 0; t < terms; t++) {
            if (t)
                len += snprintf(text + len, sizeof text - (size_t)len, "%c", "+-*/"[rand() % 4]);
            if (rand() % 4 == 0) {
                len += snprintf(text + len, sizeof text - (size_t)len, "(");
                depth++;
            }
            if (rand() % 2)
                len += snprintf(text + len, sizeof text - (size_t)len, "%s", names[rand() % 3]);
            else
                len += snprintf(text + len, sizeof text - (size_t)len, "%d", 1 + rand() % 9);
            if (depth && rand() % 2) {
                len += snprintf(text + len, sizeof text - (size_t)len, ")");
                depth--;
            }
        }
        while (depth--)
            len += snprintf(text + len, sizeof text - (size_t)len, ")");
        dt_expr *orig = NULL, *can = NULL, *again = NULL;
        dt_err e;
        CU_ASSERT_EQUAL_FATAL(dt_expr_parse(text, &orig, NULL, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_expr_parse(text, &can, NULL, &e), 0);
        int crc = dt_expr_canonicalize(&can, &e);
        if (crc) { /* constant division by zero, e.g. 3/(2-2) */
            CU_ASSERT_EQUAL(crc, DT_EINVAL);
            dt_expr_free(orig);
            dt_expr_free(can);
            continue;
        }
        char p1[512], p2[512];
        dt_expr_print(can, p1, sizeof p1);
        CU_ASSERT_EQUAL_FATAL(dt_expr_parse(p1, &again, NULL, &e), 0);
        CU_ASSERT_EQUAL_FATAL(dt_expr_canonicalize(&again, &e), 0);
        dt_expr_print(again, p2, sizeof p2);
        if (strcmp(p1, p2) != 0)
            fprintf(stderr, "\n  %s -> %s -> %s\n", text, p1, p2);
        CU_ASSERT_STRING_EQUAL(p1, p2);
        CU_ASSERT_TRUE(dt_expr_equal(can, again));
        /* same values everywhere the original evaluates */
        CU_ASSERT_EQUAL(dt_expr_bind(orig, names, 3, &e), 0);
        CU_ASSERT_EQUAL(dt_expr_bind(can, names, 3, &e), 0);
        int64_t vals[3];
        for (int s = 0; s < 5; s++) {
            for (int v = 0; v < 3; v++)
                vals[v] = 1 + rand() % 20;
            int64_t r1, r2;
            if (dt_expr_eval(orig, vals, &r1, &e) == 0) {
                CU_ASSERT_EQUAL(dt_expr_eval(can, vals, &r2, &e), 0);
                CU_ASSERT_EQUAL(r1, r2);
            }
        }
        dt_expr_free(orig);
        dt_expr_free(can);
        dt_expr_free(again);
    }
}

static void test_parse_errors(void)
{
    static const struct {
        const char *text;
        size_t offset;
    } cases[] = {
        {"", 0}, {"batch*", 6}, {"(seq", 4}, {"seq)", 3}, {"2seq", 1}, {"a $ b", 2},
        {"99999999999999999999", 0}, {"a**b", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_expr *x = NULL;
        dt_err e;
        size_t off = 999;
        CU_ASSERT_EQUAL(dt_expr_parse(cases[i].text, &x, &off, &e), DT_EINVAL);
        CU_ASSERT_PTR_NULL(x);
        CU_ASSERT_EQUAL(off, cases[i].offset);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "offset"));
    }
}

/* Text of n copies of open, then core, then n copies of close (close may be ""). */
static char *nested(int n, const char *open, const char *core, const char *close)
{
    size_t lo = strlen(open), lc = strlen(close), lcore = strlen(core);
    char *s = malloc((size_t)n * (lo + lc) + lcore + 1), *q = s;
    for (int i = 0; i < n; i++, q += lo)
        memcpy(q, open, lo);
    memcpy(q, core, lcore);
    q += lcore;
    for (int i = 0; i < n; i++, q += lc)
        memcpy(q, close, lc);
    *q = '\0';
    return s;
}

static void expect_too_deep(const char *text)
{
    dt_expr *x = NULL;
    dt_err e;
    CU_ASSERT_EQUAL(dt_expr_parse(text, &x, NULL, &e), DT_EINVAL);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "nested too deeply"));
}

static void expect_parses(const char *text, int64_t value)
{
    dt_expr *x = NULL;
    dt_err e;
    int64_t v = 0;
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse(text, &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_canonicalize(&x, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_eval(x, NULL, &v, &e), 0);
    CU_ASSERT_EQUAL(v, value);
    dt_expr_free(x);
}

/* A hostile key must be refused, not overflow the stack: deep parentheses,
 * long runs of unary minus and long operator chains, at and past the limit. */
static void test_depth_limit(void)
{
    int at = DT_EXPR_MAX_DEPTH - 1; /* the leaf is one level itself */
    char *s = nested(DT_EXPR_MAX_DEPTH, "(", "8", ")");
    expect_parses(s, 8);
    free(s);
    s = nested(DT_EXPR_MAX_DEPTH + 1, "(", "8", ")");
    expect_too_deep(s);
    free(s);
    s = nested(100000, "(", "8", ")");
    expect_too_deep(s);
    free(s);
    s = nested(at, "-", "8", "");
    expect_parses(s, at % 2 ? -8 : 8);
    free(s);
    s = nested(60000, "-", "8", "");
    expect_too_deep(s);
    free(s);
    s = nested(60000, "-", "x", "");
    expect_too_deep(s);
    free(s);
    s = nested(at, "1+", "1", ""); /* a chain of at+1 operands is at levels deep */
    expect_parses(s, at + 1);
    free(s);
    /* issue 27: a run of one operator is flat, not nested ("seq*seq*..."
     * of 200 factors said "nested too deeply"): one n-ary node of any length */
    s = nested(100000, "1+", "1", "");
    expect_parses(s, 100001);
    free(s);
    s = nested(100000, "1*", "1", "");
    expect_parses(s, 1);
    free(s);
    s = nested(100000, "2*", "1", ""); /* 2^100000: an overflow, not a crash */
    dt_expr *x = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse(s, &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_canonicalize(&x, &e), DT_EOVERFLOW);
    dt_expr_free(x);
    free(s);
    s = nested(199, "seq*", "seq", "");
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse(s, &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(x->kind, DT_EXPR_MUL);
    CU_ASSERT_EQUAL(x->nargs, 200);
    char buf[1024];
    CU_ASSERT_EQUAL(dt_expr_print(x, buf, sizeof buf), strlen(s));
    CU_ASSERT_STRING_EQUAL(buf, s); /* as written, before and after canonicalizing */
    CU_ASSERT_EQUAL(dt_expr_canonicalize(&x, &e), 0);
    dt_expr_print(x, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, s);
    const char *names[] = {"seq"};
    int64_t one = 1, v = 0;
    CU_ASSERT_EQUAL(dt_expr_bind(x, names, 1, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_eval(x, &one, &v, &e), 0);
    CU_ASSERT_EQUAL(v, 1);
    dt_expr_free(x);
    free(s);
    /* a chain that changes operator nests at every change: still refused */
    s = nested(100000, "1+1-", "1", "");
    expect_too_deep(s);
    free(s);
    s = nested(100000, "8*2/", "1", "");
    expect_too_deep(s);
    free(s);
    s = nested(at / 2, "1+1-", "1", ""); /* at changes: at levels */
    expect_parses(s, 1);
    free(s);
    /* a flat run inside parentheses inside a flat run: heights add per level */
    s = nested(DT_EXPR_MAX_DEPTH / 2 - 1, "(x*x*x+", "1", ")");
    CU_ASSERT_EQUAL(dt_expr_parse(s, &x, NULL, &e), 0);
    dt_expr_free(x);
    free(s);
}

static void test_eval_and_overflow(void)
{
    const char *names[] = {"batch", "seq"};
    dt_expr *x = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse("12*batch*seq", &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_bind(x, names, 2, &e), 0);
    int64_t v[2] = {8, 128}, r;
    CU_ASSERT_EQUAL(dt_expr_eval(x, v, &r, &e), 0);
    CU_ASSERT_EQUAL(r, 12 * 8 * 128);
    v[0] = INT64_MAX / 4;
    CU_ASSERT_EQUAL(dt_expr_eval(x, v, &r, &e), DT_EOVERFLOW);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "overflows"));
    dt_expr_free(x);

    CU_ASSERT_EQUAL_FATAL(dt_expr_parse("seq/(batch-1)", &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_bind(x, names, 2, &e), 0);
    v[0] = 1;
    CU_ASSERT_EQUAL(dt_expr_eval(x, v, &r, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "division by zero"));
    dt_expr_free(x);

    CU_ASSERT_EQUAL_FATAL(dt_expr_parse("seq*hidden", &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_bind(x, names, 2, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "hidden"));
    dt_expr_free(x);

    /* constant folding overflow is reported, not wrapped */
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse("9223372036854775807+1", &x, NULL, &e), 0);
    CU_ASSERT_EQUAL(dt_expr_canonicalize(&x, &e), DT_EOVERFLOW);
    dt_expr_free(x);
}

static void test_substitute_and_rename(void)
{
    dt_expr *x = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_expr_parse("batch*seq", &x, NULL, &e), 0);
    dt_expr_substitute(x, "batch", 1);
    CU_ASSERT_EQUAL(dt_expr_canonicalize(&x, &e), 0);
    char buf[64];
    dt_expr_print(x, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "seq");
    CU_ASSERT_EQUAL(dt_expr_rename(x, "seq", "M"), 0);
    dt_expr_print(x, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "M");
    CU_ASSERT_TRUE(dt_expr_uses(x, "M"));
    CU_ASSERT_FALSE(dt_expr_uses(x, "seq"));
    dt_expr_free(x);
    CU_ASSERT_TRUE(dt_is_name("seq_len2"));
    CU_ASSERT_FALSE(dt_is_name("2seq"));
    CU_ASSERT_FALSE(dt_is_name("a-b"));
    CU_ASSERT_FALSE(dt_is_name(""));
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"canonical forms", test_canonical_forms},
        {"sums fold their constants in any order (issue 42, 7)", test_sums_fold_in_any_order},
        {"any order of a sum's terms, one text", test_sum_order_does_not_matter},
        {"canonical text is a fixed point", test_round_trip_is_fixed_point},
        {"random expressions round-trip and keep their value", test_random_round_trip},
        {"parse errors carry the offset", test_parse_errors},
        {"depth limit: deep nesting and long chains refused", test_depth_limit},
        {"evaluation, overflow, division by zero", test_eval_and_overflow},
        {"substitute and rename", test_substitute_and_rename},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"expr", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
