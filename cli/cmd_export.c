/* Placeholder: `dtune export` lands with the daemon issue. */
#include "cli/cli.h"

#include <stdio.h>

int dt_cmd_export(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtune export: not built yet\n");
    return DT_EXIT_RUNTIME;
}
