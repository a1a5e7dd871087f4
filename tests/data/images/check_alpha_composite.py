#!/usr/bin/python3
"""Checks the integer formula io::composite_on_white uses against PIL for every (channel, alpha)
pair: c' = (c * a + 255 * (255 - a) + 127) // 255 equals
Image.alpha_composite(white, rgba).convert("RGB") (transformers' convert_to_rgb) and pasting
onto white through the alpha mask. Prints "alpha composite: PASS".
Run: /usr/bin/python3 check_alpha_composite.py"""
import numpy as np
from PIL import Image

c, a = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
rgba = np.stack([c, 255 - c, c, a], -1).astype(np.uint8)
im = Image.fromarray(rgba, "RGBA")
white = Image.new("RGBA", im.size, (255, 255, 255, 255))
composite = np.asarray(Image.alpha_composite(white, im).convert("RGB")).astype(np.int64)
pasted = Image.new("RGB", im.size, (255, 255, 255))
pasted.paste(im, mask=im.split()[3])
pasted = np.asarray(pasted).astype(np.int64)
formula = (rgba[..., :3].astype(np.int64) * a[..., None] + 255 * (255 - a[..., None]) + 127) // 255
assert (formula == composite).all(), "alpha_composite differs"
assert (formula == pasted).all(), "paste differs"
print("alpha composite: PASS")
