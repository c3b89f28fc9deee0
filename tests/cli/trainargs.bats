#!/usr/bin/env bats
# headroom plan --trainer-args / --axolotl: the files HF Trainer (transformers 5) and
# axolotl write plan as they are; the command line wins over them.

load helper

F="$ROOT/tests/fixtures/plan-inputs"
M="$ROOT/tests/fixtures/plan-inputs/llama-3.2-1b.json"

# The plans of two command lines over config $1: byte-identical JSON (a plan, whether
# it fits or not: no exit 2).
same() {
	"$HR" plan --gpu h100 --json $2 "$1" > "$T/a.json" || [ $? -ne 2 ]
	"$HR" plan --gpu h100 --json $3 "$1" > "$T/b.json" || [ $? -ne 2 ]
	diff "$T/a.json" "$T/b.json"
}

# Issue 45: the JSON transformers 5's args.to_json_string() writes was refused for keys
# the planner did not know.
@test "a transformers 5 TrainingArguments JSON plans as it is, naming nothing unknown, as its equivalent flags" {
	run "$HR" plan --gpu h100 --trainer-args "$F/trainargs-5.x.json" "$M"
	echo "$output"
	[ "$status" -ne 2 ]
	[[ "$output" != *"not known"* ]]
	[[ "$output" != *"ignored"* ]]
	run "$HR" plan --gpu h100 --strict --trainer-args "$F/trainargs-5.x.json" "$M"
	[ "$status" -ne 2 ]
	"$HR" plan --gpu h100 --json --trainer-args "$F/trainargs-5.x.json" "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert "ignored_keys" not in a and a["keep_outputs"] is False, a' "$T/p.json"
	same "$M" "--trainer-args $F/trainargs-5.x.json" \
	     "--batch 4 --grad-accum 4 --grad-ckpt --dtype bf16 --autocast --optimizer adamw-fused --no-use-cache --no-keep-outputs"
}

@test "an unknown TrainingArguments or axolotl key is warned of, planned without and said; --strict refuses it" {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["my_new_knob"] = 1; a["other_knob"] = "x"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	run --separate-stderr "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	echo "$output"
	echo "$stderr"
	[ "$status" -ne 2 ]
	[[ "$stderr" == *"ta.json: 'my_new_knob', 'other_knob' not known to the planner: ignored (--strict refuses them)"* ]]
	[[ "$output" == *"TrainingArguments: ignored, not known to the planner: 'my_new_knob', 'other_knob'"* ]]
	"$HR" plan --gpu h100 --json --trainer-args "$T/ta.json" "$M" 2>/dev/null > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["ignored_keys"] == {"TrainingArguments": ["my_new_knob", "other_knob"]}, a' "$T/p.json"
	# ignored: the plan is the known keys' plan, but for the keys it names
	"$HR" plan --gpu h100 --json --trainer-args "$F/trainargs-5.x.json" "$M" > "$T/q.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); del a["assumed"]["ignored_keys"]; assert a == b' "$T/p.json" "$T/q.json"
	run "$HR" plan --gpu h100 --strict --trainer-args "$T/ta.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'my_new_knob', 'other_knob' are not known to the planner"*"--strict refuses"* ]]
	# axolotl's the same
	{ cat "$F/axolotl-full.yml"; echo "my_axolotl_knob: true"; } > "$T/a.yml"
	run --separate-stderr "$HR" plan --gpu h100 --axolotl "$T/a.yml" "$M"
	[ "$status" -ne 2 ]
	[[ "$stderr" == *"'my_axolotl_knob' not known to the planner: ignored (--strict refuses it)"* ]]
	[[ "$output" == *"axolotl: ignored, not known to the planner: 'my_axolotl_knob'"* ]]
	run "$HR" plan --gpu h100 --strict --axolotl "$T/a.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"axolotl: 'my_axolotl_knob' is not known to the planner"* ]]
}

@test "a flag beside a file wins over a value of the file the planner cannot map" {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["optim"] = "galore_adamw"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'optim' is galore_adamw"*"plan with --optimizer adamw"* ]]
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" --optimizer adamw "$M"
	echo "$output"
	[ "$status" -ne 2 ]
	same "$M" "--trainer-args $T/ta.json --optimizer adamw" "--trainer-args $F/trainargs-5.x.json --optimizer adamw"
	# a DeepSpeed file's path beside --zero-stage, axolotl's qlora beside --lora-rank, its
	# 8-bit optimizer beside --optimizer
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = "ds_zero2.json"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ds.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ds.json" "$M"
	[ "$status" -eq 2 ]
	same "$M" "--trainer-args $T/ds.json --zero-stage 2 --dp 8" "--trainer-args $F/trainargs-5.x.json --zero-stage 2 --dp 8"
	run "$HR" plan --gpu h100 --axolotl "$F/axolotl-lora-8bit.yml" --optimizer adamw "$M"
	echo "$output"
	[ "$status" -ne 2 ]
}

# transformers 5 loads from_pretrained in the checkpoint's dtype (dtype="auto"): bf16=true
# over a bfloat16 checkpoint is bf16 weights under autocast, not fp32 master weights.
@test "bf16=true: the weights in the config's dtype under autocast, said; the flags win" {
	local dt
	for dt in bfloat16:bf16 float32:fp32 none:fp32; do
		python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c.pop("torch_dtype", None)
if sys.argv[3] != "none": c["dtype"] = sys.argv[3]
json.dump(c, open(sys.argv[2], "w"))' "$M" "$T/c.json" "${dt%%:*}"
		"$HR" plan --gpu h100 --json --trainer-args "$F/trainargs-5.x.json" "$T/c.json" > "$T/p.json"
		python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert (a["weights_dtype"], a["compute_dtype"]) == (sys.argv[2], "bf16"), a' "$T/p.json" "${dt#*:}"
		run "$HR" plan --gpu h100 --trainer-args "$F/trainargs-5.x.json" "$T/c.json"
		echo "$output"
		[[ "$output" == *"TrainingArguments: "*"bf16=true, "*": ${dt#*:} weights under autocast (transformers 5 loads the checkpoint's dtype"* ]]
	done
	# an older config's torch_dtype, as the fixture has it; fp32 is amp-bf16
	"$HR" plan --gpu h100 --json --trainer-args "$F/trainargs-5.x.json" "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert (a["weights_dtype"], a["compute_dtype"], a["master_weights_dtype"]) == ("bf16", "bf16", "none"), a' "$T/p.json"
	same "$F/olmo2-1124-7b.json" "--trainer-args $F/trainargs-5.x.json" \
	     "--batch 4 --grad-accum 4 --grad-ckpt --precision amp-bf16 --optimizer adamw-fused --no-use-cache"
	# neither bf16 nor fp16: the config's dtype, no autocast
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["bf16"] = False; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	same "$M" "--trainer-args $T/ta.json" "--batch 4 --grad-accum 4 --grad-ckpt --precision bf16 --optimizer adamw-fused --no-use-cache"
	same "$F/olmo2-1124-7b.json" "--trainer-args $T/ta.json" \
	     "--batch 4 --grad-accum 4 --grad-ckpt --precision fp32 --optimizer adamw-fused --no-use-cache"
	# the command line wins, and the file's dtype is then not said
	same "$M" "--trainer-args $F/trainargs-5.x.json --precision amp-bf16" \
	     "--batch 4 --grad-accum 4 --grad-ckpt --precision amp-bf16 --optimizer adamw-fused --no-use-cache"
	run "$HR" plan --gpu h100 --trainer-args "$F/trainargs-5.x.json" --dtype fp32 "$M"
	[[ "$output" != *"bf16=true"* ]]
}

# The Trainer's and axolotl's loops let the step's output go as the loss is taken.
@test "files from HF Trainer and axolotl never keep the step's output; the flag does" {
	cat > "$T/case.json" <<'J'
{"model": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
 "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": true},
 "train": {"keep_outputs": true}}
J
	for file in "--trainer-args $F/trainargs-5.x.json" "--axolotl $F/axolotl-full.yml"; do
		"$HR" plan --gpu h100 --json $file "$T/case.json" > "$T/p.json"
		python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["assumed"]["keep_outputs"] is False' "$T/p.json"
		run "$HR" plan --gpu h100 $file "$T/case.json"
		[[ "$output" == *"HF Trainer's loop: the step's output let go as the loss is taken"* ]]
		"$HR" plan --gpu h100 --json $file --keep-outputs "$T/case.json" > "$T/p.json"
		python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["assumed"]["keep_outputs"] is True' "$T/p.json"
		run "$HR" plan --gpu h100 $file --keep-outputs "$T/case.json"
		[[ "$output" != *"let go as the loss"* ]]
		[[ "$output" == *"the step's output (logits, cache) kept into the next step"* ]]
	done
	# a keep_outputs key in a TrainingArguments file is no key of the Trainer's: ignored
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["keep_outputs"] = True; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	"$HR" plan --gpu h100 --json --trainer-args "$T/ta.json" "$M" 2>/dev/null > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["keep_outputs"] is False and a["ignored_keys"] == {"TrainingArguments": ["keep_outputs"]}, a' "$T/p.json"
}

# Issue 45: 8-bit, paged, factored and Lion optimizers were refused; each is a row of
# the optimizers' table now, modelled and said so.
@test "TrainingArguments' 8-bit, paged, Adafactor and Lion optimizers plan as their flags, said modelled" {
	for pair in paged_adamw_8bit:paged-adamw-8bit paged_adamw_32bit:paged-adamw adamw_bnb_8bit:adamw-8bit \
		    adamw_8bit:adamw-8bit adafactor:adafactor lion_32bit:lion; do
		python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["optim"] = sys.argv[3]; json.dump(a, open(sys.argv[2], "w"))' \
			"$F/trainargs-5.x.json" "$T/ta.json" "${pair%%:*}"
		run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
		echo "$output"
		[ "$status" -ne 2 ]
		[[ "$output" == *"optimizer ${pair##*:} ("*"modelled, not measured"* || "$output" == *"optimizer adafactor ("*"measured on an H100"* ]]
		same "$M" "--trainer-args $T/ta.json" "--trainer-args $F/trainargs-5.x.json --optimizer ${pair##*:}"
	done
	# paged states are said, and left out of the card's figures
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["optim"] = "paged_adamw_8bit"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	[[ "$output" == *"paged: "*" GiB of states in managed memory, paged out under pressure, not counted against the card"* ]]
	"$HR" plan --gpu h100 --json --trainer-args "$T/ta.json" "$M" > "$T/p.json" || [ $? -ne 2 ]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["optimizer"] == "paged-adamw-8bit" and a["paged_states_bytes"] > 2e9 and a["optimizer_states_dtype"] == "8-bit", a' "$T/p.json"
	# Lion's 8-bit and paged variants are refused, naming the row that bounds them
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["optim"] = "paged_lion_8bit"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'optim' is paged_lion_8bit"*"plan with --optimizer lion"* ]]
}

# Issue 45: use_liger_kernel, liger_fused_linear_cross_entropy and cut_cross_entropy were
# refused (exit 2); they are the fused losses, modelled.
@test "use_liger_kernel plans as --loss liger; axolotl's liger and cce keys as --loss liger and cce" {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["use_liger_kernel"] = True; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" "$M"
	echo "$output"
	[ "$status" -ne 2 ]
	[[ "$output" == *"loss: Liger's fused linear cross-entropy"*"modelled, not measured"* ]]
	same "$M" "--trainer-args $T/ta.json" "--trainer-args $F/trainargs-5.x.json --loss liger"
	# the flag wins over the file
	same "$M" "--trainer-args $T/ta.json --loss plain" "--trainer-args $F/trainargs-5.x.json"
	{ cat "$F/axolotl-full.yml"; echo "liger_fused_linear_cross_entropy: true"; } > "$T/l.yml"
	same "$M" "--axolotl $T/l.yml" "--axolotl $F/axolotl-full.yml --loss liger"
	{ cat "$F/axolotl-full.yml"; echo "cut_cross_entropy: true"; } > "$T/c.yml"
	same "$M" "--axolotl $T/c.yml" "--axolotl $F/axolotl-full.yml --loss cce"
	# both on: one file, two losses
	{ cat "$T/c.yml"; echo "liger_fused_linear_cross_entropy: true"; } > "$T/lc.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/lc.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'liger_fused_linear_cross_entropy' is a second fused loss in the file"* ]]
	# axolotl's flex_attention: planned as sdpa's flash kernel, said
	{ cat "$F/axolotl-full.yml"; echo "flex_attention: true"; } > "$T/f.yml"
	same "$M" "--axolotl $T/f.yml" "--axolotl $F/axolotl-full.yml --attn flex_attention"
}

# Issue 45: the TrainingArguments four real Trainer runs wrote (transformers 5.17's
# args.to_json_string() on the GPU machine, bench/gpu/gpu-trainer.py) beside their
# models' configs; each plans as it is, under --strict, as the flags it means.
@test "TrainingArguments written by real transformers 5.17 Trainer runs plan as they are, as their flags" {
	D="$ROOT/tests/fixtures/trainer-args-5.17"
	n=0
	while read -r name flags; do
		run "$HR" plan --gpu h100 --strict --trainer-args "$D/$name.args.json" --seq 2048 "$D/$name.config.json"
		echo "$name: $output"
		[ "$status" -ne 2 ]
		[[ "$output" != *"ignored"* ]]
		same "$D/$name.config.json" "--trainer-args $D/$name.args.json" \
		     "--dtype bf16 --autocast --optimizer adamw --no-keep-outputs --no-use-cache $flags"
		n=$((n + 1))
	done <<-LIST
	llama3.2-1b_trainer-ckpt-accum4_b4s2048 --batch 4 --grad-accum 4 --grad-ckpt --steps 2
	qwen3-1.7b_trainer_b2s2048 --batch 2 --steps 3
	qwen2.5-0.5b_trainer-accum2_b8s1024 --batch 8 --grad-accum 2 --steps 2
	llama3.2-3b_trainer-ckpt_b1s4096 --batch 1 --grad-ckpt --steps 3
	LIST
	[ "$n" -eq "$(ls "$D"/*.args.json | wc -l)" ]
}

# Issue 45: DeepSpeed's config by its path and FSDP's mixed precision plan as the
# equivalent flags.
@test "a DeepSpeed config by path and FSDP under bf16 plan as their equivalent flags" {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = "ds.json"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta.json"
	cp "$F/ds-zero2-offload.json" "$T/ds.json"
	# the relative path found beside the file; "auto" follows the file's bf16
	same "$M" "--trainer-args $T/ta.json --dp 8" \
	     "--trainer-args $F/trainargs-5.x.json --dtype bf16 --no-autocast --master-weights --zero-stage 2 --dp 8 --offload optimizer --optimizer adamw-fused --reduce-bucket-size 200000000 --overlap-comm"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" --dp 8 "$M"
	[ "$status" -ne 2 ]
	[[ "$output" == *"DeepSpeed's bf16 engine: bf16 weights, fp32 master weights and states"* ]]
	[[ "$output" == *"offloaded to host memory, not counted"* ]]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = sys.argv[3]; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta3.json" "$F/ds-zero3-bf16.json"
	same "$M" "--trainer-args $T/ta3.json --dp 8" \
	     "--trainer-args $F/trainargs-5.x.json --dtype bf16 --no-autocast --master-weights --zero-stage 3 --dp 8 --reduce-bucket-size auto --overlap-comm"
	# a path that cannot be read, and a file that is not JSON, are named
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = "nosuch.json"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/tn.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/tn.json" --dp 8 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'deepspeed' names the DeepSpeed config nosuch.json, which cannot be read"* ]]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = sys.argv[3]; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/td.json" "$T"
	run "$HR" plan --gpu h100 --trainer-args "$T/td.json" --dp 8 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"which cannot be read (a directory)"* ]]
	printf '{"zero_optimization": ' > "$T/ds.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta.json" --dp 8 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"is not a DeepSpeed JSON config"* ]]
	# FSDP under bf16 through accelerate: fp32 shards, gathered and computed in bf16
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["fsdp"] = "full_shard auto_wrap"; a["fsdp_config"] = {"fsdp_version": 2, "offload_params": True}; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/tf.json"
	same "$M" "--trainer-args $T/tf.json --dp 8" \
	     "--trainer-args $F/trainargs-5.x.json --dtype fp32 --autocast --zero-stage 3 --fsdp-param-dtype bf16 --offload optimizer,params --dp 8"
	run "$HR" plan --gpu h100 --trainer-args "$T/tf.json" --dp 8 "$M"
	[[ "$output" == *"MixedPrecisionPolicy: each layer gathered and computed in bf16, its gradients reduced in bf16 into fp32 shards"* ]]
	# axolotl's deepspeed key takes the path too
	cp "$F/ds-zero3-bf16.json" "$T/ds.json"
	printf 'base_model: x\nsequence_len: 2048\nmicro_batch_size: 1\nbf16: true\ndeepspeed: ds.json\n' > "$T/ax.yml"
	same "$M" "--axolotl $T/ax.yml --dp 4" "--seq 2048 --batch 1 --precision bf16 --master-weights --zero-stage 3 --dp 4 --reduce-bucket-size auto --overlap-comm --optimizer adamw-fused"
}

@test "bad DeepSpeed and FSDP settings are refused, naming what to do" {
	run "$HR" plan --gpu h100 --fsdp-param-dtype bf16 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"MixedPrecisionPolicy: with --zero-stage 3"* ]]
	run "$HR" plan --gpu h100 --zero-stage 3 --dp 2 --fsdp-param-dtype int4 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--fsdp-param-dtype wants none, bf16 or fp16"* ]]
	run "$HR" plan --gpu h100 --dtype fp32 --master-weights "$M"
	[ "$status" -ne 2 ]
	[[ "$output" == *"master weights: the fp32 weights are their own (no copy)"* ]]
	run "$HR" plan --gpu h100 --offload optimizer "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--offload optimizer is ZeRO's"* ]]
	run "$HR" plan --gpu h100 --zero-stage 3 --dp 2 --offload params "$M"
	[ "$status" -eq 2 ]
	run "$HR" plan --gpu h100 --reduce-bucket-size 1000 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--reduce-bucket-size is DeepSpeed ZeRO's"* ]]
	run "$HR" plan --gpu h100 --zero-stage 2 --dp 2 --reduce-bucket-size 0 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--reduce-bucket-size wants a whole number of elements from 1 to 17179869184, or auto"* ]]
	run "$HR" plan --gpu h100 --offload gpu "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--offload wants none, or a list of optimizer and params"* ]]
}

# Issue 45: axolotl's documented FSDP examples (an fsdp list with FSDP1-style keys, FSDP2's
# fsdp_version with its fsdp_config, QLoRA over FSDP) plan under --strict as their flags.
@test "axolotl's FSDP, FSDP2 and FSDP-QLoRA examples plan as their equivalent flags" {
	local f
	for f in axolotl-fsdp axolotl-fsdp2 axolotl-qlora-fsdp; do
		run "$HR" plan --gpu h100 --strict --axolotl "$F/$f.yml" --dp 8 "$M"
		echo "$output"
		[ "$status" -ne 2 ]
	done
	same "$M" "--axolotl $F/axolotl-fsdp.yml --dp 8" \
	     "--seq 4096 --batch 2 --grad-accum 4 --optimizer adamw-fused --grad-ckpt --attn flash_attention_2 --loss liger --zero-stage 3 --dtype fp32 --fsdp-param-dtype bf16 --offload optimizer,params --dp 8"
	same "$M" "--axolotl $F/axolotl-fsdp2.yml --dp 8" \
	     "--seq 2048 --batch 1 --grad-accum 2 --optimizer adamw-fused --grad-ckpt --zero-stage 3 --dtype fp32 --fsdp-param-dtype bf16 --dp 8"
	same "$M" "--axolotl $F/axolotl-qlora-fsdp.yml --dp 8" \
	     "--quant nf4 --double-quant --no-kbit-prepare --lora-rank 8 --lora-targets all --seq 512 --batch 1 --grad-accum 4 --optimizer adamw-fused --grad-ckpt --attn sdpa --zero-stage 3 --offload optimizer,params --precision bf16 --autocast --dp 8"
	# the flag wins: sharded without offload
	same "$M" "--axolotl $F/axolotl-fsdp2.yml --dp 8 --offload none --grad-accum 1" \
	     "--seq 2048 --batch 1 --optimizer adamw-fused --grad-ckpt --zero-stage 3 --dtype fp32 --fsdp-param-dtype bf16 --dp 8"
	# activation offloading is not modelled: planned with the activations kept, said; for
	# axolotl's LoRA without the checkpointing it replaces
	printf 'sequence_len: 2048\nadapter: lora\nlora_r: 8\ngradient_checkpointing: true\nactivation_offloading: true\n' > "$T/ao.yml"
	same "$M" "--axolotl $T/ao.yml" "--axolotl $T/ao.yml --no-grad-ckpt"
	run "$HR" plan --gpu h100 --axolotl "$T/ao.yml" "$M"
	[ "$status" -eq 0 ]
	[[ "$output" == *"activation offloading (true) not modelled: the saved activations planned kept on the GPU with no checkpointing, which it replaces for LoRA, a bound from above"* ]]
	# the flag wins
	run "$HR" plan --gpu h100 --axolotl "$T/ao.yml" --grad-ckpt "$M"
	[ "$status" -eq 0 ]
	[[ "$output" == *", gradient checkpointing"* && "$output" != *"no gradient checkpointing"* ]]
	[[ "$output" == *"activation offloading (true) not modelled: the saved activations planned kept on the GPU, a bound from above"* ]]
}

# What a flag beside a file changes is decided once the flags are in: the tools' own
# rules (FSDP's upcast, DeepSpeed's buckets) read the settings as they end up.
@test "FSDP's upcast and DeepSpeed's buckets follow the flags beside the file" {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["fsdp"] = "full_shard auto_wrap"; a["fsdp_config"] = {"fsdp_version": 2}; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/tf.json"
	# LoRA from the command line: the frozen base is not upcast
	"$HR" plan --gpu h100 --json --trainer-args "$T/tf.json" --dp 8 --lora-rank 16 "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert (a["weights_dtype"], a["fsdp_param_dtype"]) == ("bf16", "bf16"), a' "$T/p.json"
	# the file's own stage given again changes nothing
	same "$M" "--trainer-args $T/tf.json --dp 8" "--trainer-args $T/tf.json --dp 8 --zero-stage 3"
	# offload read beside a --zero-stage flag
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["fsdp"] = "full_shard offload auto_wrap"; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/to.json"
	"$HR" plan --gpu h100 --json --trainer-args "$T/to.json" --dp 8 --zero-stage 3 "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["offload"] == ["optimizer", "params"], a' "$T/p.json"
	# a dtype flag beside DeepSpeed's bf16 engine plans: fp32 weights are their own masters
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = sys.argv[3]; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/ta3.json" "$F/ds-zero3-bf16.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/ta3.json" --dp 8 --precision amp-bf16 "$M"
	[ "$status" -ne 2 ]
	[[ "$output" == *"master weights: the fp32 weights are their own"* ]]
	# a stage-3 file without overlap_comm at --zero-stage 2: one bucket, DeepSpeed's stage-2
	# default; its overlap_comm where it gives it
	printf '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}\n' > "$T/d3.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a["deepspeed"] = sys.argv[3]; json.dump(a, open(sys.argv[2], "w"))' "$F/trainargs-5.x.json" "$T/td3.json" "$T/d3.json"
	run "$HR" plan --gpu h100 --trainer-args "$T/td3.json" --dp 8 --zero-stage 2 "$M"
	[[ "$output" == *"DeepSpeed's reduce bucket of hidden x hidden elements through each backward"* ]]
	run "$HR" plan --gpu h100 --trainer-args "$T/ta3.json" --dp 8 --zero-stage 2 "$M"
	[[ "$output" == *"DeepSpeed's reduce bucket of hidden x hidden elements, two of them through each backward"* ]]
	# DeepSpeed's optimizer wins over optim whichever key comes first
	python3 -c 'import json,sys; a={"optim": "adamw_torch", "deepspeed": {"optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 2}}}; json.dump(a, open(sys.argv[1], "w")); b={"deepspeed": a["deepspeed"], "optim": "adamw_torch"}; json.dump(b, open(sys.argv[2], "w"))' "$T/o1.json" "$T/o2.json"
	for f in o1 o2; do
		"$HR" plan --gpu h100 --json --trainer-args "$T/$f.json" --dp 8 "$M" > "$T/p.json"
		python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["optimizer"] == "adamw-fused", a' "$T/p.json"
	done
	# --offload replaces a --train file's list; reduce_bucket_size is a number in JSON
	printf '{"zero_stage": 3, "dp": 8, "offload": ["optimizer", "params"], "reduce_bucket_size": 500000000}\n' > "$T/tr.json"
	"$HR" plan --gpu h100 --json --train "$T/tr.json" --offload optimizer "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["offload"] == ["optimizer"] and a["reduce_bucket_size"] == 500000000, a' "$T/p.json"
	# axolotl's bf16: auto is on for DeepSpeed's "auto"
	printf '{"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}\n' > "$T/ds.json"
	printf 'sequence_len: 2048\nbf16: auto\ndeepspeed: ds.json\n' > "$T/ax.yml"
	"$HR" plan --gpu h100 --json --axolotl "$T/ax.yml" --dp 8 "$M" > "$T/p.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert a["master_weights"] is True, a' "$T/p.json"
	# a policy beside inference changes nothing
	same "$M" "--zero-stage 3 --dp 8 --dtype fp32 --inference" "--zero-stage 3 --dp 8 --dtype fp32 --inference --fsdp-param-dtype bf16"
}

# axolotl's documented LoRA files name their targets as PEFT takes them: module names of
# any family, or one regular expression; their attention, optimizer and lengths as
# axolotl writes them.
@test "axolotl's LoRA targets as names or an expression, xformers, torchao's optimizers, 500_000 plan as their flags" {
	base='adapter: lora\nlora_r: 16\nsequence_len: 2048\nmicro_batch_size: 1\nbf16: true\n'
	printf "$base"'lora_target_modules: '"'"'model.language_model.layers.[\\d]+.(mlp|self_attn).(up|down|gate|q|k|v|o)_proj'"'"'\n' > "$T/re.yml"
	same "$M" "--strict --axolotl $T/re.yml" "--strict --axolotl $T/re.yml --lora-targets all"
	run "$HR" plan --gpu h100 --strict --axolotl "$T/re.yml" "$M"
	[ "$status" -ne 2 ]
	[[ "$output" == *"LoRA r16 adapters (q,k,v,o,gate,up,down)"* ]]
	# some layers only: planned on all, said
	printf "$base"'lora_target_modules: '"'"'.*\\.layers\\.(3|7|11)\\.self_attn\\.(q|v)_proj'"'"'\n' > "$T/some.yml"
	same "$M" "--axolotl $T/some.yml" "--axolotl $T/some.yml --lora-targets q,v"
	run "$HR" plan --gpu h100 --axolotl "$T/some.yml" "$M"
	[[ "$output" == *"LoRA on q,v of some layers only (lora_target_modules' expression): planned on every layer, a bound from above"* ]]
	# names by their last part, another family's names, and a mixer's said and left out
	printf "$base"'lora_target_modules:\n  - self_attn.q_proj\n  - query_key_value\n  - in_proj\n' > "$T/names.yml"
	same "$M" "--axolotl $T/names.yml" "--axolotl $T/names.yml --lora-targets q,k,v"
	run "$HR" plan --gpu h100 --axolotl "$T/names.yml" "$M"
	[[ "$output" == *"LoRA on 'in_proj' not counted: no projection the planner models"* ]]
	printf "$base"'lora_target_modules: [in_proj, x_proj]\n' > "$T/none.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/none.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'lora_target_modules' names no projection the planner models ('in_proj', 'x_proj')"* ]]
	# what Python reads, lookarounds too; what it refuses exits 2 naming where
	printf "$base"'lora_target_modules: '"'"'(?!.*mlp).*(?<=attn\\.)(q|v)_proj'"'"'\n' > "$T/look.yml"
	same "$M" "--axolotl $T/look.yml" "--axolotl $T/look.yml --lora-targets q,v"
	printf "$base"'lora_target_modules: '"'"'.*(q|v_proj'"'"'\n' > "$T/bad.yml"
	run "$HR" plan --gpu h100 --axolotl "$T/bad.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'lora_target_modules' is not a regular expression: missing closing parenthesis at offset "*": fix it, or give a list"* ]]
	# PEFT's modules_to_save as --lora-save; a module other than the embedding or lm_head refused
	printf "$base"'lora_target_linear: true\nlora_modules_to_save:\n  - embed_tokens\n  - lm_head\n' > "$T/save.yml"
	same "$M" "--axolotl $T/save.yml" "--axolotl $T/save.yml --lora-save embed_tokens,lm_head"
	run "$HR" plan --gpu h100 --axolotl "$T/save.yml" "$M"
	[[ "$output" == *"and trained copies of embed_tokens,lm_head (modules_to_save; modelled, not measured)"* ]]
	run "$HR" plan --gpu h100 --lora-rank 8 --lora-save lm_head,norm "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--lora-save wants a list of embed_tokens and lm_head"*"not 'lm_head,norm'"* ]]
	# the CLI takes PEFT's names too
	same "$M" "--lora-rank 8 --lora-targets q_proj,self_attn.v_proj,dense_4h_to_h" "--lora-rank 8 --lora-targets q,v,down"
	# xformers, a Hub flash-attn kernel, torchao's optimizers, YAML 1.1's 500_000
	printf "$base"'lora_target_linear: true\nxformers_attention: true\noptimizer: adamw_torch_4bit\n' > "$T/x.yml"
	same "$M" "--strict --axolotl $T/x.yml" "--strict --axolotl $T/x.yml --attn xformers --optimizer adamw-ao-4bit --lora-targets all"
	run "$HR" plan --gpu h100 --axolotl "$T/x.yml" "$M"
	[[ "$output" == *"torchao's AdamW4bit: 4-bit blockwise states, its step compiled, modelled, not measured"* ]]
	printf "$base"'lora_target_linear: true\nattn_implementation: kernels-community/vllm-flash-attn3\noptimizer: adamw_torch_8bit\n' > "$T/k.yml"
	same "$M" "--axolotl $T/k.yml" "--axolotl $T/k.yml --attn flash_attention_3 --optimizer adamw-ao-8bit"
	run "$HR" plan --gpu h100 --axolotl "$T/k.yml" "$M"
	[[ "$output" == *"kernels-community/vllm-flash-attn3 planned as flash_attention_3"* ]]
	printf 'sequence_len: 500_000\nmicro_batch_size: 1\n' > "$T/long.yml"
	same "$M" "--axolotl $T/long.yml" "--axolotl $T/long.yml --seq 500000"
	# 8-bit states fall below AdamW's, 4-bit below 8-bit
	for o in adamw adamw-ao-8bit adamw-ao-4bit; do
		"$HR" plan --gpu h100 --json --optimizer $o "$M" | python3 -c 'import json,sys; print(json.load(sys.stdin)["components"]["optimizer_states_bytes"])'
	done > "$T/states"
	python3 -c 'import sys; a=[int(x) for x in open(sys.argv[1])]; assert a[0] > a[1] > a[2], a' "$T/states"
}
