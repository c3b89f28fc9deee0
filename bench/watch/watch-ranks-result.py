#!/usr/bin/env python3
"""bench/watch/watch-ranks-result.py OUTDIR RANKS: bench/watch/watch-ranks's figures from its files into
OUTDIR/result.json and a table on stdout."""
import glob
import json
import re
import sys

out, n = sys.argv[1], int(sys.argv[2])


def ooms(paths):
    """rank -> the wall time of its OOM (ms)"""
    got = {}
    for p in paths:
        for m in re.finditer(r"rank (\d+) OOM at (\d+) after (\d+) GiB", open(p).read()):
            got[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return got


def events(name):
    try:
        return [e for e in map(json.loads, open(f"{out}/{name}.jsonl")) if "event" in e]
    except OSError:
        return []


def end_ms(name):
    try:
        return int(open(f"{out}/{name}-end").read())
    except (OSError, ValueError):
        return None


def run(name, logs):
    ev, oom, end = events(name), ooms(logs), end_ms(name)
    pd = [e for e in ev if e["event"] == "partial_death"]
    deaths = []
    for rank, (at, gib) in sorted(oom.items(), key=lambda kv: kv[1][0]):
        seen = [e for e in pd if e.get("rank") == rank]
        deaths.append({"rank": rank, "oom_ms": at, "allocated_gib": gib,
                       "partial_death_after_oom_ms": seen[0]["time_ms"] - at if seen else None,
                       "ranks_alive": seen[0]["ranks_alive"] if seen else None})
    first = deaths[0]["oom_ms"] if deaths else None
    tt = [e for e in ev if e["event"] == "time_to_oom"]
    return {
        "deaths": deaths,
        "partial_death_events": [e["message"] for e in pd],
        "job_ended_after_first_oom_ms": end - first if end and first else None,
        "job_stopped": [e["message"] for e in ev if e["event"] == "job_stopped"],
        "time_to_oom_warning_lead_ms": first - tt[0]["time_ms"] if tt and first else None,
        "events": [e["message"] for e in ev],
    }


res = {
    "ranks": n,
    "report": run("report", glob.glob(f"{out}/report-rank*.log")),
    "stop": run("stop", glob.glob(f"{out}/stop-rank*.log")),
    "torchrun": run("torchrun", [f"{out}/torchrun.log"]),
}
try:
    res["stop"]["decoy_ranks_alive_after"] = int(open(f"{out}/stop-decoy-alive").read())
except (OSError, ValueError):
    res["stop"]["decoy_ranks_alive_after"] = None
json.dump(res, open(f"{out}/result.json", "w"), indent=1)
print("| run | rank | OOM after | partial death after its OOM | ranks alive | job ended after the first OOM |")
print("|---|---|---|---|---|---|")
for name in ("report", "stop", "torchrun"):
    r = res[name]
    for d in r["deaths"]:
        print(f"| {name} | {d['rank']} | {d['allocated_gib']} GiB | {d['partial_death_after_oom_ms']} ms |"
              f" {d['ranks_alive']} | {r['job_ended_after_first_oom_ms']} ms |")
print(f"\ndecoy job's ranks alive after the stop: {res['stop']['decoy_ranks_alive_after']} of 2")
