#!/usr/bin/env python3
"""qvl-serve under concurrent users: the seed's workload (448x448 and 1280x720 JPEGs, an
OCR-style question, 64 tokens) at 1, 2, 4, 8 concurrent streaming clients: QPS, P50/P95 time to
first token, P50/P95 latency, generated tokens/s, the server's peak RSS; then a follow-up
question about the same image (the conversation resent, as OpenAI clients do) against the
first question's time to first token. Every request is about a picture of its own (the image
with a small distinct mark), so no server cache of an earlier request makes it warm.

By default it starts qvl-serve on the full-size synthetic checkpoint (created with qvl-synth
like bench/e2e_bench.py). --url benchmarks a server that is already running instead, e.g. a
peer such as llama.cpp's llama-server with --mmproj on the same checkpoint: any server speaking
the OpenAI Chat Completions API with streaming and data-URI images.

  bench/serve_bench.py --threads 2 --clients 1,2,4,8 --image 448x448
  bench/serve_bench.py --url http://127.0.0.1:8081 --label llama-server
The 10-minute soak (random disconnects, RSS): tests/serve/reliability_test.py --soak-seconds 600"""
import argparse
import base64
import concurrent.futures
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "serve"))
import e2e_bench  # noqa: E402  (images and the synthetic checkpoint, shared with the e2e bench)
import serve_util  # noqa: E402

QUESTION = "What text is in this picture? Answer with the text only."
FOLLOW_UP = "And what colour is the largest shape?"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--serve", default=os.path.join(REPO, "build/apps/qvl-serve"))
    p.add_argument("--synth", default=os.path.join(REPO, "build/apps/qvl-synth"))
    p.add_argument("--model", default=os.path.join(REPO, "models/qwen3vl-2b-synth"))
    p.add_argument("--tokenizer-dir", default=os.path.join(REPO, "tests/data/tiny-qwen3vl"))
    p.add_argument("--url", help="benchmark this running server instead of starting qvl-serve")
    p.add_argument("--label", default="qvl-serve")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--parallel", type=int, default=0, help="slots (default: the most clients)")
    p.add_argument("-c", "--ctx-size", type=int, default=4096)
    p.add_argument("--clients", default="1,2,4,8")
    p.add_argument("--requests", type=int, default=0,
                   help="requests per client count (default: max(4, clients))")
    p.add_argument("--image", default="448x448", help="448x448, 1280x720 or both")
    p.add_argument("-n", "--n-predict", type=int, default=64)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", metavar="OUT", help="also write the figures to OUT")
    p.add_argument("--follow-up-only", action="store_true",
                   help="only the follow-up measurement (no client levels)")
    return p.parse_args()


def stream_request(url, messages, n, timeout):
    """One streamed chat completion: (ttft s, latency s, completion tokens, text, answer)."""
    u = urllib.parse.urlparse(url)
    body = json.dumps({"model": "bench", "messages": messages, "max_tokens": n, "temperature": 0,
                       "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    ttft, tokens, text, buf = None, 0, "", b""
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data: ") or line == b"data: [DONE]":
                    continue
                j = json.loads(line[6:])
                for c in j.get("choices") or []:
                    piece = (c.get("delta") or {}).get("content")
                    if piece:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        text += piece
                if j.get("usage"):
                    tokens = j["usage"]["completion_tokens"]
    latency = time.perf_counter() - t0
    conn.close()
    return ttft if ttft is not None else latency, latency, tokens, text


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q / 100 * (len(v) - 1))))]


def run_level(url, image_uris, clients, requests, n, timeout):
    """requests requests from `clients` concurrent clients, each about its own picture (as
    different users would ask: no cache of an earlier request's prompt or image applies)."""
    def one(i):
        msgs = [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": image_uris[i]}},
            {"type": "text", "text": QUESTION}]}]
        return stream_request(url, msgs, n, timeout)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - t0
    ttfts = [r[0] for r in results]
    lats = [r[1] for r in results]
    tokens = sum(r[2] for r in results)
    return {"clients": clients, "requests": requests, "wall_s": wall, "qps": requests / wall,
            "ttft_p50": pct(ttfts, 50), "ttft_p95": pct(ttfts, 95), "latency_p50": pct(lats, 50),
            "latency_p95": pct(lats, 95), "tokens_per_s": tokens / wall}


FRESH = [0]


def fresh_image_uri(path, tmp):
    """The image with a small mark of its own: a picture the server has not seen (its caches of
    earlier prompts and image features must not make a request warm)."""
    from PIL import Image, ImageDraw  # noqa: PLC0415  (make_images needs PIL too)
    FRESH[0] += 1
    k = FRESH[0]
    im = Image.open(path).convert("RGB")
    # A bright square at a position of its own: distinct pixels after JPEG compression (marks
    # that differ by a shade can decode to identical pixels and hit the caches).
    x, y = 8 + 24 * (k % 16), 8 + 24 * (k // 16 % 16)
    ImageDraw.Draw(im).rectangle([x, y, x + 15, y + 15], fill=(255, 255 - 8 * (k % 32), 0))
    out = os.path.join(tmp, f"fresh{k}.jpg")
    im.save(out, quality=90)
    return serve_util.data_uri(out)


def follow_up(url, image_uri, n, timeout):
    first = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_uri}},
                                          {"type": "text", "text": QUESTION}]}]
    t1, _, _, answer = stream_request(url, first, n, timeout)
    second = first + [{"role": "assistant", "content": answer}, {"role": "user", "content": FOLLOW_UP}]
    t2, _, _, _ = stream_request(url, second, n, timeout)
    return t1, t2


def peak_rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main():
    args = parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    server = None
    if not args.url:
        if not e2e_bench.ensure_model(args):
            return 1
        server = serve_util.Server(args.serve, args.model, "-c", str(args.ctx_size),
                                   "--parallel", str(args.parallel or max(levels)),
                                   timeout=args.timeout, threads=args.threads)
        url = server.url
    else:
        url = args.url.rstrip("/")
    labels = ["448x448", "1280x720"] if args.image == "both" else [args.image]
    rows, follow = [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = e2e_bench.make_images(tmp)
        try:
            for label in labels:
                stream_request(url, [{"role": "user", "content": "warm up"}], 4, args.timeout)
                for c in levels if not args.follow_up_only else []:
                    count = args.requests or max(4, c)
                    uris = [fresh_image_uri(paths[label], tmp) for _ in range(count)]
                    row = run_level(url, uris, c, count, args.n_predict, args.timeout)
                    row["image"] = label
                    rows.append(row)
                    print(f"{args.label:12s} {label:9s} clients {c}: {row['qps']:.3f} QPS, TTFT "
                          f"P50 {row['ttft_p50']:.2f} s P95 {row['ttft_p95']:.2f} s, latency P50 "
                          f"{row['latency_p50']:.2f} s P95 {row['latency_p95']:.2f} s, "
                          f"{row['tokens_per_s']:.1f} tokens/s", flush=True)
                t1, t2 = follow_up(url, fresh_image_uri(paths[label], tmp), args.n_predict,
                                   args.timeout)
                follow.append({"image": label, "first_ttft_s": t1, "follow_up_ttft_s": t2})
                print(f"{args.label:12s} {label:9s} follow-up TTFT {t2:.2f} s = "
                      f"{100 * t2 / t1:.0f} % of the first question's {t1:.2f} s (target <= 15 %)",
                      flush=True)
        finally:
            rss = peak_rss_mb(server.proc.pid) if server else float("nan")
            if server:
                server.stop()
    by = {(r["image"], r["clients"]): r for r in rows}
    for label in labels:
        if (label, 1) in by and (label, 4) in by:
            one, four = by[(label, 1)], by[(label, 4)]
            per_req_1 = one["wall_s"] / one["requests"]
            per_req_4 = four["wall_s"] / four["requests"]
            print(f"{args.label:12s} {label:9s} 4 clients vs 1: {per_req_1 / per_req_4:.2f}x "
                  f"the throughput (target >= 1.7x)")
    if server:
        print(f"{args.label:12s} peak RSS {rss:.0f} MB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"label": args.label, "rows": rows, "follow_up": follow, "peak_rss_mb": rss,
                       "threads": args.threads, "n_predict": args.n_predict}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
