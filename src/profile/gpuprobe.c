#include "profile/gpuprobe.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/units.h"

/* The versions as a table: each one's name and field (version_keys: its JSON key). */
static const struct {
	const char *name;
	size_t off;
} versions[PROBE_NVERSIONS] = {
	[PROBE_TORCH] = { "torch", offsetof(struct gpu_probe, torch) },
	[PROBE_CUDA] = { "CUDA", offsetof(struct gpu_probe, cuda) },
	[PROBE_DRIVER] = { "driver", offsetof(struct gpu_probe, driver) },
};
static const char *const version_keys[PROBE_NVERSIONS] = { "torch", "cuda", "driver" };

/* The figures compared, the one plan uses first: the first known in both probes is
 * the one said. */
static const struct {
	const char *key, *name;
	size_t off;
} figures[] = {
	{ "torch_overhead_bytes", "the context (with PyTorch's workspaces)",
	  offsetof(struct gpu_probe, torch_overhead_bytes) },
	{ "context_lazy_bytes", "the CUDA context (lazy loading)", offsetof(struct gpu_probe, context_lazy_bytes) },
	{ "context_eager_bytes", "the CUDA context (eager loading)", offsetof(struct gpu_probe, context_eager_bytes) },
};
#define NFIGURES (sizeof(figures) / sizeof(figures[0]))

static const char *version_of(const struct gpu_probe *p, int v)
{
	return (const char *)p + versions[v].off;
}

static int64_t figure_of(const struct gpu_probe *p, size_t f)
{
	int64_t v;

	memcpy(&v, (const char *)p + figures[f].off, sizeof(v));
	return v;
}

void probe_init(struct gpu_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->probed_s = p->total_bytes = -1;
	p->context_lazy_bytes = p->context_eager_bytes = p->torch_overhead_bytes = -1;
}

int probe_same_gpu(const struct gpu_probe *a, const struct gpu_probe *b)
{
	if (strcmp(a->gpu, b->gpu))
		return 0;
	return !*a->uuid || !*b->uuid || !strcmp(a->uuid, b->uuid);
}

void probe_compare(const struct gpu_probe *now, const struct gpu_probe *then, struct probe_change *c)
{
	memset(c, 0, sizeof(*c));
	c->now_bytes = c->then_bytes = -1;
	c->context = PROBE_UNKNOWN;
	c->first = !then;
	for (int v = 0; v < PROBE_NVERSIONS; v++) {
		const char *a = version_of(now, v), *b = then ? version_of(then, v) : "";
		c->versions[v] = !*a || !*b ? PROBE_UNKNOWN : strcmp(a, b) ? PROBE_CHANGED : PROBE_SAME;
	}
	if (!then)
		return;
	for (size_t f = 0; f < NFIGURES && !c->figure; f++) {
		if (figure_of(now, f) < 0 || figure_of(then, f) < 0)
			continue;
		c->figure = figures[f].key;
		c->figure_name = figures[f].name;
		c->now_bytes = figure_of(now, f);
		c->then_bytes = figure_of(then, f);
		c->delta_bytes = c->now_bytes - c->then_bytes;
		c->context = (uint64_t)(c->delta_bytes < 0 ? -c->delta_bytes : c->delta_bytes) < PROBE_SAME_BYTES
				     ? PROBE_SAME : PROBE_CHANGED;
	}
	c->nothing_changed = c->context == PROBE_SAME;
	for (int v = 0; v < PROBE_NVERSIONS; v++)
		if (c->versions[v] != PROBE_SAME && (*version_of(now, v) || *version_of(then, v)))
			c->nothing_changed = 0; /* a version only one probe knows may have changed */
}

void probe_date(int64_t probed_s, char *buf, size_t len)
{
	time_t t = (time_t)probed_s;
	struct tm tm;

	if (probed_s < 0 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm))
		snprintf(buf, len, "an unknown date");
}

/* "torch A, CUDA B, driver C" of the versions p knows into sb, after said others: with
 * changed 1 those c found changed, 0 the others, -1 all. How many are said now. */
static int versions_said(struct strbuf *sb, const struct gpu_probe *p, const struct probe_change *c, int changed,
			 int said)
{
	for (int v = 0; v < PROBE_NVERSIONS; v++) {
		if (!*version_of(p, v) || (changed >= 0 && (c->versions[v] == PROBE_CHANGED) != changed))
			continue;
		strbuf_addf(sb, "%s%s %s", said++ ? ", " : "", versions[v].name, version_of(p, v));
	}
	return said;
}

void probe_said(struct strbuf *sb, const struct gpu_probe *p)
{
	char date[48];

	probe_date(p->probed_s, date, sizeof(date));
	strbuf_addf(sb, "probed %s", date);
	strbuf_add(sb, " (");
	if (!versions_said(sb, p, NULL, -1, 0))
		strbuf_add(sb, "versions unknown");
	strbuf_add(sb, ")");
}

/* "since torch A (CUDA B, driver C; probed DATE)": the versions that changed first, as
 * they were then, and the rest in the brackets. */
static void since_said(struct strbuf *sb, const struct gpu_probe *then, const struct probe_change *c)
{
	struct strbuf rest = STRBUF_INIT;
	char date[48];
	int said;

	probe_date(then->probed_s, date, sizeof(date));
	strbuf_add(sb, "since ");
	said = versions_said(sb, then, c, 1, 0);
	if (!said)
		strbuf_add(sb, "the probe");
	if (versions_said(&rest, then, c, 0, 0))
		strbuf_add(&rest, "; ");
	strbuf_addf(&rest, "probed %s", date);
	strbuf_addf(sb, " (%s)", strbuf_str(&rest));
	strbuf_release(&rest);
}

/* "; torch A -> B, driver C -> D" for the versions that changed. */
static void upgrades_said(struct strbuf *sb, const struct gpu_probe *now, const struct gpu_probe *then,
			  const struct probe_change *c)
{
	int said = 0;

	for (int v = 0; v < PROBE_NVERSIONS; v++) {
		if (c->versions[v] == PROBE_CHANGED)
			strbuf_addf(sb, "%s%s %s -> %s", said++ ? ", " : "; ", versions[v].name, version_of(then, v),
				    version_of(now, v));
		else if (c->versions[v] == PROBE_UNKNOWN && (*version_of(now, v) || *version_of(then, v)))
			strbuf_addf(sb, "%s%s %s then, %s now", said++ ? ", " : "; ", versions[v].name,
				    *version_of(then, v) ? version_of(then, v) : "unknown",
				    *version_of(now, v) ? version_of(now, v) : "unknown");
	}
}

void probe_change_text(struct strbuf *sb, const struct gpu_probe *now, const struct gpu_probe *then,
		       const struct probe_change *c)
{
	char a[32], b[32], d[32];

	if (c->first) {
		strbuf_add(sb, "the first probe of this GPU: nothing earlier to compare with");
		return;
	}
	if (!c->figure) {
		strbuf_add(sb, "no figure measured by both this probe and the last one to compare ");
		since_said(sb, then, c);
	} else {
		size_format((uint64_t)c->now_bytes, a, sizeof(a));
		size_format((uint64_t)c->then_bytes, b, sizeof(b));
		size_format((uint64_t)(c->delta_bytes < 0 ? -c->delta_bytes : c->delta_bytes), d, sizeof(d));
		if (c->nothing_changed)
			strbuf_add(sb, "nothing changed ");
		else if (c->context == PROBE_SAME)
			strbuf_addf(sb, "%s stayed the same ", c->figure_name);
		else
			strbuf_addf(sb, "%s %s %s ", c->figure_name, c->delta_bytes > 0 ? "grew" : "shrank", d);
		since_said(sb, then, c);
		strbuf_addf(sb, ": %s now, %s then", a, b);
	}
	upgrades_said(sb, now, then, c);
}

json_t *probe_change_json(const struct gpu_probe *now, const struct gpu_probe *then, const struct probe_change *c)
{
	static const char *const diff[] = { [PROBE_SAME] = "same", [PROBE_CHANGED] = "changed",
					    [PROBE_UNKNOWN] = "unknown" };
	json_t *o = json_object(), *v = json_object();
	struct strbuf sb = STRBUF_INIT;

	json_object_set_new(o, "first", json_boolean(c->first));
	json_object_set_new(o, "nothing_changed", json_boolean(c->nothing_changed));
	for (int i = 0; i < PROBE_NVERSIONS; i++)
		json_object_set_new(v, version_keys[i], json_string(diff[c->versions[i]]));
	json_object_set_new(o, "versions", v);
	json_object_set_new(o, "figure", c->figure ? json_string(c->figure) : json_null());
	json_object_set_new(o, "context", json_string(diff[c->context]));
	json_object_set_new(o, "now_bytes", c->now_bytes >= 0 ? json_integer(c->now_bytes) : json_null());
	json_object_set_new(o, "then_bytes", c->then_bytes >= 0 ? json_integer(c->then_bytes) : json_null());
	json_object_set_new(o, "delta_bytes", c->figure ? json_integer(c->delta_bytes) : json_null());
	probe_change_text(&sb, now, then, c);
	json_object_set_new(o, "text", json_string(strbuf_str(&sb)));
	strbuf_release(&sb);
	return o;
}

static json_t *known_int(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *known_str(const char *s)
{
	return *s ? json_string(s) : json_null();
}

json_t *probe_json(const struct gpu_probe *p)
{
	json_t *o = json_object();
	char date[48];

	probe_date(p->probed_s, date, sizeof(date));
	json_object_set_new(o, "gpu", json_string(p->gpu));
	json_object_set_new(o, "uuid", known_str(p->uuid));
	json_object_set_new(o, "driver", known_str(p->driver));
	json_object_set_new(o, "torch_version", known_str(p->torch));
	json_object_set_new(o, "torch_cuda", known_str(p->cuda));
	json_object_set_new(o, "probed_s", known_int(p->probed_s));
	json_object_set_new(o, "probed", p->probed_s >= 0 ? json_string(date) : json_null());
	json_object_set_new(o, "total_bytes", known_int(p->total_bytes));
	json_object_set_new(o, "context_lazy_bytes", known_int(p->context_lazy_bytes));
	json_object_set_new(o, "context_eager_bytes", known_int(p->context_eager_bytes));
	json_object_set_new(o, "torch_overhead_bytes", known_int(p->torch_overhead_bytes));
	return o;
}
