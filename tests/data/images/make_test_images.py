#!/usr/bin/python3
"""Writes the small decode-test images in this folder and, for each, `<name>.rgb`: the raw
HxWx3 bytes the reference decoder gives (PIL, then transformers' convert_to_rgb: transparency
composited onto white; the oracle's load_image_rgb). PNGs of unusual formats are written by a
minimal encoder here (PIL cannot write 16-bit RGB, 2/4-bit grey or interlaced PNGs).
Deterministic.
Run: cd tests/data/images && /usr/bin/python3 make_test_images.py"""
import io
import struct
import zlib

import numpy as np
from PIL import Image

from pil_reference import reference_rgb

W, H = 37, 23
rng = np.random.default_rng(6)


def smooth(h, w, c, maxval):
    y, x = np.mgrid[0:h, 0:w]
    planes = []
    for k in range(c):
        v = (np.sin(x * (0.3 + 0.1 * k)) + np.cos(y * (0.2 + 0.07 * k)) + 2) / 4
        v = v * 0.8 + 0.2 * rng.random((h, w))
        planes.append(np.clip(v * maxval, 0, maxval))
    return np.stack(planes, -1).round().astype(np.int64)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_rows(samples, bit_depth):
    """samples: HxWxC ints -> list of raw scanlines (no filter byte)."""
    h, w, c = samples.shape
    rows = []
    for r in range(h):
        flat = samples[r].reshape(-1)
        if bit_depth == 16:
            rows.append(flat.astype(">u2").tobytes())
        elif bit_depth == 8:
            rows.append(flat.astype(np.uint8).tobytes())
        else:
            per = 8 // bit_depth
            out = bytearray((len(flat) * bit_depth + 7) // 8)
            for i, v in enumerate(flat):
                out[i // per] |= int(v) << (8 - bit_depth * (i % per + 1))
            rows.append(bytes(out))
    return rows


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def write_png(path, samples, color_type, bit_depth, palette=None, trns=None, interlace=False):
    h, w, _ = samples.shape
    raw = b""
    if interlace:
        for x0, y0, dx, dy in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.size == 0:
                continue
            for row in pack_rows(sub, bit_depth):
                raw += b"\x00" + row
    else:
        for row in pack_rows(samples, bit_depth):
            raw += b"\x00" + row
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0,
                                      1 if interlace else 0))
    if palette is not None:
        png += chunk(b"PLTE", bytes(palette))
    if trns is not None:
        png += chunk(b"tRNS", trns)
    png += chunk(b"IDAT", zlib.compress(raw, 9))
    png += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def save_expected(name):
    a = reference_rgb(name)
    assert a.shape == (H, W, 3) or name.startswith("tiny") or name.startswith("thin"), a.shape
    with open(name.rsplit(".", 1)[0] + "_" + name.rsplit(".", 1)[1] + ".rgb", "wb") as f:
        f.write(a.tobytes())
    print(f"{name}: PIL mode {Image.open(name).mode}, {a.shape[1]}x{a.shape[0]}")


rgb8 = smooth(H, W, 3, 255)
write_png("rgb8.png", rgb8, 2, 8)
write_png("rgb8_interlaced.png", rgb8, 2, 8, interlace=True)
write_png("rgba8.png", np.concatenate([rgb8, smooth(H, W, 1, 255)], -1), 6, 8)
write_png("gray8.png", smooth(H, W, 1, 255), 0, 8)
write_png("gray_alpha8.png", smooth(H, W, 2, 255), 4, 8)
write_png("gray1.png", smooth(H, W, 1, 1), 0, 1)
write_png("gray2.png", smooth(H, W, 1, 3), 0, 2)
write_png("gray4_interlaced.png", smooth(H, W, 1, 15), 0, 4, interlace=True)
write_png("rgb16.png", smooth(H, W, 3, 65535), 2, 16)
write_png("rgba16.png", smooth(H, W, 4, 65535), 6, 16)
write_png("gray16.png", smooth(H, W, 1, 1023), 0, 16)  # PIL mode I: clamps to 255
write_png("gray_alpha16.png", smooth(H, W, 2, 65535), 4, 16)
pal = rng.integers(0, 256, size=16 * 3).astype(np.uint8)
write_png("palette4.png", smooth(H, W, 1, 15), 3, 4, palette=pal)
write_png("palette8_trns.png", smooth(H, W, 1, 15), 3, 8, palette=pal, trns=bytes(range(0, 160, 10)))
write_png("rgb8_trns.png", rgb8, 2, 8, trns=struct.pack(">HHH", 10, 20, 30))
write_png("tiny1x1.png", np.array([[[200, 100, 50]]]), 2, 8)
write_png("thin1x1000.png", smooth(1000, 1, 3, 255), 2, 8)
for name in ["rgb8.png", "rgb8_interlaced.png", "rgba8.png", "gray8.png", "gray_alpha8.png",
             "gray1.png", "gray2.png", "gray4_interlaced.png", "rgb16.png", "rgba16.png",
             "gray16.png", "gray_alpha16.png", "palette4.png", "palette8_trns.png",
             "rgb8_trns.png", "tiny1x1.png", "thin1x1000.png"]:
    save_expected(name)

# JPEGs through PIL (libjpeg-turbo): baseline 4:2:0, 4:4:4, progressive, grey, CMYK (Adobe).
photo = Image.fromarray(rgb8.astype(np.uint8), "RGB")
photo.save("baseline420.jpg", quality=90)
photo.save("baseline444.jpg", quality=95, subsampling=0)
photo.save("progressive.jpg", quality=85, progressive=True)
photo.convert("L").save("gray.jpg", quality=90)
Image.fromarray(smooth(H, W, 4, 255).astype(np.uint8), "CMYK").save("cmyk.jpg", quality=90)
for name in ["baseline420.jpg", "baseline444.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg"]:
    save_expected(name)

# A PNG whose IHDR claims 100000 x 100000 pixels (valid CRCs, tiny IDAT) and a JPEG whose SOF
# claims 60000 x 60000: both must be refused from the header, before allocation.
with open("huge_dims.png", "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0,
                                                              0, 0)) +
            chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))
jpg = bytearray(open("gray.jpg", "rb").read())
sof = jpg.find(b"\xff\xc0")
struct.pack_into(">HH", jpg, sof + 5, 60000, 60000)
with open("huge_dims.jpg", "wb") as f:
    f.write(bytes(jpg))

# Colour keys that do occur in the image (rgb8_trns.png's key matches no pixel): those pixels
# become white. Written last so that the images above keep their random draws.
keyed = rgb8.copy()
keyed[::3, ::4] = (10, 20, 30)
write_png("rgb8_key_hit.png", keyed, 2, 8, trns=struct.pack(">HHH", 10, 20, 30))
gray_keyed = smooth(H, W, 1, 255)
gray_keyed[1::2, ::3] = 77
write_png("gray8_key_hit.png", gray_keyed, 0, 8, trns=struct.pack(">H", 77))
# Grey keys below 8 bits: PIL compares the key with the scaled 8-bit value (2 matches no 2-bit
# pixel, 0 matches black); at 16 bits it compares the raw sample, before the clamp.
write_png("gray2_key2.png", smooth(H, W, 1, 3), 0, 2, trns=struct.pack(">H", 2))
write_png("gray4_key0.png", smooth(H, W, 1, 15), 0, 4, trns=struct.pack(">H", 0))
gray16_keyed = smooth(H, W, 1, 1023)
gray16_keyed[::2, ::5] = 100
write_png("gray16_key_hit.png", gray16_keyed, 0, 16, trns=struct.pack(">H", 100))
for name in ["rgb8_key_hit.png", "gray8_key_hit.png", "gray2_key2.png", "gray4_key0.png",
             "gray16_key_hit.png"]:
    save_expected(name)
