/* Settings from files and the environment, as ccache takes them: /etc/headroom.conf, then
 * $XDG_CONFIG_HOME/headroom/config, then HEADROOM_* variables, then the command line.
 * Each setting stands for one option of one or more commands; config_inject puts the
 * settings in force before the command's own arguments, so that an option given on the
 * command line, read later, wins. */
#ifndef HEADROOM_CMD_CONFIG_H
#define HEADROOM_CMD_CONFIG_H

/* argv (argv[0] the command's name) with the settings for that command first, to free
 * with config_inject_release() (argv's own strings are left alone). Dies
 * naming the file and line of a malformed file or an unknown key. */
char **config_inject(int *argc, char **argv);
/* Free what config_inject() returned, once the command is done with it. */
void config_inject_release(char **args);
/* headroom config [--json]: each setting's effective value and where it came from. */
int cmd_config(int argc, char **argv);

#endif
