/* A GNU make jobserver that headroom serves: the build tools below it (make, and
 * ninja >= 1.13 run without -j) take a token before each job beyond their first, and
 * headroom puts in only as many tokens as memory admits jobs. */
#ifndef HEADROOM_JOBSERVER_H
#define HEADROOM_JOBSERVER_H

enum jobserver_style {
	JOBSERVER_NONE = 0,
	JOBSERVER_PIPE,  /* --jobserver-auth=R,W: inherited pipe fds (make 3.8x..4.3, and 4.4) */
	JOBSERVER_FIFO,  /* --jobserver-auth=fifo:PATH (make >= 4.4, ninja >= 1.13) */
};

struct jobserver {
	enum jobserver_style style;
	int rfd, wfd;        /* what the build inherits (pipe style); -1 for fifo style */
	int own_fd;          /* ours: non-blocking, read and write (its own open file description) */
	char *fifo_path;     /* owned; fifo style */
	char *makeflags;     /* owned: the MAKEFLAGS value the build gets */
};

/* Which style the build's tools understand, from `make --version` and `ninja --version`
 * first lines (NULL when absent) and the build command's basename. Pure. */
enum jobserver_style jobserver_style_for(const char *make_version, const char *ninja_version, const char *cmd);
/* Can the build's tools read a jobserver of this style (one the user asked for)? ninja
 * only the fifo (from 1.13); another command runs make, which reads the fifo from 4.4.
 * Versions unknown (NULL) are given the benefit of the doubt. Pure. */
int jobserver_style_readable(enum jobserver_style style, const char *make_version, const char *ninja_version,
			     const char *cmd);
/* Does this `make --version` / `ninja --version` line speak the fifo style? */
int jobserver_make_has_fifo(const char *make_version);
int jobserver_ninja_is_client(const char *ninja_version);
const char *jobserver_style_name(enum jobserver_style style);

/* Open a jobserver with no tokens in it. dir: where a fifo goes. jobs: the -j the build
 * tools are told (the CPU cap). old_makeflags: the user's MAKEFLAGS (may be NULL), kept.
 * 0 or -errno. */
int jobserver_open(struct jobserver *js, enum jobserver_style style, const char *dir, int jobs,
		   const char *old_makeflags);
/* Make the tokens waiting in the jobserver `want`: put more in, or take back what the
 * build tools have not taken yet. Returns the tokens waiting after it, or -errno. */
int jobserver_set(struct jobserver *js, int want);
/* Tokens waiting now, or -errno. */
int jobserver_waiting(const struct jobserver *js);
void jobserver_close(struct jobserver *js);

#endif
