/* Which compiler processes outlived their build (headroom doctor). A leftover is a
 * compiler process whose build is gone: no live build tool among its ancestors, and the
 * chain of compile steps above it (compiler drivers, `sh -c`, ccache) reparented to init
 * or a subreaper (an init that is itself such a step runs the compile: a container's
 * `sh -c "nvcc ..."`; a container's init of another kind is not known to adopt: what
 * runs below it is taken as its own). A compiler with a live build tool above it is
 * part of a running build; one that another live program runs (a shell, an editor) is
 * that program's. Neither is a leftover. Pure: takes the table and what the caller read
 * of each process. */
#ifndef HEADROOM_LEFTOVER_H
#define HEADROOM_LEFTOVER_H

#include <stddef.h>
#include <sys/types.h>

#include "sys/proc.h"

/* Is comm a compiler process that should not outlive its build (nvcc, cicc, ptxas,
 * cc1plus, ld...)? */
int leftover_is_compiler(const char *comm);

/* What a process is, as bits. */
enum {
	LEFTOVER_BUILD_TOOL = 1, /* ninja, make, cmake, python setup.py, pip, uv, headroom */
	LEFTOVER_STEP = 2,       /* between a build tool and a compiler: a compiler or its
				  * driver, `sh -c`, ccache, distcc */
	LEFTOVER_REAPER = 4,     /* adopts orphans: pid 1, or a subreaper known by name
				  * (systemd --user, tini, containerd-shim...) */
};
/* The roles of e from its comm and its argv (NULL-terminated; NULL when unknown). */
unsigned leftover_role(const struct proc_entry *e, char *const argv[]);

enum leftover_kind {
	LEFTOVER_ORPHAN, /* its build is gone: a leftover */
	LEFTOVER_BUILD,  /* a live build tool among its ancestors: part of a running build */
	LEFTOVER_HELD,   /* run by another live program: not a leftover */
};
/* Classify t->v[i]; roles[j] is leftover_role of t->v[j]. *by gets the build tool
 * highest above it (BUILD), the program that runs it (HELD) or the reaper (ORPHAN). A
 * parent missing from the table (gone while it was read) makes it HELD: a process is a
 * leftover only when that is seen. */
enum leftover_kind leftover_classify(const struct proc_table *t, const unsigned *roles, size_t i, pid_t *by);

#endif
