"""The scaling simulator's model (bench/scaling.py): reads a QVL_TASK_TRACE file and replays it
for T threads. Pure Python, no dependencies; unit-tested by tests/tools/scaling_model_test.py."""
import bisect
import heapq
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field

SPIN_US = 50.0  # the pool's workers spin this long before sleeping (base/thread_pool.cpp)


@dataclass
class Machine:
    core_gflops: float = 0.0  # one core's peak (the faster of bf16 dot and f32 FMA)
    # Defaults: the Zen 4 VM of docs/machine.md when quiet (DRAM 28-31 GB/s, one core nearly
    # saturating it) and the pool's costs there (pool/* rows); a loaded machine's own figures
    # measure the other processes instead.
    core_gbs: float = 25.0  # DRAM GB/s one core reads
    machine_gbs: float = 29.0  # DRAM GB/s of this machine (its validation bandwidth)
    fork_us: float = 1.5  # a spinning worker picks up a job
    wake_us: float = 15.0  # a sleeping worker picks up a job (futex)
    notify_us: float = 1.0  # the waker's cost per sleeping worker
    join_us: float = 1.5  # the caller sees the last worker finish
    sources: dict = field(default_factory=dict)

    def describe(self):
        return (f"core {self.core_gflops:.0f} GFLOP/s, core {self.core_gbs:.1f} GB/s, machine "
                f"{self.machine_gbs:.1f} GB/s; pool fork {self.fork_us:.1f} us, wake "
                f"{self.wake_us:.1f} us, notify {self.notify_us:.2f} us/worker, join "
                f"{self.join_us:.1f} us ({self.sources})")


class Trace:
    def __init__(self):
        self.parts = {}  # sig -> {threads: [(count, flops, weight, kv, act), ...]}
        self.items = []  # nodes and regions outside nodes, in time order
        self.marks = []  # (what, id, t_ms)
        self.load = "?"


def load_trace(path):
    tr = Trace()
    phase = None
    pending = []
    prev_ovc = None
    for line in open(path):
        ev = json.loads(line)
        kind = ev["ev"]
        if kind == "part":
            tr.parts[ev["sig"]] = {int(t): v for t, v in ev["parts"].items()}
        elif kind == "run":
            phase = ev["phase"]
            tr.items.append({"kind": "run", "phase": phase, "t0": ev["t"], "t1": ev["t"],
                             "regions": [], "ovh_gap": 0.0})
            prev_ovc = ev["ovh"]
        elif kind == "region":
            if ev["node"]:
                pending.append(ev)
            elif phase is not None:
                item = {"kind": "region", "phase": phase, "name": f"{phase}.other",
                        "t0": ev["t0"], "t1": ev["t1"], "regions": [ev], "ovh": 0.0,
                        "ovh_gap": 0.0}
                if "c0" in ev:
                    item["c0"], item["c1"] = ev["c0"], ev["c1"]
                tr.items.append(item)
        elif kind == "node":
            regions = [r for r in pending if r["node"] == ev["name"]]
            pending = []
            if phase is None:
                continue
            gap = ev["ovc"] - ev["ovh"] - prev_ovc if prev_ovc is not None else 0.0
            prev_ovc = ev["ovc"]
            item = {"kind": "node", "phase": phase, "name": ev["name"], "op": ev["op"],
                    "t0": ev["t0"], "t1": ev["t1"], "regions": regions, "ovh": ev["ovh"],
                    "ovh_gap": max(gap, 0.0)}
            if "c0" in ev:
                item["c0"], item["c1"] = ev["c0"], ev["c1"]
            tr.items.append(item)
        elif kind == "mark":
            tr.marks.append((ev["what"], ev["id"], ev["t"]))
    tr.items.sort(key=lambda it: it["t0"])
    return tr


def measured_ms(item):
    return max(item["t1"] - item["t0"] - item.get("ovh", 0.0), 0.0)


def task_times(region):
    """The tasks' CPU times when recorded (a loaded machine does not inflate them), else wall."""
    return region.get("cpu") or region["us"]


def region_cpu_ms(region):
    """A job's span with the machine's other load taken out: the busiest pool thread's CPU."""
    if "thr" not in region:
        return region["t1"] - region["t0"]
    per = defaultdict(float)
    for thread, t in zip(region["thr"], region["cpu"]):
        per[thread] += t
    return max(per.values(), default=0.0) / 1000.0


def serial_ms(item, cpu):
    """Time of the item outside its jobs: by the graph thread's CPU clock when recorded."""
    if cpu and "c0" in item:
        inside = sum(r["c1"] - r["c0"] for r in item["regions"] if "c0" in r)
        return max(item["c1"] - item["c0"] - inside - item.get("ovh", 0.0), 0.0)
    return max(measured_ms(item) - sum(r["t1"] - r["t0"] for r in item["regions"]), 0.0)


def item_ms(item, cpu=False):
    """Measured time of an item: its wall time, or (cpu) its jobs' CPU spans and serial CPU."""
    if not cpu:
        return measured_ms(item)
    return serial_ms(item, True) + sum(region_cpu_ms(r) for r in item["regions"])


def expand(rle):
    out = []
    for count, flops, weight, kv, act in rle:
        out.extend([(flops, weight + kv, act)] * int(count))
    return out


DECODE_ATTENTION = re.compile(r"q=1 kv=(\d+) h=\d+/(\d+) d=(\d+)")


def split_over_keys(sig, tasks, chunk):
    """What if one-row (decode) attention were split over keys too: every kv-head task of a
    one-row attention (alone or in a group) becomes ceil(keys / chunk) tasks of equal shares,
    each with the FLOPs of merging its partial (max, sum and head_dim values per query head) in a
    fixed order. None when sig is not (only) one-row attention."""
    if not sig.startswith(("attention q=1 ", "group [q=1 ")):
        return None
    problems = DECODE_ATTENTION.findall(sig)
    if sig.startswith("group") and len(problems) != sig.count("["):
        return None
    out, i = [], 0
    for keys, kv_heads, dim in problems:
        pieces = max(1, -(-int(keys) // chunk))
        for flops, dram, act in tasks[i:i + int(kv_heads)]:
            merge = 4.0 * (int(dim) + 2) * 2  # two query heads per kv head (GQA group of 2)
            out.extend([(flops / pieces + merge, dram / pieces, act / pieces)] * pieces)
        i += int(kv_heads)
    return out if i == len(tasks) else None


def stream_gbs(trace, phase="decode", quantile=0.99):
    """The DRAM rate one busy core reached in the trace's `phase`: per job, its tasks' DRAM bytes
    over the sum of their times (the rate per busy thread), and of those the byte-weighted
    `quantile`. A core demonstrably read this fast with the engine's own access pattern, so a
    per-core bandwidth below it (a probe that streams worse than the GEMV panels) must not bound
    the replay of this very trace; the top 1 % is left out as jobs whose weights were still in
    the cache. 0 when the phase read nothing."""
    rates = []
    for it in trace.items:
        if it["phase"] != phase:
            continue
        for region in it["regions"]:
            rle = trace.parts.get(region["sig"], {}).get(region["threads"]) if region["sig"] \
                else None
            tasks = expand(rle) if rle else []
            if len(tasks) != len(region["us"]):
                continue
            dram, busy_us = sum(t[1] for t in tasks), sum(task_times(region))
            if dram > 0 and busy_us > 0:
                rates.append((dram / busy_us / 1e3, dram))
    total = sum(d for _, d in rates)
    seen = 0.0
    for rate, dram in sorted(rates):
        seen += dram
        if seen >= quantile * total:
            return rate
    return 0.0


class Simulator:
    def __init__(self, trace, threads, bandwidth_gbs, machine, key_chunk=0):
        self.tr, self.T, self.B, self.m = trace, threads, bandwidth_gbs, machine
        self.key_chunk = key_chunk  # > 0: what-if decode attention split over keys
        self.cache = {}
        self.expanded = {}

    def tasks(self, sig, threads):
        key = (sig, threads)
        if key not in self.expanded:
            parts = self.tr.parts.get(sig, {})
            self.expanded[key] = expand(parts[threads]) if threads in parts else None
        return self.expanded[key]

    def rate(self, region):
        """us per unit of work on one core here, from the region's measured tasks."""
        cal = self.tasks(region["sig"], region["threads"]) if region["sig"] else None
        if cal is None or len(cal) != len(region["us"]):
            return None, None
        unit = 0 if sum(t[0] for t in cal) > 0 else 2  # FLOPs, else activation bytes
        work = sum(t[unit] for t in cal)
        return (sum(task_times(region)) / work if work > 0 else 0.0), unit

    def region(self, region, sleeping):
        """Predicted us, busy us (sum of task times), task count, DRAM bytes, FLOPs."""
        rate, unit = self.rate(region)
        tasks = self.tasks(region["sig"], self.T) if rate is not None else None
        if tasks is not None and self.key_chunk > 0:
            tasks = split_over_keys(region["sig"], tasks, self.key_chunk) or tasks
        if tasks is None:  # no work description: its measured span, unscaled
            span = 1000.0 * region_cpu_ms(region)
            return span, span, len(region["us"]), 0.0, 0.0
        key = (region["sig"], f"{rate:.4g}", sleeping)
        if key not in self.cache:
            self.cache[key] = self.schedule(tasks, rate, unit, sleeping)
        return self.cache[key]

    def schedule(self, tasks, rate, unit, sleeping):
        T, m = self.T, self.m
        busy_tasks = [t for t in tasks if t[0] > 0 or t[1] > 0 or t[2] > 0] or tasks
        active = max(1, min(T, len(busy_tasks)))
        per_thread_gbs = min(m.core_gbs, self.B / active)
        times = [max(rate * t[unit], t[1] / (per_thread_gbs * 1e3)) for t in tasks]
        dram = sum(t[1] for t in tasks)
        flops = sum(t[0] for t in tasks)
        if T == 1 or len(tasks) == 1:
            return sum(times), sum(times), len(tasks), dram, flops
        if sleeping:
            starts = [m.notify_us * (T - 1)] + [m.wake_us + m.notify_us * j for j in range(1, T)]
        else:
            starts = [0.0] + [m.fork_us] * (T - 1)
        heap = [(s, j) for j, s in enumerate(starts)]
        heapq.heapify(heap)
        end = 0.0
        for t in times:
            avail, j = heapq.heappop(heap)
            finish = avail + t
            end = max(end, finish)
            heapq.heappush(heap, (finish, j))
        return end + m.join_us, sum(times), len(tasks), dram, flops


def simulate(trace, threads, bandwidth_gbs, machine, key_chunk=0):
    """Per item: predicted ms, busy ms, task count, DRAM bytes, FLOPs; and the predicted clock at
    each item's start and end (for marks)."""
    sim = Simulator(trace, threads, bandwidth_gbs, machine, key_chunk)
    out = []
    clock = 0.0  # predicted ms, from the trace's first event
    starts = [it["t0"] for it in trace.items[:1]] + [t for _, _, t in trace.marks]
    prev_t1 = min(starts) if starts else None
    last_region_end = -1e9
    breaks_t, breaks_p = ([prev_t1], [0.0]) if starts else ([], [])
    prev_c1 = None
    for it in trace.items:
        # Gaps on the graph thread's CPU clock when both ends have it (no other load counted).
        if prev_c1 is not None and "c0" in it:
            gap = max(it["c0"] - prev_c1 - it["ovh_gap"], 0.0)
        else:
            gap = 0.0 if prev_t1 is None else max(it["t0"] - prev_t1 - it["ovh_gap"], 0.0)
        prev_c1 = it.get("c1", prev_c1)
        clock += gap
        start = clock
        serial = serial_ms(it, True)
        pred, busy, ntasks, dram, flops = serial, 0.0, 0, 0.0, 0.0
        for r in it["regions"]:
            sleeping = (start + pred) - last_region_end > SPIN_US / 1000.0
            p, b, n, d, f = sim.region(r, sleeping)
            pred += p / 1000.0
            busy += b / 1000.0
            ntasks = max(ntasks, n)
            dram += d
            flops += f
            last_region_end = start + pred
        clock = start + pred
        breaks_t += [it["t0"], it["t1"]]
        breaks_p += [start, clock]
        prev_t1 = it["t1"]
        out.append({"phase": it["phase"], "name": it.get("name", ""), "kind": it["kind"],
                    "pred_ms": pred, "busy_ms": busy, "serial_ms": serial, "tasks": ntasks,
                    "dram": dram, "flops": flops, "parallel": bool(it["regions"])})
    ttft = {}
    submits = {}
    for what, rid, t in trace.marks:
        i = bisect.bisect_left(breaks_t, t)
        if i == 0 or i >= len(breaks_t):
            p = 0.0 if i == 0 else breaks_p[-1]
        else:
            t0, t1, p0, p1 = breaks_t[i - 1], breaks_t[i], breaks_p[i - 1], breaks_p[i]
            p = p0 + (p1 - p0) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)
        if what == "submit":
            submits[rid] = p
        elif what == "first_token" and rid in submits:
            ttft[rid] = p - submits[rid]
    return {"threads": threads, "items": out, "ttft_ms": ttft}


def percentile(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    k = (len(v) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def phase_summary(sim, trace, sim1=None, bandwidth_gbs=None, machine=None):
    """Per phase: seconds, efficiency (ideal / predicted; ideal = the 1-thread prediction over T,
    or the bandwidth floor if higher), idle share, decode step and its floor; P95 TTFT."""
    res = {}
    runs = defaultdict(int)
    for it in trace.items:
        if it["kind"] == "run":
            runs[it["phase"]] += 1
    for phase in ("vision", "prefill", "decode"):
        if sim is None:  # measured: wall, and with the machine's other load taken out
            items = [it for it in trace.items if it["phase"] == phase]
            res[phase] = {"seconds": sum(item_ms(it) for it in items) / 1000,
                          "cpu_seconds": sum(item_ms(it, True) for it in items) / 1000}
            continue
        items = [it for it in sim["items"] if it["phase"] == phase]
        secs = sum(it["pred_ms"] for it in items) / 1000
        busy = sum(it["busy_ms"] for it in items if it["parallel"]) / 1000
        par = sum(it["pred_ms"] for it in items if it["parallel"]) / 1000
        dram = sum(it["dram"] for it in items)
        floor = dram / (bandwidth_gbs * 1e9) if bandwidth_gbs else 0.0
        one = sum(it["pred_ms"] for it in sim1["items"] if it["phase"] == phase) / 1000 \
            if sim1 else secs
        T = sim["threads"]
        ideal = max(one / T, floor)
        r = {"seconds": round(secs, 4), "efficiency": round(ideal / secs, 4) if secs else 1.0,
             "idle_share": round(1 - busy / (T * par), 4) if par else 0.0,
             "bandwidth_floor_s": round(floor, 4)}
        if phase == "decode" and runs[phase]:
            r["steps"] = runs[phase]
            r["step_s"] = round(secs / runs[phase], 5)
            r["floor_step_s"] = round(floor / runs[phase], 5)
        res[phase] = r
    if sim is not None:
        ttfts = [v / 1000 for v in sim["ttft_ms"].values()]
        res["p95_ttft_s"] = round(percentile(ttfts, 95), 4)
        res["ttft_s"] = sorted(round(v, 4) for v in ttfts)
    return res


def node_table(sim, threads, top):
    agg = defaultdict(lambda: {"ms": 0.0, "busy": 0.0, "par": 0.0, "tasks": 0, "calls": 0})
    total = defaultdict(float)
    for it in sim["items"]:
        if it["kind"] == "run":
            continue
        key = (it["phase"], re.sub(r"\.\d+\.", ".*.", it["name"]))
        a = agg[key]
        a["ms"] += it["pred_ms"]
        a["calls"] += 1
        if it["parallel"]:
            a["busy"] += it["busy_ms"]
            a["par"] += it["pred_ms"]
        a["tasks"] = max(a["tasks"], it["tasks"])
        total[it["phase"]] += it["pred_ms"]
    rows = sorted(agg.items(), key=lambda kv: -kv[1]["ms"])[:top]
    lines = ["| phase | node | calls | predicted ms | share of phase | tasks (max) | idle |",
             "|---|---|---|---|---|---|---|"]
    for (phase, name), a in rows:
        idle = 1 - a["busy"] / (threads * a["par"]) if a["par"] else 0.0
        share = a["ms"] / total[phase] if total[phase] else 0.0
        lines.append(f"| {phase} | {name} | {a['calls']} | {a['ms']:.1f} | {share * 100:.1f} % "
                     f"| {a['tasks']} | {idle * 100:.0f} % |")
    return "\n".join(lines)
