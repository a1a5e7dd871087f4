#!/usr/bin/python3
"""PIL + numpy doing what qvl's image path does (bench/image_bench.cpp runs this in the same
process run and reports the ratio): decode a JPEG, convert("RGB"), smart_resize, bicubic resize
(Pillow's, as HF's PIL-backend processor does), rescale + normalise in float32, duplicate the
frame and flatten into merge-window patches (numpy reshape/transpose/copy).

  /usr/bin/python3 bench/image_bench_pil.py --jpeg IMAGE.jpg [--repeat 10]
prints one JSON line: {"decode_ms": median, "total_ms": median, "runs": n, "shape": [...]}
(milliseconds of process CPU time)"""
import argparse
import json
import math
import statistics
import time

import numpy as np
from PIL import Image


def smart_resize(h, w, factor=32, min_pixels=65536, max_pixels=16777216):
    hb = round(h / factor) * factor
    wb = round(w / factor) * factor
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


def run(path):
    # CPU time of this process: the machine is shared, and the C++ side reports thread CPU time.
    t0 = time.process_time()
    im = Image.open(path)
    im = im.convert("RGB")
    t1 = time.process_time()
    rh, rw = smart_resize(im.height, im.width)
    if (rh, rw) != (im.height, im.width):
        im = im.resize((rw, rh), Image.BICUBIC)
    x = np.asarray(im, dtype=np.float32) * np.float32(1 / 255)
    x = (x - np.float32(0.5)) / np.float32(0.5)
    frames = np.repeat(x.transpose(2, 0, 1)[None], 2, axis=0)  # (t, c, h, w)
    gh, gw = rh // 16, rw // 16
    pv = frames.reshape(1, 2, 3, gh // 2, 2, 16, gw // 2, 2, 16)
    pv = np.ascontiguousarray(pv.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)).reshape(gh * gw, 1536)
    t2 = time.process_time()
    return (t1 - t0) * 1e3, (t2 - t0) * 1e3, pv.shape


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jpeg", required=True)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    run(args.jpeg)  # warm-up
    decode, total = [], []
    for _ in range(args.repeat):
        d, t, shape = run(args.jpeg)
        decode.append(d)
        total.append(t)
    print(json.dumps({"decode_ms": statistics.median(decode), "total_ms": statistics.median(total),
                      "runs": args.repeat, "shape": list(shape)}))


if __name__ == "__main__":
    main()
