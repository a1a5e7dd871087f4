"""The reference decoder of the decode tests: PIL, then transformers' convert_to_rgb for a PIL
image (the oracle's load_image_rgb): transparency is composited onto opaque white; anything
else non-RGB is converted."""
import numpy as np
from PIL import Image


def reference_rgb(name):
    im = Image.open(name)
    im.load()
    if "A" in im.getbands() or im.info.get("transparency") is not None:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        im = Image.alpha_composite(white, rgba).convert("RGB")
    elif im.mode != "RGB":
        im = im.convert("RGB")
    return np.asarray(im, dtype=np.uint8)
