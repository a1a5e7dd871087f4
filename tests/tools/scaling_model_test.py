"""Unit tests of the scaling simulator's model (bench/scaling_model.py) on hand-made traces."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from scaling_model import (Machine, load_trace, phase_summary, simulate,  # noqa: E402
                           split_over_keys, stream_gbs)
from scaling import calibrate_core_bandwidth, parse_args  # noqa: E402


def write_trace(lines):
    f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    for line in lines:
        f.write(json.dumps(line) + "\n")
    f.close()
    return f.name


def parts(per_task, counts):
    """Even splits: per_task(n) gives one task's [flops, weight, kv, act] when there are n."""
    return {str(t): [[n] + per_task(n)] for t, n in counts.items()}


class ScalingModelTest(unittest.TestCase):
    def setUp(self):
        self.machine = Machine(core_gflops=100, core_gbs=25, fork_us=0, wake_us=0, notify_us=0,
                               join_us=0)
        compute = parts(lambda n: [1e9 / n, 0, 0, 0], {1: 1, 2: 2, 4: 4, 8: 3})
        stream = parts(lambda n: [1e5 / n, 1e8 / n, 0, 0], {1: 1, 2: 2, 4: 4, 8: 8})
        self.path = write_trace([
            {"ev": "mark", "what": "submit", "id": 7, "t": 0.0, "ovh": 0},
            {"ev": "run", "phase": "vision", "t": 1.0, "ovh": 0},
            {"ev": "part", "sig": "c", "parts": compute},
            {"ev": "region", "node": "vision.blocks.0.fc1", "sig": "c", "threads": 1,
             "t0": 1.0, "t1": 5.0, "us": [4000.0]},
            {"ev": "node", "name": "vision.blocks.0.fc1", "op": "matmul", "t0": 1.0, "t1": 5.0,
             "ovh": 0, "ovc": 0},
            {"ev": "run", "phase": "decode", "t": 5.0, "ovh": 0},
            {"ev": "part", "sig": "s", "parts": stream},
            {"ev": "region", "node": "text.layers.0.down", "sig": "s", "threads": 1,
             "t0": 5.0, "t1": 9.0, "us": [4000.0]},
            {"ev": "node", "name": "text.layers.0.down", "op": "matmul", "t0": 5.0, "t1": 9.0,
             "ovh": 0, "ovc": 0},
            {"ev": "mark", "what": "first_token", "id": 7, "t": 9.0, "ovh": 0},
        ])
        self.trace = load_trace(self.path)

    def tearDown(self):
        os.unlink(self.path)

    def test_compute_bound_tasks_split_over_threads(self):
        s = phase_summary(simulate(self.trace, 4, 1000, self.machine), self.trace)
        self.assertAlmostEqual(s["vision"]["seconds"], 0.001)
        # 8 threads but 3 tasks: no faster than 3 threads, five threads idle.
        s8 = simulate(self.trace, 8, 1000, self.machine)
        vis = [it for it in s8["items"] if it["kind"] == "node"][0]
        self.assertAlmostEqual(vis["pred_ms"], 4 / 3)
        self.assertAlmostEqual(vis["busy_ms"] / (8 * vis["pred_ms"]), 3 / 8)

    def test_bandwidth_share_bounds_streaming_tasks(self):
        # 1e8 bytes at 25 GB/s per core took 4 ms; with B = 50 GB/s 4 threads get 12.5 each.
        s = phase_summary(simulate(self.trace, 4, 50, self.machine), self.trace, None, 50)
        self.assertAlmostEqual(s["decode"]["seconds"], 0.002)
        self.assertAlmostEqual(s["decode"]["floor_step_s"], 0.002)

    def test_ttft_follows_the_predicted_clock(self):
        s = phase_summary(simulate(self.trace, 2, 1000, self.machine), self.trace)
        # 1 ms gap before the first run, then 2 ms of vision and 2 ms of decode.
        self.assertAlmostEqual(s["p95_ttft_s"], 0.005)

    def test_wake_up_costs_are_charged(self):
        slow = Machine(core_gflops=100, core_gbs=25, fork_us=0, wake_us=1000, notify_us=0,
                       join_us=0)
        s = simulate(self.trace, 2, 1000, slow)
        vis = [it for it in s["items"] if it["kind"] == "node"][0]
        # The caller takes task 0 at once; the worker wakes 1 ms late and takes task 1: 3 ms.
        self.assertAlmostEqual(vis["pred_ms"], 3.0)

    def test_measured_phases(self):
        s = phase_summary(None, self.trace)
        self.assertAlmostEqual(s["vision"]["seconds"], 0.004)

    def test_what_if_key_split_cuts_only_one_row_attention(self):
        heads = [(1000.0, 64.0, 8.0)] * 2
        sig = "group [q=1 kv=130 h=4/2 d=8 pos0=129 kvt=1] [q=1 kv=10 h=4/2 d=8 pos0=9 kvt=1]"
        out = split_over_keys(sig, heads + heads, 64)
        # 130 keys: 3 chunks per kv head; 10 keys: 1.
        self.assertEqual(len(out), 2 * 3 + 2 * 1)
        self.assertAlmostEqual(sum(t[1] for t in out), 4 * 64.0)  # the bytes stay the same
        self.assertGreater(sum(t[0] for t in out), 4 * 1000.0)  # plus the merges
        self.assertIsNone(split_over_keys("attention q=24 kv=300 h=16/8 d=128", heads, 64))
        self.assertIsNone(split_over_keys("gemm m=4 n=2048 k=2048", heads, 64))

    def test_stream_rate_is_what_a_busy_core_read_in_decode(self):
        # The decode job read 1e8 bytes in 4 ms: 25 GB/s; vision read nothing from DRAM.
        self.assertAlmostEqual(stream_gbs(self.trace), 25.0)
        self.assertEqual(stream_gbs(self.trace, phase="vision"), 0.0)

    def test_stream_rate_leaves_out_the_fastest_percent_of_bytes(self):
        path = write_trace([
            {"ev": "run", "phase": "decode", "t": 0.0, "ovh": 0},
            {"ev": "part", "sig": "big", "parts": {"2": [[2, 0, 1e8, 0, 0]]}},
            {"ev": "part", "sig": "hot", "parts": {"1": [[1, 0, 1e6, 0, 0]]}},
            # Two tasks of 1e8 bytes, 5 ms each on two threads: 20 GB/s per busy core.
            {"ev": "region", "node": "a", "sig": "big", "threads": 2, "t0": 0.0, "t1": 5.0,
             "us": [5000.0, 5000.0]},
            {"ev": "node", "name": "a", "op": "matmul", "t0": 0.0, "t1": 5.0, "ovh": 0,
             "ovc": 0},
            # 0.5 % of the bytes from the cache at 100 GB/s.
            {"ev": "region", "node": "b", "sig": "hot", "threads": 1, "t0": 5.0, "t1": 5.01,
             "us": [10.0]},
            {"ev": "node", "name": "b", "op": "matmul", "t0": 5.0, "t1": 5.01, "ovh": 0,
             "ovc": 0},
        ])
        try:
            trace = load_trace(path)
            self.assertAlmostEqual(stream_gbs(trace), 20.0)
            self.assertAlmostEqual(stream_gbs(trace, quantile=1.0), 100.0)
        finally:
            os.unlink(path)

    def test_a_slow_probe_does_not_bound_the_trace_it_calibrates(self):
        # A probe that reads worse than the engine (10 GB/s for one core and the machine) made
        # the 1-thread decode of the trace 2.5x its measured 4 ms; raised to the trace's own
        # 25 GB/s, the replay gives the measured time back, and the machine at least that.
        slow = Machine(core_gflops=100, core_gbs=10, machine_gbs=10, fork_us=0, wake_us=0,
                       notify_us=0, join_us=0)
        before = phase_summary(simulate(self.trace, 1, slow.machine_gbs, slow), self.trace)
        self.assertAlmostEqual(before["decode"]["seconds"], 0.01)
        calibrate_core_bandwidth(slow, self.trace, parse_args([]))
        self.assertAlmostEqual(slow.core_gbs, 25.0)
        self.assertAlmostEqual(slow.machine_gbs, 25.0)
        after = phase_summary(simulate(self.trace, 1, slow.machine_gbs, slow), self.trace)
        self.assertAlmostEqual(after["decode"]["seconds"], 0.004)
        # Given on the command line, the figures stand.
        fixed = Machine(core_gflops=100, core_gbs=10, machine_gbs=10)
        calibrate_core_bandwidth(fixed, self.trace,
                                 parse_args(["--core-bandwidth", "10", "--machine-bandwidth", "10"]))
        self.assertEqual((fixed.core_gbs, fixed.machine_gbs), (10, 10))


if __name__ == "__main__":
    unittest.main()
