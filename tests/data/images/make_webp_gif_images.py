#!/usr/bin/python3
"""Writes the WebP and GIF decode-test images in this folder and, for each, `<name>.rgb`: the raw
HxWx3 bytes PIL gives after transformers' convert_to_rgb (transparency composited onto white),
as make_test_images.py does for PNG and JPEG. WebPs and ordinary GIFs are written by PIL; GIFs
with unusual layouts (a first frame smaller than the screen or reaching past it, indices past
the palette, no palette) by a minimal writer here that stores every pixel as a literal LZW code.
Deterministic. Run: cd tests/data/images && /usr/bin/python3 make_webp_gif_images.py"""
import struct

import numpy as np
from PIL import Image

from pil_reference import reference_rgb

W, H = 37, 23
rng = np.random.default_rng(51)


def expected(name):
    a = reference_rgb(name)
    stem, ext = name.rsplit(".", 1)
    with open(f"{stem}_{ext}.rgb", "wb") as f:
        f.write(a.tobytes())
    print(f"{name}: PIL mode {Image.open(name).mode}, {a.shape[1]}x{a.shape[0]}")


def lzw_literals(pixels, min_bits):
    """GIF image data holding every pixel as a literal code (a clear code every 8 keeps the
    code width at min_bits + 1)."""
    clear, end, width = 1 << min_bits, (1 << min_bits) + 1, min_bits + 1
    codes = []
    for i, p in enumerate(pixels):
        if i % 8 == 0:
            codes.append(clear)
        codes.append(int(p))
    codes.append(end)
    acc, nbits, packed = 0, 0, bytearray()
    for c in codes:
        acc |= c << nbits
        nbits += width
        while nbits >= 8:
            packed.append(acc & 255)
            acc >>= 8
            nbits -= 8
    if nbits:
        packed.append(acc & 255)
    out = bytearray([min_bits])
    for i in range(0, len(packed), 255):
        out += bytes([len(packed[i:i + 255])]) + packed[i:i + 255]
    return bytes(out + b"\0")


def palette_bytes(pal):
    bits = max(1, (len(pal) // 3 - 1).bit_length())
    return bits, pal + bytes(3 * (1 << bits) - len(pal))


def write_gif(path, screen, gpal, x, y, pixels, trns=None, lpal=None):
    h, w = pixels.shape
    flags, gbytes = 0, b""
    if gpal is not None:
        bits, gbytes = palette_bytes(gpal)
        flags = 0x80 | (bits - 1)
    out = b"GIF89a" + struct.pack("<HHBBB", screen[0], screen[1], flags, 0, 0) + gbytes
    if trns is not None:
        out += bytes([0x21, 0xF9, 4, 1, 0, 0, trns, 0])
    lflags, lbytes = 0, b""
    if lpal is not None:
        bits, lbytes = palette_bytes(lpal)
        lflags = 0x80 | (bits - 1)
    out += b"," + struct.pack("<HHHHB", x, y, w, h, lflags) + lbytes
    # min code size >= 4: eight literals after a clear code never widen the codes
    out += lzw_literals(pixels.reshape(-1), max(4, int(pixels.max()).bit_length())) + b";"
    with open(path, "wb") as f:
        f.write(out)


y, x = np.mgrid[0:H, 0:W]
rgb = np.stack([(x * 7 + y * 3) % 256, (y * 11) % 256, rng.integers(0, 256, (H, W))], -1)
rgb = rgb.astype(np.uint8)
alpha = ((x * 13 + y * 29) % 256).astype(np.uint8)
photo = Image.fromarray(rgb, "RGB")
photo_alpha = Image.fromarray(np.dstack([rgb, alpha]), "RGBA")
photo.save("rgb_lossy.webp", quality=80)
photo.save("rgb_lossless.webp", lossless=True)
photo_alpha.save("rgba_lossy.webp", quality=80)
photo_alpha.save("rgba_lossless.webp", lossless=True)
photo.save("animated.webp", save_all=True, duration=100,
           append_images=[Image.fromarray(255 - rgb, "RGB")])

# 16 colours: the same pixels as a PNG, a lossless WebP and a GIF (the server's test compares
# the answers to each); PIL writes the GIF interlaced.
quant = photo.quantize(16)
quant.convert("RGB").save("palette16.png")
quant.convert("RGB").save("palette16.webp", lossless=True)
quant.save("palette16.gif")
pal_rgba = quant.copy()
pal_rgba.info["transparency"] = 3
pal_rgba.save("palette16_trns.gif", transparency=3)
gray = Image.fromarray(((x * 5 + y * 9) % 256).astype(np.uint8), "L")
gray.save("gray.gif")
quant.save("animated.gif", save_all=True, duration=100,
           append_images=[Image.fromarray(255 - rgb, "RGB").quantize(16)])

pal4 = bytes([10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120])
idx = (x + 2 * y) % 4
write_gif("offset_frame.gif", (W + 5, H + 4), pal4, 3, 2, idx.astype(np.int64))
write_gif("offset_frame_trns.gif", (W + 5, H + 4), pal4, 3, 2, idx.astype(np.int64), trns=1)
write_gif("past_screen.gif", (W - 6, H - 5), pal4, 4, 3, idx.astype(np.int64))
write_gif("past_palette.gif", (W, H), pal4, 0, 0, ((x + y) % 16).astype(np.int64))
write_gif("no_palette.gif", (W, H), None, 0, 0, ((x * 3 + y) % 64).astype(np.int64), trns=5)
write_gif("local_palette.gif", (W, H), pal4, 0, 0, idx.astype(np.int64),
          lpal=bytes(range(200, 212)))
for name in ["rgb_lossy.webp", "rgb_lossless.webp", "rgba_lossy.webp", "rgba_lossless.webp",
             "animated.webp", "palette16.png", "palette16.webp", "palette16.gif",
             "palette16_trns.gif", "gray.gif", "animated.gif", "offset_frame.gif",
             "offset_frame_trns.gif", "past_screen.gif", "past_palette.gif", "no_palette.gif",
             "local_palette.gif"]:
    expected(name)
