/* Placeholder until the export implementation lands (export/export.h). */
#include "export/export.h"
