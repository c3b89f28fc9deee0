/* What identifies a compile job for learning: the tool, the source file, and the
 * flags that change how much memory the tool needs. */
#ifndef HEADROOM_SIGNATURE_H
#define HEADROOM_SIGNATURE_H

struct job_sig {
	char *tool;      /* basename of the compiler, wrappers (ccache...) skipped */
	char *src;       /* the source file as given, or "" when none was found */
	char *flags;     /* memory-relevant flags in command-line order, space separated */
	char *class_key; /* "tool flags": shared by every file compiled the same way */
	char *sig_key;   /* "tool flags :: src": this one job */
};

/* Build the signature of argv[0..argc). All strings are owned; free with job_sig_free. */
void job_sig_from_argv(int argc, char *const argv[], struct job_sig *out);
void job_sig_free(struct job_sig *s);

#endif
