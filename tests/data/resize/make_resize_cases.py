#!/usr/bin/python3
"""Resize/preprocess goldens from the oracle (shared/oracle/qwen3vl_ref.py, torch-uint8 resize).

Inputs are synthetic, generated from an integer formula that tests/model/image_preprocess_test.cpp
reproduces exactly (synthetic_pixel below), so no input image is stored. For each case this writes
into cases.json the smart_resize result and CRC-32 (zlib) checksums of the resized uint8 image and of
the float32 pixel_values bytes; small resized outputs are also stored whole as <name>.rgb so a
failure can show the first differing pixel. Run:
  cd tests/data/resize && /usr/bin/python3 make_resize_cases.py [path/to/oracle]"""
import json
import math
import sys
import zlib

import numpy as np

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "../../../../../shared/oracle")
import qwen3vl_ref as ref  # noqa: E402

M32 = np.uint64(0xFFFFFFFF)


def lowbias32(x):
    x = x & M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & M32
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & M32
    x ^= x >> np.uint64(16)
    return x


def synthetic_image(w, h, seed):
    """Smooth gradients, uniform noise and hard 0/255 edges (these exercise the clamping of the
    negative bicubic lobes)."""
    y, x, c = np.meshgrid(np.arange(h, dtype=np.uint64), np.arange(w, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    hsh = lowbias32((y * np.uint64(w) + x) * np.uint64(3) + c + np.uint64(seed) * np.uint64(0x9E3779B9))
    region = (x // np.uint64(17) + y // np.uint64(13)) % np.uint64(5)
    edge = ((x // np.uint64(29) + y // np.uint64(7) + c) % np.uint64(2)) * np.uint64(255)
    grad = (x * np.uint64(255) // np.uint64(max(w - 1, 1)) + y * np.uint64(3) + c * np.uint64(60)) % np.uint64(256)
    v = np.where(region == 0, hsh & np.uint64(255), np.where(region == 1, edge, grad))
    return v.astype(np.uint8)


def crc(a: np.ndarray) -> str:
    return f"{zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xFFFFFFFF:08x}"


CASES = [
    # name, width, height, seed, min_pixels, max_pixels, store whole resized image
    ("down_1280x720", 1280, 720, 1, 65536, 16777216, False),
    ("up_100x75", 100, 75, 2, 65536, 16777216, True),
    ("wide_1000x10", 1000, 10, 3, 65536, 16777216, True),
    ("tall_10x1000", 10, 1000, 4, 65536, 16777216, True),
    ("down_both_900x700", 900, 700, 5, 4096, 102400, True),
    ("down_big_1999x1001", 1999, 1001, 6, 4096, 40000, True),
    ("mixed_333x97", 333, 97, 7, 65536, 16777216, True),
    ("odd_37x23", 37, 23, 8, 4096, 16777216, True),
    ("keep_64x96", 64, 96, 9, 4096, 16777216, True),
    ("horizontal_only_100x64", 100, 64, 11, 4096, 16777216, True),
    ("vertical_only_up_64x50", 64, 50, 12, 4096, 16777216, True),
    ("tiny_1x1", 1, 1, 10, 65536, 16777216, False),
]

def hf_smart_resize(h, w, factor, mn, mx):
    """Current HF smart_resize (spec section 3.2): like the oracle's, minus its older check that
    both sides are at least `factor`."""
    if max(h, w) / min(h, w) > 200:
        raise ValueError("aspect ratio")
    hb = round(h / factor) * factor
    wb = round(w / factor) * factor
    if hb * wb > mx:
        beta = math.sqrt((h * w) / mx)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < mn:
        beta = math.sqrt(mn / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


out = []
for name, w, h, seed, mn, mx, store in CASES:
    img = synthetic_image(w, h, seed)
    rh, rw = hf_smart_resize(h, w, 32, mn, mx)
    if min(h, w) >= 32:
        assert (rh, rw) == ref.smart_resize(h, w, 32, mn, mx)
    # ref.preprocess_image with the size above: resize, normalise, patchify
    resized = ref.resize_bicubic_torch_uint8(img, rh, rw)
    x = ((resized.astype(np.float64) / 255.0 - 0.5) / 0.5).astype(np.float32).transpose(2, 0, 1)
    pv, thw = ref.patchify(x, 2, 16, 2)
    rec = {"name": name, "width": w, "height": h, "seed": seed, "min_pixels": mn, "max_pixels": mx,
           "resized_width": rw, "resized_height": rh, "grid": list(thw),
           "input_crc32": crc(img), "resized_crc32": crc(resized),
           "pixel_values_crc32": crc(np.ascontiguousarray(pv, np.float32))}
    if store:
        with open(name + ".rgb", "wb") as f:
            f.write(resized.tobytes())
        rec["resized_file"] = name + ".rgb"
    out.append(rec)
    print(name, f"{w}x{h} -> {rw}x{rh}", thw, flush=True)

with open("cases.json", "w") as f:
    json.dump(out, f, indent=1)
