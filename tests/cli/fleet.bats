#!/usr/bin/env bats
# The fleet pieces in contrib/, tested with the real tools: the alert rules with promtool,
# a real Prometheus scraping `headroom watch --prometheus` (against the NVML double), the
# systemd unit with systemd-analyze, the Grafana dashboard's queries against what watch
# exports. Debian 12: apt install prometheus (promtool comes with it), systemd.

load helper

DOUBLE="$ROOT/build/nvml-double"
RULES="$ROOT/contrib/prometheus/headroom.rules.yml"

use_double() {
	[ -e "$DOUBLE/libnvidia-ml.so.1" ] || skip "the NVML double is not built (make)"
	export LD_LIBRARY_PATH="$DOUBLE" NVML_DOUBLE_SCRIPT="$T/gpus"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The metric families a watch exports: the TYPE lines of its page, with a GPU, a process
# and host memory.
exported_families() {
	use_double
	command -v curl || skip "curl needed"
	sleep 30 & local p=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\nproc gpu=0 pid=%d used=19G\n' "$p" > "$T/gpus"
	local port
	port=$(free_port)
	"$HR" watch -q --interval 200 --duration 60 --prometheus "127.0.0.1:$port" --jsonl "$T/fam.jsonl" 2> "$T/err" &
	local w=$!
	# a slow (ASan, loaded) watch may take seconds to listen; a page after its first sample
	for i in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/metrics" > "$T/page" && grep -q '^DCGM_FI_DEV_FB_USED' "$T/page" && break; sleep 0.1; done
	kill -TERM "$w"
	wait "$w" || true
	kill "$p"
	awk '/^# TYPE / { print $3 }' "$T/page" > "$T/families"
	[ -s "$T/families" ]
}

@test "the alert rules: promtool checks them and their unit tests pass" {
	command -v promtool || skip "promtool needed (Debian: apt install prometheus)"
	run promtool check rules "$RULES"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"SUCCESS: 7 rules found"* ]]
	run promtool test rules "$ROOT/contrib/prometheus/headroom.rules.test.yml"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *SUCCESS* ]]
}

@test "the rules and the Grafana dashboard name only metrics headroom exports (and Prometheus's up)" {
	exported_families
	python3 - "$T/families" "$RULES" "$ROOT/contrib/grafana/headroom.json" <<'PY'
import json, re, sys
families = set(open(sys.argv[1]).read().split())
def metrics(expr):
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)        # strings
    expr = re.sub(r'\{[^}]*\}', '', expr)                  # label matchers
    expr = re.sub(r'\[[^\]]*\]', '', expr)                 # ranges
    expr = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)', '', expr)
    names = re.findall(r'(?<![\w$])([A-Za-z_:][A-Za-z0-9_:]*)\b(?!\s*\()', expr)
    return {n for n in names if n not in {"and", "or", "unless", "bool", "offset"}}
exprs = [l.split("expr:", 1)[1].strip() for l in open(sys.argv[2]) if l.strip().startswith("expr:")]
dash = json.load(open(sys.argv[3]))
dexprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
dexprs += [v["query"]["query"].replace("label_values(", "").split(",")[0]
           for v in dash["templating"]["list"] if v["type"] == "query"]
assert len(exprs) == 7 and len(dexprs) >= 10, (exprs, dexprs)
used = set()
for e in exprs + dexprs:
    m = metrics(e)
    assert m, e
    used |= m
unknown = used - families - {"up"}
assert not unknown, f"not exported by headroom watch: {sorted(unknown)}"
assert "up" not in set().union(*map(metrics, dexprs)), "the dashboard reads headroom's own series"
print(sorted(used))
PY
}

@test "a real Prometheus scrapes headroom watch and answers a headroom series back; the rules load" {
	command -v prometheus || skip "prometheus needed (Debian: apt install prometheus)"
	use_double
	command -v curl || skip "curl needed"
	sleep 60 & local p=$!
	printf 'gpu uuid=GPU-a bus=00000000:04:00.0 name=H200 total=80G used=20G util=50\nproc gpu=0 pid=%d used=19G\n' "$p" > "$T/gpus"
	local port pport
	port=$(free_port)
	pport=$(free_port)
	"$HR" watch -q --interval 200 --duration 60 --prometheus "127.0.0.1:$port" --jsonl "$T/o.jsonl" 2> "$T/err" &
	local w=$!
	cat > "$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: headroom
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
	prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
		--web.listen-address="127.0.0.1:$pport" --log.level=warn 2> "$T/prom.log" &
	local pr=$!
	local api="http://127.0.0.1:$pport/api/v1"
	for i in $(seq 1 150); do
		curl -sf "$api/query?query=DCGM_FI_DEV_FB_USED" > "$T/q.json" 2>/dev/null &&
			grep -q '"result":\[{' "$T/q.json" && break
		sleep 0.2
	done
	curl -sf "$api/query?query=up" > "$T/up.json"
	curl -sf "$api/rules" > "$T/rules.json"
	kill "$pr" "$w" "$p"
	wait "$pr" "$w" || true
	cat "$T/q.json" "$T/up.json"
	python3 - "$T/q.json" "$T/up.json" "$T/rules.json" <<'PY'
import json, sys
q, up, rules = (json.load(open(f)) for f in sys.argv[1:4])
r = q["data"]["result"]
assert q["status"] == "success" and len(r) == 1, q
m = r[0]["metric"]
assert r[0]["value"][1] == str(20 * 1024), r
assert m["job"] == "headroom" and m["gpu"] == "0" and m["UUID"] == "GPU-a" and m["device"] == "nvidia0", m
assert m["pci_bus_id"] == "00000000:04:00.0" and m["modelName"] == "H200" and m["Hostname"], m
assert [x["value"][1] for x in up["data"]["result"] if x["metric"]["job"] == "headroom"] == ["1"], up
g = [g for g in rules["data"]["groups"] if g["name"] == "headroom"]
assert g and len(g[0]["rules"]) == 7 and all(x["health"] != "err" for x in g[0]["rules"]), rules
PY
	# nothing left behind
	not kill -0 "$pr" 2>/dev/null
}

@test "the systemd unit verifies, and runs headroom watch with its options" {
	command -v systemd-analyze || skip "systemd-analyze needed"
	mkdir "$T/unit"
	sed "s#/usr/local/bin/headroom#$HR#" "$ROOT/contrib/systemd/headroom-watch.service" > "$T/unit/headroom-watch.service"
	run systemd-analyze verify --man=no "$T/unit/headroom-watch.service"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]   # a line it could not parse is only a warning: none at all
	grep -q "^ExecStart=$HR watch --quiet --prometheus " "$T/unit/headroom-watch.service"
}
