#!/usr/bin/python3
"""End-to-end benchmark of qvl-run on a full-size synthetic Qwen3-VL-2B checkpoint.

Runs `qvl-run --json` on a 448x448 and a 1280x720 JPEG (generated deterministically) with a short
question, 64 new tokens (--ignore-eos), greedy, at 1 and 2 threads, and prints each figure next to
its floor: the time the work would take at the machine's peak, computed from the FLOP and byte
counts of qwen3vl-spec.md section 9 and the peaks given on the command line, else measured in the
same run (qvl-bench-kernels 'peak/...' rows when the binary has them), else machine.md's figures.

See bench/README.md. Needs /usr/bin/python3 with PIL.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# FLOP / byte model (qwen3vl-spec.md section 9; 1 multiply-add = 2 FLOP).
VIS_FLOP_PER_PATCH = 657_457_152          # F_vis(N) = a*N + b*N^2
VIS_FLOP_PER_PATCH_PAIR = 98_304
LLM_LINEAR_FLOP_PER_TOKEN = 2 * 1_409_286_144  # 2.8186 GFLOP
LLM_ATTN_FLOP_PER_PAIR = 229_376              # per (query, key) pair
LM_HEAD_FLOP = 2 * 2048 * 151_936             # 0.622 GFLOP per token whose logits are needed
# Weights read per decode token (bf16): 28 layers + final norm + lm_head (tied) + one embed row.
DECODE_WEIGHT_BYTES = 2 * (1_409_408_000 + 2048 + 311_164_928 + 2048)
KV_BYTES_PER_TOKEN = 28 * 2 * 8 * 128 * 2     # 114,688 B read per cached token per step
WEIGHT_FILE_BYTES = 4_255_064_064
RSS_SLACK_BYTES = 400e6                       # issue 8: RSS <= weights + KV arena + 400 MB
QVL_PRECISIONS = ("f32", "f32-kv-bf16", "bf16", "bf16-all")  # what QVL_PRECISION accepts

# machine.md (2 cores; 1 core in brackets): FP32 FMA 452-477 (229-245), BF16 dot 908-957
# (451-485) GFLOP/s, DRAM ~37 GB/s typical, one core nearly saturates it.
DEFAULT_PEAKS = {2: {"f32": 470.0, "bf16": 930.0, "dram": 37.0},
                 1: {"f32": 237.0, "bf16": 468.0, "dram": 37.0}}

# Issue 8 targets (2 cores); per image size where they differ.
TARGETS = {"vision_s": {"448x448": 0.75, "1280x720": 4.6},
           "prefill_ms_per_token": 3.5, "ttft_s": {"448x448": 1.5},
           "decode_ms_per_token": 100.0}

IMAGES = [("448x448", 448, 448), ("1280x720", 1280, 720)]
WARMUP_SUFFIX = "/warmup"  # make_images' key of an image's warm-up twin
QUESTION = "What is in this image?"
# The llama.cpp text models of the peer table (bench/peers_e2e/compare.py).
LLAMACPP_ROWS = ("text-bf16", "text-q8_0", "text-q4_k_m")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--qvl-run", default=os.path.join(REPO, "build/apps/qvl-run"))
    p.add_argument("--synth", default=os.path.join(REPO, "build/apps/qvl-synth"),
                   help="qvl-synth, used when --model has no model.safetensors")
    p.add_argument("--bench-kernels", default=os.path.join(REPO, "build/bench/qvl-bench-kernels"),
                   help="qvl-bench-kernels, asked for its 'peak/...' rows")
    p.add_argument("--model", default=os.path.join(REPO, "models/qwen3vl-2b-synth"))
    p.add_argument("--tokenizer-dir", default=os.path.join(REPO, "tests/data/tiny-qwen3vl"),
                   help="tokenizer files copied into a new synthetic checkpoint")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("-n", "--n-predict", type=int, default=64)
    p.add_argument("--repeat", type=int, default=1, help="runs per case; medians are reported")
    p.add_argument("--quick", action="store_true", help="448x448 only, 1 thread")
    p.add_argument("--images", default=",".join(lab for lab, _, _ in IMAGES),
                   help="comma-separated image sizes to run (floor tables and peer table), of "
                        + ", ".join(lab for lab, _, _ in IMAGES))
    p.add_argument("--timeout", type=float, default=1800, help="seconds per qvl-run call")
    p.add_argument("--peak-f32", type=float,
                   help="FP32 GFLOP/s at 2 threads (scaled by threads/2 for other counts)")
    p.add_argument("--peak-bf16", type=float,
                   help="BF16 GFLOP/s at 2 threads (scaled by threads/2 for other counts)")
    p.add_argument("--dram", type=float, help="DRAM read GB/s")
    p.add_argument("--precision", choices=QVL_PRECISIONS,
                   help="QVL_PRECISION for qvl-run (default: its own choice, the fastest "
                        "precision of the CPU: bf16 products, plus bf16 attention where bf16 "
                        "dot products are the fast path; f32 products over a bf16 KV cache "
                        "without bf16 instructions)")
    p.add_argument("--isa", choices=("scalar", "avx2", "avx512", "avx512bf16"),
                   help="QVL_ISA for qvl-run: measure a lower kernel tier (avx2: the floors then "
                        "use the AVX2 FMA peak, qvl-bench-kernels' peak/avx2_fp32 row)")
    p.add_argument("--no-measure-peaks", action="store_true",
                   help="do not run qvl-bench-kernels for the peaks")
    p.add_argument("--json", metavar="OUT", help="also write all figures to OUT as JSON")
    p.add_argument("--cold", action="store_true",
                   help="drop the checkpoint's files from the page cache before every qvl-run "
                        "call (posix_fadvise DONTNEED), as after a reboot or when other programs "
                        "pushed them out: load and time to first token then include disk reads")
    p.add_argument("--peers", default="",
                   help="comma-separated peer engines for the peer table: hf (bf16), hf-f32, llamacpp "
                        "(set up on first use in --peers-cache; see bench/README.md); none: the "
                        "peer table with qvl's rows only")
    p.add_argument("--llamacpp-rows", default=",".join(LLAMACPP_ROWS),
                   help="comma-separated llama.cpp text models of the peer table, of "
                        + ", ".join(LLAMACPP_ROWS))
    p.add_argument("--peers-only", action="store_true",
                   help="with --peers: skip the per-thread floor tables, run only the peer table")
    p.add_argument("--peers-cache", default=None,
                   help="venv, llama.cpp build and GGUF files (default ~/.cache/qvl-bench-peers)")
    p.add_argument("--peer-threads", type=int, default=2, help="threads of the peer table")
    p.add_argument("--peer-n", type=int, default=32, help="generated tokens in the peer table")
    p.add_argument("--peers-warm", action="store_true",
                   help="peer table: also measure every engine that can answer a second request "
                        "in one process (qvl through --batch, Hugging Face) on that second "
                        "request, after a first one on another image of the same size: a "
                        "running server's figures (llama-mtmd-cli answers one request per process "
                        "and has first-request rows only)")
    p.add_argument("--qvl-extra", default="bf16-all,q8,q4,q4-vq8",
                   help="comma-separated extra qvl rows of the peer table: a QVL_PRECISION "
                        "(f32, f32-kv-bf16, bf16, bf16-all), q8 (--weights q8), q4 (--weights "
                        "q4), q4-vq8 (--weights q4 --vision-weights q8) or no-screen "
                        "(QVL_LOGITS_SCREEN=0: every logit computed); '' for none")
    a = p.parse_args()
    a.peers = [x.strip() for x in a.peers.split(",") if x.strip()]
    bad = [x for x in a.peers if x not in ("hf", "hf-f32", "llamacpp", "none")]
    if bad:
        p.error(f"--peers: unknown engine(s) {bad}; known: hf, hf-f32, llamacpp, none")
    a.peer_table = bool(a.peers)
    a.peers = [x for x in a.peers if x != "none"]
    a.llamacpp_rows = [x.strip() for x in a.llamacpp_rows.split(",") if x.strip()]
    if any(x not in LLAMACPP_ROWS for x in a.llamacpp_rows):
        p.error(f"--llamacpp-rows: {a.llamacpp_rows}; known: {', '.join(LLAMACPP_ROWS)}")
    a.images = [x.strip() for x in a.images.split(",") if x.strip()]
    if not a.images or any(x not in [lab for lab, _, _ in IMAGES] for x in a.images):
        p.error(f"--images: {a.images}; known: {', '.join(lab for lab, _, _ in IMAGES)}")
    from peers_e2e import runners  # the row names only (no peer set-up)
    a.qvl_extra = [x.strip() for x in a.qvl_extra.split(",") if x.strip()]
    for x in a.qvl_extra:
        if x not in QVL_PRECISIONS + tuple(runners.QVL_WEIGHT_ROWS) + ("no-screen",):
            p.error(f"--qvl-extra: unknown row {x!r} ({', '.join(QVL_PRECISIONS)}, "
                    f"{', '.join(runners.QVL_WEIGHT_ROWS)} or no-screen)")
    return a


# ---------------------------------------------------------------------------------------------
# Inputs

def make_images(folder):
    """Deterministic JPEGs with edges, gradients and texture (not flat: JPEG decode cost counts)."""
    import random
    import numpy as np
    from PIL import Image, ImageDraw
    paths = {}
    for label, w, h in IMAGES:
        rng = random.Random(w * 10007 + h)
        y, x = np.mgrid[0:h, 0:w]
        rgb = np.stack([x * 255 // w, y * 255 // h, ((x ^ y) * 3) & 255], axis=-1)
        img = Image.fromarray(rgb.astype(np.uint8), "RGB")
        draw = ImageDraw.Draw(img)
        for _ in range(40):
            x0, y0 = rng.randrange(w), rng.randrange(h)
            x1, y1 = x0 + rng.randrange(20, w // 3), y0 + rng.randrange(20, h // 3)
            color = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            if rng.random() < 0.5:
                draw.rectangle([x0, y0, x1, y1], fill=color)
            else:
                draw.ellipse([x0, y0, x1, y1], outline=color, width=4)
        path = os.path.join(folder, f"bench_{label}.jpg")
        img.save(path, "JPEG", quality=90)
        paths[label] = path
        # The first request of a warm measurement (--peers-warm): same size, so the same work,
        # but other pixels, so no engine can answer it from a cache of the measured image.
        path = os.path.join(folder, f"bench_{label}_warmup.jpg")
        img.transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(path, "JPEG", quality=90)
        paths[label + WARMUP_SUFFIX] = path
    return paths


def ensure_model(args):
    weights = os.path.join(args.model, "model.safetensors")
    if os.path.exists(weights):
        return True
    if not os.path.exists(args.synth):
        log(f"e2e_bench: error: {weights} is missing and qvl-synth was not found at {args.synth}")
        log("hint: cmake --build build --target qvl-synth, or pass --synth / --model")
        return False
    cmd = [args.synth, "--out", args.model, "--tokenizer-dir", args.tokenizer_dir]
    log("e2e_bench: creating the synthetic checkpoint: " + shlex.join(cmd))
    r = subprocess.run(cmd)
    if r.returncode != 0 or not os.path.exists(weights):
        log(f"e2e_bench: error: qvl-synth failed (exit {r.returncode})")
        return False
    return True


def check_model_size(model_dir):
    """The floors assume Qwen3-VL-2B; say so when the folder holds another size."""
    try:
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        text, vision = cfg["text_config"], cfg["vision_config"]
        dims = (text["hidden_size"], text["num_hidden_layers"], text["intermediate_size"],
                vision["hidden_size"], vision["depth"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        log(f"e2e_bench: warning: cannot read {model_dir}/config.json ({e})")
        return
    if dims != (2048, 28, 6144, 1024, 24):
        log(f"e2e_bench: warning: {model_dir} is not Qwen3-VL-2B sized (text hidden/layers/ffn, "
            f"vision hidden/depth = {dims}); the floors below assume the 2B model")


# ---------------------------------------------------------------------------------------------
# Peaks

def classify_peak(name):
    n = re.sub(r"threads[=:]\d+", "", name.lower())
    if "avx2" in n:
        return "avx2_f32"
    if "bf16" in n:
        return "bf16"
    if "dram" in n and "median" in n:
        return "dram_median"
    if any(k in n for k in ("dram", "stream", "mem", "read", "bandwidth")):
        return "dram"
    if any(k in n for k in ("f32", "fp32", "fma")):
        return "f32"
    return None


def measure_peaks(args, thread_counts):
    """Peak rows of qvl-bench-kernels: {threads: {kind: value}} or {} if unavailable."""
    if args.no_measure_peaks or not os.path.exists(args.bench_kernels):
        return {}
    cmd = [args.bench_kernels, "--benchmark_filter=peak/.*", "--benchmark_format=json",
           "--benchmark_min_time=0.2"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        rows = json.loads(r.stdout).get("benchmarks", []) if r.returncode == 0 else []
    except (subprocess.SubprocessError, ValueError, OSError) as e:
        log(f"e2e_bench: peak measurement failed: {e}")
        return {}
    found = {}
    for row in rows:
        name = row.get("name", "")
        kind = classify_peak(name)
        m = re.search(r"threads[=:](\d+)", name)
        threads = int(m.group(1)) if m else 1
        value = row.get("GBps") if kind.startswith("dram") else row.get("GFLOPS")
        if kind and value and threads in thread_counts:
            found.setdefault(threads, {})[kind] = float(value)
    return found


def resolve_peaks(args, thread_counts):
    """Per thread count: values and where each came from."""
    measured = measure_peaks(args, thread_counts)
    if args.isa in ("avx2", "scalar", "avx512"):
        # These tiers have no bf16 dot product, whatever the CPU has: bf16 operands are widened
        # and multiplied by f32 FMAs, so the FP32 peak is their floor (QVL_ISA=avx512 on a Zen 4
        # was divided by the vdpbf16ps peak, twice the FMA peak, and its vision tower showed
        # 42 % of a floor it could not reach).
        # QVL_ISA=avx2 runs ymm FMAs: its floors divide by the AVX2 peak.
        for t, kinds in measured.items():
            kinds.pop("bf16", None)
            if args.isa != "avx512" and "avx2_f32" in kinds:
                kinds["f32"] = kinds["avx2_f32"]
    peaks = {}
    for t in thread_counts:
        default = DEFAULT_PEAKS.get(t, {k: v * t / 2 for k, v in DEFAULT_PEAKS[2].items()})
        entry = {}
        for kind, cli in (("f32", args.peak_f32), ("bf16", args.peak_bf16), ("dram", args.dram)):
            if cli is not None:
                # The command line gives 2-thread figures (as machine.md does); compute peaks
                # scale with threads, DRAM bandwidth does not (one core nearly saturates it).
                scale = 1.0 if kind == "dram" else t / 2
                entry[kind] = (cli * scale, "command line" + ("" if scale == 1 else " (scaled)"))
            elif kind in measured.get(t, {}):
                entry[kind] = (measured[t][kind], "measured (qvl-bench-kernels)")
            elif kind == "bf16" and "f32" in measured.get(t, {}):
                # No bf16 dot-product instructions (the peak loop refused to run): bf16 weights
                # are widened and multiplied in f32, so the FP32 peak is this machine's floor.
                entry[kind] = (measured[t]["f32"],
                               f"QVL_ISA={args.isa} has no bf16 dot product: FP32 peak" if args.isa
                               else "this CPU has no bf16 dot product: FP32 peak")
            else:
                entry[kind] = (default[kind], "machine.md default")
        if args.dram is None and "dram_median" in measured.get(t, {}):
            # What this host sustained (the median of the probe's 8 reads): decode gets a second
            # floor from it, beside the one from the fastest read.
            entry["dram_median"] = (measured[t]["dram_median"], "median of the same 8 reads")
        peaks[t] = entry
    return peaks


# ---------------------------------------------------------------------------------------------
# Runs

def drop_from_page_cache(folder):
    """Asks the kernel to forget the cached pages of every file in folder (clean pages only,
    which a read-only checkpoint's are)."""
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_case(args, image_path, threads):
    cmd = [args.qvl_run, "-m", args.model, "-i", image_path, "-p", QUESTION,
           "-n", str(args.n_predict), "--ignore-eos", "--temp", "0", "--json", "-t", str(threads)]
    env = dict(os.environ)
    if args.precision:
        env["QVL_PRECISION"] = args.precision
    if args.isa:
        env["QVL_ISA"] = args.isa
    if args.cold:
        drop_from_page_cache(args.model)
    log("e2e_bench: " + ("(cold) " if args.cold else "")
        + (f"QVL_PRECISION={args.precision} " if args.precision else "")
        + (f"QVL_ISA={args.isa} " if args.isa else "") + shlex.join(cmd))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout:.0f} s"
    except OSError as e:
        return None, f"cannot run {args.qvl_run}: {e}"
    if r.returncode != 0:
        err = "\n".join(r.stderr.strip().splitlines()[-3:]) or "(no stderr)"
        return None, f"exit {r.returncode}: {err}"
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, f"stdout is not one JSON object ({e}); starts {r.stdout[:120]!r}"


def image_patches(img):
    """Vision patches N of one image entry (4 per LLM token after the 2x2 merge)."""
    if img.get("tokens"):
        return 4 * int(img["tokens"])
    if img.get("resized_width") and img.get("resized_height"):
        return (int(img["resized_width"]) // 16) * (int(img["resized_height"]) // 16)
    return None


def figures(result, n_predict):
    """Measured figures (seconds, tokens/s, MB) from one qvl-run JSON object."""
    t = result.get("timings_ms", {})
    sec = lambda k: t[k] / 1000.0 if isinstance(t.get(k), (int, float)) else None
    prompt = result.get("prompt_tokens")
    n_prompt = len(prompt) if isinstance(prompt, list) else prompt
    n_gen = len(result["tokens"]) if isinstance(result.get("tokens"), list) else n_predict
    images = result.get("images") or [{}]
    decode_s = sec("decode")
    decode_tps = result.get("decode_tokens_per_s")
    if decode_tps is None and decode_s and n_gen:
        decode_tps = n_gen / decode_s
    prefill_tps = result.get("prefill_tokens_per_s")
    if prefill_tps is None and sec("prefill") and n_prompt:
        prefill_tps = n_prompt / sec("prefill")
    pre = [sec("image_decode"), sec("preprocess")]
    return {
        "load_s": sec("load"),
        "image_decode_s": sec("image_decode"),
        "preprocess_s": sec("preprocess"),
        "decode_preprocess_s": sum(pre) if None not in pre else None,
        "vision_s": sec("vision"),
        "prefill_s": sec("prefill"),
        "prefill_tokens_per_s": prefill_tps,
        "prefill_ms_per_token": 1000.0 / prefill_tps if prefill_tps else None,
        "ttft_s": sec("ttft"),
        "decode_s": decode_s,
        "decode_tokens_per_s": decode_tps,
        "decode_ms_per_token": 1000.0 / decode_tps if decode_tps else None,
        "total_s": sec("total"),
        "peak_rss_mb": result.get("peak_rss_mb"),
        "prompt_tokens": n_prompt,
        "generated_tokens": n_gen,
        "image_tokens": images[0].get("tokens"),
        "patches": image_patches(images[0]),
        "resized": f'{images[0].get("resized_width")}x{images[0].get("resized_height")}',
    }


def decode_floor_s(prompt, generated, dram, flops):
    """Step k reads the weights and the KV of prompt + k cached tokens; FLOPs run in parallel."""
    steps = []
    for k in range(generated):
        ctx = prompt + k
        mem = (DECODE_WEIGHT_BYTES + KV_BYTES_PER_TOKEN * ctx) / dram
        comp = (LLM_LINEAR_FLOP_PER_TOKEN + LM_HEAD_FLOP + LLM_ATTN_FLOP_PER_PAIR * ctx) / flops
        steps.append(max(mem, comp))
    return sum(steps)


def floors(fig, peaks, ctx_size=4096):
    """The same figures at the machine's peak (bf16 products, DRAM bandwidth). The compute peak
    is the faster of the bf16 dot product and the FP32 FMA: on the Intel Xeons seen here
    vdpbf16ps runs at about half the FMA's FLOP rate, so bf16 weights widened to f32 and
    multiplied by FMAs are this machine's fastest bf16 product (what qvl runs there)."""
    bf16 = max(peaks["bf16"][0], peaks.get("f32", (0.0, ""))[0]) * 1e9
    dram = peaks["dram"][0] * 1e9
    out = {}
    n = int(fig["patches"]) if fig.get("patches") else None
    if n:
        out["vision_flop"] = VIS_FLOP_PER_PATCH * n + VIS_FLOP_PER_PATCH_PAIR * n * n
        out["vision_s"] = out["vision_flop"] / bf16
    p = int(fig["prompt_tokens"]) if fig.get("prompt_tokens") else None
    if p:
        # Causal prefill: token i (1-based) attends to i keys; logits for the last token only.
        flop = LLM_LINEAR_FLOP_PER_TOKEN * p + LLM_ATTN_FLOP_PER_PAIR * p * (p + 1) // 2
        flop += LM_HEAD_FLOP
        out["prefill_flop"] = flop
        out["prefill_s"] = flop / bf16
        out["prefill_tokens_per_s"] = p / out["prefill_s"]
        out["prefill_ms_per_token"] = 1000.0 * out["prefill_s"] / p
        out["ttft_s"] = out["prefill_s"] + out.get("vision_s", 0.0)
        g = int(fig.get("generated_tokens") or 0)
        if g:
            out["decode_s"] = decode_floor_s(p, g, dram, bf16)
            out["decode_ms_per_token"] = 1000.0 * out["decode_s"] / g
            out["decode_tokens_per_s"] = g / out["decode_s"]
            if "dram_median" in peaks:
                out["decode_ms_per_token_median_dram"] = 1000.0 * decode_floor_s(
                    p, g, peaks["dram_median"][0] * 1e9, bf16) / g
    out["rss_budget_mb"] = (WEIGHT_FILE_BYTES + KV_BYTES_PER_TOKEN * ctx_size
                            + RSS_SLACK_BYTES) / 1e6
    return out


def median_figures(runs):
    keys = runs[0].keys()
    out = {}
    for k in keys:
        vals = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        if not vals:
            out[k] = runs[0].get(k)
        elif all(isinstance(v, int) for v in vals):
            out[k] = statistics.median_low(vals)  # counts stay integers
        else:
            out[k] = statistics.median(vals)
    return out


# ---------------------------------------------------------------------------------------------
# Report

def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.3f} s" if v < 10 else f"{v:.1f} s"
    if unit == "ms":
        return f"{v:.2f} ms"
    if unit == "tok/s":
        return f"{v:.1f} tok/s"
    if unit == "MB":
        return f"{v:.0f} MB"
    return str(v)


def target_for(key, label):
    t = TARGETS.get(key)
    return t.get(label) if isinstance(t, dict) else t


def print_table(case, fig, flo):
    label, threads = case["image"], case["threads"]
    print(f"\n== {label} (resized {fig.get('resized')}, {fig.get('image_tokens')} image tokens, "
          f"{fig.get('prompt_tokens')} prompt tokens, {fig.get('generated_tokens')} generated), "
          f"{threads} thread(s){', checkpoint cold (not in the page cache)' if case.get('cold') else ''}")
    print(f"{'figure':<22}{'measured':>14}{'floor':>14}{'floor/measured':>16}{'target':>12}")
    rows = [("load", "load_s", "s", None),
            ("image decode", "image_decode_s", "s", None),
            ("preprocess", "preprocess_s", "s", None),
            ("vision encode", "vision_s", "s", "time"),
            ("prefill", "prefill_s", "s", "time"),
            ("prefill per token", "prefill_ms_per_token", "ms", "time"),
            ("prefill speed", "prefill_tokens_per_s", "tok/s", "rate"),
            ("time to first token", "ttft_s", "s", "time"),
            ("decode per token", "decode_ms_per_token", "ms", "time"),
            ("  at median DRAM", "decode_ms_per_token", "ms", "time",
             "decode_ms_per_token_median_dram"),
            ("decode speed", "decode_tokens_per_s", "tok/s", "rate"),
            ("total", "total_s", "s", None)]
    for name, key, unit, kind, *floor_key in rows:
        if floor_key and floor_key[0] not in flo:
            continue
        m, f = fig.get(key), flo.get(floor_key[0] if floor_key else key)
        share = "-"
        if kind and m and f:
            share = f"{100.0 * (f / m if kind == 'time' else m / f):.0f} %"
        tgt = target_for(key, label) if threads == 2 and not floor_key else None
        tgt_s = "-"
        if tgt is not None and m is not None:
            tgt_s = f"{tgt:g}{' ok' if m <= tgt else ' MISS'}"
        print(f"{name:<22}{fmt(m, unit):>14}{fmt(f if kind else None, unit):>14}"
              f"{share:>16}{tgt_s:>12}")
    rss, budget = fig.get("peak_rss_mb"), flo.get("rss_budget_mb")
    verdict = "-" if rss is None else ("ok" if rss <= budget else "MISS")
    print(f"{'peak RSS':<22}{fmt(rss, 'MB'):>14}{fmt(budget, 'MB'):>14}{'(budget)':>16}"
          f"{verdict:>12}")


def run_peers(args, images, paths, report):
    """The peer table (bench/peers_e2e); returns the number of failed cells and setups."""
    from peers_e2e import compare, setup_env
    args.peers_cache = args.peers_cache or setup_env.default_cache_dir()
    args.question_text = QUESTION
    args.images_for_peers = images
    args.warmup_suffix = WARMUP_SUFFIX
    table = compare.run_peer_table(args, paths)
    report["peer_table"] = table
    return sum(len(row["errors"]) for row in table["rows"])


def main():
    args = parse_args()
    try:
        thread_counts = sorted({int(x) for x in args.threads.split(",") if x.strip()})
    except ValueError:
        log(f"e2e_bench: error: --threads {args.threads!r} is not a comma-separated list")
        return 2
    images = [im for im in IMAGES if im[0] in args.images]
    if args.quick:
        thread_counts, images = [1], IMAGES[:1]
    if not os.path.exists(args.qvl_run):
        log(f"e2e_bench: error: qvl-run not found at {args.qvl_run}")
        log("hint: cmake --build build --target qvl-run, or pass --qvl-run PATH")
        return 1
    if not ensure_model(args):
        return 1

    check_model_size(args.model)
    if args.peers_only and args.peer_table:
        # No floor tables, so no peaks: the machine.md defaults printed here read as this
        # machine's figures, and they are the fastest CPU's (twice a Zen 4's bf16 peak).
        peaks = {}
        print("Peaks: not measured (--peers-only prints no floor tables)")
    else:
        peaks = resolve_peaks(args, thread_counts)
        print("Peaks used for the floors (the faster of bf16 and f32 compute for FLOPs, DRAM read "
              "for decode bytes):")
        for t in thread_counts:
            parts = [f"{k} {v:.0f} {'GB/s' if k.startswith('dram') else 'GFLOP/s'} [{src}]"
                     for k, (v, src) in peaks[t].items()]
            print(f"  {t} thread(s): " + "; ".join(parts))

    tmp = tempfile.mkdtemp(prefix="qvl_e2e_")
    report = {"model": args.model, "n_predict": args.n_predict, "question": QUESTION,
              "isa": args.isa or "auto", "precision": args.precision or "auto",
              "peaks": {str(t): {k: {"value": v, "source": s} for k, (v, s) in p.items()}
                        for t, p in peaks.items()},
              "cases": []}
    failures = 0
    try:
        paths = make_images(tmp)
        for threads in ([] if args.peers_only and args.peer_table else thread_counts):
            for label, _, _ in images:
                case = {"image": label, "threads": threads, "cold": args.cold}
                runs, error = [], None
                for _ in range(max(1, args.repeat)):
                    result, error = run_case(args, paths[label], threads)
                    if result is None:
                        break
                    try:
                        runs.append(figures(result, args.n_predict))
                    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
                        error = f"unexpected JSON from qvl-run: {type(e).__name__}: {e}"
                        break
                if not error:
                    try:
                        fig = median_figures(runs)
                        flo = floors(fig, peaks[threads])
                        print_table(case, fig, flo)
                        case.update(measured=fig, floor=flo, runs=len(runs))
                    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
                        error = f"cannot evaluate qvl-run's figures: {type(e).__name__}: {e}"
                if error:
                    failures += 1
                    print(f"\n== {label}, {threads} thread(s): qvl-run failed: {error}")
                    case["error"] = error
                report["cases"].append(case)
        if args.peer_table:
            if args.isa:  # the peer table's qvl rows run the same tier (runners.run_qvl's env)
                os.environ["QVL_ISA"] = args.isa
            failures += run_peers(args, images, paths, report)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"\nwrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
