#!/usr/bin/env python3
"""Time to first token for a 10 s 640x360 clip at 2 fps (issue 50): qvl-run --video against
Hugging Face transformers (Qwen3VLForConditionalGeneration in bf16, sdpa, the PyAV reader and
Qwen3VLVideoProcessor) in the same run, on the same model folder and clip, with the same threads.

The clip: Debian's ffmpeg CLI, testsrc2 640x360 30 fps H.264 (as bench/video_bench.cpp makes it).
The model folder: MODEL's files linked into WORK plus Qwen3-VL-2B-Instruct's shipped
video_preprocessor_config.json (clip budget 25165824 pixels, fps 2), so both read the settings a
real checkpoint has: 20 frames, 10 frame pairs of 640x352, 2200 visual tokens.

Figures per engine, median of --repeat runs (alternating):
- ttft_ms: wall time from the request to the first token's logits (decode, preprocess, vision,
  prefill), as each reports it (qvl-run --json timings_ms.ttft; HF: processor + generate's first
  forward, timed in the worker);
- cpu_ms: process CPU time of the same work. qvl: CPU of `qvl-run --video ... -n 1` minus CPU of
  the same run without the video (model load and the text prompt cancel out); HF: process_time
  around the processor and generate(max_new_tokens=1). On a loaded machine CPU time is the
  figure to compare; wall time is printed for completeness.

usage: python3 bench/video_ttft.py --qvl-run build/release/apps/qvl-run --model /work/models/synth2b \
           --python /root/.cache/qvl-bench-peers/venv/bin/python [--threads 2] [--repeat 3] [--work DIR]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

QUESTION = "What happens in this video?"
SHIPPED_VIDEO_CONFIG = {
    "size": {"longest_edge": 25165824, "shortest_edge": 4096}, "patch_size": 16,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5], "fps": 2, "video_processor_type": "Qwen3VLVideoProcessor"}

HF_WORKER = r'''
import json, sys, time, torch
from transformers import AutoProcessor, Qwen3VLForConditionalGeneration
from transformers.video_utils import load_video
model_dir, clip, question, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(threads); torch.set_num_interop_threads(1)
model = Qwen3VLForConditionalGeneration.from_pretrained(model_dir, dtype=torch.bfloat16,
                                                        attn_implementation="sdpa").eval()
processor = AutoProcessor.from_pretrained(model_dir)
vp = processor.video_processor
messages = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": question}]}]
w0, c0 = time.perf_counter(), time.process_time()
text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
video, meta = load_video(clip, backend="pyav",
                         sample_indices_fn=lambda metadata, **kw: vp.sample_frames(metadata))
inputs = processor(text=[text], videos=[video], video_metadata=[meta], do_sample_frames=False,
                   return_tensors="pt")
with torch.inference_mode():
    model.generate(**inputs, do_sample=False, max_new_tokens=1, temperature=None, top_p=None,
                   top_k=None)
print(json.dumps({"ttft_ms": (time.perf_counter() - w0) * 1e3,
                  "cpu_ms": (time.process_time() - c0) * 1e3,
                  "prompt_tokens": int(inputs["input_ids"].shape[1]),
                  "grid": [int(v) for v in inputs["video_grid_thw"][0]], "frames": len(video)}))
'''


def make_clip(path):
    if os.path.exists(path):
        return
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=640x360:rate=30:duration=10", "-c:v", "libx264", "-pix_fmt",
                    "yuv420p", path], check=True)


def make_model(src, dst):
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.startswith(".") or f == "video_preprocessor_config.json":
            continue
        if not os.path.exists(os.path.join(dst, f)):
            os.symlink(os.path.abspath(os.path.join(src, f)), os.path.join(dst, f))
    with open(os.path.join(dst, "video_preprocessor_config.json"), "w") as f:
        json.dump(SHIPPED_VIDEO_CONFIG, f)


def child_cpu_ms(cmd):
    """Runs cmd; returns (its stdout, the CPU ms its process used)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3
    return out, cpu


def run_qvl(a, model, clip):
    base = [a.qvl_run, "-m", model, "-p", QUESTION, "-n", "1", "--temp", "0", "--json", "-q",
            "-t", str(a.threads), "-c", "4096"]
    out, with_video = child_cpu_ms(base + ["--video", clip])
    _, without = child_cpu_ms(base)
    j = json.loads(out)
    v = j["videos"][0]
    return {"ttft_ms": j["timings_ms"]["ttft"], "cpu_ms": with_video - without,
            "prompt_tokens": len(j["prompt_tokens"]), "frames": v["frames"],
            "video_tokens": v["tokens"], "resized": f'{v["resized_width"]}x{v["resized_height"]}'}


def run_hf(a, model, clip):
    out = subprocess.run([a.python, "-c", HF_WORKER, model, clip, QUESTION, str(a.threads)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qvl-run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--python", required=True, help="a Python with torch, transformers and av")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="video-ttft-work")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    clip = os.path.abspath(os.path.join(a.work, "testsrc2_640x360_10s.mp4"))
    model = os.path.abspath(os.path.join(a.work, "model"))
    make_clip(clip)
    make_model(a.model, model)
    runs = {"qvl": [], "hf": []}
    for _ in range(a.repeat):
        runs["qvl"].append(run_qvl(a, model, clip))
        runs["hf"].append(run_hf(a, model, clip))
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    result = {}
    for name, rs in runs.items():
        result[name] = {"ttft_ms": statistics.median(r["ttft_ms"] for r in rs),
                        "cpu_ms": statistics.median(r["cpu_ms"] for r in rs),
                        "prompt_tokens": rs[0]["prompt_tokens"], "frames": rs[0]["frames"]}
        print(f"{name}: ttft {result[name]['ttft_ms']:.0f} ms wall, "
              f"{result[name]['cpu_ms']:.0f} ms CPU, {rs[0]['prompt_tokens']} prompt tokens, "
              f"{rs[0]['frames']} frames  (runs: "
              + ", ".join(f"{r['cpu_ms']:.0f}" for r in rs) + " ms CPU)")
    print("details:", json.dumps(runs["qvl"][0]), json.dumps(runs["hf"][0]))
    print(f"CPU-time ratio hf/qvl: {result['hf']['cpu_ms'] / result['qvl']['cpu_ms']:.2f}x")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
