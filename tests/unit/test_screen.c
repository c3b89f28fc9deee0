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
#include "watch/view.h"

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
				  "no NVIDIA driver: host memory only\033[K\n\033[K\nno events yet (q quits)\033[K\n\033[J"
				  "\033[Hhost: 31.00 GiB available of 64.00 GiB\033[K\n"
				  "no NVIDIA driver: host memory only\033[K\n\033[K\nno events yet (q quits)\033[K\n\033[J"
				  "\033[?25h\033[?1049l");
	free(text);
}

/* The view's events: the newest first, at most VIEW_EVENTS; the log keeps the newest
 * WATCH_EVENT_LOG_MAX and counts the rest; a message's controls are shown, not sent. */
static void test_view_events(void **state)
{
	struct watch_state w;
	char *text = NULL, msg[32];
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	(void)state;
	memset(&w, 0, sizeof(w));
	w.psi_full_avg10 = -1;
	for (int i = 0; i < WATCH_EVENT_LOG_MAX + 5; i++) {
		snprintf(msg, sizeof(msg), "event %d\033[2J", i);
		watch_state_log_event(&w, EV_LOW_FREE, 0, msg);
	}
	assert_int_equal(w.nlog, WATCH_EVENT_LOG_MAX);
	assert_int_equal(w.log_dropped, 5);
	assert_string_equal(w.log[0].msg, "event 5\\x1B[2J");
	view_show(f, &w, 1);
	fclose(f);
	char newest[64];
	snprintf(newest, sizeof(newest), "low_free      event %d\\x1B[2J\n", WATCH_EVENT_LOG_MAX + 4);
	assert_non_null(strstr(text, "events, newest first (1005 in all; q quits):\n"));
	char *first = strstr(text, "low_free");
	assert_non_null(first);
	assert_non_null(strstr(first, newest));
	assert_true(strstr(first, newest) - first < 4); /* the first listed */
	size_t lines = 0;
	for (char *p = first; (p = strstr(p, "low_free")); p++)
		lines++;
	assert_int_equal(lines, VIEW_EVENTS);
	assert_null(strchr(text, '\033'));
	free(text);
	watch_state_free(&w);
	assert_null(w.log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_screen),
		cmocka_unit_test(test_view_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
