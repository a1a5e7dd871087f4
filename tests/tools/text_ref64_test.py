#!/usr/bin/env python3
"""Holds tests/tools/text_ref64.py (the float64 text decoder QuantizedWideModel compares with) to
the float64 oracle's goldens of the tiny checkpoint (tests/data/golden/text_only, written by
qwen3vl_ref.py): the full logits after the prompt within 1e-6 of their largest magnitude and
every generated step's five best logits as close (both are float64 rounded once to f32: seen
4e-8 and 1.2e-7 absolute), and the 16 greedy tokens equal. A wrong norm, rotary angle, head
grouping or mask moves them by 1e-2 or more.

usage: text_ref64_test.py DATA_DIR   (tests/data)"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import text_ref64  # noqa: E402

data = sys.argv[1]
g = text_ref64.read_safetensors(os.path.join(data, "golden", "text_only", "golden.safetensors"), lambda n: True)
want_tokens = [int(x) for x in g["generated_ids"]]
tokens, logits = text_ref64.greedy(text_ref64.TextModel(os.path.join(data, "tiny-qwen3vl")),
                                   [int(x) for x in g["input_ids"]], len(want_tokens))
failures = []
scale = np.max(np.abs(g["logits_last"]))
err = np.max(np.abs(logits[0] - g["logits_last"])) / scale
print(f"logits after the prompt: max |error| / max |logit| = {err:.2e}")
if not err <= 1e-6:
    failures.append(f"logits after the prompt differ by {err:.2e} of their scale")
worst = 0.0
for step, (ids, want) in enumerate(zip(g["gen.top5_ids"], g["gen.top5_logits"])):
    e = np.max(np.abs(logits[step][ids.astype(int)] - want)) / scale
    worst = max(worst, e)
    if not e <= 1e-6:
        failures.append(f"step {step}: top-5 logits differ by {e:.2e} of the scale")
print(f"top-5 logits of {len(want_tokens)} steps: worst {worst:.2e}")
if tokens != want_tokens:
    failures.append(f"greedy tokens {tokens} != the oracle's {want_tokens}")
for f in failures:
    print("FAIL:", f)
print("text_ref64_test: " + ("FAIL" if failures else "PASS"))
sys.exit(1 if failures else 0)
