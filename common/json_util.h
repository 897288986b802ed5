/* Small jansson helpers shared by the modules that read JSON input. */
#ifndef DT_COMMON_JSON_UTIL_H
#define DT_COMMON_JSON_UTIL_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a real number",
 * "a boolean" or "null": for messages such as "must be an integer, not a
 * string". */
const char *dt_json_type_name(const json_t *v);

/* A real for a finite v, else null (JSON has no NaN or infinity).  New reference. */
json_t *dt_json_num_or_null(double v);

/* v as the shortest %g text that reads back as v exactly ("10000.0001", not
 * %g's "10000"), for messages that quote a number the user gave; buf is
 * returned. */
const char *dt_real_text(double v, char buf[32]);

#endif
