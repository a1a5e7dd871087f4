#!/usr/bin/env python3
"""transformers doing what qvl's video path does (bench/video_bench.cpp runs this in the same
benchmark run): PyAV decode of the frames Qwen3VLVideoProcessor samples (transformers'
read_video_pyav through load_video(backend="pyav")), then the processor's resize, normalise and
patchify (defaults: fps 2, the video pixel budget, cap_pixels_per_frame off). torch uses one
thread, as qvl's decode and preprocessing do; times are process CPU time, so that a loaded
machine does not count against either side.

  VENV/bin/python bench/video_bench_hf.py --clip CLIP.mp4 [--repeat 5]
prints one JSON line: {"total_ms": median CPU ms, "frames": sampled frames, "grid": [t, h, w]}"""
import argparse
import json
import statistics
import time

import torch
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor
from transformers.video_utils import load_video


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clip", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    vp = Qwen3VLVideoProcessor(cap_pixels_per_frame=False)
    times, out, frames = [], None, 0
    for _ in range(args.repeat):
        t0 = time.process_time()
        video, meta = load_video(args.clip, backend="pyav",
                                 sample_indices_fn=lambda metadata, **kw: vp.sample_frames(metadata))
        out = vp(video, video_metadata=[meta], do_sample_frames=False, return_tensors="pt")
        times.append((time.process_time() - t0) * 1000)
        frames = len(video)
    print(json.dumps({"total_ms": statistics.median(times), "frames": frames,
                      "grid": [int(v) for v in out["video_grid_thw"][0]]}))


if __name__ == "__main__":
    main()
