#!/usr/bin/env bats
# headroom plan --quant: QLoRA and 8-bit loading (bitsandbytes' formats, modelled, not
# measured: no bitsandbytes on the GPU machine), said as such; axolotl's QLoRA file.

load helper

F="$ROOT/tests/fixtures/plan-inputs"
M="$F/llama-3.2-1b.json"

weights() { python3 -c 'import json,sys; print(json.load(sys.stdin)["components"]["weights_bytes"])'; }

@test "QLoRA plans, says its format, prepare_model_for_kbit_training and that it is modelled" {
	run "$HR" plan --gpu h100 --quant nf4 --double-quant --lora-rank 16 --lora-targets all --grad-ckpt "$M"
	echo "$output"
	[ "$status" -ne 2 ]
	[[ "$output" == *"base projections 4-bit NF4"*"double-quantized"* ]]
	[[ "$output" == *"dequantized to bf16 for each product"* ]]
	[[ "$output" == *"the other weights fp32 (PEFT's prepare_model_for_kbit_training); modelled, not measured"* ]]
	"$HR" plan --gpu h100 --json --quant nf4 --double-quant --lora-rank 16 "$M" > "$T/q.json" || [ $? -ne 2 ]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]
assert a["quant"] == "nf4" and a["double_quant"] is True and a["kbit_prepare"] is True, a
assert a["weights_dtype"] == "fp32", a' "$T/q.json"
	# a plan without --quant names none of it
	"$HR" plan --gpu h100 --json --lora-rank 16 "$M" > "$T/p.json" || [ $? -ne 2 ]
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["assumed"]; assert "quant" not in a and "kbit_prepare" not in a, a' "$T/p.json"
}

@test "the weights shrink with the format's bits; without prepare the rest stay bf16" {
	q() { "$HR" plan --gpu h100 --json --lora-rank 16 --no-kbit-prepare "$@" "$M" | weights; }
	none=$(q) int8=$(q --quant int8) nf4=$(q --quant nf4) dq=$(q --quant nf4 --double-quant)
	echo "$none $int8 $nf4 $dq"
	[ "$int8" -lt "$none" ] && [ "$nf4" -lt "$int8" ] && [ "$dq" -lt "$nf4" ]
	prep=$("$HR" plan --gpu h100 --json --lora-rank 16 --quant nf4 "$M" | weights)
	[ "$prep" -gt "$nf4" ]
	# inference on a quantized base: no prepare, no adapters needed
	inf=$("$HR" plan --gpu h100 --json --inference --quant nf4 "$M" | weights)
	full=$("$HR" plan --gpu h100 --json --inference "$M" | weights)
	[ "$inf" -lt "$full" ]
}

@test "a quantized base without adapters, an unknown format: refused, saying why; QLoRA over ranks plans" {
	run "$HR" plan --gpu h100 --quant nf4 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"quantized base weights do not train"*"--lora-rank"* ]]
	run "$HR" plan --gpu h100 --quant int4 --lora-rank 8 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"int4"* && "$output" == *"nf4"* ]]
	# QLoRA sharded (FSDP-QLoRA): the quantized shards, gathered as stored
	run "$HR" plan --gpu h100 --quant nf4 --lora-rank 8 --zero-stage 3 --dp 4 --no-kbit-prepare "$M"
	[ "$status" -ne 2 ]
	[[ "$output" == *"ZeRO-3/FSDP over 4 ranks"*"4-bit NF4"* ]]
	q=$("$HR" plan --gpu h100 --json --quant nf4 --lora-rank 8 --zero-stage 3 --dp 4 --no-kbit-prepare "$M" | weights)
	b=$("$HR" plan --gpu h100 --json --lora-rank 8 --zero-stage 3 --dp 4 "$M" | weights)
	[ "$q" -lt "$b" ]
	# prepare_model_for_kbit_training leaves fp32 weights: no flash kernel without autocast
	run "$HR" plan --gpu h100 --quant nf4 --lora-rank 8 --attn flash_attention_2 "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"flash kernels run in bf16 or fp16, not fp32"* ]]
	run "$HR" plan --gpu h100 --quant nf4 --lora-rank 8 --attn flash_attention_2 --autocast "$M"
	[ "$status" -ne 2 ]
}

@test "axolotl's QLoRA file plans as its flags; a flag beside it wins" {
	run "$HR" plan --gpu h100 --strict --axolotl "$F/axolotl-qlora.yml" "$M"
	echo "$output"
	[ "$status" -ne 2 ]
	[[ "$output" == *"4-bit NF4"* ]]
	"$HR" plan --gpu h100 --json --axolotl "$F/axolotl-qlora.yml" "$M" > "$T/a.json" || [ $? -ne 2 ]
	"$HR" plan --gpu h100 --json --quant nf4 --double-quant --lora-rank 32 --lora-targets all --batch 2 \
		--grad-accum 4 --optimizer paged-adamw --grad-ckpt --seq 4096 --autocast --no-keep-outputs \
		--no-use-cache "$M" > "$T/b.json" || [ $? -ne 2 ]
	diff "$T/a.json" "$T/b.json"
	"$HR" plan --gpu h100 --json --quant int8 --axolotl "$F/axolotl-qlora.yml" "$M" > "$T/c.json" || [ $? -ne 2 ]
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["assumed"]["quant"] == "int8"' "$T/c.json"
	# qlora without load_in_4bit is axolotl's error too
	grep -v load_in_4bit "$F/axolotl-qlora.yml" > "$T/q.yml"
	run "$HR" plan --gpu h100 --strict --axolotl "$T/q.yml" "$M"
	[ "$status" -eq 2 ]
	[[ "$output" == *"qlora without load_in_4bit"* ]]
}
