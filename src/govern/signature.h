/* What identifies a compile job for learning: the tool, the source file, and the
 * flags that change how much memory the tool needs; and whether what a job showed is
 * true of its kind (a cache hit is not). */
#ifndef HEADROOM_SIGNATURE_H
#define HEADROOM_SIGNATURE_H

struct job_sig {
	char *tool;      /* basename of the compiler, launchers (ccache, distcc...) skipped */
	char *via;       /* those launchers' basenames, space separated; "" when none */
	char *src;       /* the source file as given, or "" when none was found */
	char *flags;     /* memory-relevant flags in command-line order, space separated */
	char *class_key; /* "tool flags": shared by every file compiled the same way */
	char *sig_key;   /* "tool flags :: src": this one job */
	int cached;      /* a compiler cache (ccache, sccache) is among the launchers: a hit
			  * runs no compiler, and teaches nothing about the job */
	int check;       /* a configure check (CMake's try_compile, compiler identification), or
	                  * a compiler's version query (no source, --version, -V, -dumpversion...) */
	int compiler;    /* the tool is a compiler or linker driver (gcc, c++, nvcc, ld...) */
};

/* Build the signature of argv[0..argc). All strings are owned; free with job_sig_free. */
void job_sig_from_argv(int argc, char *const argv[], struct job_sig *out);
void job_sig_free(struct job_sig *s);
/* The compiler was reached through cache (ccache, sccache) without its name on the
 * command line: a masquerade directory's link first on PATH. Noted as its launcher. */
void job_sig_add_cache(struct job_sig *s, const char *cache);
/* Is name a compiler cache's (ccache, sccache)? */
int job_sig_is_cache(const char *name);

/* Whether two sources are the same file name in other directories (one tree built twice,
 * for two architectures, or moved): a job no one has run yet is predicted from its twins
 * of the same class before the class as a whole. Empty sources are no one's twins. */
int job_src_twins(const char *src_a, const char *src_b);

/* How many times a job of this class key ("tool flags", as job_sig_from_argv() writes
 * it) is expected to peak: nvcc runs one cicc and ptxas per -gencode pass, --threads N
 * of them at once (0: all); 1 for every other tool. */
int job_sig_peaks(const char *class_key);

/* What ccache's stats log (CCACHE_STATSLOG) of one call says: 1 a hit (direct or
 * preprocessed: no compiler ran), 0 the real tool ran (a miss, or a call ccache does
 * not cache), -1 it says nothing. */
int job_cache_log_hit(const char *log);

/* What the governor saw of a job that ran to its end, for deciding whether its curve is
 * true of its kind. */
struct job_seen {
	int check;        /* a configure check */
	int partial;      /* not observed from its start to its end */
	int not_compile;  /* found in the process tree and neither compiles a source nor is a compiler */
	int cached;       /* runs through a compiler cache */
	int cache_hit;    /* the cache's own word: 1 a hit, 0 a miss, -1 unknown */
	int saw_compiler; /* a compiler process (cc1, cicc...) was seen below it */
};

/* Why its curve must not be learned (for people), or NULL when it is true: configure
 * checks, partial observations, and cache hits (the cache says so, or it says nothing
 * and no compiler ran) are not; a job still counts as a job in the report. */
const char *job_seen_untrue(const struct job_seen *s);
/* Its answer for a job that is no compile (not_compile): never worth learning, not
 * counted as a compile job that taught nothing. */
extern const char job_not_compile_why[];

#endif
