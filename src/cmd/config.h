/* Settings from files and the environment, as ccache takes them: /etc/headroom.conf, then
 * $XDG_CONFIG_HOME/headroom/config, then HEADROOM_* variables, then the command line.
 * Each setting stands for one option of one or more commands; config_inject puts the
 * settings in force before the command's own arguments, so that an option given on the
 * command line, read later, wins. */
#ifndef HEADROOM_CMD_CONFIG_H
#define HEADROOM_CMD_CONFIG_H

/* argv (argv[0] the command's name) with the settings for that command first; the
 * caller owns the array (not the strings it points to, which live to the exit). Dies
 * naming the file and line of a malformed file or an unknown key. */
char **config_inject(int *argc, char **argv);
/* headroom config [--json]: each setting's effective value and where it came from. */
int cmd_config(int argc, char **argv);

#endif
