/* watch's view on the alternate screen, redrawn in place (watch/screen.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch/screen.h"

#define GIB (1ULL << 30)

static void test_screen(void **state)
{
	struct watch_state w;
	struct screen s = { 0 };
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	(void)state;
	memset(&w, 0, sizeof(w));
	w.has_host = 1;
	w.host_total_bytes = 64 * GIB;
	w.host_available_bytes = 32 * GIB;
	w.psi_full_avg10 = -1;
	screen_leave(&s); /* never entered: nothing */
	screen_enter(&s, f);
	screen_view(&s, &w, 0);
	w.host_available_bytes = 31 * GIB;
	screen_view(&s, &w, 0);
	screen_leave(&s);
	screen_leave(&s); /* once only */
	fclose(f);
	/* each draw from the top, every line cleared after it, the rest below cleared: no
	 * whole-screen clear, so no flicker */
	assert_string_equal(text, "\033[?1049h\033[?25l"
				  "\033[Hhost: 32.00 GiB available of 64.00 GiB\033[K\n"
				  "no NVIDIA driver: host memory only\033[K\n\033[J"
				  "\033[Hhost: 31.00 GiB available of 64.00 GiB\033[K\n"
				  "no NVIDIA driver: host memory only\033[K\n\033[J"
				  "\033[?25h\033[?1049l");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_screen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
