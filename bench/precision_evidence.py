#!/usr/bin/python3
"""Accuracy evidence for qvl's precision modes (issue 14, item 3): how far qvl's logits are from
the float64 goldens in `bf16` and `bf16-all`, beside Hugging Face transformers' own error when it
runs the same checkpoint in bf16 with sdpa attention (the yardstick: what users accept today).

For every golden case (tests/data/golden*/<case>/, made by the float64 oracle from the tiny
checkpoint tests/data/tiny-qwen3vl) it compares the last prompt position's logits and the 16
greedy tokens:
- transformers: the golden's own input_ids, pixel_values and image_grid_thw go straight into
  Qwen3VLForConditionalGeneration (bf16 and, as a check of this harness, f32), so only the
  model's arithmetic differs from the oracle;
- qvl: `qvl-run --messages case.json --temp 0 -n 16 --ignore-eos --json --dump-logits` with
  QVL_PRECISION=f32 / f32-kv-bf16 / bf16 / bf16-all.
Metrics per case: max abs error, max abs error / max |ref|, relative L2 error, cosine, top-1
agreement, and greedy agreement (tokens equal to the golden's before the first difference, /16).

usage: bench/precision_evidence.py [--qvl-run build/release/apps/qvl-run] [--json OUT]
The transformers venv is the e2e bench's (bench/peers_e2e/setup_env.py; created on first use).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "tools"))
from conformance import read_safetensors  # noqa: E402  (the goldens' reader, one copy)

IMAGE_TOKEN_ID = 151655
QVL_PRECISIONS = ("f32", "f32-kv-bf16", "bf16", "bf16-all")


def golden_cases(testdata):
    out = []
    for case in sorted(glob.glob(os.path.join(testdata, "golden*", "*", "case.json"))):
        folder = os.path.dirname(case)
        out.append((os.path.basename(folder), folder))
    return out


# ---------------------------------------------------------------------------------------------
# Hugging Face side (runs inside the venv)

def hf_worker(model_dir, cases, dtype, out_dir):
    import torch
    from transformers import Qwen3VLForConditionalGeneration
    torch.manual_seed(0)
    model = Qwen3VLForConditionalGeneration.from_pretrained(
        model_dir, dtype=getattr(torch, dtype), attn_implementation="sdpa").eval()
    for name, folder in cases:
        g = read_safetensors(os.path.join(folder, "golden.safetensors"))
        ids = torch.from_numpy(g["input_ids"].astype(np.int64))[None]
        kw = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if "pixel_values" in g:
            kw["pixel_values"] = torch.from_numpy(g["pixel_values"].copy())
            kw["image_grid_thw"] = torch.from_numpy(g["image_grid_thw"].astype(np.int64))
            kw["mm_token_type_ids"] = (ids == IMAGE_TOKEN_ID).long()
        n = int(g["generated_ids"].shape[0])
        with torch.inference_mode():
            logits = model(**kw).logits[0, -1].float().numpy()
            gen = model.generate(**kw, do_sample=False, max_new_tokens=n, min_new_tokens=n,
                                 temperature=None, top_p=None, top_k=None)
        np.save(os.path.join(out_dir, f"{name}.logits.npy"), logits)
        with open(os.path.join(out_dir, f"{name}.tokens.json"), "w") as f:
            json.dump(gen[0, ids.shape[1]:].tolist(), f)
    with open(os.path.join(out_dir, "versions.json"), "w") as f:
        import transformers
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__}, f)


def run_hf(py, model_dir, testdata, dtype, out_dir):
    cmd = [py, os.path.abspath(__file__), "--hf-worker", dtype, "--model", model_dir,
           "--testdata", testdata, "--out-dir", out_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"transformers ({dtype}) failed: {r.stderr[-1500:]}")


# ---------------------------------------------------------------------------------------------
# qvl side

def run_qvl(qvl_run, model_dir, case_folder, precision, out_dir, name):
    lg = os.path.join(out_dir, f"{name}.logits.npy")
    cmd = [qvl_run, "-m", model_dir, "--messages", os.path.join(case_folder, "case.json"),
           "--temp", "0", "-n", "16", "--ignore-eos", "--json", "--dump-logits", lg, "-t", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, QVL_PRECISION=precision))
    if r.returncode != 0:
        raise RuntimeError(f"qvl-run ({precision}, {name}) exit {r.returncode}: "
                           f"{r.stderr.strip()[-300:]}")
    with open(os.path.join(out_dir, f"{name}.tokens.json"), "w") as f:
        json.dump(json.loads(r.stdout)["tokens"], f)


# ---------------------------------------------------------------------------------------------
# Metrics and report

def metrics(logits, tokens, g):
    ref = g["logits_last"].astype(np.float64).ravel()
    x = np.asarray(logits, np.float64).ravel()
    want = g["generated_ids"].tolist()
    prefix = 0
    for a, b in zip(tokens, want):
        if a != b:
            break
        prefix += 1
    d = x - ref
    return {"max_abs": float(np.max(np.abs(d))),
            "max_abs_rel": float(np.max(np.abs(d)) / np.max(np.abs(ref))),
            "rel_l2": float(np.linalg.norm(d) / np.linalg.norm(ref)),
            "cosine": float(x @ ref / (np.linalg.norm(x) * np.linalg.norm(ref))),
            "top1": bool(int(np.argmax(x)) == int(np.argmax(ref))),
            "greedy_prefix": prefix, "greedy_len": len(want),
            "ref_top_margin": float(np.sort(ref)[-1] - np.sort(ref)[-2])}


def print_report(table, cases):
    print("| engine | case | max abs err | max abs / max|ref| | rel L2 | cosine | top-1 | "
          "greedy tokens = golden |")
    print("|---|---|---|---|---|---|---|---|")
    for engine, per_case in table.items():
        for name, _ in cases:
            m = per_case.get(name)
            if m is None:
                continue
            print(f"| {engine} | {name} | {m['max_abs']:.2e} | {m['max_abs_rel']:.2e} | "
                  f"{m['rel_l2']:.2e} | {m['cosine']:.6f} | {'yes' if m['top1'] else 'NO'} | "
                  f"{m['greedy_prefix']}/{m['greedy_len']} |")
    print("\nSummary over all cases (worst max abs, worst rel L2, lowest cosine, top-1 hits, "
          "sum of greedy prefixes):")
    print("| engine | worst max abs err | worst rel L2 | lowest cosine | top-1 | greedy |")
    print("|---|---|---|---|---|---|")
    for engine, per_case in table.items():
        ms = list(per_case.values())
        print(f"| {engine} | {max(m['max_abs'] for m in ms):.2e} | "
              f"{max(m['rel_l2'] for m in ms):.2e} | {min(m['cosine'] for m in ms):.6f} | "
              f"{sum(m['top1'] for m in ms)}/{len(ms)} | "
              f"{sum(m['greedy_prefix'] for m in ms)}/{sum(m['greedy_len'] for m in ms)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--qvl-run", default=os.path.join(REPO, "build/release/apps/qvl-run"))
    p.add_argument("--testdata", default=os.path.join(REPO, "tests/data"))
    p.add_argument("--model", default=None, help="default: tests/data/tiny-qwen3vl")
    p.add_argument("--peers-cache", default=None, help="as e2e_bench.py (the venv lives there)")
    p.add_argument("--json", metavar="OUT")
    p.add_argument("--hf-worker", choices=("bfloat16", "float32"), help=argparse.SUPPRESS)
    p.add_argument("--out-dir", help=argparse.SUPPRESS)
    a = p.parse_args()
    model = os.path.abspath(a.model or os.path.join(a.testdata, "tiny-qwen3vl"))
    cases = golden_cases(os.path.abspath(a.testdata))
    if a.hf_worker:
        hf_worker(model, cases, a.hf_worker, a.out_dir)
        return 0
    if not cases:
        print(f"precision_evidence: no golden cases under {a.testdata}", file=sys.stderr)
        return 1
    sys.path.insert(0, HERE)
    from peers_e2e import setup_env
    py = setup_env.ensure_venv(a.peers_cache or setup_env.default_cache_dir())
    goldens = {name: read_safetensors(os.path.join(folder, "golden.safetensors"))
               for name, folder in cases}
    table, versions = {}, {}
    with tempfile.TemporaryDirectory(prefix="qvl_precision_") as tmp:
        engines = [(f"transformers {d} (sdpa)", "hf", d) for d in ("bfloat16", "float32")]
        engines += [(f"qvl QVL_PRECISION={q}", "qvl", q) for q in QVL_PRECISIONS]
        for engine, kind, mode in engines:
            out = os.path.join(tmp, f"{kind}-{mode}")
            os.makedirs(out)
            print(f"precision_evidence: {engine}", file=sys.stderr, flush=True)
            if kind == "hf":
                run_hf(py, model, a.testdata, mode, out)
                with open(os.path.join(out, "versions.json")) as f:
                    versions = json.load(f)
            else:
                for name, folder in cases:
                    run_qvl(a.qvl_run, model, folder, mode, out, name)
            table[engine] = {}
            for name, _ in cases:
                logits = np.load(os.path.join(out, f"{name}.logits.npy"))
                with open(os.path.join(out, f"{name}.tokens.json")) as f:
                    tokens = json.load(f)
                table[engine][name] = metrics(logits, tokens, goldens[name])
    print(f"Goldens: float64 oracle on {os.path.relpath(model, REPO)}; transformers "
          f"{versions.get('transformers', '?')}, torch {versions.get('torch', '?')}\n")
    print_report(table, cases)
    margins = {n: table[next(iter(table))][n]["ref_top_margin"] for n, _ in cases}
    print("\nGolden top1 - top2 logit margin of the last prompt position: "
          + ", ".join(f"{n} {m:.1e}" for n, m in margins.items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": model, "versions": versions, "metrics": table}, f, indent=2)
        print(f"\nwrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
