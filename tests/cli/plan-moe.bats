#!/usr/bin/env bats
# headroom plan on published configs of issue 30's mixture-of-experts families: each is
# planned, its parameters counted as the model card has them, its MLPs said.

load helper

CONFIGS="$BATS_TEST_DIRNAME/../fixtures/plan-configs"

@test "plan qwen2_moe (Qwen1.5-MoE-A2.7B): the gated shared expert is said, 14.3 B parameters" {
	run "$HR" plan --gpu h200 --seq 4096 "$CONFIGS/qwen1.5-moe-a2.7b.json"
	echo "$output"
	[ "$status" -le 1 ] || [ "$status" -eq 3 ]   # a verdict, whichever
	[[ "$output" == *"experts: 60 routed of 1408 units, top 4 by a softmax router"* ]]
	[[ "$output" == *"a shared expert of 5632 units (sigmoid-gated)"* ]]
	[[ "$output" == *"qwen2_moe, 14315.8M parameters"* ]]
}

@test "plan glm4_moe (GLM-4.5-Air): the sigmoid router, the dense first layer and the half rotation are said" {
	run "$HR" plan --gpu h200 --seq 4096 "$CONFIGS/glm-4.5-air.json"
	echo "$output"
	[ "$status" -le 1 ]
	[[ "$output" == *"top 8 by a sigmoid group (fp32) router"* ]]
	[[ "$output" == *"a shared expert of 1408 units; 1 of 46 layers dense (10944 units)"* ]]
	[[ "$output" == *"rotary over 64 of a head's 128 units"* ]]
	[[ "$output" == *"glm4_moe, 106852.2M parameters"* ]]
	printf '{"model_type": "glm4_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "use_qk_norm": 1}\n' > "$T/g.json"
	run "$HR" plan --gpu h200 "$T/g.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"use_qk_norm must be true or false"* ]]
}

@test "plan deepseek_v3 (DeepSeek-V3, Moonlight): latent attention and its cache are said" {
	run "$HR" plan --gpu h200 --seq 4096 "$CONFIGS/deepseek-v3.json"
	echo "$output"
	[ "$status" -le 1 ]
	[[ "$output" == *"multi-head latent attention (q low rank 1536, a latent of 512 + 64 rope units"* ]]
	[[ "$output" == *"3 of 61 layers dense"* ]]
	[[ "$output" == *"deepseek_v3, 671026.4M parameters"* ]]
	run "$HR" plan --gpu h200 --inference --seq 4096 --json "$CONFIGS/moonlight-16b-a3b.json"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["params"] == 15960108544, o' "$output"
	run "$HR" plan --gpu h200 "$CONFIGS/moonlight-16b-a3b.json"
	[[ "$output" == *"q low rank none: q_proj"* ]]
}
