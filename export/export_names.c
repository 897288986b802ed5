/* Which NAMEs an export may take (export_internal.h: dt_export_name_check).
 *
 * The exported file defines NAME, NAME_pack and NAME_packed_size with external
 * linkage and NAME_THREADS, NAME_select, NAME_fdiv, NAME_k<i>_... beside them;
 * it includes <math.h>, <stdint.h>, <stdlib.h>, <string.h>, <immintrin.h> and
 * <omp.h>, and it is linked into programs that use the C library.  So a NAME
 * that is, or makes, an identifier of the C library, of POSIX, of OpenMP or of
 * dtune itself either does not compile ("conflicting types for 'exp'") or
 * silently takes the place of the library's function at link time.  Refused:
 * identifiers the C standard reserves for the implementation (7.1.3: a
 * leading underscore), the namespaces of its macros and threads, the names
 * the standard library, POSIX and OpenMP declare that a program is likely to
 * meet, names ending in _t, and dtune's own prefixes. */
#include "export/export_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic",
    "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "bool", "true", "false", "asm", "typeof", NULL};

/* <math.h>'s functions, each also with an f and an l suffix */
static const char *const math_functions[] = {
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign",
    "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "fabs", "fdim", "floor", "fma",
    "fmax", "fmin", "fmod", "frexp", "hypot", "ilogb", "ldexp", "lgamma", "llrint", "llround",
    "log", "log10", "log1p", "log2", "logb", "lrint", "lround", "modf", "nan", "nearbyint",
    "nextafter", "nexttoward", "pow", "remainder", "remquo", "rint", "round", "scalbln",
    "scalbn", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc", "j0", "j1", "jn", "y0",
    "y1", "yn", "gamma", "exp10", "sincos", "significand", "drem", "finite", NULL};

/* the rest of the C library's names a program meets (the atomic_ and thread
 * prefixes are refused whole below), POSIX's common functions, and the
 * macros of the headers the file includes */
static const char *const library_names[] = {
    /* stdlib.h */
    "abort", "abs", "aligned_alloc", "at_quick_exit", "atexit", "atof", "atoi", "atol",
    "atoll", "bsearch", "calloc", "div", "exit", "free", "getenv", "labs", "ldiv", "llabs",
    "lldiv", "malloc", "mblen", "mbstowcs", "mbtowc", "qsort", "quick_exit", "rand", "realloc",
    "srand", "system", "wcstombs", "wctomb", "posix_memalign", "setenv", "unsetenv", "putenv",
    "mkstemp", "mkdtemp", "realpath", "random", "srandom", "drand48", "lrand48", "erand48",
    /* stdio.h */
    "clearerr", "fclose", "feof", "ferror", "fflush", "fgetc", "fgetpos", "fgets", "fopen",
    "fprintf", "fputc", "fputs", "fread", "freopen", "fscanf", "fseek", "fsetpos", "ftell",
    "fwrite", "getc", "getchar", "gets", "perror", "printf", "putc", "putchar", "puts",
    "remove", "rename", "rewind", "scanf", "setbuf", "setvbuf", "snprintf", "sprintf",
    "sscanf", "tmpfile", "tmpnam", "ungetc", "vfprintf", "vfscanf", "vprintf", "vscanf",
    "vsnprintf", "vsprintf", "vsscanf", "fdopen", "fileno", "popen", "pclose", "getline",
    "getdelim", "dprintf", "stdin", "stdout", "stderr",
    /* time.h, signal.h, setjmp.h, locale.h, stdarg.h, assert.h, errno.h, wchar.h, uchar.h */
    "asctime", "clock", "ctime", "difftime", "gmtime", "localtime", "mktime", "strftime",
    "time", "timespec_get", "nanosleep", "clock_gettime", "clock_getres", "gmtime_r",
    "localtime_r", "raise", "signal", "sigaction", "longjmp", "setjmp", "sigsetjmp",
    "siglongjmp", "localeconv", "setlocale", "va_arg", "va_copy", "va_end", "va_start",
    "va_list", "assert", "static_assert", "errno", "btowc", "fgetwc", "fgetws", "fputwc",
    "fputws", "fwide", "fwprintf", "fwscanf", "getwc", "getwchar", "mbrlen", "mbrtowc",
    "mbsinit", "mbsrtowcs", "putwc", "putwchar", "swprintf", "swscanf", "ungetwc", "vfwprintf",
    "vswprintf", "vwprintf", "wprintf", "wscanf", "wcrtomb", "wmemchr", "wmemcmp", "wmemcpy",
    "wmemmove", "wmemset", "c16rtomb", "c32rtomb", "mbrtoc16", "mbrtoc32", "imaxabs",
    "imaxdiv", "alloca", "offsetof", "unreachable", "noreturn", "alignas", "alignof",
    "complex", "imaginary", "cabs", "carg", "cimag", "creal", "conj", "cproj", "cexp", "clog",
    "cpow", "csqrt", "csin", "ccos", "ctan",
    /* unistd.h, fcntl.h, sys/ headers, dlfcn.h, sched.h: POSIX functions */
    "access", "alarm", "chdir", "chown", "close", "dup", "dup2", "execl", "execle", "execlp",
    "execv", "execve", "execvp", "fork", "fsync", "ftruncate", "getcwd", "getpid", "getppid",
    "getuid", "geteuid", "getgid", "isatty", "link", "lseek", "pause", "pipe", "pread",
    "pwrite", "read", "readlink", "rmdir", "sleep", "symlink", "sync", "sysconf", "truncate",
    "unlink", "usleep", "write", "open", "openat", "creat", "fcntl", "ioctl", "mmap",
    "munmap", "mprotect", "madvise", "stat", "fstat", "lstat", "chmod", "mkdir", "umask",
    "kill", "wait", "waitpid", "select", "poll", "socket", "bind", "listen", "accept",
    "connect", "send", "recv", "sendto", "recvfrom", "shutdown", "dlopen", "dlsym", "dlclose",
    "dlerror", "sched_yield", "getopt", "optarg", "optind", "environ", "index", "rindex",
    "bcopy", "bzero", "ffs",
    /* macros of the included headers */
    "NULL", "EOF", "BUFSIZ", "FILENAME_MAX", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF",
    "HUGE_VALL", "M_PI", "M_E", "RAND_MAX", "EXIT_SUCCESS", "EXIT_FAILURE", "MB_CUR_MAX",
    "SIZE_MAX", "CHAR_BIT", "CLOCKS_PER_SEC", "isfinite", "isinf", "isnan", "isnormal",
    "signbit", "fpclassify", "isgreater", "isless", "isunordered", "math_errhandling", "main",
    NULL};

/* Prefixes whose names belong to someone else: C11's (7.1.3, 7.31) macro and
 * thread namespaces, POSIX threads, OpenMP, dtune's own; each followed by
 * anything ('*') or by an uppercase letter or digit ('U').  (7.31 also
 * reserves is, to, str, mem and wcs before a lowercase letter; refusing
 * "stream" or "total" would help nobody, so only the functions that exist
 * are refused, by name, below.) */
static const struct {
    const char *prefix;
    char next;
} reserved_prefixes[] = {
    {"atomic_", '*'}, {"cnd_", '*'},     {"mtx_", '*'},  {"thrd_", '*'},   {"tss_", '*'},
    {"pthread_", '*'}, {"omp_", '*'},    {"kmp_", '*'},  {"dtune_", '*'},  {"dt_", '*'},
    {"DTUNE_", '*'},  {"DT_", '*'},      {"__", '*'},    {"E", 'U'},       {"SIG", 'U'},
    {"SIG_", 'U'},    {"LC_", 'U'},      {"FE_", 'U'},   {"FLT_", 'U'},    {"DBL_", 'U'},
    {"LDBL_", 'U'},   {"INT", 'U'},      {"UINT", 'U'},  {"PRI", '*'},     {"SCN", '*'},
    {"TIME_", 'U'},   {"M_", 'U'},
};

/* <ctype.h>'s and <string.h>'s functions (and their POSIX/GNU relatives) */
static const char *const ctype_string_names[] = {
    "isalnum", "isalpha", "isblank", "iscntrl", "isdigit", "isgraph", "islower", "isprint",
    "ispunct", "isspace", "isupper", "isxdigit", "isascii", "tolower", "toupper", "toascii",
    "memchr", "memcmp", "memcpy", "memmove", "memset", "memccpy", "mempcpy", "memmem",
    "memrchr", "strcat", "strchr", "strcmp", "strcoll", "strcpy", "strcspn", "strerror",
    "strerror_r", "strlen", "strncat", "strncmp", "strncpy", "strpbrk", "strrchr", "strspn",
    "strstr", "strtok", "strtok_r", "strxfrm", "strdup", "strndup", "strnlen", "strsignal",
    "strcasecmp", "strncasecmp", "strsep", "stpcpy", "stpncpy", "strtod", "strtof", "strtol",
    "strtold", "strtoll", "strtoul", "strtoull", "strtoimax", "strtoumax", "strptime",
    "wcslen", "wcscpy", "wcsncpy", "wcscat", "wcscmp", "wcsncmp", "wcschr", "wcsrchr",
    "wcsstr", "wcstok", "wcstol", "wcstoul", "wcstod", "wcsftime", "wcscoll", "wcsxfrm", NULL};

static int in_list(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

/* s is a math function, or one with its f or l suffix */
static int is_math_function(const char *s)
{
    size_t n = strlen(s);
    char base[DT_EXPORT_NAME_MAX + 1];
    if (in_list(math_functions, s))
        return 1;
    if (n < 2 || n > DT_EXPORT_NAME_MAX || (s[n - 1] != 'f' && s[n - 1] != 'l'))
        return 0;
    memcpy(base, s, n - 1);
    base[n - 1] = '\0';
    return in_list(math_functions, base);
}

/* The reserved prefix s starts with, or NULL. */
static const char *reserved_prefix(const char *s)
{
    for (size_t i = 0; i < sizeof reserved_prefixes / sizeof reserved_prefixes[0]; i++) {
        const char *p = reserved_prefixes[i].prefix;
        size_t n = strlen(p);
        if (strncmp(s, p, n) != 0)
            continue;
        if (reserved_prefixes[i].next == '*' || isupper((unsigned char)s[n]) ||
            isdigit((unsigned char)s[n]))
            return p;
    }
    return NULL;
}

/* Why identifier id (NAME or one it makes) clashes, into why; 0 when it does not. */
static int clash(const char *id, const char *name, char *why, size_t n)
{
    const char *what = NULL;
    if (is_math_function(id))
        what = "a <math.h> function";
    else if (in_list(library_names, id) || in_list(ctype_string_names, id))
        what = "a name of the C library, POSIX or their headers";
    else if (id[strlen(id) - 1] == 't' && strlen(id) >= 2 && id[strlen(id) - 2] == '_')
        what = "a type name (POSIX reserves names ending in _t)";
    if (what) {
        if (strcmp(id, name) == 0)
            snprintf(why, n, "'%s' is %s: the exported function would conflict with it", id,
                     what);
        else
            snprintf(why, n, "'%s' would define %s, %s", name, id, what);
        return 1;
    }
    return 0;
}

int dt_export_name_check(const char *s, char *why, size_t n)
{
    size_t len = s ? strlen(s) : 0;
    int ident = len > 0 && (isalpha((unsigned char)s[0]) || s[0] == '_');
    for (size_t i = 1; ident && i < len; i++)
        ident = isalnum((unsigned char)s[i]) || s[i] == '_';
    if (!ident) {
        snprintf(why, n, "'%s' is not a C identifier (letters, digits and _, not starting with a "
                 "digit)", s ? s : "");
        return 0;
    }
    if (len > DT_EXPORT_NAME_MAX) {
        snprintf(why, n, "'%.16s...' is longer than %d characters", s, DT_EXPORT_NAME_MAX);
        return 0;
    }
    if (in_list(c_keywords, s)) {
        snprintf(why, n, "'%s' is a C keyword", s);
        return 0;
    }
    if (s[0] == '_') {
        snprintf(why, n, "'%s' begins with an underscore: such names are reserved for the C "
                 "implementation (C11 7.1.3)", s);
        return 0;
    }
    const char *p = reserved_prefix(s);
    if (p) {
        snprintf(why, n, "'%s' begins with '%s', a prefix reserved for %s", s, p,
                 strncmp(p, "dt", 2) == 0 || strncmp(p, "DT", 2) == 0 ? "dtune's own names"
                 : strcmp(p, "omp_") == 0 || strcmp(p, "kmp_") == 0 ? "OpenMP"
                 : strcmp(p, "pthread_") == 0 ? "POSIX threads"
                 : "the C library (C11 7.31)");
        return 0;
    }
    /* NAME itself, then the external and macro names it makes */
    static const char *const suffixes[] = {"", "_pack", "_packed_size", "_THREADS", "_select",
                                           "_fdiv", NULL};
    for (int i = 0; suffixes[i]; i++) {
        char id[DT_EXPORT_NAME_MAX + 16];
        snprintf(id, sizeof id, "%s%s", s, suffixes[i]);
        if (clash(id, s, why, n))
            return 0;
    }
    return 1;
}
