#!/usr/bin/env python3
"""Unit test of skip_report.py on made-up JUnit files and CPUs: a tagged skip for a tier the CPU
lacks is counted, one for a tier it has fails, an untagged skip fails only with CI=true."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import skip_report  # noqa: E402

CASES = {
    "cpu": '<testcase name="a" status="skipped"><system-out>Skipped\n'
           '[cpu-feature avx512bf16] this CPU cannot run the tier</system-out></testcase>',
    "other": '<testcase name="b" status="skipped"><system-out>SKIP: no PyPI</system-out></testcase>',
    "run": '<testcase name="c" status="run"><system-out>ok</system-out></testcase>',
}
AVX512 = {"scalar": True, "avx2": True, "avx512": True, "avx512bf16": False}
ALL = dict(AVX512, avx512bf16=True)


def report(cases, tiers, ci):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write("<testsuite>" + "".join(CASES[c] for c in cases) + "</testsuite>")
    skip_report.cpu_tiers = lambda: tiers
    os.environ["CI"] = "true" if ci else "false"
    sys.argv = ["skip_report.py", f.name]
    try:
        return skip_report.main()
    finally:
        os.unlink(f.name)


failures = []
for cases, tiers, ci, want in [
    (["run", "cpu"], AVX512, True, 0),   # the CPU lacks the tier: counted, accepted
    (["run", "cpu"], ALL, False, 1),     # the CPU has it: the probe hid a defect
    (["run", "other"], AVX512, False, 0),  # outside CI: reported only
    (["run", "other"], AVX512, True, 1),   # in CI: fails
    (["run"], ALL, True, 0),
]:
    got = report(cases, tiers, ci)
    if got != want:
        failures.append(f"{cases} tiers={tiers} CI={ci}: exit {got}, want {want}")
for f in failures:
    print("FAIL:", f)
print("skip_report_test: PASS" if not failures else "skip_report_test: FAIL")
sys.exit(1 if failures else 0)
