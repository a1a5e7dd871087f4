"""One Hugging Face transformers run of the end-to-end benchmark; runs inside the bench's venv.

usage: python hf_worker.py --model DIR --image IMG --question Q -n N --threads T
Prints one JSON object: timings in ms (load, preprocess, vision, prefill, ttft, decode), prompt
token count, generated token count, decode ms/token, peak RSS in MB.

Qwen3VLForConditionalGeneration in bf16 with sdpa attention, greedy, exactly N new tokens.
- preprocess: the processor (chat template, tokenizer, image resize and patches), as a user's
  script would call it.
- vision: the vision tower alone (get_image_features), timed in a separate call before generate.
- prefill: generate's first forward (it runs the vision tower again) minus that vision time.
- ttft: preprocess + generate's first forward, up to the first token's logits.
- decode: the steps after the first token, timed by a logits processor called once per token.
With --warmup-image, a whole request (processor, get_image_features, generate of 2 tokens) on
that image runs first, untimed: the figures are then those of a second request in a running
process (torch's allocator and oneDNN's kernels already set up for these shapes).
"""

import argparse
import json
import resource
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--image", required=True)
    p.add_argument("--question", required=True)
    p.add_argument("-n", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    p.add_argument("--warmup-image", help="an image of the same size for an untimed request first")
    a = p.parse_args()

    import torch
    from PIL import Image
    from transformers import AutoProcessor, LogitsProcessor, Qwen3VLForConditionalGeneration
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)

    t0 = time.perf_counter()
    model = Qwen3VLForConditionalGeneration.from_pretrained(
        a.model, dtype=getattr(torch, a.dtype), attn_implementation="sdpa").eval()
    processor = AutoProcessor.from_pretrained(a.model)
    load_ms = (time.perf_counter() - t0) * 1e3

    def prepare(path):
        image = Image.open(path).convert("RGB")
        messages = [{"role": "user", "content": [{"type": "image", "image": image},
                                                 {"type": "text", "text": a.question}]}]
        return processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
                                             return_dict=True, return_tensors="pt")

    if a.warmup_image:
        with torch.inference_mode():
            warm = prepare(a.warmup_image)
            model.model.get_image_features(warm["pixel_values"].to(model.dtype),
                                           warm["image_grid_thw"])
            model.generate(**warm, do_sample=False, max_new_tokens=2, min_new_tokens=2,
                           temperature=None, top_p=None, top_k=None)

    t0 = time.perf_counter()
    inputs = prepare(a.image)
    preprocess_ms = (time.perf_counter() - t0) * 1e3

    stamps = []

    class Stamp(LogitsProcessor):
        def __call__(self, input_ids, scores):
            stamps.append(time.perf_counter())
            return scores

    with torch.inference_mode():
        t0 = time.perf_counter()
        model.model.get_image_features(inputs["pixel_values"].to(model.dtype),
                                       inputs["image_grid_thw"])
        vision_ms = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        out = model.generate(**inputs, do_sample=False, max_new_tokens=a.n, min_new_tokens=a.n,
                             logits_processor=[Stamp()], temperature=None, top_p=None,
                             top_k=None)
        end = time.perf_counter()
    first_ms = (stamps[0] - t0) * 1e3
    n_prompt = int(inputs["input_ids"].shape[1])
    n_gen = int(out.shape[1]) - n_prompt
    decode_ms = (end - stamps[0]) * 1e3
    grid = inputs["image_grid_thw"][0].tolist()
    print(json.dumps({
        "engine": "hf", "torch": torch.__version__,
        "timings_ms": {"load": load_ms, "preprocess": preprocess_ms, "vision": vision_ms,
                       "prefill": first_ms - vision_ms, "ttft": preprocess_ms + first_ms,
                       "decode": decode_ms},
        "prompt_tokens": n_prompt, "generated_tokens": n_gen,
        "decode_ms_per_token": decode_ms / max(1, n_gen - 1),
        "image_tokens": int(grid[0] * grid[1] * grid[2] // 4),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
