#!/usr/bin/env python3
"""The multi-sequence runtime on the full-size synthetic checkpoint, in one run (2 threads by
default; every figure is a ratio within this run):

1. decode scaling: N text-only requests decoded together (`qvl-run --batch --parallel N`, N = 1,
   2, 4, 8): the time of one batched decode step and the aggregate decode tokens/s, against N = 1
   (targets: 4 sequences >= 3.2x the tokens/s of one; a step of 4 <= 1.25x a step of 1);
2. images in parallel: 4 requests with different 448x448 images, 32 tokens each, at --parallel 4
   against --parallel 1 (targets: finishes >= 1.7x faster; per-token decode time <= 1.3x);
3. a follow-up turn: the same conversation plus the answer and a new question, after the first
   turn, in one --batch run at --parallel 1 (the slot's KV prefix is reused): its time to first
   token against the first turn's (target <= 10 %);
4. the longest gap between two streamed tokens of a running sequence while a 1280x720 image is
   admitted beside it (qvl-serve, two slots), against the median gap.

  bench/runtime_bench.py [--threads 2] [--json OUT]"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "serve"))
import e2e_bench  # noqa: E402  (images and the synthetic checkpoint)
import serve_util  # noqa: E402

QUESTION = "What is in this image?"
FOLLOW_UP = "And what colour is the largest shape?"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--qvl-run", default=os.path.join(REPO, "build/apps/qvl-run"))
    p.add_argument("--serve", default=os.path.join(REPO, "build/apps/qvl-serve"))
    p.add_argument("--synth", default=os.path.join(REPO, "build/apps/qvl-synth"))
    p.add_argument("--model", default=os.path.join(REPO, "models/qwen3vl-2b-synth"))
    p.add_argument("--tokenizer-dir", default=os.path.join(REPO, "tests/data/tiny-qwen3vl"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default="1,2,3,4", help="which measurements (comma-separated)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--json", metavar="OUT", help="also write the figures to OUT")
    p.add_argument("--admission-budget-ms", type=float,
                   help="measurement 4: qvl-serve's --admission-budget-ms (default: its own)")
    p.add_argument("--runner-tokens", type=int, default=400,
                   help="measurement 4: tokens of the running sequence (it must outlast the "
                        "admission)")
    return p.parse_args()


def run_batch(args, lines, parallel, ctx):
    """Runs qvl-run --batch over the request lines; returns the result objects by id."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
        path = f.name
    try:
        t0 = time.perf_counter()
        out = subprocess.run([args.qvl_run, "-m", args.model, "--batch", path, "--parallel",
                              str(parallel), "-c", str(ctx), "-t", str(args.threads)],
                             capture_output=True, text=True, timeout=args.timeout)
        run_batch.wall_ms = (time.perf_counter() - t0) * 1000
    finally:
        os.unlink(path)
    if out.returncode != 0:
        raise RuntimeError(f"qvl-run --batch failed ({out.returncode}): {out.stderr[-2000:]}")
    results = {}
    for line in out.stdout.splitlines():
        r = json.loads(line)
        if "error" in r:
            raise RuntimeError(f"request {r.get('id')}: {r['error']}")
        results[r["id"]] = r
    return results


def step_ms(r):
    """Time per decode step of one request (its first token comes from the prefill)."""
    return r["timings_ms"]["decode"] / max(1, len(r["tokens"]) - 1)


def decode_scaling(args):
    rows = []
    for n in (1, 2, 4, 8):
        lines = [{"id": i, "messages": [{"role": "user", "content": f"Tell me a story, number {i}."}],
                  "n_predict": 64, "temperature": 0, "ignore_eos": True} for i in range(n)]
        res = run_batch(args, lines, n, 256)
        step = statistics.median(step_ms(r) for r in res.values())
        rows.append({"sequences": n, "step_ms": step, "tokens_per_s": n * 1000.0 / step})
    base = rows[0]
    for r in rows:
        r["step_vs_1"] = r["step_ms"] / base["step_ms"]
        r["throughput_vs_1"] = r["tokens_per_s"] / base["tokens_per_s"]
        print(f"decode  {r['sequences']} sequence(s): step {r['step_ms']:.1f} ms "
              f"({r['step_vs_1']:.2f}x one), {r['tokens_per_s']:.1f} tokens/s "
              f"({r['throughput_vs_1']:.2f}x one)", flush=True)
    four = next(r for r in rows if r["sequences"] == 4)
    print(f"decode  targets: 4 sequences {four['throughput_vs_1']:.2f}x the tokens/s of one "
          f"(>= 3.2x), a step of 4 {four['step_vs_1']:.2f}x a step of one (<= 1.25x)")
    return rows


def images_in_parallel(args, tmp):
    from PIL import Image, ImageDraw  # noqa: PLC0415  (the images of e2e_bench need PIL too)
    paths = []
    for i in range(4):
        im = Image.new("RGB", (448, 448), (40 * i, 90, 200 - 40 * i))
        d = ImageDraw.Draw(im)
        d.rectangle([30 + 20 * i, 40, 200 + 30 * i, 220], fill=(220, 40 + 50 * i, 40))
        d.text((60, 300), f"Invoice {1000 + 7 * i}", fill=(255, 255, 255))
        path = os.path.join(tmp, f"img{i}.jpg")
        im.save(path, quality=90)
        paths.append(path)
    lines = [{"id": i, "messages": [{"role": "user", "content": [
        {"type": "image", "image": p}, {"type": "text", "text": QUESTION}]}],
        "n_predict": 32, "temperature": 0, "ignore_eos": True} for i, p in enumerate(paths)]
    out = {}
    for parallel in (1, 4):
        res = run_batch(args, lines, parallel, 1024)
        # The process's wall time (model load included, the same for both): a request's
        # timings start when a slot takes it, so they do not add up to the batch's makespan.
        out[parallel] = {"makespan_ms": run_batch.wall_ms,
                         "step_ms": statistics.median(step_ms(r) for r in res.values())}
    speedup = out[1]["makespan_ms"] / out[4]["makespan_ms"]
    step_ratio = out[4]["step_ms"] / out[1]["step_ms"]
    print(f"images  4 x 448x448, 32 tokens, process wall time: --parallel 1 "
          f"{out[1]['makespan_ms'] / 1000:.2f} s, "
          f"--parallel 4 {out[4]['makespan_ms'] / 1000:.2f} s: {speedup:.2f}x faster (>= 1.7x); "
          f"decode step {out[1]['step_ms']:.1f} -> {out[4]['step_ms']:.1f} ms "
          f"({step_ratio:.2f}x, <= 1.3x)", flush=True)
    return {"parallel_1": out[1], "parallel_4": out[4], "speedup": speedup,
            "step_ratio": step_ratio}


def follow_up(args, image):
    first = [{"role": "user", "content": [{"type": "image", "image": image},
                                          {"type": "text", "text": QUESTION}]}]
    # The first turn's answer, from a run of its own (greedy: the batch run repeats it).
    answer = run_batch(args, [{"id": 0, "messages": first, "n_predict": 32, "temperature": 0}], 1,
                       2048)[0]["text"]
    second = first + [{"role": "assistant", "content": answer},
                      {"role": "user", "content": FOLLOW_UP}]
    res = run_batch(args, [{"id": 1, "messages": first, "n_predict": 32, "temperature": 0},
                           {"id": 2, "messages": second, "n_predict": 32, "temperature": 0}],
                    1, 2048)
    t1, t2 = res[1]["timings_ms"]["ttft"], res[2]["timings_ms"]["ttft"]
    # The queue time of the second request (waiting for the first) is not part of its TTFT.
    t2 -= res[2]["timings_ms"]["queue"]
    print(f"reuse   follow-up turn: time to first token {t2:.0f} ms = {100 * t2 / t1:.1f} % of the "
          f"first turn's {t1:.0f} ms (<= 10 %); prompt {res[2]['prompt_tokens']} tokens",
          flush=True)
    return {"first_ttft_ms": t1, "follow_up_ttft_ms": t2, "ratio": t2 / t1}


def stream_times(url, messages, n, times, timeout):
    """Streams one chat completion, appending each content chunk's arrival time to times."""
    u = urllib.parse.urlparse(url)
    body = json.dumps({"model": "bench", "messages": messages, "max_tokens": n, "temperature": 0,
                       "ignore_eos": True, "stream": True})
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    buf = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: {") and b'"content"' in line:
                    times.append(time.perf_counter())
    conn.close()


def gap_during_admission(args, image):
    budget = [] if args.admission_budget_ms is None else [
        "--admission-budget-ms", str(args.admission_budget_ms)]
    server = serve_util.Server(args.serve, args.model, "-c", "4096", "--parallel", "2", *budget,
                               "-v", timeout=args.timeout, threads=args.threads)
    try:
        uri = serve_util.data_uri(image)
        stream_times(server.url, [{"role": "user", "content": "warm up"}], 4, [], args.timeout)
        times = []
        runner = threading.Thread(target=stream_times, args=(
            server.url, [{"role": "user", "content": "Tell me a long story."}],
            args.runner_tokens, times, args.timeout))
        runner.start()
        while len(times) < 20:  # the running sequence is streaming
            time.sleep(0.01)
        admit = [time.perf_counter()]
        image_times = []
        stream_times(server.url, [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": uri}},
            {"type": "text", "text": QUESTION}]}], 4, image_times, args.timeout)
        admit.append(image_times[0] if image_times else time.perf_counter())
        runner.join()
    finally:
        server.stop()
    # Admission steps far over their budget, as the server logged them (-v).
    server._drain.join(5)  # noqa: SLF001  (its stderr, read to the end)
    for line in server.log:
        if "admission step" in line:
            print("        " + line.strip(), flush=True)
    gaps = [(b - a) * 1000 for a, b in zip(times, times[1:])]
    during = [(b - a) * 1000 for a, b in zip(times, times[1:]) if b >= admit[0] and a <= admit[1]]
    out = {"median_gap_ms": statistics.median(gaps), "max_gap_during_admission_ms": max(during),
           "median_gap_during_admission_ms": statistics.median(during),
           "p90_gap_during_admission_ms": sorted(during)[int(0.9 * (len(during) - 1))],
           "tokens_during_admission": len(during),
           "runner_outlasted_admission": times[-1] >= admit[1],
           "admission_ms": (admit[1] - admit[0]) * 1000}
    print(f"gap     running sequence: median gap {out['median_gap_ms']:.0f} ms; while a 1280x720 "
          f"image was admitted ({out['admission_ms'] / 1000:.1f} s to its first token) the longest "
          f"gap was {out['max_gap_during_admission_ms']:.0f} ms (median "
          f"{out['median_gap_during_admission_ms']:.0f} ms, 90th percentile "
          f"{out['p90_gap_during_admission_ms']:.0f} ms, over {len(during)} tokens"
          f"{'' if out['runner_outlasted_admission'] else '; the running sequence ended first'})",
          flush=True)
    return out


def main():
    args = parse_args()
    if not e2e_bench.ensure_model(args):
        return 1
    only = {int(x) for x in args.only.split(",")}
    report = {"threads": args.threads}
    with tempfile.TemporaryDirectory() as tmp:
        images = e2e_bench.make_images(tmp)
        if 1 in only:
            report["decode_scaling"] = decode_scaling(args)
        if 2 in only:
            report["images_in_parallel"] = images_in_parallel(args, tmp)
        if 3 in only:
            report["follow_up"] = follow_up(args, images["448x448"])
        if 4 in only:
            report["gap"] = gap_during_admission(args, images["1280x720"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
