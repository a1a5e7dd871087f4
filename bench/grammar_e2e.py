#!/usr/bin/env python3
"""A constrained decode step against an unconstrained one, in the same run (issue 48's target:
at most 1.05x). qvl-run generates N tokens greedily with --ignore-eos, free and under each JSON
schema, alternating the modes R times; the figure is the median decode time per token of each
mode, and the ratio to the free one.

usage: bench/grammar_e2e.py --run build/release/apps/qvl-run --model /work/models/synth2b
                            [-n 48] [--repeats 3] [--threads 2]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

SCHEMAS = {
    # Inside a length-bounded string every position is a new grammar state: the mask's worst case.
    "bounded_strings": {"type": "array", "items": {"type": "string", "maxLength": 300},
                        "minItems": 40, "maxItems": 40},
    "invoice": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 40}, "total": {"type": "number", "minimum": 0},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string", "maxLength": 12}, "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku", "qty"], "additionalProperties": False}, "minItems": 8, "maxItems": 8},
        "paid": {"type": "boolean"}},
        "required": ["name", "total", "items", "paid"], "additionalProperties": False},
}


def decode_ms_per_token(args, schema_file):
    cmd = [args.run, "-m", args.model, "-p", "Write the invoice.", "-n", str(args.n), "--ignore-eos",
           "--temp", "0", "-t", str(args.threads), "--json"]
    if schema_file:
        cmd += ["--json-schema", schema_file]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    steps = max(1, len(out["tokens"]) - 1)
    return out["timings_ms"]["decode"] / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {"free": None}
        for name, schema in SCHEMAS.items():
            files[name] = os.path.join(tmp, name + ".json")
            with open(files[name], "w") as f:
                json.dump(schema, f)
        times = {name: [] for name in files}
        for _ in range(args.repeats):
            for name, path in files.items():
                times[name].append(decode_ms_per_token(args, path))
    free = statistics.median(times["free"])
    print(f"load average {os.getloadavg()[0]:.1f}; {args.n} tokens, {args.threads} threads, "
          f"median of {args.repeats}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:16s} {med:8.1f} ms/token  x{med / free:.3f}  ({', '.join(f'{t:.1f}' for t in ts)})")


if __name__ == "__main__":
    main()
