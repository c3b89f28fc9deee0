#!/usr/bin/env bats
# headroom probe's history: the probes kept in a store (no GPU needed to list them), a
# store of schema 5 migrated on the way, and plan --calibrated taking the newest probe of
# the GPU that the NVML test double (tests/nvml-double) shows.

load helper

DOUBLE="$ROOT/build/nvml-double"
FIXTURE="$ROOT/tests/fixtures/store/schema5.sql"

js() { # the value at a path (.a.b or .a.0.b) of the JSON on stdin; null when absent
	python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split(".")[1:]:
    v = v[int(k)] if isinstance(v, list) else v.get(k) if isinstance(v, dict) else None
print("null" if v is None else v)' "$1" || echo "(not JSON)"
}

@test "probe --history: two recorded probes of a GPU and what the context did between them" {
	sqlite3 "$T/p.db" < "$FIXTURE"
	run --separate-stderr "$HR" probe --history --db "$T/p.db"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "NVIDIA H100 80GB HBM3" ]
	[ "${lines[1]}" = "  probed 2025-11-24 16:00 UTC (driver 580.159.04)" ]
	[ "${lines[4]}" = "NVIDIA H200" ]
	[ "${lines[5]}" = "  probed 2025-11-01 12:26 UTC (torch 2.10.0+cu128, CUDA 12.8, driver 570.86.15)" ]
	[ "${lines[8]}" = "    PyTorch 2.10.0+cu128 beyond its reserved memory   546.00 MiB" ]
	[ "${lines[9]}" = "  probed 2025-12-07 09:33 UTC (torch 2.11.0+cu130, CUDA 13.0, driver 580.159.04)" ]
	[[ "${lines[13]}" == "    the context (with PyTorch's workspaces) grew 212.00 MiB since torch 2.10.0+cu128,"* ]]
	[[ "${lines[13]}" == *": 758.00 MiB now, 546.00 MiB then; torch 2.10.0+cu128 -> 2.11.0+cu130, "* ]]
	[ "${#lines[@]}" -eq 14 ]
	# the store was migrated to schema 6, nothing of schema 5 lost
	[ "$(sqlite3 "$T/p.db" 'PRAGMA user_version')" -eq 6 ]
	[ "$(sqlite3 "$T/p.db" 'SELECT count(*) FROM probes')" -eq 3 ]
	[ "$(sqlite3 "$T/p.db" 'SELECT count(*) FROM probe_runs')" -eq 3 ]
	run --separate-stderr "$HR" profiles --db "$T/p.db" --json
	[ "$(js .0.key <<<"$output")" = "cc -O2 :: a.c" ]

	run --separate-stderr "$HR" probe --history --json --db "$T/p.db"
	[ "$status" -eq 0 ]
	[ "$(js .format <<<"$output")" = "headroom-probes/1" ]
	[ "$(js .probes.0.torch_overhead_bytes <<<"$output")" = null ]
	[ "$(js .probes.0.change.first <<<"$output")" = True ]
	[ "$(js .probes.1.change.first <<<"$output")" = True ]
	[ "$(js .probes.2.change.versions.torch <<<"$output")" = changed ]
	[ "$(js .probes.2.change.delta_bytes <<<"$output")" -eq $((212 << 20)) ]
}

@test "probe --history with nothing kept says so, makes no store, and refuses what it cannot read" {
	run "$HR" probe --history --db "$T/none/p.db"
	[ "$status" -eq 0 ]
	[ "$output" = "no probe kept in $T/none/p.db: run \`headroom probe --torch\` on the GPU's machine" ]
	[ ! -e "$T/none" ]
	run --separate-stderr "$HR" probe --history --json --db "$T/none/p.db"
	[ "$status" -eq 0 ]
	[ "$(js .probes <<<"$output")" = "[]" ]
	sqlite3 "$T/app.db" "CREATE TABLE users (name TEXT); PRAGMA user_version = 42;"
	run "$HR" probe --history --db "$T/app.db"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot read the probes kept in $T/app.db: "*"not a headroom profile store"* ]]
	run "$HR" probe --history --torch
	[ "$status" -eq 2 ]
	[[ "$output" == *"--history lists the probes kept and --torch measures one: give one of them"* ]]
	run "$HR" probe --help
	[[ "$output" == *"--history"* ]]
}

@test "plan --calibrated: the newest probe of this GPU with a PyTorch figure, said in the assumed lines" {
	sqlite3 "$T/p.db" < "$FIXTURE"
	"$HR" probe --history --db "$T/p.db" >/dev/null # migrated
	# two probes of GPU-a, the newer without --torch; one of another card of its name
	sqlite3 "$T/p.db" "INSERT INTO probe_runs (gpu, uuid, driver, cuda, torch, probed_s, context_lazy_bytes,
		torch_overhead_bytes) VALUES ('H200', 'GPU-a', '580.159.04', '13.0', '2.11.0+cu130', 1765100000,
		552402944, 794820608), ('H200', 'GPU-a', '580.159.04', NULL, NULL, 1765200000, 552402944, NULL),
		('H200', 'GPU-b', '580.159.04', '13.0', '2.12.0+cu130', 1765300000, 552402944, 1048576000)"
	printf 'driver 580.159.04\ngpu uuid=GPU-a name=H200 total=140G used=1G\n' > "$T/gpus"
	export LD_LIBRARY_PATH="$DOUBLE" NVML_DOUBLE_SCRIPT="$T/gpus"
	run --separate-stderr "$HR" plan --calibrated --db "$T/p.db" --gpu h200 "$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"         context: measured by \`headroom probe --torch\`, probed 2025-12-07 09:33 UTC (torch 2.11.0+cu130, CUDA 13.0, driver 580.159.04)"* ]]
	[[ "$output" == *"CUDA context                   758.00 MiB"* ]]
	[ -z "$stderr" ]
	# a driver upgrade since: planned with it, and said
	printf 'driver 590.10\ngpu uuid=GPU-a name=H200 total=140G used=1G\n' > "$T/gpus"
	run --separate-stderr "$HR" plan --calibrated --json --db "$T/p.db" --gpu h200 "$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"
	[ "$status" -eq 0 ]
	[ "$(js .assumed.calibrated.torch_version <<<"$output")" = "2.11.0+cu130" ]
	[ "$(js .assumed.calibrated.probed_s <<<"$output")" = 1765100000 ]
	[[ "$stderr" == *"the newest probe of \"H200\" ran under driver 580.159.04, this machine has 590.10"* ]]
	# a card never probed with --torch
	printf 'gpu uuid=GPU-c name=B200 total=180G used=1G\n' > "$T/gpus"
	run "$HR" plan --calibrated --db "$T/p.db" --gpu h200 "$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no PyTorch figure measured for \"B200\" in $T/p.db: run \`headroom probe --torch\` first"* ]]
}
