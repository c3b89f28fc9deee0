/* A snapshot of the process table from /proc: parents, groups, resident memory. */
#ifndef HEADROOM_PROC_H
#define HEADROOM_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_entry {
	pid_t pid;
	pid_t ppid;
	pid_t pgid;
	char state;         /* R, S, D, T (stopped), Z... */
	uint64_t rss_bytes; /* resident set */
	char comm[32];
	int threads;        /* num_threads */
};

struct proc_table {
	struct proc_entry *v; /* owned; sorted by pid */
	size_t n, cap;
};

/* Read every /proc/PID/stat under root ("" for the live system). Entries that vanish
 * while reading are skipped. 0 or -errno. The table is reset first; free with proc_table_free. */
int proc_table_read(const char *root, struct proc_table *t);
/* At most this many processes below one (proc_table_read_below): a bound, never a build's size. */
#define PROC_BELOW_MAX (1 << 20)
/* Read top and every process below it (at most PROC_BELOW_MAX), following the kernel's
 * list of each thread's children (root/proc/PID/task/TID/children): the work grows with
 * the processes below top, not with every process on the machine. A child that appears
 * or goes while the lists are read may be missed until the next read. The table is reset
 * first. 0, -ENOENT when the kernel keeps no children lists (CONFIG_PROC_CHILDREN: read
 * the whole table instead), -ESRCH when top is gone. */
int proc_table_read_below(const char *root, pid_t top, struct proc_table *t);
void proc_table_free(struct proc_table *t);
/* One process's entry from root/proc/PID/stat. 0, or -ESRCH when it is gone. */
int proc_read_one(const char *root, pid_t pid, struct proc_entry *e);
/* The children of pid's main thread (root/proc/PID/task/PID/children): at most max into
 * out. How many, or -errno. */
int proc_children(const char *root, pid_t pid, pid_t *out, size_t max);
const struct proc_entry *proc_table_find(const struct proc_table *t, pid_t pid);
/* Is pid a descendant of (or equal to) ancestor? */
int proc_table_is_descendant(const struct proc_table *t, pid_t pid, pid_t ancestor);
/* Resident memory of pid and all its descendants, in bytes. */
uint64_t proc_table_tree_rss(const struct proc_table *t, pid_t pid);
/* Parse one /proc/PID/stat line into e (pid..rss, threads). 0 or -EINVAL. */
int proc_parse_stat(const char *line, long page_size, struct proc_entry *e);
/* The argv of pid, from root/proc/PID/cmdline ("" root for the live system): at most
 * max - 1 words, pointing into buf (size bytes), and argv[argc] = NULL. Returns argc, 0
 * when there is none (a kernel thread, a process gone). */
int proc_cmdline(const char *root, pid_t pid, char *buf, size_t size, char **argv, int max);
/* The path of the running executable (/proc/self/exe) into buf. 0 or -errno
 * (-ENAMETOOLONG when it does not fit). */
int proc_self_exe(char *buf, size_t size);

#endif
