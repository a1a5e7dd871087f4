#!/usr/bin/python3
"""The paired target ratios of bench/peers_e2e/compare.py: repeats pair up by position, a failed run
(None) drops only its own pair, and the verdict follows the median against the limit."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from peers_e2e import compare  # noqa: E402


class ChosenEngines(unittest.TestCase):
    def test_llamacpp_rows_make_only_their_ggufs_and_isa_names_the_qvl_rows(self):
        from types import SimpleNamespace
        from peers_e2e import setup_env
        made, saved = [], {}
        fakes = {"ensure_venv": lambda cache: "/venv/bin/python",
                 "ensure_llamacpp": lambda cache: "/bin",
                 "ensure_gguf": lambda cache, model, kind, py: made.append(kind) or kind,
                 "ensure_quantized_gguf": lambda cache, src, bindir, q: made.append(q) or q}
        for name, fake in fakes.items():
            saved[name] = getattr(setup_env, name)
            setattr(setup_env, name, fake)
        try:
            args = SimpleNamespace(qvl_run="qvl-run", model="m", question_text="q", peer_n=4,
                                   peer_threads=2, timeout=9, precision=None,
                                   qvl_extra=["q8", "q4", "q4-vq8"], peers_warm=False,
                                   peers_cache="/c", peers=["llamacpp"],
                                   llamacpp_rows=["text-q4_k_m"], isa="avx2")
            engines, errors = compare.build_engines(args)
        finally:
            for name, real in saved.items():
                setattr(setup_env, name, real)
        self.assertEqual(errors, {})
        self.assertEqual(sorted(made), ["Q4_K_M", "mmproj-q8_0", "text-bf16"])
        keys = [k for k, _, _ in engines]
        self.assertEqual(keys, ["qvl-default", "qvl-q8", "qvl-q4", "qvl-q4-vq8",
                                "llamacpp-text-q4_k_m"])
        self.assertTrue(all(lab.endswith("QVL_ISA=avx2") for k, lab, _ in engines
                            if k.startswith("qvl")))


class PairedRatios(unittest.TestCase):
    def test_pairs_by_repeat_and_skips_failed_runs(self):
        a = [{"ttft_s": 3.0}, None, {"ttft_s": 2.0}, {"ttft_s": 1.0}]
        b = [{"ttft_s": 4.0}, {"ttft_s": 9.0}, None, {"ttft_s": 2.0}]
        self.assertEqual(compare.paired_ratios(a, b, "ttft_s"), [0.75, 0.5])

    def test_missing_or_zero_figures_are_not_ratios(self):
        a = [{"ttft_s": 3.0}, {"ttft_s": 3.0}, {}]
        b = [{"ttft_s": 0.0}, {"ttft_s": None}, {"ttft_s": 1.0}]
        self.assertEqual(compare.paired_ratios(a, b, "ttft_s"), [])

    def test_verdict_uses_the_median_of_paired_ratios(self):
        # Medians of the engines' own runs would give 3.0 / 4.0 = 0.75 (met); the pairs say
        # 0.6, 0.9 and 0.8, median 0.8: missed.
        runs = {"qvl-default": {"448x448": [{"ttft_s": 2.4}, {"ttft_s": 3.0}, {"ttft_s": 3.2}]},
                "hf": {"448x448": [{"ttft_s": 4.0}, {"ttft_s": 3.333333}, {"ttft_s": 4.0}]}}
        rows = {r["target"]: r for r in compare.target_rows(runs)}
        t = rows["448 TTFT, bf16 vs HF"]
        self.assertAlmostEqual(t["median"], 0.8, places=5)
        self.assertAlmostEqual(t["min"], 0.6, places=5)
        self.assertEqual(t["verdict"], "MISSED")
        self.assertNotIn("448 TTFT, q8 vs HF", rows)  # qvl-q8 did not run

    def test_met_when_the_median_is_at_the_limit(self):
        runs = {"qvl-q8": {"448x448": [{"decode_ms_per_token": 62.0}]},
                "qvl-default": {"448x448": [{"decode_ms_per_token": 100.0}]}}
        rows = {r["target"]: r for r in compare.target_rows(runs)}
        self.assertEqual(rows["448 decode, q8 vs qvl bf16"]["verdict"], "met")
        self.assertEqual(rows["1280 decode, q8 vs qvl bf16"]["verdict"], "-")

    def test_second_request_targets_pair_the_warm_rows(self):
        runs = {"qvl-default": {"448x448": [{"ttft_s": 3.6}]},
                "hf": {"448x448": [{"ttft_s": 4.0}]},
                "qvl-default-warm": {"448x448": [{"ttft_s": 2.8}]},
                "hf-warm": {"448x448": [{"ttft_s": 4.0}]}}
        rows = {r["target"]: r for r in compare.target_rows(runs)}
        self.assertEqual(rows["448 TTFT, bf16 vs HF"]["verdict"], "MISSED")  # 0.9
        warm = rows["448 TTFT, bf16 vs HF, second request"]
        self.assertAlmostEqual(warm["median"], 0.7, places=5)
        self.assertEqual(warm["verdict"], "met")
        self.assertNotIn("448 decode, bf16 vs llama.cpp bf16, second request", rows)

    def test_run_order_puts_each_target_pair_at_most_one_run_apart(self):
        keys = ["qvl-default", "qvl-default-warm", "qvl-q8", "qvl-q8-warm", "qvl-bf16", "hf",
                "hf-warm", "llamacpp-text-bf16", "llamacpp-text-q8_0", "qvl-q4", "qvl-q4-vq8",
                "qvl-q4-vq8-warm", "llamacpp-text-q4_k_m"]
        order = [k for k, _, _ in compare.run_order([(k, k, None) for k in keys])]
        self.assertEqual(sorted(order), sorted(keys))
        self.assertEqual(order[-1], "qvl-bf16")  # in no target: after the others
        pos = {k: i for i, k in enumerate(order)}
        for _, _, _, a, b, _ in compare.TARGETS:
            self.assertLessEqual(abs(pos[a] - pos[b]), 2, (a, b))


if __name__ == "__main__":
    unittest.main()
