#!/usr/bin/env python3
"""Reads the JUnit files ctest wrote (ctest --output-junit) and accounts for every skipped test.

A test may skip only for a CPU feature this machine lacks, and says so with the tag
"[cpu-feature TIER]" (tests/support/cpu_skip.h, tests/kernels/kernel_test_util.h). The report
prints one summary line (tiers tested, tiers skipped, skips counted) and fails:
  - on a CPU-feature skip for a tier that /proc/cpuinfo says this CPU has (the engine's own
    probe, the code under test, turned a defect into a skip);
  - with CI=true, on any other skip (a missing package, PyPI, chromium, a kernel feature): CI
    installs everything the tests need, so such a skip hides a test that did not run.

Usage: skip_report.py JUNIT.xml [JUNIT.xml...]      (exit 0 = accounted for)
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

TIERS = ("scalar", "avx2", "avx512", "avx512bf16")
TAG = re.compile(r"\[cpu-feature (scalar|avx2|avx512bf16|avx512)\]")


def cpu_tiers(cpuinfo="/proc/cpuinfo"):
    """The tiers this CPU runs, from the kernel's flag list (the rule of kernels/isa.cpp, read
    independently of it)."""
    flags = set()
    with open(cpuinfo) as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    avx2 = {"avx2", "fma", "f16c"} <= flags
    avx512 = avx2 and {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
    bf16 = avx512 and {"avx512_bf16", "avx512_vnni"} <= flags
    return {"scalar": True, "avx2": avx2, "avx512": avx512, "avx512bf16": bf16}


def skipped_tests(paths):
    """(name, output) of every skipped test case in the JUnit files."""
    out = []
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            if case.get("status") == "skipped" or case.find("skipped") is not None:
                text = "".join((e.text or "") + " " + (e.get("message") or "")
                               for e in case.iter() if e is not case)
                out.append((case.get("name"), text))
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    have = cpu_tiers()
    in_ci = os.environ.get("CI", "").lower() == "true"
    cpu_skips = {t: 0 for t in TIERS}
    wrong, other = [], []
    for name, text in skipped_tests(sys.argv[1:]):
        m = TAG.search(text)
        if not m:
            other.append(name)
        elif have[m.group(1)]:
            wrong.append((name, m.group(1)))
        else:
            cpu_skips[m.group(1)] += 1
    tested = [t for t in TIERS if have[t]]
    untested = [f"{t} ({cpu_skips[t]} tests)" for t in TIERS if not have[t]]
    print(f"skip summary: tiers tested: {' '.join(tested)}; tiers skipped: "
          f"{', '.join(untested) or 'none'}; cpu-feature skips: {sum(cpu_skips.values())}; "
          f"other skips: {len(other)}")
    failed = False
    for name, t in wrong:
        print(f"skip_report: FAIL: {name} skipped for {t}, which this CPU has (/proc/cpuinfo)")
        failed = True
    for name in other:
        print(f"skip_report: {'FAIL' if in_ci else 'note'}: {name} skipped for a reason other "
              f"than a missing CPU feature{' (CI=true: every test must run)' if in_ci else ''}")
        failed = failed or in_ci
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
