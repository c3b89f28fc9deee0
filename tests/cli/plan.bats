#!/usr/bin/env bats
# headroom plan: the table, JSON, fits / does not fit, solving, locks, comparing, bad input.

load helper

llama1b() {
	cat > "$T/llama1b.json" <<'J'
{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
 "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": true}
J
}

@test "plan prints the components and says it fits; --json has device_peak_bytes and components" {
	llama1b
	run "$HR" plan --gpu h200 --batch 2 --seq 2048 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"activations"* ]]
	[[ "$output" == *"device peak"* ]]
	[[ "$output" == *"fits"* ]]
	run "$HR" plan --gpu h200 --batch 2 --json "$T/llama1b.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["device_peak_bytes"] == sum(o["components"].values()) and o["fits"] is True and o["params"] == 1235814400 and o["format"] == "headroom-plan/2" and all(k.endswith("_bytes") and " " not in k for k in o["components"]), o' "$output"
}

@test "plan exits 1 when the run does not fit the GPU" {
	llama1b
	run "$HR" plan --gpu 4090 --batch 16 "$T/llama1b.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"does NOT fit"* ]]
}

@test "a fixture case file plans as measured: within 10% of nvidia-smi's figure" {
	python3 - "$ROOT/tests/fixtures/gpu-train/h200-torch2.11.json" "$T/case.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cases"][5]
json.dump({"model": c["model"], "train": c["train"], "expect": c["measured"]["device_used_by_process_bytes"]}, open(sys.argv[2], "w"))
PY
	run "$HR" plan --gpu h200 --json "$T/case.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); e=json.load(open(sys.argv[2]))["expect"]; assert abs(o["device_peak_bytes"]-e)/e < 0.10, (o["device_peak_bytes"], e)' "$output" "$T/case.json"
}

@test "--solve answers the largest batch that surely fits and the largest that may; the plans' exit statuses agree; --lock refuses" {
	llama1b
	run "$HR" plan --gpu h100-80gb --seq 4096 --solve batch --json "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]   # something surely fits
	local sure may
	read -r sure may < <(python3 -c 'import json,sys; o=json.loads(sys.argv[1])
assert 1 <= o["value"] <= o["may_value"] and o["next_value"] == o["may_value"] + 1, o
assert o["plan"]["need_high_bytes"] <= o["limit_bytes"] < o["may_plan"]["need_high_bytes"], o
assert o["may_plan"]["need_low_bytes"] <= o["limit_bytes"] < o["next_need_low_bytes"], o
print(o["value"], o["may_value"])' "$output")
	[ "$may" -gt "$sure" ]   # this case has values that only may fit
	# planned one by one: surely fits (0), at risk (3) up to what may fit, then does not fit (1)
	run "$HR" plan --gpu h100-80gb --seq 4096 --batch "$sure" "$T/llama1b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *": fits, "*" to spare in any placement"* ]]
	run "$HR" plan --gpu h100-80gb --seq 4096 --batch "$((sure + 1))" "$T/llama1b.json"
	[ "$status" -eq 3 ]
	[[ "$output" == *": at risk: where blocks land decides"* ]]
	run "$HR" plan --gpu h100-80gb --seq 4096 --batch "$may" "$T/llama1b.json"
	[ "$status" -eq 3 ]
	run "$HR" plan --gpu h100-80gb --seq 4096 --batch "$((may + 1))" "$T/llama1b.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"does NOT fit, "*" short even in the best placement"* ]]
	# the text says both answers, and the first value that does not fit
	run "$HR" plan --gpu h100-80gb --seq 4096 --solve batch "$T/llama1b.json"
	[ "$status" -eq 0 ]
	[[ "${lines[4]}" == "GPU "*" GiB ("*" GiB to a process), margin "*" GiB: a run must fit in "*" GiB" ]]
	[[ "${lines[5]}" == "surely fits: batch = $sure (needs "*" to "*")" ]]
	[[ "${lines[6]}" == "may fit: batch = $may (needs "*"); $((may + 1)) needs at least "*": it does not fit" ]]
	run "$HR" plan --gpu h100-80gb --solve seq --lock seq "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"seq is locked"* ]]
	# a buffer's count, with the batch locked
	run "$HR" plan --gpu h100-80gb --batch 2 --lock batch --buffer queue=1x100M --solve buffer:queue "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[5]}" == "surely fits: buffer:queue = "* ]]
	[[ "${lines[6]}" == "may fit: buffer:queue = "*": it does not fit" ]]
	local needs=$(grep -o "at least [0-9.]* GiB\|may fit: .*(needs [0-9.]* GiB" <<< "$output" | grep -o "[0-9.]* GiB" | sort -u | wc -l)
	[ "$needs" -eq 2 ]   # what may fit and the next value need different memory
}

@test "--compare shows which component moved" {
	llama1b
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump({"model": m, "train": {"batch": 2, "seq": 2048}}, open(sys.argv[2], "w")); json.dump({"model": m, "train": {"batch": 2, "seq": 2048, "loss_chunk": 1024}}, open(sys.argv[3], "w"))' "$T/llama1b.json" "$T/a.json" "$T/b.json"
	run "$HR" plan --compare "$T/a.json" "$T/b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"logits + loss"*"-"* ]]
}

@test "bad input: missing field, unknown model, unknown GPU, bad values, no GPU and no --gpu" {
	printf '{"model_type": "llama", "hidden_size": 64}\n' > "$T/bad.json"
	run "$HR" plan --gpu h200 "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"missing num_hidden_layers"* ]]
	printf '{"model_type": "t5"}\n' > "$T/t5.json"
	run "$HR" plan --gpu h200 "$T/t5.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'t5' is not supported"* ]]
	printf 'not json' > "$T/nj.json"
	run "$HR" plan --gpu h200 "$T/nj.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"nj.json is not JSON"* ]]
	llama1b
	run "$HR" plan --gpu v100 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown --gpu 'v100'"* ]]
	run "$HR" plan --gpu h200 --batch 0 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	run "$HR" plan --gpu h200 --buffer queue=lots "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"NAME=COUNTxSIZE"* ]]
	if ! ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then
		run "$HR" plan "$T/llama1b.json"
		[ "$status" -eq 2 ]
		[[ "$output" == *"give --gpu NAME or --gpu-memory SIZE"* ]]
	fi
	run "$HR" plan --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--solve KNOB"* ]]
}

@test "probe and plan --calibrated without a GPU: a clear message, no crash" {
	if ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then skip "this machine has an NVIDIA driver"; fi
	run "$HR" probe --db "$T/p.db"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no GPU found through NVML"* ]]
	llama1b
	run "$HR" plan --calibrated --gpu h200 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--calibrated needs this machine's GPU 0"* ]]
	run "$HR" probe extra
	[ "$status" -eq 2 ]
}

@test "settings on the command line win over the case file's, even when they name the default" {
	llama1b
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump({"model": m, "train": {"param_dtype": "fp32", "batch": 4, "optimizer": "adamw", "fused": True}}, open(sys.argv[2], "w"))' "$T/llama1b.json" "$T/c.json"
	run "$HR" plan --gpu h200 --json "$T/c.json"
	local w32=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["components"]["weights_bytes"])' "$output")
	run "$HR" plan --gpu h200 --json --dtype bf16 --optimizer adamw "$T/c.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert abs(o["components"]["weights_bytes"] * 2 - int(sys.argv[2])) < 2**23 and o["components"]["optimizer_temporaries_bytes"] >= 0, o' "$output" "$w32"
	run "$HR" plan --gpu h200 --momentum 1.5 --optimizer sgd "$T/c.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--momentum wants"* ]]
}

@test "--compare between two environments: the context moves, nothing else" {
	llama1b
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump({"model": m, "train": {"batch": 2, "context_bytes": 740 << 20}}, open(sys.argv[2], "w")); json.dump({"model": m, "train": {"batch": 2, "context_bytes": 940 << 20}}, open(sys.argv[3], "w"))' "$T/llama1b.json" "$T/a.json" "$T/b.json"
	run "$HR" plan --compare --json "$T/a.json" "$T/b.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); a, b = o["a"]["components"], o["b"]["components"]; moved = {k: b[k] - a[k] for k in a if a[k] != b[k]}; assert moved == {"context_bytes": 200 << 20}, moved' "$output"
}

@test "--no-cache (use_cache=False) plans the keys and values the model would otherwise hold to the next step away" {
	# phi3 without grouped-query attention: its keys and values are as large as its queries
	cat > "$T/phi3.json" <<'J'
{"model_type": "phi3", "hidden_size": 1024, "num_hidden_layers": 16, "num_attention_heads": 16,
 "num_key_value_heads": 16, "intermediate_size": 4096, "vocab_size": 32064}
J
	# a loop that holds its output (and so the cache) into the next step, where the cache costs
	peak() { "$HR" plan --gpu h200 --batch 8 --seq 1024 --keep-outputs --json "$@" "$T/phi3.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["device_peak_bytes"])'; }
	local with without ckpt ckpt_nc
	with=$(peak) without=$(peak --no-cache) ckpt=$(peak --grad-ckpt) ckpt_nc=$(peak --grad-ckpt --no-cache)
	echo "$with $without $ckpt $ckpt_nc"
	[ "$without" -lt "$with" ]
	[ "$ckpt" -eq "$ckpt_nc" ]   # checkpointing turns the cache off anyway
	printf '{"model": %s, "train": {"batch": 8, "seq": 1024, "use_cache": false, "keep_outputs": true}}\n' "$(cat "$T/phi3.json")" > "$T/case.json"
	run "$HR" plan --gpu h200 --json "$T/case.json"
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["device_peak_bytes"] == int(sys.argv[2])' "$output" "$without"
}

@test "the usage and the errors list the GPUs and the knobs from their tables" {
	llama1b
	run "$HR" plan --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"      --gpu NAME               h200, h100-80gb, h100-94gb, a100-80gb, a100-40gb, l40s,
                               rtx-pro-6000, 4090, 3090, a10g, t4, b200, gb200, h20, l4,
                               l40, 5090, rtx-a6000, rtx-6000-ada, in any case or as
                               nvidia-smi names them (h100, a100: the 80 GB cards)
                               (default: GPU 0 by NVML)
"* ]]
	[[ "$output" == *"      --solve KNOB             the largest value of batch, seq, loss_chunk, lora_rank,
                               context or buffer:NAME (its count) that surely fits, and
                               that may
"* ]]
	run "$HR" plan --gpu nosuch "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: unknown --gpu 'nosuch' (h200, h100-80gb, h100-94gb, a100-80gb, a100-40gb, l40s, rtx-pro-6000, 4090, 3090, a10g, t4, b200, gb200, h20, l4, l40, 5090, rtx-a6000, rtx-6000-ada; or --gpu-memory SIZE)" ]
	run "$HR" plan --gpu h200 --solve nosuch "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --solve wants batch, seq, loss_chunk, lora_rank, context or buffer:NAME (a --buffer given), not 'nosuch'" ]
	run "$HR" plan --gpu h200 --lock nosuch "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --lock wants batch, seq, loss_chunk, lora_rank, context or buffer:NAME, not 'nosuch'" ]
}

# Issue 12: numbers past the planner's limits are bad input (exit 2) with a message that
# names them; before, they wrapped and planned a wrong "fits" (exit 0).
@test "overflowing flags and config fields are bad input naming the input, never a wrapped plan" {
	llama1b
	for flag in "--batch 9223372036854775807" "--dp 9223372036854775807" "--lora-rank 9223372036854775807" \
	            "--context 9223372036854775807" "--seq 99999999999" "--zero 4294967297" "--zero 4"; do
		run "$HR" plan --gpu h200 $flag "$T/llama1b.json"
		echo "$flag: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"plan: ${flag%% *} wants a whole number from "*" to "*", not '${flag#* }'"* ]]
	done
	run "$HR" plan --gpu h200 --zero 3 --dp 9223372036854775807 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	for field in 'hidden_size 9223372036854775807' 'vocab_size 1125899906842624' 'num_hidden_layers 1000000000' \
	             'num_hidden_layers 1e9' 'head_dim -4' 'num_key_value_heads 4294967304'; do
		set -- $field
		python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m[sys.argv[2]]=json.loads(sys.argv[3]); json.dump(m, open(sys.argv[4],"w"))' "$T/llama1b.json" "$1" "$2" "$T/big.json"
		run timeout 10 "$HR" plan --gpu h200 --json "$T/big.json"
		echo "$field: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"config.json: $1 must be a whole number from 1 to "* ]]
	done
	# each within its range, together too large to plan
	run "$HR" plan --gpu h200 --batch 1048576 --seq 16777216 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"the plan is too large"*"1 PiB"* ]]
	# within the limits the peak stays a plain positive number
	run "$HR" plan --gpu h200 --json --batch 4096 --seq 4096 "$T/llama1b.json"
	[ "$status" -eq 1 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert 0 < o["device_peak_bytes"] <= 2**50 and o["fits"] is False, o' "$output"
}

@test "unbounded sizes: huge buffer counts are refused at once, a tiny buffer's solve stops at its limit" {
	llama1b
	run timeout 10 "$HR" plan --gpu h200 --buffer 'q=99999999999999999999x1' "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--buffer wants NAME=COUNTxSIZE"*"COUNT from 1 to 65536"*"not 'q=99999999999999999999x1'"* ]]
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump({"model": m, "train": {"buffers": {"q": "1000000000x1"}}}, open(sys.argv[2], "w"))' "$T/llama1b.json" "$T/case.json"
	run timeout 10 "$HR" plan --gpu h200 "$T/case.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'buffers' wants NAME=COUNTxSIZE"*"COUNT from 1 to 65536"* ]]
	run timeout 60 "$HR" plan --gpu h200 --buffer q=1x1B --solve buffer:q "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[5]}" == "surely fits: buffer:q = 65536 (needs "*"), its largest" ]]
	[[ "${lines[6]}" == "may fit: buffer:q = 65536 (needs "*"), it is the largest buffer:q (the planner's limit)" ]]
	run timeout 60 "$HR" plan --gpu h200 --buffer q=1x1B --solve buffer:q --json "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["value"] == o["may_value"] == 65536 and o["next_value"] is None and o["next_need_low_bytes"] is None, o' "$output"
	# too many loss chunks to simulate in reasonable time
	run timeout 10 "$HR" plan --gpu h200 --batch 8 --seq 2048 --loss-chunk 1 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"loss_chunk makes more than 4096 chunks of batch x seq tokens"* ]]
}

@test "garbage is refused: margins, momentum, buffers, --db, and --solve loss_chunk answers batch x seq, not its search cap" {
	llama1b
	for margin in 'abc%' 'nan%' 'inf%' '%' '100%' '-1%' '5%%' 'nan' '2P'; do
		run "$HR" plan --gpu h200 --margin "$margin" "$T/llama1b.json"
		echo "$margin: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"--margin wants"*"not '$margin'"* ]]
	done
	for m in nan inf -0.1 1 1e308 0x1p-1 ''; do
		run "$HR" plan --gpu h200 --optimizer sgd --momentum "$m" "$T/llama1b.json"
		[ "$status" -eq 2 ]
		[[ "$output" == *"--momentum wants a number from 0 to below 1, not '$m'"* ]]
	done
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump({"model": m, "train": {"optimizer": "sgd", "momentum": 1e308}}, open(sys.argv[2], "w"))' "$T/llama1b.json" "$T/case.json"
	run "$HR" plan --gpu h200 "$T/case.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'momentum' wants a number from 0 to below 1"* ]]
	run "$HR" plan --gpu h200 --buffer q=x1G "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not 'q=x1G'"* ]]
	run "$HR" plan --gpu h200 --calibrated --db '' "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--db wants a path, not ''"* ]]
	# --margin 0 is no margin (it was taken as the default 4 %)
	run "$HR" plan --gpu h200 --margin 0 --json "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["margin_bytes"] == 0, o' "$output"
	run "$HR" plan --gpu h200 --batch 2 --seq 1024 --solve loss_chunk "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "${lines[5]}" == "surely fits: loss_chunk = 2048 (needs "*"), its largest" ]]
	[[ "${lines[6]}" == "may fit: loss_chunk = 2048 (needs "*"), it is the largest loss_chunk (batch x seq: the loss in one chunk)" ]]
}

# Issue 13: --gpu h100, a100, H100-80GB were refused.
@test "--gpu takes names in any case and the usual spellings, and says which card it took" {
	llama1b
	for spelling in h100 H100 H100-80GB "NVIDIA H100 80GB HBM3" h100-sxm; do
		run "$HR" plan --seq 512 --gpu "$spelling" "$T/llama1b.json"
		echo "$spelling: $output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"GPU h100-80gb: 79.65 GiB"* ]]
	done
	run "$HR" plan --batch 2 --gpu a100 "$T/llama1b.json"
	[[ "$output" == *"GPU a100-80gb: 80.00 GiB"* ]]
	run "$HR" plan --batch 2 --gpu A100-40GB "$T/llama1b.json"
	[[ "$output" == *"GPU a100-40gb: 40.00 GiB"* ]]
	run "$HR" plan --batch 2 --gpu "NVIDIA L40S" "$T/llama1b.json"
	[[ "$output" == *"GPU l40s: "* ]]
	run "$HR" plan --batch 2 --gpu V100 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown --gpu 'V100'"* ]]
}

# Issue 13: "--zero 3 without --dp and --dp 8 without --zero are accepted silently".
# Issue 45: FSDP2 over one GPU and ZeRO-Offload's single-GPU recipe plan over one rank.
@test "--zero without --dp, and --dp without --zero, are usage errors that say what to add" {
	llama1b
	run "$HR" plan --gpu h200 --zero 2 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"ZeRO shards over data-parallel ranks: add --dp N"*"over one GPU: --zero-stage 3, or --offload optimizer"* ]]
	run "$HR" plan --gpu h200 --zero 3 "$T/llama1b.json"
	[ "$status" -ne 2 ]
	[[ "$output" == *"ZeRO-3/FSDP over 1 rank"* ]]
	run "$HR" plan --gpu h200 --zero 2 --offload optimizer "$T/llama1b.json"
	[ "$status" -ne 2 ]
	[[ "$output" == *"ZeRO-2 over 1 rank"* ]]
	run "$HR" plan --gpu h200 --dp 8 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--dp wants --zero 1, 2 or 3"*"or --ddp"* ]]
	run "$HR" plan --gpu h200 --zero 0 --dp 8 --solve batch "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--dp wants --zero 1, 2 or 3"* ]]
	printf '{"model": %s, "train": {"zero_stage": 2}}\n' "$(cat "$T/llama1b.json")" > "$T/case.json"
	run "$HR" plan --gpu h200 "$T/case.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"add --dp N (\"dp\": N)"* ]]
	# both together, or --dp 1 alone, plan as before
	run "$HR" plan --gpu h200 --zero 3 --dp 8 "$T/llama1b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu h200 --dp 8 "$T/case.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu h200 --dp 1 "$T/llama1b.json"
	[ "$status" -eq 0 ]
}

# Issue 13 item 4: the output says what it assumed; the default (pure bf16) is named, and
# HF Trainer's bf16=True (fp32 weights under bf16 autocast) is --precision amp-bf16.
@test "the first lines say what was assumed: dtypes, optimizer, batch x seq, checkpointing, attention, use_cache" {
	llama1b
	run "$HR" plan --gpu h200 --batch 2 --seq 1024 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "assumed: precision bf16 (HF Trainer's bf16=True is amp-bf16: fp32 weights)" ]
	[ "${lines[1]}" = "         weights bf16, master weights none, gradients bf16, optimizer states bf16" ]
	[ "${lines[2]}" = "         optimizer adamw (foreach), batch 2 x seq 1024, no gradient checkpointing" ]
	[ "${lines[3]}" = "         attention sdpa, use_cache on (keys and values held to the next step; --no-use-cache if off)" ]
	[[ "${lines[4]}" == "llama, 1235.8M parameters"* ]]
	run "$HR" plan --gpu h200 --precision amp-bf16 --grad-ckpt --optimizer adamw-fused "$T/llama1b.json"
	echo "$output"
	[ "${lines[0]}" = "assumed: precision amp-bf16" ]
	[ "${lines[1]}" = "         weights fp32 (bf16 autocast), master weights fp32 (the weights), gradients fp32, optimizer states fp32" ]
	[ "${lines[2]}" = "         optimizer adamw-fused, batch 1 x seq 2048, gradient checkpointing" ]
	[ "${lines[3]}" = "         attention sdpa, use_cache off (checkpointing turns it off)" ]
	run "$HR" plan --gpu h200 --inference --context 4096 "$T/llama1b.json"
	echo "$output"
	[ "${lines[1]}" = "         weights bf16, inference: no gradients or optimizer states" ]
	[ "${lines[2]}" = "         batch 1 x seq 4096 (the prompt: the whole context, as no --seq gave its length), KV cache of 4096 tokens, logits of the last position (generate)" ]
	run "$HR" plan --gpu h200 --solve batch "$T/llama1b.json"
	[[ "${lines[2]}" == *"batch ? x seq 2048"* ]]
	run "$HR" plan --gpu h200 --json --precision fp32 --optimizer sgd --momentum 0.9 --lora-rank 8 "$T/llama1b.json"
	python3 -c '
import json, sys
o = json.loads(sys.argv[1])
a = o["assumed"]
assert o["format"] == "headroom-plan/2", o
want = {"precision": "fp32", "weights_dtype": "fp32", "compute_dtype": "fp32", "master_weights_dtype": "fp32",
        "gradients_dtype": "fp32", "optimizer_states_dtype": "fp32", "optimizer": "sgd", "momentum": 0.9,
        "batch": 1, "seq": 2048, "grad_ckpt": False, "attention": "sdpa", "sliding_window": None,
        "sliding_layers": 0, "use_cache": True, "keep_outputs": False, "lora_rank": 8,
        "loss_chunk": None, "inference": False, "zero_stage": 0, "dp": 1, "ddp": False,
        "reshard_after_forward": None, "freeze": [], "inputs_embeds": False,
        "alloc_conf": "expandable_segments:False", "steps": None, "grad_accum": 1}
assert a == want, a' "$output"
	# a sliding window is said, and whether the sequence reaches it
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["model_type"]="mistral"; c["sliding_window"]=1024; json.dump(c, open(sys.argv[2], "w"))' \
		"$T/llama1b.json" "$T/mistral-sw.json"
	run "$HR" plan --gpu h200 --seq 2048 "$T/mistral-sw.json"
	[[ "${lines[3]}" == "         attention sdpa, a sliding window of 1024 on 16 of 16 layers (seq reaches it: a batch x seq x seq mask a layer), use_cache on"* ]]
	run "$HR" plan --gpu h200 --seq 512 --json "$T/mistral-sw.json"
	python3 -c 'import json,sys; a=json.loads(sys.argv[1])["assumed"]; assert a["sliding_window"] == 1024 and a["sliding_layers"] == 16, a' "$output"
	run "$HR" plan --gpu h200 --seq 512 "$T/mistral-sw.json"
	[[ "${lines[3]}" == *"(seq within it: no masks)"* ]]
	run "$HR" plan --gpu h200 --json --solve seq "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["format"] == "headroom-plan/2" and o["assumed"]["seq"] is None and "weights_bytes" in o["plan"]["components"], o' "$output"
}

@test "--precision and the precision key: amp-bf16 plans as --dtype fp32 --autocast, bf16 as the default" {
	llama1b
	peak() { "$HR" plan --gpu h200 --batch 2 --json "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["device_peak_bytes"])'; }
	local amp mp bf def fp32
	amp=$(peak --precision amp-bf16 "$T/llama1b.json") mp=$(peak --dtype fp32 --autocast "$T/llama1b.json")
	bf=$(peak --precision bf16 "$T/llama1b.json") def=$(peak "$T/llama1b.json") fp32=$(peak --precision fp32 "$T/llama1b.json")
	echo "$amp $mp $bf $def $fp32"
	[ "$amp" -eq "$mp" ]
	[ "$bf" -eq "$def" ]
	[ "$amp" -gt "$bf" ]
	[ "$fp32" -ne "$amp" ]
	printf '{"model": %s, "train": {"precision": "amp-bf16"}}\n' "$(cat "$T/llama1b.json")" > "$T/case.json"
	[ "$(peak "$T/case.json")" -eq "$amp" ]
	# the command line wins over the file, in order
	[ "$(peak --precision bf16 "$T/case.json")" -eq "$def" ]
	run "$HR" plan --gpu h200 --precision amp "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--precision wants bf16, amp-bf16 (fp32 weights, bf16 autocast), fp32 or fp16, not 'amp'"* ]]
	printf '{"model": %s, "train": {"precision": "bf16", "autocast": true}}\n' "$(cat "$T/llama1b.json")" > "$T/both.json"
	run "$HR" plan --gpu h200 "$T/both.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'precision' sets dtype and autocast: give it or them, not both"* ]]
}

# Issue 13: "when nothing fits it gives no hint although one flag would fix it
# (--optimizer adamw-fused made batch 5 fit where it said 'no batch fits')".
@test "when it does not surely fit, the hint names the one change that makes it fit, cheapest first, and it does fit" {
	llama1b
	# fused AdamW (no foreach temporaries) is the cheapest change (a loop holding its output,
	# as these figures were pinned with)
	# (at risk: an answer that only may fit gets the hint too, to one that surely fits)
	run "$HR" plan --gpu-memory 12800M --margin 0 --keep-outputs --batch 1 --seq 512 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "${lines[-1]}" == "hint: with --optimizer adamw-fused it fits: needs "*" to "*", "*" to spare" ]]
	run "$HR" plan --gpu-memory 12800M --margin 0 --keep-outputs --batch 1 --seq 512 --optimizer adamw-fused "$T/llama1b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu-memory 12800M --margin 0 --keep-outputs --seq 512 --solve batch "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "${lines[-3]}" == "surely fits: no batch (placement decides from the least)" ]]
	[[ "${lines[-2]}" == "may fit: batch = 1 (needs "* ]]
	[[ "${lines[-1]}" == "hint: with --optimizer adamw-fused, batch = 2 surely fits: needs "* ]]
	run "$HR" plan --gpu-memory 12800M --margin 0 --keep-outputs --seq 512 --optimizer adamw-fused --solve batch "$T/llama1b.json"
	[ "$status" -eq 0 ]
	[[ "${lines[-2]}" == "surely fits: batch = 2 (needs "* ]]
	# a locked knob is never the change: with the loss chunk locked, checkpointing
	run "$HR" plan --gpu-memory 21500M --margin 0 --batch 2 --optimizer adamw-fused --no-cache --keep-outputs --lock loss_chunk "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == "hint: with --grad-ckpt it fits: needs "* ]]
	run "$HR" plan --gpu-memory 21500M --margin 0 --batch 2 --optimizer adamw-fused --no-cache --keep-outputs "$T/llama1b.json"
	[[ "${lines[-1]}" == "hint: with --loss-chunk 1024 it fits: needs "* ]]
	# a smaller batch: the largest that fits
	run "$HR" plan --gpu-memory 40G --margin 0 --batch 16 --grad-ckpt --optimizer adamw-fused --lock loss_chunk --json "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 1 ]
	local b=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); h=o["hint"]; assert h["change"] == "--batch %d" % h["setting"]["batch"] and "hint_together" not in o and h["need_high_bytes"] <= o["limit_bytes"], o; print(h["setting"]["batch"])' "$output")
	[ "$b" -gt 1 ]
	run "$HR" plan --gpu-memory 40G --margin 0 --batch "$b" --grad-ckpt --optimizer adamw-fused "$T/llama1b.json"
	[ "$status" -eq 0 ]
	# the next batch does not surely fit: at risk or does not fit
	run "$HR" plan --gpu-memory 40G --margin 0 --batch "$((b + 1))" --grad-ckpt --optimizer adamw-fused "$T/llama1b.json"
	[[ "$status" -eq 3 || "$status" -eq 1 ]]
	# nothing helps: said so, with what was tried; a plan that fits has no hint
	run "$HR" plan --gpu-memory 3G --margin 0 --batch 16 --json "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["hint"] is None and o["hint_tried"] == ["--alloc-conf expandable_segments:True", "--optimizer adamw-fused", "--no-use-cache", "--loss-chunk 1024", "--grad-ckpt", "--batch 1", "--lora-rank 16", "--quant nf4"], o' "$output"
	run "$HR" plan --gpu-memory 3G --margin 0 --batch 16 "$T/llama1b.json"
	[[ "${lines[-1]}" == "hint: nothing the planner can change makes it fit, not even all of --alloc-conf expandable_segments:True, --optimizer adamw-fused, --no-use-cache, --loss-chunk 1024, --grad-ckpt, --batch 1, --lora-rank 16, --quant nf4 together" ]]
	run "$HR" plan --gpu h200 --json "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["fits"] and "hint" not in o, o' "$output"
	run "$HR" plan --gpu h200 "$T/llama1b.json"
	[[ "$output" != *"hint:"* ]]
}

# Expandable segments: the plan lies between five placements' extremes (2/5 of the way
# from the plain run's peak to the highest), said in the table and in JSON; without
# them there is no range.
@test "plan with expandable segments gives the placements' range" {
	llama1b
	run "$HR" plan --gpu h200 --alloc-conf expandable_segments:True "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"expandable segments: 5 simulated placements peak at "*" to "*", the plan 2/5 of the way from the plain run's to the highest"* ]]
	run "$HR" plan --gpu h200 --json --alloc-conf expandable_segments:True "$T/llama1b.json"
	[ "$status" -eq 0 ]
	printf '%s' "$output" | python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["device_peak_range_bytes"]
assert 0 < r["low"] <= j["device_peak_bytes"] <= r["high"], j'
	run "$HR" plan --gpu h200 --json "$T/llama1b.json"
	[ "$status" -eq 0 ]
	printf '%s' "$output" | python3 -c 'import json,sys; assert json.load(sys.stdin)["device_peak_range_bytes"] is None'
	run "$HR" plan --gpu h200 "$T/llama1b.json"
	[[ "$output" != *"simulated placements"* ]]
}

# Issue 13: frozen parts, hidden-state inputs, expandable segments, full logits, DDP.
@test "issue 13's settings plan, say what was assumed, and bad values are usage errors" {
	llama1b
	run "$HR" plan --gpu h200 --freeze embed,lm_head --inputs-embeds --alloc-conf expandable_segments:True "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"frozen (no gradient or optimizer state): embed lm_head; fed hidden states (inputs_embeds)"* ]]
	[[ "$output" == *"allocator: expandable segments"* ]]
	run "$HR" plan --gpu h200 --json "$T/llama1b.json"
	whole=$(printf '%s' "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["trainable_params"])')
	run "$HR" plan --gpu h200 --json --freeze embed,lm_head "$T/llama1b.json"
	frozen=$(printf '%s' "$output" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["trainable_params"], j["assumed"]["freeze"])')
	echo "$whole / $frozen"
	[ "${frozen%% *}" -lt "$whole" ]
	[[ "$frozen" == *"['embed', 'lm_head']"* ]]
	run "$HR" plan --gpu h200 --inference --logits all --batch 8 "$T/llama1b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"logits of every position (model(input_ids))"* ]]
	run "$HR" plan --gpu h200 --ddp --dp 2 "$T/llama1b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"DDP over 2 ranks (per rank)"* ]]
	[[ "$output" == *"step 2's bucket rebuild"*"that fits too"* ]]
	# the race's extra: one more copy of the trained gradients (bf16: 2 bytes a parameter)
	run "$HR" plan --gpu h200 --json --ddp --dp 2 "$T/llama1b.json"
	printf '%s' "$output" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["ddp_rebuild_extra_bytes"] == 2 * j["trainable_params"], j'
	run "$HR" plan --gpu h200 --json "$T/llama1b.json"
	printf '%s' "$output" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["ddp_rebuild_extra_bytes"] is None'
	for bad in "--freeze embeds" "--freeze layers:3-1" "--alloc-conf expandable_segments:true" "--logits first" \
		"--ddp" "--ddp --dp 2 --zero 2" "--no-reshard --zero 2 --dp 2" "--logits all" "--freeze layers:99"; do
		run "$HR" plan --gpu h200 $bad "$T/llama1b.json"
		echo "$bad: $output"
		[ "$status" -eq 2 ]
	done
	# GPT-2 has none of the projections LoRA targets, and no adapters in its simulation
	printf '{"model": {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257}, "train": {"lora_rank": 16}}\n' > "$T/g.json"
	run "$HR" plan --gpu h200 "$T/g.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"LoRA are modelled for every family but gpt2"* ]]
	# ...so the hint does not count on it: the changes gpt2 takes are tried, and one fits
	printf '{"model_type": "gpt2", "n_embd": 1280, "n_layer": 36, "n_head": 20, "vocab_size": 50257, "n_positions": 2048}\n' > "$T/g.json"
	run "$HR" plan --gpu-memory 16G --batch 16 --seq 2048 "$T/g.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"GPU: 16.00 GiB"* ]]
	[[ "$output" == *"hint: with --batch 1 it fits"* ]]
	for kv in '"freeze": 1' '"freeze": ["head"]' '"inputs_embeds": 1' '"alloc_conf": "garbage_collection_threshold:0.6"' \
		'"logits": "some"' '"reshard_after_forward": "no"'; do
		printf '{"model": %s, "train": {%s}}\n' "$(cat "$T/llama1b.json")" "$kv" > "$T/case.json"
		run "$HR" plan --gpu h200 "$T/case.json"
		echo "$kv: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"wants"* ]]
	done
}

@test "--steps: a short run plans its own steps, a long one the allocator's settled peak" {
	llama1b
	# GPT-2 355M under autocast: the measured run's segments grew by 0.77 GiB in its
	# sixth step (bench/results/steps8b-h200.jsonl), the simulation's as much
	echo '{"model_type": "gpt2", "n_embd": 1024, "n_layer": 24, "n_head": 16, "vocab_size": 50257,
	       "n_positions": 8192}' > "$T/gpt2.json"
	peak() { "$HR" plan --gpu h200 --batch 4 --seq 1024 --precision amp-bf16 --keep-outputs --json "$@" "$T/gpt2.json" |
		python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["device_peak_bytes"], o["assumed"]["steps"])'; }
	read -r long none <<<"$(peak)"
	read -r three three_said <<<"$(peak --steps 3)"
	read -r many many_said <<<"$(peak --steps 100000)"
	echo "long $long ($none), 3 steps $three ($three_said), 100000 steps $many ($many_said)"
	[ "$none" = None ] && [ "$three_said" = 3 ] && [ "$many_said" = 100000 ]
	[ "$long" -gt $((three + (512 << 20))) ]
	[ "$many" -eq "$long" ]
	# the train file's key, and bad values
	printf '{"model": %s, "train": {"batch": 4, "seq": 1024, "precision": "amp-bf16", "steps": 3, "keep_outputs": true}}' \
		"$(cat "$T/gpt2.json")" > "$T/case.json"
	run "$HR" plan --gpu h200 --json "$T/case.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["device_peak_bytes"] == int(sys.argv[2]), o' "$output" "$three"
	for bad in 0 -1 x 1000000001; do
		run "$HR" plan --gpu h200 --steps "$bad" "$T/llama1b.json"
		[ "$status" -eq 2 ] && [[ "$output" == *"--steps wants a whole number from 1"* ]]
	done
	printf '{"model": %s, "train": {"steps": 0}}' "$(cat "$T/llama1b.json")" > "$T/case.json"
	run "$HR" plan --gpu h200 "$T/case.json"
	[ "$status" -eq 2 ] && [[ "$output" == *"'steps' wants a whole number from 1"* ]]
}

llama8b() {
	cat > "$T/llama8b.json" <<'J'
{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
 "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
 "max_position_embeddings": 131072, "tie_word_embeddings": false}
J
}

# Issue 44: near the card one simulated layout decided the verdict; now the interval does.
@test "the card's edge: the interval holds the likely layout and the plentiful peak, and where the limit falls in it is the verdict" {
	llama8b
	# 32k tokens with checkpointing on an H200: the limit falls inside the interval, so
	# where blocks land decides: at risk, exit 3, with what shrinks the risk
	run "$HR" plan --gpu h200 --seq 32768 --grad-ckpt --batch 1 --keep-outputs --json "$T/llama8b.json"
	[ "$status" -eq 3 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1])
assert o["allocated_peak_bytes"] < o["need_low_bytes"] <= o["min_device_bytes"] <= o["need_high_bytes"], o
assert o["need_low_bytes"] <= o["peak_low_bytes"] <= o["device_peak_bytes"] <= o["peak_high_bytes"], o
assert o["need_low_bytes"] < o["need_high_bytes"] <= o["need_low_bytes"] + 2 * o["largest_transient_bytes"] + o["components"]["activations_bytes"], o
assert o["limit_bytes"] == min(o["usable_bytes"], o["gpu_memory_bytes"] - o["margin_bytes"]), o
assert o["need_low_bytes"] <= o["limit_bytes"] < o["need_high_bytes"] and o["verdict"] == "at risk", o
assert o["spare_bytes"] == o["limit_bytes"] - o["need_high_bytes"] and not o["fits_with_margin"], o' "$output"
	run "$HR" plan --gpu h200 --seq 32768 --grad-ckpt --batch 1 --keep-outputs "$T/llama8b.json"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"it needs "*" to "*" (one likely layout: "*"); with plenty of memory it peaks at "*" to "* ]]
	[[ "$output" == *": at risk: where blocks land decides (up to "*" of fragmentation past the limit)"* ]]
	[[ "$output" == *"what shrinks the risk (it is in the backward): expandable segments"*"a chunked loss (--loss-chunk 1024)"*"empty_cache()"* ]]
	# at risk in the optimizer step: what shrinks that step's transients, not the loss's
	run "$HR" plan --gpu h100 --grad-ckpt --seq 2048 --margin 3% "$T/llama8b.json"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == *"what shrinks the risk (it is in the optimizer step): expandable segments"*"a fused optimizer (--optimizer adamw-fused)"*"empty_cache()"* ]]
	[[ "$output" != *"--loss-chunk 1024);"* ]]
	# a run whose live blocks alone pass the card does not fit in any placement, and says by how much
	run "$HR" plan --gpu h200 --seq 12288 --batch 1 --keep-outputs "$T/llama8b.json"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"does NOT fit, "*" short even in the best placement"* ]]
	# one whose interval is within the limit fits in any placement
	run "$HR" plan --gpu h200 --seq 4096 --grad-ckpt --batch 1 "$T/llama8b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *": fits, "*" to spare in any placement"* ]]
}

# Issue 43: "--solve context" on a training plan answered a value that changes nothing.
@test "--solve refuses a knob the plan's kind of run does not use, saying what it applies to" {
	llama1b
	run "$HR" plan --gpu h200 --solve context "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --solve context: context applies to inference (it sets the tokens of the KV cache), not to this plan's full fine-tuning; to solve it, plan inference (--inference)" ]
	run "$HR" plan --gpu h200 --inference --solve loss_chunk "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--solve loss_chunk: loss_chunk applies to full fine-tuning or LoRA training"*"not to this plan's inference; to solve it, plan training (without --inference)" ]]
	run "$HR" plan --gpu h200 --inference --solve lora_rank "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"lora_rank applies to LoRA training"*"not to this plan's inference"* ]]
	run "$HR" plan --gpu h200 --solve lora_rank "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not to this plan's full fine-tuning; to solve it, plan LoRA training (--lora-rank R, without --inference)" ]]
	run "$HR" plan --gpu h200 --lora-rank 8 --solve context "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not to this plan's LoRA training"* ]]
	# the knobs each kind of run uses are solved
	run "$HR" plan --gpu h200 --inference --context 4096 --solve batch "$T/llama1b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu h200 --lora-rank 8 --seq 512 --solve lora_rank "$T/llama1b.json"
	[ "$status" -eq 0 ]
}

# Issue 44: the answer moved below "cliffs" where one layout's peak jumped; the needs now
# grow with the knob, so no neighbour contradicts an answer.
@test "--solve has no cliffs: around both answers the needs never fall and the verdict only moves fits, at risk, does not fit" {
	llama8b
	run "$HR" plan --gpu h100 --lock batch --solve seq --grad-ckpt --lora-rank 16 --json "$T/llama8b.json"
	[ "$status" -eq 0 ]
	local sure may
	read -r sure may < <(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert 0 < o["value"] < o["may_value"], o; print(o["value"], o["may_value"])' "$output")
	# each seq planned alone, below, at and above both answers
	: > "$T/sweep"
	for v in 512 $((sure / 2)) $((sure - 100)) $((sure - 7)) $((sure - 2)) $((sure - 1)) "$sure" $((sure + 1)) $((sure + 2)) \
		 $((sure + 100)) $((may - 100)) $((may - 1)) "$may" $((may + 1)) $((may + 2)) $((may + 100)) $((may * 2)); do
		run "$HR" plan --gpu h100 --seq "$v" --grad-ckpt --lora-rank 16 --json "$T/llama8b.json"
		[[ "$status" -eq 0 || "$status" -eq 1 || "$status" -eq 3 ]]
		python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(sys.argv[2], sys.argv[3], o["need_low_bytes"], o["need_high_bytes"], o["verdict"])' "$output" "$v" "$status" >> "$T/sweep"
	done
	cat "$T/sweep"
	python3 - "$T/sweep" "$sure" "$may" <<'PY'
import sys
sure, may = int(sys.argv[2]), int(sys.argv[3])
rank = {"fits": 0, "at risk": 1, "does not fit": 2}
exits = {"fits": 0, "at risk": 3, "does not fit": 1}
last = None
for line in open(sys.argv[1]):
    v, status, low, high, verdict = line.rstrip("\n").split(" ", 4)
    v, low, high = int(v), int(low), int(high)
    assert int(status) == exits[verdict], (v, status, verdict)
    want = "fits" if v <= sure else "at risk" if v <= may else "does not fit"
    assert verdict == want, (v, verdict, want)
    if last:
        assert low >= last[0] and high >= last[1] and rank[verdict] >= rank[last[2]], (v, low, high, verdict, last)
    last = (low, high, verdict)
PY
}

# Issue 30: the settings are one table: a flag and a key, one spelling; the old
# spellings still plan the same; a mistyped value or name gets the nearest one.
@test "one spelling a setting: flags and keys agree, old spellings are aliases, typos get a suggestion" {
	llama1b
	peak() { "$HR" plan --gpu h200 --json "$@" | python3 -c 'import json,sys; o=json.load(sys.stdin); print(o["device_peak_bytes"], o["assumed"]["use_cache"], o["assumed"]["zero_stage"], o["assumed"]["optimizer"])'; }
	[ "$(peak --batch 2 --no-use-cache "$T/llama1b.json")" = "$(peak --batch 2 --no-cache "$T/llama1b.json")" ]
	[ "$(peak --zero-stage 3 --dp 4 "$T/llama1b.json")" = "$(peak --zero 3 --dp 4 "$T/llama1b.json")" ]
	[ "$(peak --zero-stage 3 --dp 4 --no-reshard-after-forward "$T/llama1b.json")" = "$(peak --zero 3 --dp 4 --no-reshard "$T/llama1b.json")" ]
	# a boolean's --no- form undoes the file's
	printf '{"model": %s, "train": {"grad_ckpt": true, "dtype": "fp32", "optimizer": "adamw-fused", "buffer": ["q=2x1G"]}}\n' "$(cat "$T/llama1b.json")" > "$T/new.json"
	printf '{"model": %s, "train": {"grad_ckpt": true, "param_dtype": "fp32", "optimizer": "adamw", "fused": true, "buffers": {"q": "2x1G"}}}\n' "$(cat "$T/llama1b.json")" > "$T/old.json"
	[ "$(peak "$T/new.json")" = "$(peak "$T/old.json")" ]
	[ "$(peak --no-grad-ckpt "$T/new.json")" = "$(peak --dtype fp32 --optimizer adamw-fused --buffer q=2x1G "$T/llama1b.json")" ]
	run "$HR" plan --gpu h200 --optimizer adamw-fuse "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --optimizer wants adamw, adamw-fused, sgd, none, adamw-8bit, paged-adamw-8bit, paged-adamw, adamw-ao-8bit, adamw-ao-4bit, adafactor or lion, not 'adamw-fuse'; did you mean adamw-fused?" ]
	run "$HR" plan --gpu h2000 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == "headroom: plan: unknown --gpu 'h2000'; did you mean h200?"* ]]
	run "$HR" plan --gpu h200 --solve bach "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not 'bach'; did you mean batch?" ]]
	run "$HR" plan --gpu h200 --lock sq "$T/llama1b.json"
	[[ "$output" == *"not 'sq'; did you mean seq?" ]]
	printf '{"model": %s, "train": {"grad_ckp": true}}\n' "$(cat "$T/llama1b.json")" > "$T/typo.json"
	run "$HR" plan --gpu h200 "$T/typo.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"settings: unknown key 'grad_ckp'; did you mean 'grad_ckpt'?" ]]
	printf '{"model": %s, "train": {"logits": "al"}}\n' "$(cat "$T/llama1b.json")" > "$T/typo.json"
	run "$HR" plan --gpu h200 "$T/typo.json"
	[[ "$output" == *"'logits' wants "*", not 'al'; did you mean all?" ]]
}

@test "every setting of the table is in --help and in the man page, with its old spellings" {
	run "$HR" plan --help
	[ "$status" -eq 0 ]
	local help="$output" man
	man=$(sed 's/\\-/-/g; s/\\f[BIR]//g' "$ROOT/docs/headroom.1")
	for key in precision dtype autocast optimizer momentum grad_ckpt use_cache keep_outputs batch seq loss_chunk loss steps buffer \
	           zero_stage dp ddp reshard_after_forward freeze inputs_embeds alloc_conf lora_rank lora_targets lora_save \
	           inference context logits context_bytes attn grad_accum quant double_quant kbit_prepare \
	           fsdp_param_dtype fsdp_reduce_dtype reduce_bucket_size overlap_comm master_weights offload; do
		flag=${key//_/-}
		[[ "$help" == *"--$flag"* || "$help" == *"--[no-]$flag"* ]] || { echo "help lacks $flag"; false; }
		[[ "$man" == *"--$flag"* || "$man" == *"--[no-]$flag"* ]] || { echo "man page lacks $flag"; false; }
		grep -q "\`$key\`" "$ROOT/docs/plan.md" || { echo "docs/plan.md lacks $key"; false; }
	done
	for alias in param_dtype fused buffers --no-cache --zero --no-reshard; do
		[[ "$help" == *"$alias"* ]] && [[ "$man" == *"$alias"* ]] || { echo "$alias"; false; }
	done
	# and no row the test does not know: the help's settings are these
	local n=$(sed -n '/^Settings:/,/^Old spellings/p' <<< "$help" | grep -c '^      --')
	[ "$n" -eq 39 ]
}

# Issue 30: "--inference --solve context on Llama-3.1 answers 492,544, its maximum is
# 131,072"; "--inference --context 131072 keeps a prefill of 2,048 tokens without saying so".
@test "lengths past max_position_embeddings: warned, refused with --strict, never solved past; the prompt is said" {
	llama8b
	run "$HR" plan --gpu h200 --seq 200000 --grad-ckpt --lora-rank 8 "$T/llama8b.json"
	[[ "$output" == *"seq 200000 is past the model's max_position_embeddings (131072): planned anyway (--strict refuses it)"* ]]
	run "$HR" plan --gpu h200 --strict --seq 200000 "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"seq 200000 is past the model's max_position_embeddings (131072): give --seq 131072 or less"* ]]
	run "$HR" plan --gpu h200 --strict --inference --context 140000 "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"context 140000 is past"* ]]
	run "$HR" plan --gpu h200 --strict --seq 131072 --grad-ckpt --lora-rank 8 "$T/llama8b.json"
	[ "$status" -ne 2 ]
	[[ "$output" != *"past the model"* ]]
	run "$HR" plan --gpu h200 --inference --solve context --json "$T/llama8b.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["value"] == o["may_value"] == 131072 and o["next_value"] is None, o' "$output"
	run "$HR" plan --gpu h200 --inference --solve context "$T/llama8b.json"
	[[ "${lines[5]}" == "surely fits: context = 131072 (needs "*"), its largest" ]]
	[[ "${lines[6]}" == "may fit: context = 131072 "*"it is the largest context (the model's max_position_embeddings)" ]]
	# --context alone: the prompt is the whole context, said; with --seq, the prompt given
	run "$HR" plan --gpu h200 --inference --context 131072 --json "$T/llama8b.json"
	python3 -c 'import json,sys; a=json.loads(sys.argv[1])["assumed"]; assert a["prompt"] == 131072 and a["prompt_from"] == "context" and a["context"] == 131072, a' "$output"
	local whole=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["device_peak_bytes"])' "$output")
	run "$HR" plan --gpu h200 --inference --context 131072 --seq 2048 --json "$T/llama8b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); a=o["assumed"]; assert a["prompt"] == 2048 and a["prompt_from"] == "seq" and o["device_peak_bytes"] < int(sys.argv[2]), o' "$output" "$whole"
	run "$HR" plan --gpu h200 --inference --context 131072 "$T/llama8b.json"
	[[ "${lines[2]}" == *"seq 131072 (the prompt: the whole context, as no --seq gave its length), KV cache of 131072 tokens"* ]]
}

# Issue 43: "an invalid max_position_embeddings (-5, "4096", 4096.0) in a model config.json
# is treated as absent: --strict passes and --solve seq has no bound".
@test "an invalid max_position_embeddings is refused, naming the key, the file and the range" {
	llama8b
	local v
	for v in -5 '"4096"' 4096.0 0 1e10; do
		sed "s/\"max_position_embeddings\": 131072/\"max_position_embeddings\": $v/" "$T/llama8b.json" > "$T/bad.json"
		grep -qF "\"max_position_embeddings\": $v" "$T/bad.json"
		run "$HR" plan --gpu h200 --strict --seq 200000 "$T/bad.json"
		echo "$v: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad.json: config.json: max_position_embeddings must be a whole number from 1 to 1073741824"* ]]
		run "$HR" plan --gpu h200 --solve seq "$T/bad.json"
		[ "$status" -eq 2 ]
		[[ "$output" == *"bad.json: config.json: max_position_embeddings must be a whole number from 1 to 1073741824"* ]]
	done
	# a multimodal config's, in its text_config
	printf '{"model_type": "gemma3", "text_config": {"hidden_size": 640, "num_hidden_layers": 4, "num_attention_heads": 4,
	 "intermediate_size": 2048, "vocab_size": 1000, "max_position_embeddings": "4096"}}' > "$T/bad.json"
	run "$HR" plan --gpu h200 --strict --seq 200000 "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.json: config.json: max_position_embeddings must be a whole number"* ]]
	sed 's/"4096"/4096/' "$T/bad.json" > "$T/good.json"
	run "$HR" plan --gpu h200 --strict --seq 8192 "$T/good.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"seq 8192 is past the model's max_position_embeddings (4096)"* ]]
	run "$HR" plan --gpu h200 --solve seq --json "$T/good.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["value"] == 4096, o' "$output"
}

# Issue 30: "the hint for a full fine-tune of an 8 B model on 80 GB offers --lora-rank 16
# (another kind of run) although --grad-ckpt with --optimizer adamw-fused fits".
@test "the hint keeps the kind of run: fewest changes together before LoRA, and they fit" {
	llama8b
	# a loop holding its output into the next step: no one change is then enough
	run "$HR" plan --gpu h100 --batch 2 --keep-outputs --json "$T/llama8b.json"
	[ "$status" -eq 3 ] || [ "$status" -eq 1 ]
	local change=$(python3 -c 'import json,sys; h=json.loads(sys.argv[1])["hint"]; assert "lora_rank" not in h["setting"] and len(h["setting"]) >= 2, h; print(h["change"])' "$output")
	echo "$change"
	run "$HR" plan --gpu h100 --batch 2 --keep-outputs $change "$T/llama8b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fits, "*" to spare in any placement"* ]]
	run "$HR" plan --gpu h100 --batch 2 --keep-outputs --grad-ckpt --optimizer adamw-fused "$T/llama8b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu h100 --batch 2 --keep-outputs "$T/llama8b.json"
	[[ "${lines[-1]}" == "hint: with $change it fits: needs "*" to spare" ]]
}

# Issue 30: read what users have: TrainingArguments JSON and axolotl YAML, as their
# documentation writes them (tests/fixtures/plan-inputs), plan as the equivalent flags.
@test "--trainer-args and --axolotl plan as the equivalent flags; unmappable and unknown keys are named" {
	local F="$ROOT/tests/fixtures/plan-inputs" M="$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"
	same() { # the plans of two command lines: byte-identical JSON
		"$HR" plan --gpu h100 --json $1 "$M" > "$T/a.json"
		"$HR" plan --gpu h100 --json $2 "$M" > "$T/b.json"
		diff "$T/a.json" "$T/b.json"
	}
	# (the config's torch_dtype is bfloat16: bf16=true is bf16 weights under autocast)
	same "--trainer-args $F/training-args.json" "--batch 4 --grad-accum 8 --grad-ckpt --dtype bf16 --autocast --optimizer adamw-fused"
	same "--axolotl $F/axolotl-lora.yml" \
	     "--seq 2048 --batch 2 --grad-accum 2 --lora-rank 16 --lora-targets all --optimizer adamw-fused --precision bf16 --grad-ckpt"
	same "--axolotl $F/axolotl-full.yml" "--seq 4096 --batch 1 --grad-accum 4 --optimizer adamw --precision bf16 --grad-ckpt"
	# the command line wins over the file
	same "--axolotl $F/axolotl-full.yml --batch 2 --no-grad-ckpt" "--seq 4096 --batch 2 --grad-accum 4 --optimizer adamw --precision bf16"
	# axolotl's documented LoRA example with its 8-bit AdamW (modelled, said so)
	same "--axolotl $F/axolotl-lora-8bit.yml" \
	     "--seq 2048 --batch 2 --grad-accum 2 --lora-rank 16 --lora-targets all --optimizer adamw-8bit --precision bf16 --grad-ckpt"
	# DeepSpeed's ZeRO-3 with its optimizer offloaded: planned on one rank, said
	run "$HR" plan --gpu h100 --trainer-args "$F/training-args-offload.json" "$M"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ZeRO-3/FSDP over 1 rank"*"offloaded to host memory, not counted: the optimizer's states"* ]]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["my_new_knob"] = 1; a["torch_compile"] = False; json.dump(a, open(sys.argv[2], "w"))' "$F/training-args.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --strict --trainer-args "$T/ta.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"TrainingArguments: 'my_new_knob' is not known to the planner"* ]]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["fsdp"] = "full_shard auto_wrap"; a["torch_compile"] = True; json.dump(a, open(sys.argv[2], "w"))' "$F/training-args.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'torch_compile' is not modelled"* ]]
	printf 'sequence_len: [1, 2\n' > "$T/bad.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/bad.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.yml: not YAML"* ]]
	printf 'sequence_len: 1000000000\n' > "$T/bad.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/bad.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'sequence_len' wants a whole number from 1 to 16777216"* ]]
	run "$HR" plan --gpu h100 --axolotl "$T/nosuch.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"nosuch.yml: cannot read it"* ]]
}

# Issue 43: "micro_batch_size: 1e999 -> headroom: plan: inf.yml: (null)"; "sequence_len: 2048
# / --- / sequence_len: 999999999 plans the first document and ignores the rest".
@test "--axolotl: a number out of range and a second document are refused, saying which and where" {
	local M="$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"
	printf 'sequence_len: 2048\nmicro_batch_size: 1e999\n' > "$T/inf.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/inf.yml" "$M"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"inf.yml: not YAML the planner reads: a number out of range (micro_batch_size: 1e999, past a double) at line 2"* ]]
	[[ "$output" != *"(null)"* ]]
	printf 'micro_batch_size: 99999999999999999999\n' > "$T/inf.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/inf.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"a number out of range (micro_batch_size: 99999999999999999999, past a 64-bit integer) at line 1"* ]]
	printf 'sequence_len: 2048\n---\nsequence_len: 999999999\n' > "$T/two.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/two.yml" "$M"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ "$output" == *"two.yml: not YAML the planner reads: expected a single document in the stream, but found another document at line 2"* ]]
	printf 'sequence_len: 2048\n...\n---\nsequence_len: 999999999\n' > "$T/two.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/two.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"found another document at line 3"* ]]
	# the JSON readers refuse such numbers too, saying which
	printf '{"per_device_train_batch_size": 1e999}' > "$T/inf.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/inf.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"inf.json: not a TrainingArguments JSON: real number overflow near '1e999'"* ]]
	printf '{"batch": 99999999999999999999}' > "$T/inf.json"
	run "$HR" plan --gpu h100 --train "$T/inf.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"inf.json is not JSON: too big integer near '99999999999999999999'"* ]]
	# one document, its start and end marked, plans as the flag
	printf -- '---\nsequence_len: 1024\n...\n' > "$T/one.yml"
	"$HR" plan --gpu h100 --json --axolotl "$T/one.yml" "$M" > "$T/a.json"
	"$HR" plan --gpu h100 --json --seq 1024 --optimizer adamw-fused "$M" > "$T/b.json"
	diff "$T/a.json" "$T/b.json"
}

# Issue 43: "plan /dev/urandom" and "plan FIFO" said "... is empty, not JSON".
@test "plan names a special file as what it is, for the config and each settings file, and does not wait on a FIFO" {
	llama1b
	mkfifo "$T/fifo"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock"
	for f in "/dev/urandom:a character device" "/dev/null:a character device" "$T/sock:a socket"; do
		run timeout 60 "$HR" plan --gpu h200 "${f%%:*}"
		[ "$status" -eq 2 ]
		[ "$output" = "headroom: plan: ${f%%:*} is ${f#*:}, not a file: give a config.json" ]
		run timeout 60 "$HR" plan --gpu h200 --trainer-args "${f%%:*}" "$T/llama1b.json"
		[ "$status" -eq 2 ]
		[ "$output" = "headroom: plan: ${f%%:*}: ${f#*:}, not a file: give a TrainingArguments JSON file" ]
		run timeout 60 "$HR" plan --gpu h200 --axolotl "${f%%:*}" "$T/llama1b.json"
		[ "$status" -eq 2 ]
		[ "$output" = "headroom: plan: ${f%%:*}: ${f#*:}, not a file: give axolotl's YAML file" ]
	done
	if [ -b /dev/loop0 ]; then
		run timeout 60 "$HR" plan --gpu h200 /dev/loop0
		[ "$output" = "headroom: plan: /dev/loop0 is a block device, not a file: give a config.json" ]
	fi
	# a FIFO no one writes to: said at once, not waited on
	run timeout 60 "$HR" plan --gpu h200 "$T/fifo"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: $T/fifo is a FIFO and nothing was written to it: give a config.json" ]
	# a pipe written to (<(...)) is read
	run "$HR" plan --gpu h200 <(cat "$T/llama1b.json")
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu h200 --trainer-args <(echo '{"per_device_train_batch_size": 2}') "$T/llama1b.json"
	[ "$status" -eq 0 ]
}

# Issue 44: the hint searches every knob not locked, the allocator and a buffer's count
# included, cheapest first.
@test "the hint: expandable segments for a run at risk, the largest count of a buffer that fits, a locked buffer never" {
	llama1b
	run "$HR" plan --gpu-memory 12800M --margin 0 --seq 512 "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "${lines[-1]}" == "hint: with --alloc-conf expandable_segments:True it fits: needs "*" to spare" ]]
	run "$HR" plan --gpu-memory 12800M --margin 0 --seq 512 --alloc-conf expandable_segments:True "$T/llama1b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu-memory 20G --margin 0 --seq 512 --optimizer adamw-fused --buffer queue=100x100MB --json "$T/llama1b.json"
	echo "$output"
	[ "$status" -eq 1 ]
	local n=$(python3 -c 'import json,sys; h=json.loads(sys.argv[1])["hint"]; q=h["setting"]["buffer"]; assert h["change"] == "--buffer " + q and q.startswith("queue=") and q.endswith("x100MB"), h; print(q[6:-6])' "$output")
	[ "$n" -gt 1 ] && [ "$n" -lt 100 ]
	run "$HR" plan --gpu-memory 20G --margin 0 --seq 512 --optimizer adamw-fused --buffer "queue=${n}x100MB" "$T/llama1b.json"
	[ "$status" -eq 0 ]
	run "$HR" plan --gpu-memory 20G --margin 0 --seq 512 --optimizer adamw-fused --buffer "queue=$((n + 1))x100MB" "$T/llama1b.json"
	[ "$status" -ne 0 ]
	run "$HR" plan --gpu-memory 20G --margin 0 --seq 512 --optimizer adamw-fused --buffer queue=100x100MB --lock buffer:queue --json "$T/llama1b.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert not any(c.startswith("--buffer") for c in o["hint_tried"]) and "buffer" not in (o["hint"] or {}).get("setting", {}), o' "$output"
}

# Issue 45: --gpu-memory 80 was 80 bytes, --margin 5 five bytes, --context-bytes and a
# --buffer's SIZE likewise; 100MB was read as MiB.
@test "plan: a size without its unit is refused, naming the option and what to write" {
	llama1b
	run "$HR" plan --gpu-memory 80 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --gpu-memory: '80' has no unit: 80 what? 80G is 80 GiB, 80GB is 80 GB" ]
	run "$HR" plan --gpu h200 --margin 5 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --margin: '5' has no unit: 5 what? 5% or 5G" ]
	run "$HR" plan --gpu h200 --context-bytes 740 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --context-bytes: '740' has no unit: 740 what? 740M is 740 MiB, 740MB is 740 MB" ]
	run "$HR" plan --gpu h200 --buffer q=50x100 "$T/llama1b.json"
	[ "$status" -eq 2 ]
	[ "$output" = "headroom: plan: --buffer: 'q=50x100': '100' has no unit: 100 what? 100M is 100 MiB, 100MB is 100 MB" ]
	# in a --train file a string size follows the rule; a number is bytes by its key's name
	printf '{"model": %s, "train": {"context_bytes": "740"}}\n' "$(cat "$T/llama1b.json")" > "$T/bare.json"
	run "$HR" plan --gpu h200 "$T/bare.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'context_bytes' wants a size with its unit"* ]]
	printf '{"model": %s, "train": {"context_bytes": 775946240}}\n' "$(cat "$T/llama1b.json")" > "$T/bytes.json"
	run "$HR" plan --gpu h200 --json "$T/bytes.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["components"]["context_bytes"] == 775946240' "$output"
	# 0 is 0 in any unit: no margin
	run "$HR" plan --gpu h200 --margin 0 "$T/llama1b.json"
	[ "$status" -eq 0 ]
}

@test "plan: MB and GB are decimal, M, G, MiB and GiB binary, in --buffer as in every size" {
	llama1b
	run "$HR" plan --gpu h200 --buffer q=50x100MB --json "$T/llama1b.json"
	[ "$status" -eq 0 ]
	# 50 x 10^8 bytes, each item rounded up to the allocator's 2 MiB: not 50 x 100 MiB
	python3 -c 'import json,sys; b=json.loads(sys.argv[1])["components"]["buffers_bytes"]; assert 5000000000 <= b < 50 * (10**8 + 2**21), b' "$output"
	run "$HR" plan --gpu h200 --buffer q=50x100MiB --json "$T/llama1b.json"
	python3 -c 'import json,sys; b=json.loads(sys.argv[1])["components"]["buffers_bytes"]; assert b == 50 * 100 * 2**20, b' "$output"
	run "$HR" plan --gpu-memory 80GB --json "$T/llama1b.json"
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["gpu_memory_bytes"] == 80 * 10**9' "$output"
	run "$HR" plan --gpu-memory 80G --json "$T/llama1b.json"
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["gpu_memory_bytes"] == 80 * 2**30' "$output"
}

# Issue 45: b200 suggested h200, 5090 4090, l4 t4: cards of other memory.
@test "plan: the cards people rent plan by name; a did-you-mean names no card of other memory" {
	llama1b
	for spelling in b200 "NVIDIA B200" gb200 h20 "H100 NVL" l4 l40 5090 "RTX A6000" "RTX 6000 Ada" "RTX PRO 6000 Max-Q"; do
		run "$HR" plan --seq 512 --gpu "$spelling" "$T/llama1b.json"
		[ "$status" -eq 0 ] || { echo "$spelling: $output"; false; }
	done
	run "$HR" plan --batch 2 --gpu b200 --json "$T/llama1b.json"
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["gpu_memory_bytes"] == 183359 * 2**20' "$output"
	# b20 is a slip from b200, and h20 is a letter away: two memories, no suggestion
	for typed in b20 b300 5080 h10; do
		run "$HR" plan --gpu "$typed" "$T/llama1b.json"
		[ "$status" -eq 2 ]
		[[ "$output" == "headroom: plan: unknown --gpu '$typed' (h200, "* ]] || { echo "$typed: $output"; false; }
		[[ "$output" != *"did you mean"* ]]
	done
	run "$HR" plan --gpu gb20 "$T/llama1b.json"
	[[ "$output" == "headroom: plan: unknown --gpu 'gb20'; did you mean gb200?"* ]]
}

# Issue 45: the 200 MB story's drafter (docs/plan.md) and the OOM message its run printed.
drafter() {
	cat > "$T/drafter.json" <<'J'
{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 5, "num_attention_heads": 32,
 "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
 "max_position_embeddings": 131072, "tie_word_embeddings": false}
J
}
DRAFTER_FLAGS=(--gpu rtx-pro-6000 --seq 32768 --lock seq --buffer queue=50x100MiB --freeze embed,lm_head --inputs-embeds)
OOM_STORY="$ROOT/tests/fixtures/plan-inputs/oom-drafter.txt"

@test "plan --oom: the story's message gives the shortfall, expandable segments and the queue's items" {
	drafter
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$OOM_STORY" "$T/drafter.json"
	echo "$output"
	[[ "$output" == *"asked 4.74 GiB, total 94.97 GiB, free 4.57 GiB, in use 90.39 GiB, allocated 85.12 GiB, reserved but unallocated 3.10 GiB"* ]]
	[[ "$output" == *"anchor: the run held at least 95.13 GiB; the plan's likely layout"* ]]
	[[ "$output" == *"anchor: short by 174.08 MiB (asked 4.74 GiB, 4.57 GiB free)"* ]]
	[[ "$output" == *"expandable segments (--alloc-conf expandable_segments:True) would recover about 3.10 GiB"* ]]
	[[ "$output" == *"anchor: dropping queue from 50 to 48 items frees 200.00 MiB"* ]]
	[[ "$output" == *"anchor: the hint's --loss-chunk 1024 needs"*"anchored"* ]]
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$OOM_STORY" --json "$T/drafter.json"
	python3 - "$output" <<'PY'
import json, sys
o = json.loads(sys.argv[1]); a = o["anchor"]; f = a["figures"]
G = 2**30
assert round(f["asked_bytes"] / G, 2) == 4.74 and round(f["free_bytes"] / G, 2) == 4.57, f
assert f["reserved_bytes"] is None and a["observed_bytes"] is None, a
assert a["short_bytes"] == f["asked_bytes"] - f["free_bytes"], a
assert a["peak_bytes"] == f["in_use_bytes"] + f["asked_bytes"] and a["peak_is_least"], a
assert a["offset_bytes"] == a["peak_bytes"] - o["min_device_bytes"] == a["peak_bytes"] - a["likely_bytes"], a
assert a["expandable_recovers_bytes"] == f["reserved_unallocated_bytes"], a
assert a["buffer"] == {"name": "queue", "from": 50, "to": 48, "frees_bytes": 200 * 2**20}, a
assert a["plan"]["anchored_need_low_bytes"] == o["need_low_bytes"] + a["offset_bytes"], a
assert a["hint"]["anchored_need_high_bytes"] == o["hint"]["need_high_bytes"] + a["offset_bytes"], a
PY
}

@test "plan --oom: - reads stdin; an older PyTorch's message plans with its figures, absent ones unknown" {
	drafter
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom - "$T/drafter.json" < "$OOM_STORY"
	[[ "$output" == *"anchor: the out-of-memory message (stdin), GPU 0:"* ]]
	[[ "$output" == *"anchor: short by 174.08 MiB"* ]]
	echo 'RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 15.90 GiB total capacity; 13.13 GiB already allocated; 415.88 MiB free; 14.80 GiB reserved in total by PyTorch)' > "$T/old.log"
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$T/old.log" --json "$T/drafter.json"
	python3 -c 'import json,sys; a=json.loads(sys.argv[1])["anchor"]; assert a["gpu"] == 1 and a["figures"]["in_use_bytes"] is None and a["peak_bytes"] is None and a["offset_bytes"] is None and a["plan"] is None and (f := a["figures"]) and a["short_bytes"] == f["asked_bytes"] - f["free_bytes"] and f["reserved_unallocated_bytes"] == f["reserved_bytes"] - f["allocated_bytes"], a' "$output"
}

@test "plan --oom: a file without the message exits 2 naming it; a directory is refused" {
	drafter
	echo "epoch 1 loss 2.31" > "$T/train.log"
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$T/train.log" "$T/drafter.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--oom $T/train.log: no PyTorch out-of-memory message in it (looked for \"CUDA out of memory."* ]]
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$T" "$T/drafter.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--oom $T is a directory, not a file"* ]]
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --oom "$T/absent.log" "$T/drafter.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot read $T/absent.log"* ]]
}

@test "plan --observed: a peak with its unit anchors the plan; without a unit it is refused" {
	drafter
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --observed 90 "$T/drafter.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--observed: '90' has no unit"* ]]
	run "$HR" plan "${DRAFTER_FLAGS[@]}" --observed 90G --json "$T/drafter.json"
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); a=o["anchor"]; assert a["observed_bytes"] == 90 * 2**30 and a["offset_bytes"] == 90 * 2**30 - o["min_device_bytes"] and not a["peak_is_least"] and a["short_bytes"] is None and a["figures"] is None, a' "$output"
}

# Issue 45: bitsandbytes' 8-bit and paged AdamW, Adafactor and Lion were not plannable;
# each is a row of the optimizers' table, modelled, said so, in --help and the docs.
@test "each modelled optimizer plans, says it is modelled, not measured; a paged one says its states" {
	local M="$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json" man help
	man=$(sed 's/\\-/-/g; s/\\f[BIR]//g' "$ROOT/docs/headroom.1")
	help=$("$HR" plan --help)
	for o in adamw-8bit paged-adamw-8bit paged-adamw adafactor lion; do
		run "$HR" plan --gpu h100 --precision amp-bf16 --seq 1024 --optimizer "$o" "$M"
		echo "$output"
		[ "$status" -ne 2 ]
		# (Adafactor, in transformers, was measured on the GPU machine; the others' libraries are not there)
		if [ "$o" = adafactor ]; then
			[[ "$output" == *"optimizer $o ("*"measured on an H100"* ]]
		else
			[[ "$output" == *"optimizer $o ("*"modelled, not measured"* ]]
		fi
		[[ "$help" == *"$o"* && "$man" == *"$o"* ]]
		grep -q "| \`$o\` |" "$ROOT/docs/plan.md"
	done
	run "$HR" plan --gpu h100 --precision amp-bf16 --seq 1024 --optimizer paged-adamw "$M"
	[[ "$output" == *"paged: "*" GiB of states in managed memory, paged out under pressure, not counted against the card"* ]]
	run "$HR" plan --gpu h100 --precision amp-bf16 --seq 1024 --optimizer adamw "$M"
	[[ "$output" != *"modelled"* && "$output" != *"paged:"* ]]
}

# Issue 45: the fused losses (Liger's, Cut Cross-Entropy) and the flash kernels' names.
@test "--loss liger and cce plan without the full logits, said as modelled; --loss-chunk beside them is refused" {
	llama8b
	"$HR" plan --gpu h200 --seq 8192 --lora-rank 16 --grad-ckpt --json "$T/llama8b.json" > "$T/plain.json"
	for loss in liger cce; do
		run "$HR" plan --gpu h200 --seq 8192 --lora-rank 16 --grad-ckpt --loss $loss "$T/llama8b.json"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"loss: "*"modelled, not measured"* ]]
		"$HR" plan --gpu h200 --seq 8192 --lora-rank 16 --grad-ckpt --loss $loss --json "$T/llama8b.json" > "$T/f.json"
		python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); f=json.load(open(sys.argv[2])); assert f["assumed"]["loss"] == sys.argv[3] and "loss" not in p["assumed"]; assert f["device_peak_bytes"] < p["device_peak_bytes"], (f["device_peak_bytes"], p["device_peak_bytes"])' "$T/plain.json" "$T/f.json" $loss
	done
	run "$HR" plan --gpu h200 --loss liger --loss-chunk 1024 "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"loss_chunk chunks the plain loss"* ]]
	run "$HR" plan --gpu h200 --loss fused "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--loss wants plain, liger or cce"* ]]
}

@test "--attn flash_attention_2 plans as sdpa, the assumption said; names not modelled are refused naming those that are" {
	llama8b
	run "$HR" plan --gpu h200 --attn flash_attention_2 "$T/llama8b.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"flash_attention_2 planned as sdpa's flash kernel: it keeps what flash-attn keeps"*"modelled, not measured"* ]]
	"$HR" plan --gpu h200 --json --attn flash_attention_2 "$T/llama8b.json" > "$T/a.json"
	"$HR" plan --gpu h200 --json --attn sdpa "$T/llama8b.json" > "$T/b.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); assert a["assumed"].pop("attn") == "flash_attention_2"; assert a == b' "$T/a.json" "$T/b.json"
	run "$HR" plan --gpu h200 --attn flex_attention "$T/llama8b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"flex_attention planned as sdpa's flash kernel, the mask taken to be causal"* ]]
	run "$HR" plan --gpu h200 --attn kernels-community/flash-attn3 "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--attn wants sdpa, default"*"flash_attention_2, flash_attention_3, flex_attention or xformers"* ]]
	run "$HR" plan --gpu h200 --attn xformers "$T/llama8b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"xformers planned as sdpa's flash kernel"*"modelled, not measured"* ]]
	run "$HR" plan --gpu h200 --attn flash_attention_2 --precision fp32 "$T/llama8b.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"flash kernels run in bf16 or fp16"* ]]
}
