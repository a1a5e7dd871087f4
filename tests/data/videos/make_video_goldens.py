#!/usr/bin/env python3
"""Writes the video goldens from transformers itself (tests/image/video_preprocess_test.cpp and
tests/io/video_decode_test.cpp read them).

The reference is HF's own pipeline: PyAV decodes (transformers' read_video_pyav converts with
`to_ndarray(format="rgb24")`), Qwen3VLVideoProcessor samples, resizes, normalises and patchifies,
Qwen3VLProcessor builds the timestamped prompt. PyAV is driven here directly rather than through
read_video_pyav because that reader takes the frame count from the container header, which WebM
lacks (0 frames: HF fails); the count here is the decoded frames, as qvl counts packets.

For each case: cases.json gets the metadata, sampled indices, timestamps, grid, prompt text and
ids, and an FNV-1a 64 hash of pixel_values' float32 bytes; <case>.pixels.f32 holds pixel_values
(small budgets only) and <case>.frames.rgb the sampled frames as PyAV gives them.

Run with the bench venv (transformers, torch, av):
  /root/.cache/qvl-bench-peers/venv/bin/python tests/data/videos/make_video_goldens.py
"""
import json
import os

import av
import numpy as np
import transformers
from transformers import AutoTokenizer, Qwen3VLProcessor
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor
from transformers.video_utils import VideoMetadata

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "tiny-qwen3vl")
SMALL = {"shortest_edge": 4096, "longest_edge": 16384}

# (case, clip, processor kwargs, keep pixel_values)
CASES = [
    ("shapes_fps2", "shapes_100x62_12fps.mp4", {"size": SMALL}, True),
    ("shapes_default", "shapes_100x62_12fps.mp4", {}, False),
    ("text_fps3_max3", "text_90x70_7fps.webm", {"size": SMALL, "fps": 3, "max_frames": 3}, True),
    ("gif_fps2", "anim_50x38_5fps.gif", {"size": SMALL}, True),
    ("bt709_num5", "bt709_64x48_2997fps.mp4", {"size": SMALL, "num_frames": 5, "fps": None}, True),
    ("narrow_default", "narrow_24x72_3fps.mp4", {}, False),
    ("narrow_cap", "narrow_24x72_3fps.mp4", {"cap_pixels_per_frame": True, "max_video_tokens": 8,
                                             "size": {"shortest_edge": 2048,
                                                      "longest_edge": 1 << 20}}, False),
    ("hevc_fps4", "hevc_66x46_10fps.mp4", {"size": SMALL, "fps": 4}, False),
    ("vp8_fps3", "vp8_58x42_8fps.webm", {"size": SMALL, "fps": 3}, False),
    ("av1_fps2", "av1_64x36_6fps.mp4", {"size": SMALL}, False),
]
PROMPT = "Describe this video."


def decode(path):
    with av.open(path) as c:
        s = c.streams.video[0]
        frames = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])
        fps = float(s.average_rate)
    return frames, fps


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    tokenizer = AutoTokenizer.from_pretrained(TINY)
    with open(os.path.join(TINY, "chat_template.json")) as f:
        template = json.load(f)["chat_template"]
    image_processor = Qwen2VLImageProcessor.from_pretrained(TINY)
    out = {"transformers": transformers.__version__, "av": av.__version__, "prompt": PROMPT,
           "cases": []}
    written = {}
    for name, clip, kwargs, keep_pixels in CASES:
        frames, fps = decode(os.path.join(HERE, clip))
        meta = VideoMetadata(total_num_frames=len(frames), fps=fps,
                             duration=len(frames) / fps, width=frames.shape[2],
                             height=frames.shape[1])
        kw = dict(kwargs)
        kw.setdefault("cap_pixels_per_frame", False)
        video_processor = Qwen3VLVideoProcessor(**kw)
        processor = Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                     video_processor=video_processor, chat_template=template)
        messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text",
                                                                     "text": PROMPT}]}]
        text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        res = processor(text=[text], videos=[frames], video_metadata=[meta],
                        return_tensors="np", do_sample_frames=True)
        pixels = np.ascontiguousarray(res["pixel_values_videos"], dtype=np.float32)
        grid = [int(v) for v in res["video_grid_thw"][0]]
        indices = [int(i) for i in video_processor.sample_frames(
            VideoMetadata(total_num_frames=len(frames), fps=fps),
            num_frames=kw.get("num_frames"), fps=kw.get("fps"))]
        timestamps = processor._calculate_timestamps(list(indices), fps,
                                                     video_processor.temporal_patch_size)
        # One frames file per clip and sampling: the decoder test reads each once.
        frames_file = written.setdefault((clip, tuple(indices)), f"{name}.frames.rgb")
        if frames_file == f"{name}.frames.rgb":
            frames[indices].tofile(os.path.join(HERE, frames_file))
        if keep_pixels:
            pixels.tofile(os.path.join(HERE, f"{name}.pixels.f32"))
        case = {"name": name, "clip": clip, "kwargs": kwargs, "total_frames": len(frames),
                "fps": fps, "width": int(frames.shape[2]), "height": int(frames.shape[1]),
                "indices": indices, "frames_file": frames_file, "timestamps": timestamps, "grid_thw": grid,
                "pixel_values_shape": list(pixels.shape),
                "pixel_values_fnv1a64": fnv1a64(pixels.tobytes()),
                "template_text": text,
                "input_ids": [int(i) for i in res["input_ids"][0]]}
        out["cases"].append(case)
        print(name, grid, indices, [f"{t:.2f}" for t in timestamps])
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
