#!/usr/bin/env bats
# bench/gpu/gpu-edge (issue 44): its bisection finds a run's largest value exactly within the
# bound on probes, resumes from a partial output file without probing a value twice, stops
# at its budget leaving complete lines, and refuses bad input with a message. The probes
# are --fake: a value completes when it is at most LIMIT; no GPU.

load helper

EDGE="$ROOT/bench/gpu/gpu-edge"

# A cases file: a seq case with a plan near its edge, a batch case with a plan far off, and
# a case with no plan (each bisection's three kinds of start).
cases() {
	python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
model = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 1000}
cards = {"big": {"gpu": "h100-80gb", "usable_bytes": 85153070544}, "small": {"gpu": "l40s", "usable_bytes": 48098084271}}
cs = [{"name": "s", "model": model, "train": {"batch": 1}, "knob": "seq", "min": 1024, "max": 65536, "step": 256,
       "cards": ["big", "small"], "est_s": 30},
      {"name": "b", "model": model, "train": {"seq": 1024}, "knob": "batch", "min": 1, "max": 128, "step": 1,
       "cards": ["big"], "est_s": 30},
      {"name": "n", "model": model, "train": {"batch": 1}, "knob": "seq", "min": 512, "max": 8192, "step": 512,
       "cards": ["small"], "est_s": 30}]
json.dump({"cards": cards, "cases": cs}, open(t + "/cases.json", "w"))
plan = {"items": [{"case": "s", "card": "big", "solve_margin0": 20000}, {"case": "s", "card": "small", "solve": 81},
                  {"case": "b", "card": "big", "solve_margin0": 3}]}
json.dump(plan, open(t + "/plan.json", "w"))
PY
}

# Check OUT's probes against LIMIT: each item's measured largest is the largest grid value
# at most LIMIT (none below the range), within ceil(log2(range / step)) + 2 probes, no value
# probed twice.
check() {
	python3 - "$EDGE" "$T/cases.json" "$1" "$2" <<'PY'
import json, math, subprocess, sys
edge, cases, out, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = json.loads(subprocess.run([edge, "summarize", cases, out, "--json"], capture_output=True, text=True,
                                 check=True).stdout)
d = {c["name"]: c for c in json.load(open(cases))["cases"]}
probes = [json.loads(x) for x in open(out)]
assert rows, "no rows"
for r in rows:
    c = d[r["case"]]
    grid = [c["min"] + i * c["step"] for i in range((c["max"] - c["min"]) // c["step"] + 1)]
    want = max([v for v in grid if v <= limit], default=None)
    bound = math.ceil(math.log2((c["max"] - c["min"]) / c["step"])) + 2
    mine = [p["value"] for p in probes if p["case"] == r["case"] and p["card"] == r["card"]]
    assert r["done"], r
    assert r["largest"] == want, (r, want)
    assert r["probes"] <= bound, (r, bound)
    assert len(mine) == len(set(mine)), ("probed twice", r["case"], mine)
print(len(probes))
PY
}

@test "the bisection finds the fake limit exactly, within the bound, from any start" {
	cases
	for limit in 0 1 2 3 512 1023 1024 1279 1280 2000 8191 8192 19999 20000 20480 22222 40000 65535 65536 99999; do
		rm -f "$T/out.jsonl"
		run "$EDGE" run "$T/cases.json" "$T/out.jsonl" --plan "$T/plan.json" --fake "$limit"
		echo "limit $limit: $output"
		[ "$status" -eq 0 ]
		run check "$T/out.jsonl" "$limit"
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

@test "a run cut part way resumes from its output file and a --resume file, probing nothing twice" {
	cases
	"$EDGE" run "$T/cases.json" "$T/whole.jsonl" --plan "$T/plan.json" --fake 22222
	whole=$(wc -l < "$T/whole.jsonl")
	run "$EDGE" run "$T/cases.json" "$T/out.jsonl" --plan "$T/plan.json" --fake 22222 --max-probes 3
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"stopped (--max-probes 3 reached)"* ]]
	[ "$(wc -l < "$T/out.jsonl")" -eq 3 ]
	# the same file again, a few more, then a new file resuming from it
	"$EDGE" run "$T/cases.json" "$T/out.jsonl" --plan "$T/plan.json" --fake 22222 --max-probes 4
	[ "$(wc -l < "$T/out.jsonl")" -eq 7 ]
	printf '{"kind": "probe", "case": "s", "card": "big"' >> "$T/out.jsonl" # a line torn by a cut call
	run "$EDGE" run "$T/cases.json" "$T/more.jsonl" --plan "$T/plan.json" --fake 22222 --resume "$T/out.jsonl"
	echo "$output"
	[ "$status" -eq 0 ]
	head -n 7 "$T/out.jsonl" > "$T/all.jsonl"
	cat "$T/more.jsonl" >> "$T/all.jsonl"
	[ "$(wc -l < "$T/all.jsonl")" -eq "$whole" ]
	run check "$T/all.jsonl" 22222
	echo "$output"
	[ "$status" -eq 0 ]
	# all done: nothing more is probed
	run "$EDGE" run "$T/cases.json" "$T/none.jsonl" --plan "$T/plan.json" --fake 22222 --resume "$T/all.jsonl"
	[ "$status" -eq 0 ]
	[[ "$output" == *"0 probes run"* ]]
	[ ! -s "$T/none.jsonl" ]
}

@test "a budget too short for the next probe stops before it, saying what is left" {
	cases
	python3 - "$T/cases.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    c["est_s"] = 100
json.dump(d, open(sys.argv[1], "w"))
PY
	# not --fake: the budget stops the run before any probe starts (and before torch is needed)
	run "$EDGE" run "$T/cases.json" "$T/out.jsonl" --budget 50
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"stopped (budget:"* ]]
	[[ "$output" == *"4 left"* ]]
	[ ! -s "$T/out.jsonl" ]
}

@test "bad arguments and a bad cases file are refused with a message" {
	cases
	for args in "--budget 0" "--budget x" "--probe-timeout 5" "--max-probes 0" "--delta 200" "--fake -1" "--only nosuch" "--frobnicate 1"; do
		# shellcheck disable=SC2086
		run "$EDGE" run "$T/cases.json" "$T/out.jsonl" $args
		echo "$args: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == "gpu-edge: "* ]]
		[[ "$output" != *Traceback* ]]
	done
	python3 - "$T/cases.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"][1]["knob"] = "lora_rank"
json.dump(d, open(sys.argv[1], "w"))
PY
	run "$EDGE" run "$T/cases.json" "$T/out.jsonl" --fake 10
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"case 1 (b): knob 'lora_rank'"* ]]
	run "$EDGE" run "$T/nosuch.json" "$T/out.jsonl" --fake 10
	[ "$status" -eq 2 ]
	[[ "$output" == *"nosuch.json: No such file"* ]]
	run "$EDGE" frob
	[ "$status" -eq 2 ]
	[ ! -e "$T/out.jsonl" ]
}

@test "probes run in processes of their own: a result, an OOM, a crash and a hang each recorded" {
	cases
	# a stand-in for gpu-measure.py: seq up to 4608 completes, above it runs out of memory;
	# 4608 dies without a result the first time (always, with an alloc_conf), 6656 hangs
	# the first time
	cat > "$T/measure.py" <<'PY'
import json, os, sys, time
out, case = sys.argv[1], json.loads(sys.argv[2])
v, conf = case["train"]["seq"], case["train"].get("alloc_conf")
mark = os.path.join(os.path.dirname(sys.argv[0]), f"seen-{v}-{bool(conf)}")
first = not os.path.exists(mark)
open(mark, "w").close()
if v == 4608 and (first or conf):
    raise SystemExit("crashed")
if v == 6656 and first:
    time.sleep(60)
res = {"oom": None if v <= 4608 else {"step": 1, "message": "CUDA out of memory"}, "num_alloc_retries": 1,
       "max_allocated": 1 << 30, "max_reserved": 2 << 30, "gpu": os.environ["HEADROOM_EMULATE_USABLE_BYTES"],
       "torch": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "forked")}
open(out, "a").write(json.dumps(res) + "\n")
PY
	python3 - "$T/cases.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = d["cases"][2]  # seq 512..8192 by 512 on "small", no plan: it starts in the middle
n["est_s"] = 1
f = dict(n, name="f", train=dict(n["train"], alloc_conf="expandable_segments:True"))
d["cases"] = [n, f]
json.dump(d, open(sys.argv[1], "w"))
PY
	HEADROOM_EDGE_MEASURE="$T/measure.py" run "$EDGE" run "$T/cases.json" "$T/out.jsonl" --probe-timeout 10
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$T/out.jsonl" <<'PY'
import json, sys
rs = [json.loads(x) for x in open(sys.argv[1])]
got = {}
for r in rs:
    got.setdefault(r["case"], {}).setdefault(r["value"], []).append(r["outcome"])
    if r["outcome"] in ("ok", "oom"):
        assert r["torch"] == ("forked" if r["case"] == "n" else "expandable_segments:True"), r
        assert r["gpu"] == "48098084271" and r["num_alloc_retries"] == 1 and r["max_reserved"] == 2 << 30, r
print(got)
assert got["n"] == {4096: ["ok"], 4608: ["error", "ok"], 6656: ["timeout", "oom"], 5632: ["oom"], 5120: ["oom"]}, got
assert got["f"] == {4096: ["ok"], 4608: ["error", "error"]}, got
PY
	[[ "$output" == *"largest seq that completes: 4608"* ]]
	[[ "$output" == *"left unfinished"* ]]
	[ -z "$(left_over)" ]
}

@test "summarize reads a planner's --solve answers in the old shape and the two-number one" {
	cases
	"$EDGE" run "$T/cases.json" "$T/out.jsonl" --plan "$T/plan.json" --fake 22222
	# stand-in planners: today's shape (one value) and one with "surely fits" and "may fit"
	printf '#!/bin/sh\necho %s\n' "'{\"format\": \"headroom-plan/2\", \"knob\": \"seq\", \"value\": 20000}'" > "$T/old"
	printf '#!/bin/sh\necho %s\n' "'{\"knob\": \"seq\", \"surely_fits\": {\"value\": 19000}, \"may_fit\": {\"value\": 23000}}'" > "$T/new"
	chmod +x "$T/old" "$T/new"
	run "$EDGE" summarize "$T/cases.json" "$T/out.jsonl" --plan "$T/plan.json" --headroom "$T/old" --json
	echo "$output"
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys; r = json.loads(sys.argv[1])[0]; assert (r["largest"], r["planned"], r["solve_now"], r["surely"], r["may"]) == (22016, 20000, 20000, None, None), r' "$output"
	run "$EDGE" summarize "$T/cases.json" "$T/out.jsonl" --headroom "$T/new" --json
	[ "$status" -eq 0 ]
	python3 -c 'import json, sys; r = json.loads(sys.argv[1])[0]; assert (r["solve_now"], r["surely"], r["may"]) == (None, 19000, 23000), r' "$output"
	run "$EDGE" summarize "$T/cases.json" "$T/out.jsonl" --headroom "$T/new"
	[ "$status" -eq 0 ]
	[[ "$output" == *"| s | big | seq | 22016 | "*" | 19000 | 23000 |"* ]]
}
