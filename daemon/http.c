/* Placeholder until the HTTP server lands (daemon/http.h). */
#include "daemon/http.h"
