/* `dtune db check|prune|merge` (cli/cmd_db_upkeep.c), dispatched by
 * `dtune db` (cli/cmd_db.c).  argv[0] is the subcommand's name. */
#ifndef DT_CLI_CMD_DB_UPKEEP_H
#define DT_CLI_CMD_DB_UPKEEP_H

int dt_cmd_db_check(int argc, char **argv);
int dt_cmd_db_prune(int argc, char **argv);
int dt_cmd_db_merge(int argc, char **argv);

#endif
