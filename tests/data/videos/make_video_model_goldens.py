#!/usr/bin/env python3
"""Model goldens for the video path on the tiny checkpoint (tests/runtime/video_golden_test.cpp):
transformers' Qwen3-VL in float64 on the inputs make_video_goldens.py recorded (cases.json and
<case>.pixels.f32, themselves transformers' processor outputs), writing <case>.model.safetensors
with the MRoPE position ids get_rope_index gives (3 x n, I64), the video features of the final
merger and each deepstack merger (F32 of the float64 results) and the logits of the last prompt
token (F32), and 8 greedy tokens. Only the cases in MODEL_CASES (small; logits are 152k floats).

  /root/.cache/qvl-bench-peers/venv/bin/python tests/data/videos/make_video_model_goldens.py
"""
import json
import os

import numpy as np
import torch
from safetensors.numpy import save_file
from transformers import Qwen3VLForConditionalGeneration

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "tiny-qwen3vl")
MODEL_CASES = ["gif_fps2", "bt709_num5"]


def main():
    torch.manual_seed(0)
    model = Qwen3VLForConditionalGeneration.from_pretrained(TINY, dtype=torch.float64).eval()
    cfg = model.config
    with open(os.path.join(HERE, "cases.json")) as f:
        cases = {c["name"]: c for c in json.load(f)["cases"]}
    for name in MODEL_CASES:
        c = cases[name]
        ids = torch.tensor([c["input_ids"]])
        grid = torch.tensor([c["grid_thw"]])
        pixels = np.fromfile(os.path.join(HERE, f"{name}.pixels.f32"), dtype=np.float32)
        pixels = torch.from_numpy(pixels.reshape(c["pixel_values_shape"])).to(torch.float64)
        mm_types = (ids == cfg.video_token_id).to(torch.int32) * 2
        with torch.no_grad():
            pos, _ = model.model.get_rope_index(ids, mm_types, video_grid_thw=grid,
                                                attention_mask=torch.ones_like(ids))
            feats = model.model.get_video_features(pixels, grid)
            out = model(input_ids=ids, pixel_values_videos=pixels, video_grid_thw=grid,
                        mm_token_type_ids=mm_types, attention_mask=torch.ones_like(ids))
            gen = model.generate(input_ids=ids, pixel_values_videos=pixels, video_grid_thw=grid,
                                 mm_token_type_ids=mm_types, attention_mask=torch.ones_like(ids),
                                 max_new_tokens=8, do_sample=False)
        tensors = {
            "generated_ids": gen[0, ids.shape[1]:].numpy().astype(np.int64),
            "position_ids": pos[:, 0, :].numpy().astype(np.int64),
            "video_embeds": torch.cat(feats.pooler_output).numpy().astype(np.float32),
            "logits_last": out.logits[0, -1].numpy().astype(np.float32),
        }
        for level, parts in enumerate(feats.deepstack_features):
            tensors[f"deepstack_{level}"] = torch.cat(parts).numpy().astype(np.float32)
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
                  os.path.join(HERE, f"{name}.model.safetensors"))
        print(name, {k: v.shape for k, v in tensors.items()},
              "top token", int(out.logits[0, -1].argmax()))


if __name__ == "__main__":
    main()
