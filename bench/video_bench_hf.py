#!/usr/bin/env python3
"""transformers doing what qvl's video path does (bench/video_bench.cpp runs this in the same
benchmark run): PyAV decode of the frames Qwen3VLVideoProcessor samples (transformers'
read_video_pyav through load_video(backend="pyav")), then the processor's resize, normalise and
patchify (defaults: fps 2, the video pixel budget, cap_pixels_per_frame off). torch uses one
thread, as qvl's preprocessing does; PyAV keeps its own threading defaults (slice threads, as
many as CPUs). A container without a frame count (WebM), where HF's reader sees 0 frames and
fails, is counted from its packets first (a demux pass without decoding) and then decoded by the
same loop as read_video_pyav.

  VENV/bin/python bench/video_bench_hf.py --clip CLIP.mp4 [--repeat 5]
prints one JSON line: {"total_ms": median process CPU ms, "wall_ms": median wall ms,
"decode_ms": median CPU ms of the decode alone, "frames": sampled frames, "grid": [t, h, w]}"""
import argparse
import json
import statistics
import time

import av
import numpy as np
import torch
from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor
from transformers.video_utils import VideoMetadata, load_video


def read_counted(path, sample):
    """read_video_pyav's loop, with the frame count taken from the packets."""
    with av.open(path) as c:
        total = sum(1 for p in c.demux(video=0) if p.size > 0)
    with av.open(path) as c:
        s = c.streams.video[0]
        fps = float(s.average_rate)
        meta = VideoMetadata(total_num_frames=total, fps=fps, duration=total / fps,
                             video_backend="pyav", height=s.height, width=s.width)
        indices = sample(meta)
        wanted, frames = set(int(i) for i in indices), []
        for i, frame in enumerate(c.decode(video=0)):
            if i > indices[-1]:
                break
            if i in wanted:
                frames.append(frame)
        video = np.stack([f.to_ndarray(format="rgb24") for f in frames])
    meta.frames_indices = indices
    return video, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clip", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    vp = Qwen3VLVideoProcessor(cap_pixels_per_frame=False)
    with av.open(args.clip) as c:
        counted = c.streams.video[0].frames > 0
    sample = lambda metadata, **kw: vp.sample_frames(metadata)
    cpu, wall, dec, out, frames = [], [], [], None, 0
    for _ in range(args.repeat):
        t0, w0 = time.process_time(), time.perf_counter()
        if counted:
            video, meta = load_video(args.clip, backend="pyav", sample_indices_fn=sample)
        else:
            video, meta = read_counted(args.clip, sample)
        dec.append((time.process_time() - t0) * 1000)
        out = vp(video, video_metadata=[meta], do_sample_frames=False, return_tensors="pt")
        cpu.append((time.process_time() - t0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
        frames = len(video)
    print(json.dumps({"total_ms": statistics.median(cpu), "wall_ms": statistics.median(wall),
                      "decode_ms": statistics.median(dec), "frames": frames,
                      "grid": [int(v) for v in out["video_grid_thw"][0]]}))


if __name__ == "__main__":
    main()
