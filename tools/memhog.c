/* memhog: a stand-in compiler that follows a memory curve, for tests and benchmarks.
 *
 *   memhog [--cpu] -c JOBFILE -o OBJ     follow the curve in JOBFILE, then write OBJ
 *   memhog [--cpu] --hold SIZE --ms N    hold SIZE (e.g. 200M) for N milliseconds
 *
 * JOBFILE (written by bench/build/replay): a line "headroom-job/1 INTERVAL_MS", then one
 * resident-set target in bytes per interval.
 *
 * By default the milliseconds are wall time spent asleep: the job holds memory and no CPU.
 * With --cpu they are CPU time spent busy, as a compiler's are: more such jobs than CPUs
 * each take longer, so running more at once than the CPUs gains nothing. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static void **chunks;
static size_t nchunks, capchunks;
static int burn_cpu;

static void set_rss(uint64_t target)
{
	size_t want = (size_t)(target / CHUNK);

	while (nchunks < want) {
		void *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("memhog: mmap");
			exit(1);
		}
		memset(p, 0xa5, CHUNK); /* touch every page: resident, not just reserved */
		if (nchunks == capchunks) {
			capchunks = capchunks ? capchunks * 2 : 1024;
			chunks = realloc(chunks, capchunks * sizeof(*chunks));
			if (!chunks) {
				perror("memhog: realloc");
				exit(1);
			}
		}
		chunks[nchunks++] = p;
	}
	while (nchunks > want)
		munmap(chunks[--nchunks], CHUNK);
}

static long long ms_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Sleep until ms after *t0. A compiler makes progress only while it runs, so time spent
 * stopped (SIGSTOP, a frozen cgroup) moves *t0 on: the curve resumes where it paused. */
static void sleep_until(struct timespec *t0, long ms, long interval_ms)
{
	struct timespec t = *t0, now;

	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long late = ms_of(&now) - ms_of(&t);
	if (late > interval_ms) {
		t0->tv_sec += late / 1000;
		t0->tv_nsec += (late % 1000) * 1000000L;
		if (t0->tv_nsec >= 1000000000L) {
			t0->tv_sec++;
			t0->tv_nsec -= 1000000000L;
		}
	}
}

static long long cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return ms_of(&t);
}

/* Busy until this process has used ms of CPU since *cpu0. A stopped process uses none,
 * so the curve pauses where it was stopped, as it does asleep. */
static void burn_until(long long cpu0, long ms)
{
	static volatile unsigned long sink;

	while (cpu_ms() - cpu0 < ms)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i;
}

/* The curve's clock: point ms of it reached, in wall time or (--cpu) in CPU time. */
static void wait_until(struct timespec *t0, long long cpu0, long ms, long interval_ms)
{
	if (burn_cpu)
		burn_until(cpu0, ms);
	else
		sleep_until(t0, ms, interval_ms);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

static int follow(const char *jobfile, const char *obj)
{
	FILE *f = fopen(jobfile, "r");
	struct timespec t0;
	long long cpu0 = cpu_ms();
	long interval_ms, k = 0;
	unsigned long long v;

	if (!f) {
		fprintf(stderr, "memhog: %s: %s\n", jobfile, strerror(errno));
		return 1;
	}
	if (fscanf(f, "headroom-job/1 %ld", &interval_ms) != 1 || interval_ms <= 0) {
		fprintf(stderr, "memhog: %s: not a headroom-job/1 file\n", jobfile);
		fclose(f);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (fscanf(f, "%llu", &v) == 1) {
		set_rss(v);
		wait_until(&t0, cpu0, ++k * interval_ms, interval_ms);
	}
	fclose(f);
	set_rss(0);
	if (obj) {
		FILE *o = fopen(obj, "w");
		if (!o || fprintf(o, "object of %s\n", jobfile) < 0 || fclose(o)) {
			fprintf(stderr, "memhog: cannot write %s\n", obj);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *jobfile = NULL, *obj = NULL;
	uint64_t hold = 0;
	long ms = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc)
			jobfile = argv[++i];
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			obj = argv[++i];
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			hold = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
			ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--cpu"))
			burn_cpu = 1;
		else {
			fprintf(stderr, "usage: memhog [--cpu] -c JOBFILE [-o OBJ] | memhog [--cpu] --hold SIZE --ms N\n");
			return 2;
		}
	}
	if (jobfile)
		return follow(jobfile, obj);
	struct timespec t0;
	long long cpu0 = cpu_ms();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	set_rss(hold);
	for (long k = 1; k * 50 <= ms; k++)
		wait_until(&t0, cpu0, k * 50, 50);
	return 0;
}
