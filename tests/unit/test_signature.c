/* Job signatures: what identifies a compile job and its class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "govern/signature.h"

static void test_nvcc(void **state)
{
	char *argv[] = { "/usr/local/cuda/bin/nvcc", "-I/x/include", "-c", "csrc/flash_fwd_hdim128_sm80.cu",
			 "-o", "build/flash_fwd.o", "-O3", "-std=c++17", "--threads", "4",
			 "-gencode", "arch=compute_90,code=sm_90", "--use_fast_math", "-DNDEBUG" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(14, argv, &s);
	assert_string_equal(s.tool, "nvcc");
	assert_string_equal(s.src, "csrc/flash_fwd_hdim128_sm80.cu");
	assert_string_equal(s.flags, "-O3 --threads 4 -gencode arch=compute_90,code=sm_90");
	assert_string_equal(s.class_key, "nvcc -O3 --threads 4 -gencode arch=compute_90,code=sm_90");
	assert_string_equal(s.sig_key, "nvcc -O3 --threads 4 -gencode arch=compute_90,code=sm_90 :: csrc/flash_fwd_hdim128_sm80.cu");
	job_sig_free(&s);
}

static void test_wrapper_and_output(void **state)
{
	/* ccache is skipped; -o's value is not the source even with a source-like name */
	char *argv[] = { "ccache", "g++", "-c", "a.cpp", "-o", "b.cpp", "-g", "-O2" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(8, argv, &s);
	assert_string_equal(s.tool, "g++");
	assert_string_equal(s.src, "a.cpp");
	assert_string_equal(s.class_key, "g++ -g -O2");
	job_sig_free(&s);
}

/* A flag given twice (CFLAGS and a target's own) counts once, where it last appears: the
 * compiler takes the last; repeated -gencode pairs likewise, distinct ones all stay. */
static void test_repeated_flags(void **state)
{
	char *argv[] = { "cc", "-g", "-O2", "-g", "-c", "a.c", "-g", "-O2", "-O0", "-O2" };
	char *nv[] = { "nvcc", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
		       "-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(10, argv, &s);
	assert_string_equal(s.class_key, "cc -g -O0 -O2");
	job_sig_free(&s);
	job_sig_from_argv(9, nv, &s);
	assert_string_equal(s.flags, "-gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80");
	job_sig_free(&s);
}

static void test_same_class_other_file(void **state)
{
	char *a[] = { "nvcc", "-c", "x.cu", "-arch=sm_90" };
	char *b[] = { "nvcc", "-c", "y.cu", "-arch=sm_90" };
	char *c[] = { "nvcc", "-c", "x.cu", "-arch=sm_80" };
	struct job_sig sa, sb, sc;

	(void)state;
	job_sig_from_argv(4, a, &sa);
	job_sig_from_argv(4, b, &sb);
	job_sig_from_argv(4, c, &sc);
	assert_string_equal(sa.class_key, sb.class_key);
	assert_string_not_equal(sa.sig_key, sb.sig_key);
	assert_string_not_equal(sa.class_key, sc.class_key);
	job_sig_free(&sa);
	job_sig_free(&sb);
	job_sig_free(&sc);
}

static void test_no_source(void **state)
{
	char *argv[] = { "ld", "-o", "x", "a.o" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(4, argv, &s);
	assert_string_equal(s.tool, "ld");
	assert_string_equal(s.src, "");
	assert_string_equal(s.class_key, "ld");
	job_sig_free(&s);
}

static void test_launchers(void **state)
{
	/* distcc is seen through, and its jobs are a class of their own: they cost here only
	 * their preprocessing */
	char *d[] = { "/usr/bin/distcc", "gcc", "-O2", "-c", "a.c", "-o", "a.o" };
	char *c[] = { "ccache", "distcc", "x86_64-linux-gnu-g++-12", "-c", "a.cc" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(7, d, &s);
	assert_string_equal(s.tool, "gcc");
	assert_string_equal(s.via, "distcc");
	assert_string_equal(s.src, "a.c");
	assert_string_equal(s.class_key, "gcc -O2 via distcc");
	assert_false(s.cached);
	assert_true(s.compiler);
	job_sig_free(&s);
	job_sig_from_argv(5, c, &s);
	assert_string_equal(s.tool, "x86_64-linux-gnu-g++-12");
	assert_string_equal(s.via, "ccache distcc");
	assert_true(s.cached);
	assert_true(s.compiler);
	job_sig_free(&s);
	/* a compiler that turned out to be ccache's link (the launcher found it so): a
	 * cache in front of whatever else there was, the class unchanged */
	job_sig_from_argv(7, d, &s);
	assert_true(job_sig_is_cache("sccache") && !job_sig_is_cache("gcc"));
	job_sig_add_cache(&s, "ccache");
	assert_string_equal(s.via, "ccache distcc");
	assert_true(s.cached);
	assert_string_equal(s.class_key, "gcc -O2 via distcc");
	job_sig_free(&s);
}

static void test_kinds(void **state)
{
	char *check[] = { "/usr/bin/cc", "-o", "CMakeFiles/cmTC_1a2b.dir/testCCompiler.c.o", "-c",
			  "/b/CMakeFiles/CMakeScratch/TryCompile-x/testCCompiler.c" };
	char *abi[] = { "cc", "-c", "/usr/share/cmake-3.25/Modules/CMakeCCompilerABI.c" };
	char *step[] = { "cmake", "-E", "touch", "stamp" };
	char *memhog[] = { "memhog", "--hold", "1G" };
	char *link[] = { "clang++-15", "-o", "app", "a.o" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(5, check, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(3, abi, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(4, step, &s);
	assert_false(s.check);
	assert_false(s.compiler);
	job_sig_free(&s);
	job_sig_from_argv(3, memhog, &s);
	assert_false(s.compiler);
	assert_false(s.cached);
	job_sig_free(&s);
	job_sig_from_argv(4, link, &s);
	assert_true(s.compiler);
	assert_false(s.check);
	job_sig_free(&s);
}

static void test_version_queries(void **state)
{
	/* A build script asking the compiler who it is runs it outside any build tool: a
	 * check, not a job that escaped the launcher, whatever else the line holds (a
	 * wrapper's -ccbin, a script's path); -v is one only alone: beside a source, an
	 * object or a response file it is a verbose compile or link. */
	char *nvcc_v[] = { "/usr/local/cuda/bin/nvcc", "-V" };
	char *nvcc_version[] = { "/usr/local/cuda/bin/nvcc", "--version" };
	char *gcc_dump[] = { "gcc", "-dumpfullversion" };
	char *gcc_lib[] = { "x86_64-linux-gnu-gcc-12", "-print-file-name=libstdc++.so" };
	char *verbose[] = { "gcc", "-v", "-c", "a.c", "-o", "a.o" };
	char *conda_nvcc[] = { "nvcc", "-ccbin", "/opt/conda/bin/x86_64-conda-linux-gnu-c++", "-V" };
	char *script[] = { "bash", "/opt/conda/bin/nvcc", "--version" };
	char *rustc[] = { "rustc", "-vV" };
	char *gcc_v[] = { "gcc", "-v" };
	char *verbose_link[] = { "g++", "-v", "a.o", "-o", "app" };
	char *response[] = { "nvcc", "-v", "@args.rsp" };
	char *xcompiler[] = { "nvcc", "-Xcompiler", "-v", "-c", "k.cu" };
	struct job_sig s;

	(void)state;
	job_sig_from_argv(2, nvcc_v, &s);
	assert_true(s.check);
	assert_string_equal(job_seen_untrue(&(struct job_seen){ .check = s.check, .cache_hit = -1 }),
			    "a configure check");
	job_sig_free(&s);
	job_sig_from_argv(2, nvcc_version, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(2, gcc_dump, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(2, gcc_lib, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(6, verbose, &s);
	assert_false(s.check);
	job_sig_free(&s);
	job_sig_from_argv(4, conda_nvcc, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(3, script, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(2, rustc, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(2, gcc_v, &s);
	assert_true(s.check);
	job_sig_free(&s);
	job_sig_from_argv(5, verbose_link, &s);
	assert_false(s.check);
	job_sig_free(&s);
	job_sig_from_argv(3, response, &s);
	assert_false(s.check);
	job_sig_free(&s);
	job_sig_from_argv(5, xcompiler, &s);
	assert_false(s.check);
	job_sig_free(&s);
}

/* nvcc peaks once per -gencode pass, --threads of them at once */
static void test_peaks(void **state)
{
	(void)state;
	assert_int_equal(job_sig_peaks("nvcc -O3 -gencode arch=compute_90,code=sm_90 --threads 4"), 1);
	assert_int_equal(job_sig_peaks("nvcc -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"), 2);
	assert_int_equal(job_sig_peaks("nvcc -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "
				       "-gencode=arch=compute_100,code=sm_100 --threads 2"),
			 2);
	assert_int_equal(job_sig_peaks("nvcc -gencode a -gencode b -gencode c --threads=0"), 1);
	assert_int_equal(job_sig_peaks("nvcc -gencode a -gencode b -t 1"), 2);
	assert_int_equal(job_sig_peaks("nvcc -arch=sm_90"), 1);
	assert_int_equal(job_sig_peaks("nvcc"), 1);
	/* not nvcc: one peak, whatever the flags */
	assert_int_equal(job_sig_peaks("c++ -gencode a -gencode b"), 1);
	assert_int_equal(job_sig_peaks(""), 1);
	assert_int_equal(job_sig_peaks(NULL), 1);
	/* a count out of range is clamped, not wrapped */
	assert_int_equal(job_sig_peaks("nvcc -gencode a -gencode b --threads 99999999999999999999"), 1);
}

static void test_seen_untrue(void **state)
{
	(void)state;
	assert_null(job_seen_untrue(&(struct job_seen){ .cache_hit = -1 }));
	assert_non_null(job_seen_untrue(&(struct job_seen){ .check = 1, .cache_hit = -1 }));
	assert_non_null(job_seen_untrue(&(struct job_seen){ .partial = 1, .cache_hit = -1 }));
	assert_non_null(job_seen_untrue(&(struct job_seen){ .not_compile = 1, .cache_hit = -1 }));
	/* the cache's word first; without it, a compiler seen below the cache means a miss */
	assert_non_null(job_seen_untrue(&(struct job_seen){ .cached = 1, .cache_hit = 1, .saw_compiler = 1 }));
	assert_null(job_seen_untrue(&(struct job_seen){ .cached = 1, .cache_hit = 0 }));
	assert_null(job_seen_untrue(&(struct job_seen){ .cached = 1, .cache_hit = -1, .saw_compiler = 1 }));
	assert_non_null(job_seen_untrue(&(struct job_seen){ .cached = 1, .cache_hit = -1 }));
	/* no cache: a short job that showed no compiler is still learned */
	assert_null(job_seen_untrue(&(struct job_seen){ .cache_hit = -1 }));
}

static void test_cache_log(void **state)
{
	(void)state;
	assert_int_equal(job_cache_log_hit("# big.c\ndirect_cache_hit\nlocal_storage_hit\n"), 1);
	assert_int_equal(job_cache_log_hit("# big.c\ndirect_cache_miss\nlocal_storage_hit\npreprocessed_cache_hit\n"), 1);
	assert_int_equal(job_cache_log_hit("# big.c\ndirect_cache_miss\npreprocessed_cache_miss\ncache_miss\n"), 0);
	assert_int_equal(job_cache_log_hit("# \ncalled_for_link\n"), 0);
	assert_int_equal(job_cache_log_hit(""), -1);
	assert_int_equal(job_cache_log_hit("# a.c\n"), -1);
}

static void test_twins(void **state)
{
	(void)state;
	/* one tree built twice, or moved: the same file name */
	assert_true(job_src_twins("build-sm80/src/flash_bwd_hdim128_bf16_sm80.cu",
				  "build-sm90/src/flash_bwd_hdim128_bf16_sm80.cu"));
	assert_true(job_src_twins("/home/a/fa/csrc/k.cu", "csrc/k.cu"));
	/* the same source is its own profile, not a twin */
	assert_false(job_src_twins("src/k.cu", "src/k.cu"));
	/* alike is not the same: another token, another extension, a prefix */
	assert_false(job_src_twins("a/flash_bwd_hdim128_bf16_sm80.cu", "b/flash_bwd_hdim128_fp16_sm80.cu"));
	assert_false(job_src_twins("a/k.cu", "b/k.cpp"));
	assert_false(job_src_twins("a/k.cu", "b/xk.cu"));
	/* no source: nobody's twin */
	assert_false(job_src_twins("", ""));
	assert_false(job_src_twins("a/k.cu", ""));
	assert_false(job_src_twins(NULL, "a/k.cu"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvcc),
		cmocka_unit_test(test_peaks),
		cmocka_unit_test(test_repeated_flags),
		cmocka_unit_test(test_wrapper_and_output),
		cmocka_unit_test(test_same_class_other_file),
		cmocka_unit_test(test_no_source),
		cmocka_unit_test(test_launchers),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_version_queries),
		cmocka_unit_test(test_seen_untrue),
		cmocka_unit_test(test_cache_log),
		cmocka_unit_test(test_twins),
	};
	return cmocka_run_group_tests_name("signature", tests, NULL, NULL);
}
