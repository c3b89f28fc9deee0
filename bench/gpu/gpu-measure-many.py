#!/usr/bin/env python3
"""Run several cases of a JSON list with bench/gpu/gpu-measure.py in this one process (one
import of torch and transformers for all: development figures, faster than a process a
case; a fixture's runs take a fresh process each: bench/gpu/gpu-measure-seq). Between cases
the allocator's cache, its statistics and cuBLAS's workspaces are cleared. A case that fails to build or run gets a
line with its error instead of its figures.

Usage: gpu-measure-many.py OUT_JSONL CASES_JSON PATTERN...   (cases whose names hold any PATTERN)
HEADROOM_DEV_STEPS=N runs each case for at most N steps (its line says so).
"""
import gc, json, os, runpy, sys, time, traceback

out_path, cases_path, pats = sys.argv[1], sys.argv[2], sys.argv[3:]
measure = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu-measure.py")
import torch
for case in json.load(open(cases_path)):
    if not any(p in case["name"] for p in pats):
        continue
    gc.collect()
    torch.cuda.empty_cache()
    torch._C._cuda_clearCublasWorkspaces()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    if os.environ.get("HEADROOM_DEV_STEPS"):
        case["train"]["steps"] = min(case["train"].get("steps", 3), int(os.environ["HEADROOM_DEV_STEPS"]))
    t0 = time.time()
    sys.argv = [measure, out_path, json.dumps(case)]
    try:
        runpy.run_path(measure, run_name="__main__")
    except BaseException as e:  # noqa: B036 -- SystemExit from the script too
        err = "".join(traceback.format_exception_only(type(e), e)).strip()[-600:]
        tb = traceback.format_exc().splitlines()[-12:]
        with open(out_path, "a") as fh:
            fh.write(json.dumps({"case": case, "error": err, "traceback": tb}) + "\n")
        print(f"{case['name']}: ERROR {err[:300]}", flush=True)
    print(f"  ({time.time() - t0:.1f} s)", flush=True)
