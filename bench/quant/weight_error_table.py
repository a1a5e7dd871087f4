"""Weight reconstruction error per tensor kind: qvl's q8 and q4 (and the vision tower's per-row
int8) next to llama.cpp's Q4_0 and Q4_K_M, on the same tensors (issue 49).

The tensors are read from a bf16 GGUF of the checkpoint (llama.cpp's convert_hf_to_gguf.py); the
llama.cpp columns from the GGUFs llama-quantize made of it, dequantized with llama.cpp's own
gguf-py; qvl's columns apply qvl's formats (kernels/gemm_q8.h, kernels/gemm_q4.h) to the bf16
values in numpy. Error = ||w^ - w|| / ||w|| over the sampled layers, per tensor kind. The Q4_K_M
column names the type llama-quantize chose for each kind (it gives some v and down, and the
output, 6 bits).

Usage:
  python3 bench/quant/weight_error_table.py --gguf-py LLAMA_CPP/gguf-py --bf16 text-bf16.gguf \
      --q4km text-q4_k_m.gguf --q40 text-q4_0.gguf [--layers 0,13,27]
"""
import argparse
import sys

import numpy as np

KINDS = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]


def q8(w, block=64):
    b = w.reshape(w.shape[0], -1, block)
    d = (np.abs(b).max(axis=2, keepdims=True) / 127).astype(np.float32)
    q = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d > 0)), -127, 127)
    return (q * d).reshape(w.shape)


def q4(w, block=32):
    b = w.reshape(w.shape[0], -1, block)
    idx = np.abs(b).argmax(axis=2)
    ext = np.take_along_axis(b, idx[..., None], axis=2)
    d = (ext / -8).astype(np.float16).astype(np.float32)
    q = np.clip(np.rint(np.divide(b, d, out=np.zeros_like(b), where=d != 0)), -8, 7)
    return (q * d).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf-py", required=True)
    ap.add_argument("--bf16", required=True)
    ap.add_argument("--q4km", required=True)
    ap.add_argument("--q40", required=True)
    ap.add_argument("--layers", default="0,13,27")
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402  (llama.cpp's reader, from the sources the benchmark builds)

    def tensors(path):
        return {t.name: t for t in gguf.GGUFReader(path).tensors}

    ref, km, q0 = tensors(args.bf16), tensors(args.q4km), tensors(args.q40)
    layers = [int(x) for x in args.layers.split(",")]
    kinds = [(k, [f"blk.{i}.{k}.weight" for i in layers]) for k in KINDS]
    out_name = "output.weight" if "output.weight" in ref else "token_embd.weight"
    kinds.append(("output (tied embedding)", [out_name]))

    def deq(t):
        return gguf.dequantize(t.data, t.tensor_type).astype(np.float32)

    print("| tensor kind | qvl q8 | qvl q4 | llama.cpp Q4_0 | llama.cpp Q4_K_M (type) |")
    print("|---|---|---|---|---|")
    for kind, names in kinds:
        acc = {"q8": [0.0, 0.0], "q4": [0.0, 0.0], "q40": [0.0, 0.0], "km": [0.0, 0.0]}
        types = set()
        for n in names:
            w = deq(ref[n])
            for key, approx in (("q8", q8(w)), ("q4", q4(w)), ("q40", deq(q0[n])),
                                ("km", deq(km[n]))):
                acc[key][0] += float(np.sum((approx - w) ** 2))
                acc[key][1] += float(np.sum(w ** 2))
            types.add(km[n].tensor_type.name)
        e = {k: (v[0] / v[1]) ** 0.5 for k, v in acc.items()}
        print(f"| {kind} | {e['q8']:.4f} | {e['q4']:.4f} | {e['q40']:.4f} | {e['km']:.4f} "
              f"({'/'.join(sorted(types))}) |")


if __name__ == "__main__":
    main()
