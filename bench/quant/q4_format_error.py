"""Weight reconstruction error of candidate 4-bit formats for `--weights q4` (issue 49).

Relative RMS error ||w^ - w|| / ||w|| of each candidate on three synthetic distributions with the
text decoder's row length (2048): uniform (what qvl-synth writes), Gaussian, and Student-t with 4
degrees of freedom (heavy tails, a stand-in for the outliers of trained weights that random
checkpoints do not have). Bytes per weight include the scales. Prints a markdown table.

Usage: python3 bench/quant/q4_format_error.py [--rows 512] [--seed 1]
"""
import argparse

import numpy as np


def f16(x):
    return x.astype(np.float16).astype(np.float32)


def sym_amax7(w, g, scale_type):
    """q = round(w / d) in [-7, 7], d = amax / 7."""
    b = w.reshape(-1, g)
    d = np.abs(b).max(axis=1, keepdims=True) / 7
    d = scale_type(d)
    q = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d > 0)), -7, 7)
    return (q * d).reshape(w.shape)


def sym_signed8(w, g, scale_type):
    """Q4_0-like: d = (the value of largest magnitude, with its sign) / -8, q in [-8, 7]."""
    b = w.reshape(-1, g)
    idx = np.abs(b).argmax(axis=1)
    ext = b[np.arange(b.shape[0]), idx][:, None]
    d = scale_type(ext / -8)
    q = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d != 0)), -8, 7)
    return (q * d).reshape(w.shape)


def with_min(w, g, scale_type):
    """Q4_1-like: w = d * q + m, q in [0, 15], m = block min, d = (max - min) / 15."""
    b = w.reshape(-1, g)
    lo = b.min(axis=1, keepdims=True)
    hi = b.max(axis=1, keepdims=True)
    d = scale_type((hi - lo) / 15)
    m = scale_type(lo)
    q = np.clip(np.rint(np.divide(b - m, d, out=np.zeros_like(b), where=d > 0)), 0, 15)
    return (q * d + m).reshape(w.shape)


def int8(w, g, scale_type):
    b = w.reshape(-1, g)
    d = scale_type(np.abs(b).max(axis=1, keepdims=True) / 127)
    q = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d > 0)), -127, 127)
    return (q * d).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    k = 2048
    std = 1 / np.sqrt(k)
    dists = {
        "uniform (synth)": rng.uniform(-np.sqrt(3) * std, np.sqrt(3) * std, (args.rows, k)),
        "gaussian": rng.normal(0, std, (args.rows, k)),
        "student-t4": rng.standard_t(4, (args.rows, k)) * std / np.sqrt(2),
    }
    dists = {n: v.astype(np.float32) for n, v in dists.items()}
    ident = lambda x: x.astype(np.float32)  # noqa: E731
    cands = []
    for g in (32, 64, 128):
        for sname, st, sbytes in (("f32", ident, 4), ("f16", f16, 2)):
            cands.append((f"sym [-7,7] g{g} {sname}", sym_amax7, g, st, 0.5 + sbytes / g))
            cands.append((f"sym [-8,7] g{g} {sname}", sym_signed8, g, st, 0.5 + sbytes / g))
            cands.append((f"min g{g} {sname}", with_min, g, st, 0.5 + 2 * sbytes / g))
    cands.append(("int8 g64 f32 (q8)", int8, 64, ident, 1 + 4 / 64))
    print("| format | bytes/weight | " + " | ".join(dists) + " |")
    print("|---|---|" + "---|" * len(dists))
    for name, fn, g, st, bpw in cands:
        errs = []
        for w in dists.values():
            r = fn(w, g, st)
            errs.append(np.linalg.norm(r - w) / np.linalg.norm(w))
        print(f"| {name} | {bpw:.4f} | " + " | ".join(f"{e:.4f}" for e in errs) + " |")


if __name__ == "__main__":
    main()
