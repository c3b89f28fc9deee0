#!/usr/bin/env bats
# headroom plan on published configs of issue 30's dense families and multimodal configs
# (tests/fixtures/plan-inputs): each plans, counts its parameters as transformers does,
# and says what it assumes of its family.

load helper

F="$ROOT/tests/fixtures/plan-inputs"

# plan FILE: its JSON plan's params, then its text plan's assumption lines
params_of() {
	run "$HR" plan --gpu h200 --json "$F/$1"
	[ "$status" -eq 0 ]
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])["params"])' "$output"
}

@test "olmo2, granite and smollm3 plan from their published config.json, as their parameters say" {
	[ "$(params_of olmo2-1124-7b.json)" = 7298617344 ]
	[ "$(params_of granite-3.1-8b.json)" = 8170848256 ]
	[ "$(params_of smollm3-3b.json)" = 3075098624 ]
	run "$HR" plan --gpu h200 "$F/granite-3.1-8b.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"granite's multipliers: their values change no memory"* ]]
	run "$HR" plan --gpu h200 --json "$F/granite-3.1-8b.json"
	python3 -c 'import json,sys; a=json.loads(sys.argv[1])["assumed"]; assert "multipliers" in a["family"], a' "$output"
	run "$HR" plan --gpu h200 "$F/smollm3-3b.json"
	[[ "$output" == *"rotary on 27 of 36 layers"* ]]
}

@test "a multimodal config plans its text tower and counts its vision weights, saying so" {
	[ "$(params_of gemma-3-4b-it.json)" = 4300079472 ]
	[ "$(params_of qwen2.5-vl-3b-instruct.json)" = 3754622976 ]
	run "$HR" plan --gpu h200 "$F/gemma-3-4b-it.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"gemma3: its text tower (gemma3_text) planned; its vision tower's weights counted"* ]]
	[[ "$output" == *"images' activations not planned"* ]]
	[[ "$output" == *"token_type_ids given: its masks are batch x seq x seq booleans"* ]]
	run "$HR" plan --gpu h200 "$F/qwen2.5-vl-3b-instruct.json"
	[[ "$output" != *"token_type_ids"* ]]
	run "$HR" plan --gpu h200 --json "$F/qwen2.5-vl-3b-instruct.json"
	python3 -c 'import json,sys; m=json.loads(sys.argv[1])["assumed"]["multimodal"]; assert m == {"config": "qwen2_5_vl", "text_tower": "qwen2_5_vl_text", "vision_params": 668684288, "vision_not_counted": None}, m' "$output"
	# a vision_config without what counting needs: the text tower alone, and why
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); del c["vision_config"]["depth"]; json.dump(c, open(sys.argv[2], "w"))' \
		"$F/qwen2.5-vl-3b-instruct.json" "$T/novision.json"
	run "$HR" plan --gpu h200 "$T/novision.json"
	[ "$status" -eq 0 ]
	[[ "$output" == *"its vision tower not counted (vision_config lacks"* ]]
}

@test "a bad no_rope_layers or no_rope_layer_interval is refused, naming the key" {
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["no_rope_layers"][0] = 0; json.dump(c, open(sys.argv[2], "w"))' \
		"$F/smollm3-3b.json" "$T/bad.json"
	run "$HR" plan --gpu h200 "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no_rope_layers must list 36 layers"* ]]
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); del c["no_rope_layers"]; c["no_rope_layer_interval"] = 0; json.dump(c, open(sys.argv[2], "w"))' \
		"$F/smollm3-3b.json" "$T/bad.json"
	run "$HR" plan --gpu h200 "$T/bad.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"no_rope_layer_interval must be a whole number"* ]]
}

# Issue 45: phi and falcon configs were refused; a model_type without a row of its own
# whose config has a decoder's common keys plans as a generic dense decoder, said.
@test "phi and falcon plan as a generic decoder, said, their parameters as published" {
	for m in phi-2:2779683840 falcon-7b:7217189760; do
		name=${m%%:*} want=${m##*:}
		run "$HR" plan --gpu h100 --json "$ROOT/tests/fixtures/plan-inputs/$name.json"
		[ "$status" -ne 2 ]
		python3 -c 'import json,sys; o=json.loads(sys.argv[1]); w=int(sys.argv[2])
assert "generic dense decoder" in o["assumed"]["family"], o["assumed"]
assert abs(o["params"] - w) <= 0.01 * w, (o["params"], w)' "$output" "$want"
	done
	run "$HR" plan --gpu h100 "$ROOT/tests/fixtures/plan-inputs/phi-2.json"
	[[ "$output" == *"phi: this model_type has no row of its own: planned as a generic dense decoder"* ]]
	# a model_type without the common keys is still refused, naming what would do
	echo '{"model_type": "foo", "hidden_size": 64}' > "$T/foo.json"
	run "$HR" plan --gpu h100 "$T/foo.json"
	[ "$status" -eq 2 ]
	[[ "$output" == *"'foo' is not supported"*"hidden_size, num_hidden_layers, num_attention_heads and vocab_size"* ]]
}
