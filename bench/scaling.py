#!/usr/bin/env python3
"""Scaling simulator: what qvl would do on T cores, from a task trace taken on this machine.

Runs the workload (N concurrent requests of one WxH image, TOKENS generated) through
`qvl-run --batch` with QVL_TASK_TRACE on 1 thread (the calibration) and 2 threads (the
validation), then replays the 1-thread trace for T threads: every parallel region gets the tasks
the engine's own split code makes for T threads (recorded in the trace by the engine, see
engine/base/task_trace.h), each task the time its work took per unit on one core here, bounded
below by its DRAM bytes over a shared bandwidth B(T) = min(T * b1, B); tasks are handed out in
index order to the first free thread, workers start after the pool's measured wake-up, and the
job ends with its measured join. See bench/README.md ("Scaling simulator").
"""
import argparse
import heapq
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling_model import (Machine, load_trace, node_table, phase_summary,  # noqa: E402
                           simulate, stream_gbs)

PHASES = ("vision", "prefill", "decode")
TABLE_THREADS = (2, 8, 16, 32, 64)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--qvl-run", default="build/release/apps/qvl-run")
    p.add_argument("--model", default="/work/models/synth2b")
    p.add_argument("--threads", type=int, default=32, help="simulated thread count T")
    p.add_argument("--bandwidth", type=float, default=250.0, help="shared DRAM GB/s of the target")
    p.add_argument("--image", default="448x448", help="WxH of every request's image")
    p.add_argument("--clients", type=int, default=4, help="concurrent requests")
    p.add_argument("-n", type=int, default=64, dest="tokens", help="generated tokens per request")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--bench-kernels", default="build/release/bench/qvl-bench-kernels",
                   help="source of the peaks and the pool's costs (peak/.*, pool/.*)")
    p.add_argument("--core-bandwidth", type=float, help="GB/s one core reads (default: measured)")
    p.add_argument("--machine-bandwidth", type=float,
                   help="GB/s this machine reads with all cores (validation; default: measured)")
    p.add_argument("--fork-us", type=float, help="start of a spinning worker (default: measured)")
    p.add_argument("--wake-us", type=float, help="start of a sleeping worker (default: measured)")
    p.add_argument("--notify-us", type=float, help="futex wake cost per sleeping worker")
    p.add_argument("--join-us", type=float, help="end-of-job barrier (default: measured)")
    p.add_argument("--work-dir", help="keep traces and outputs here (default: a temporary folder)")
    p.add_argument("--reuse", action="store_true",
                   help="use the traces already in --work-dir instead of running qvl-run")
    p.add_argument("--calibrate-threads", type=int, default=1)
    p.add_argument("--calibration-dir",
                   help="take the calibration trace from this earlier --work-dir, so that the "
                        "runs here (1 thread too) validate it independently")
    p.add_argument("--validate-threads", default="1,2",
                   help="thread counts run and compared with the prediction ('' for none)")
    p.add_argument("--table-threads", default=",".join(map(str, TABLE_THREADS)))
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--attention-key-chunk", type=int, default=0,
                   help="what if: decode attention also split over keys in chunks of this many "
                        "(not what the engine does; for planning)")
    p.add_argument("--qvl-args", default="",
                   help="extra qvl-run arguments for every run, e.g. '--vision-weights q8'")
    return p.parse_args(argv)


def make_images(folder, width, height, count):
    """count different deterministic JPEGs of one size (different: the engine caches images)."""
    import numpy as np
    from PIL import Image, ImageDraw
    paths = []
    for i in range(count):
        y, x = np.mgrid[0:height, 0:width]
        rgb = np.stack([(x * 255 // width + 37 * i) & 255, y * 255 // height,
                        ((x ^ (y + i)) * 3) & 255], axis=-1).astype(np.uint8)
        img = Image.fromarray(rgb, "RGB")
        draw = ImageDraw.Draw(img)
        for j in range(30):
            x0, y0 = (97 * j + 13 * i) % width, (61 * j + 29 * i) % height
            draw.rectangle([x0, y0, x0 + width // 7, y0 + height // 9],
                           outline=((40 * j) & 255, (90 * i) & 255, 200), width=3)
        path = os.path.join(folder, f"client{i}_{width}x{height}.jpg")
        img.save(path, "JPEG", quality=90)
        paths.append(path)
    return paths


def write_batch(folder, images, tokens):
    path = os.path.join(folder, "batch.jsonl")
    with open(path, "w") as f:
        for i, image in enumerate(images):
            content = [{"type": "image", "image": os.path.basename(image)},
                       {"type": "text", "text": "What is in this image?"}]
            f.write(json.dumps({"id": i, "messages": [{"role": "user", "content": content}],
                                "n_predict": tokens, "ignore_eos": True, "temperature": 0}) + "\n")
    return path


def run_workload(args, batch, threads, trace, out, trace_threads):
    env = dict(os.environ, QVL_TASK_TRACE=trace, QVL_TASK_TRACE_THREADS=trace_threads)
    cmd = [args.qvl_run, "-m", args.model, "--batch", batch, "--parallel", str(args.clients),
           "-t", str(threads), "-o", out, *shlex.split(args.qvl_args)]
    log(f"scaling: {' '.join(cmd)}")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    if r.returncode != 0:
        raise SystemExit(f"scaling: qvl-run failed ({r.returncode}): {r.stderr[-2000:]}")
    results = [json.loads(line) for line in open(out) if line.strip()]
    bad = [x for x in results if "error" in x]
    if bad:
        raise SystemExit(f"scaling: a request failed: {bad[0]}")
    return results


def bench_rows(args, pattern):
    if not os.path.exists(args.bench_kernels):
        return []
    cmd = [args.bench_kernels, f"--benchmark_filter={pattern}", "--benchmark_format=json",
           "--benchmark_min_time=0.2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        return json.loads(r.stdout).get("benchmarks", []) if r.returncode == 0 else []
    except ValueError:
        return []


def measure_machine(args):
    """Per-core peak, per-core and machine DRAM bandwidth, pool costs: measured unless given.
    Bandwidth and pool costs are not measured on a loaded machine (load average above 2.5 on
    these 2 cores: other processes' threads then sit in every wake-up and every DRAM read), where
    the Machine defaults (a quiet Zen 4 here) stand unless given on the command line."""
    m = Machine()
    quiet = float(load_average()) <= 2.5
    pattern = "peak/(bf16|fp32|dram_gemv)" if quiet else "peak/(bf16|fp32)"
    for row in bench_rows(args, pattern):
        name = row["name"]
        t = int(re.search(r"threads[=:](\d+)", name).group(1)) if "threads" in name else 1
        if name.startswith(("peak/bf16", "peak/fp32")) and t == 1:
            m.core_gflops = max(m.core_gflops, row.get("GFLOPS", 0))
        elif name.startswith("peak/dram_gemv/") and row.get("GBps"):
            # B(1) and B(2) as the engine's decode GEMVs read (bench/stream_bench.cpp): a plain
            # read loop (peak/dram) got 17.8 / 19.5 GB/s where decode itself read ~18 / ~30.
            setattr(m, "core_gbs" if t == 1 else "machine_gbs", row["GBps"])
    m.sources["peaks"] = "measured" if m.core_gflops else "default"
    pool = {row["name"].split("/")[1] + row["name"].split("/")[2]: row
            for row in (bench_rows(args, "pool/") if quiet else [])}
    m.sources["dram"] = "measured (decode GEMV stream)" if quiet else \
        f"default (load average {load_average()})"
    for key, attr in (("fork_jointhreads:2", "fork_us"), ("wakethreads:2", "wake_us")):
        if key in pool:
            # A job's round trip: half to start the workers, half to collect them.
            setattr(m, attr, pool[key]["us"] / 2 if attr == "fork_us" else pool[key]["us"])
    if "fork_jointhreads:2" in pool:
        m.join_us = pool["fork_jointhreads:2"]["us"] / 2
    if "notifywaiters:32" in pool:
        m.notify_us = pool["notifywaiters:32"]["us_per_waiter"]
    m.sources["pool"] = "measured" if pool else "default"
    names = {"core_bandwidth": "core_gbs", "machine_bandwidth": "machine_gbs"}
    for attr in ("core_bandwidth", "machine_bandwidth", "fork_us", "wake_us", "notify_us",
                 "join_us"):
        value = getattr(args, attr)
        if value is not None:
            setattr(m, names.get(attr, attr), value)
            m.sources[attr] = "command line"
    if not m.core_gflops:
        m.core_gflops = 225.0
    return m


def calibrate_core_bandwidth(machine, calib, args):
    """One core's bandwidth is at least what the calibration trace's own decode read per busy
    core (scaling_model.stream_gbs), unless given on the command line; the machine's at least
    one core's. Both bound only this machine's validation rows and the small-T rows of the
    target; the target's shared B is --bandwidth."""
    if args.core_bandwidth is None:
        seen = stream_gbs(calib)
        if seen > machine.core_gbs:
            machine.core_gbs = seen
            machine.sources["core_dram"] = "calibration trace (decode)"
    if args.machine_bandwidth is None and machine.machine_gbs < machine.core_gbs:
        machine.machine_gbs = machine.core_gbs
        machine.sources["machine_dram"] = "at least one core's"


def load_average():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def validation_rows(args, machine, calib, measured_traces):
    rows = []
    for threads, trace in measured_traces.items():
        pred = phase_summary(simulate(calib, threads, machine.machine_gbs, machine), calib)
        meas = phase_summary(None, trace)
        # On a loaded machine (load average above the cores) the wall times measure the other
        # processes too; the CPU basis takes each job's busiest thread's CPU time instead.
        quiet = all(float(x) <= 2.5 for x in re.findall(r"[\d.]+", trace.load))
        for phase in PHASES:
            p, m, c = pred[phase]["seconds"], meas[phase]["seconds"], meas[phase]["cpu_seconds"]
            err_wall = (p - m) / m if m > 0 else 0.0
            err_cpu = (p - c) / c if c > 0 else 0.0
            rows.append({"phase": phase, "threads": threads, "measured_s": round(m, 4),
                         "measured_cpu_s": round(c, 4), "predicted_s": round(p, 4),
                         "error_wall": round(err_wall, 4), "error_cpu": round(err_cpu, 4),
                         "basis": "wall" if quiet else "cpu",
                         "error": round(err_wall if quiet else err_cpu, 4), "load": trace.load})
    return rows


def print_phase_table(title, per_threads):
    print(f"\n{title}")
    print("| phase | " + " | ".join(f"T={t}" for t in per_threads) + " |")
    print("|---|" + "---|" * len(per_threads))
    for phase in PHASES:
        cells = [f"{s[phase]['efficiency'] * 100:.0f} % ({s[phase]['seconds']:.2f} s)"
                 for s in per_threads.values()]
        print(f"| {phase} | " + " | ".join(cells) + " |")


def main(argv=None):
    args = parse_args(argv)
    width, height = (int(v) for v in args.image.lower().split("x"))
    work = args.work_dir or tempfile.mkdtemp(prefix="qvl-scaling-")
    os.makedirs(work, exist_ok=True)
    validate = [int(t) for t in args.validate_threads.split(",") if t.strip()]
    table = [int(t) for t in args.table_threads.split(",") if t.strip()]
    wanted = sorted({1, 2, args.threads, *table, *validate})
    runs = sorted({args.calibrate_threads, *validate})
    traces, results = {}, {}
    if not args.reuse:
        images = make_images(work, width, height, args.clients)
        batch = write_batch(work, images, args.tokens)
    for t in runs:
        trace = os.path.join(work, f"trace_t{t}.jsonl")
        out = os.path.join(work, f"out_t{t}.jsonl")
        load = load_average()
        if not args.reuse:
            results[t] = run_workload(args, batch, t, trace, out, ",".join(map(str, wanted)))
        else:
            results[t] = [json.loads(line) for line in open(out) if line.strip()]
        traces[t] = load_trace(trace)
        traces[t].load = f"{load} -> {load_average()}"
    machine = measure_machine(args)
    if args.calibration_dir:
        calib = load_trace(os.path.join(args.calibration_dir,
                                        f"trace_t{args.calibrate_threads}.jsonl"))
    else:
        calib = traces[args.calibrate_threads]
    calibrate_core_bandwidth(machine, calib, args)
    sims = {t: simulate(calib, t, args.bandwidth, machine, args.attention_key_chunk)
            for t in wanted}
    summaries = {t: phase_summary(sims[t], calib, sims[1], args.bandwidth, machine)
                 for t in wanted}
    val = validation_rows(args, machine, calib, {t: traces[t] for t in validate})
    s = summaries[args.threads]
    measured_ttft = sorted(r["timings_ms"]["ttft"] / 1000 for r in results[max(runs)])
    print(f"machine: {machine.describe()}; target: T={args.threads}, B={args.bandwidth} GB/s")
    if args.attention_key_chunk:
        print(f"WHAT IF: decode attention split over keys in chunks of {args.attention_key_chunk}"
              " (the engine splits over kv heads only)")
    print(f"workload: {args.clients} x {args.image}, {args.tokens} tokens; load average during "
          f"runs: " + ", ".join(f"t={t}: {traces[t].load}" for t in runs))
    print_phase_table(f"per-phase efficiency (predicted seconds), B={args.bandwidth} GB/s",
                      {t: summaries[t] for t in table})
    print(f"\nT={args.threads}: P95 TTFT predicted {s['p95_ttft_s']:.2f} s; measured on "
          f"{max(runs)} thread(s) here: P95 {percentile(measured_ttft, 95):.2f} s")
    if "decode" in s and s["decode"].get("floor_step_s"):
        d = s["decode"]
        print(f"decode step: predicted {d['step_s'] * 1000:.1f} ms, bandwidth floor "
              f"{d['floor_step_s'] * 1000:.1f} ms ({d['step_s'] / d['floor_step_s']:.2f}x)")
    print(f"\nslowest nodes at T={args.threads} (summed over layers and steps):")
    print(node_table(sims[args.threads], args.threads, 25))
    print("\nvalidation (calibrated on 1 thread; measured in the traced runs; the CPU columns take"
          " the machine's other load out: each job's busiest thread's CPU time):")
    print("| phase | threads | measured wall s | measured CPU s | predicted s | error wall | "
          "error CPU | load average |")
    print("|---|---|---|---|---|---|---|---|")
    for r in val:
        print(f"| {r['phase']} | {r['threads']} | {r['measured_s']:.3f} | "
              f"{r['measured_cpu_s']:.3f} | {r['predicted_s']:.3f} | "
              f"{r['error_wall'] * 100:+.1f} % | {r['error_cpu'] * 100:+.1f} % | {r['load']} |")
    max_err = max((abs(r["error"]) for r in val), default=0.0)
    if args.json:
        out = {"threads": args.threads, "bandwidth_gbs": args.bandwidth, "image": args.image,
               "clients": args.clients, "tokens": args.tokens,
               "phases": {p: s[p] for p in PHASES}, "p95_ttft_s": s["p95_ttft_s"],
               "measured_p95_ttft_s": percentile(measured_ttft, 95),
               "measured_threads": max(runs),
               "by_threads": {str(t): {"phases": {p: summaries[t][p] for p in PHASES},
                                       "p95_ttft_s": summaries[t]["p95_ttft_s"]}
                              for t in wanted},
               "machine": machine.__dict__,
               "validation": {"max_error": round(max_err, 4), "rows": val}}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def percentile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


if __name__ == "__main__":
    sys.exit(main())
