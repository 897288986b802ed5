/* Placeholder: `dtune daemon` lands with the daemon issue. */
#include "cli/cli.h"

#include <stdio.h>

int dt_cmd_daemon(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dtune daemon: not built yet\n");
    return DT_EXIT_RUNTIME;
}
