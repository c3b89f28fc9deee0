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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvcc),
		cmocka_unit_test(test_wrapper_and_output),
		cmocka_unit_test(test_same_class_other_file),
		cmocka_unit_test(test_no_source),
	};
	return cmocka_run_group_tests_name("signature", tests, NULL, NULL);
}
