#!/usr/bin/env python3
"""Fails when code compiled for one ISA tier can leak into another.

Translation units named *_avx2.cpp, *_avx512.cpp and *_avx512bf16.cpp are compiled with that
tier's instruction set. An inline function or template instantiated there (a weak symbol) is
merged by the linker with same-named copies from other objects, and any of the copies may be
the one kept for every caller: an AVX-512 copy of a helper that baseline code also calls
faults on an AVX2-only CPU (SIGILL). So a weak symbol defined in a tier's object must not be
defined or referenced in an object of any other tier (baseline included).

Usage: isa_symbols.py NM LIBRARY.a
"""
import collections
import re
import subprocess
import sys

TIERS = ("avx512bf16", "avx512", "avx2")
# Data the C++ runtime shares between every object (the personality routine's address).
ALLOWED = {"DW.ref.__gxx_personality_v0"}


def tier(obj):
    for t in TIERS:
        if re.search(rf"_{t}\.cpp\.o(bj)?$", obj):
            return t
    return "baseline"


def main():
    nm, lib = sys.argv[1], sys.argv[2]
    out = subprocess.run([nm, "-A", lib], capture_output=True, text=True, check=True).stdout
    weak = collections.defaultdict(set)  # symbol -> tiers defining it weakly
    users = collections.defaultdict(set)  # symbol -> tiers defining or referencing it
    objects = collections.defaultdict(set)  # tier -> objects with at least one symbol read
    for line in out.splitlines():
        m = re.match(r"[^:]+:([^:]+):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        objects[tier(obj)].add(obj)
        if kind in "WVu":
            weak[sym].add(tier(obj))
        if kind in "WVuTtDdBbRrU":
            users[sym].add(tier(obj))
    # A check that read nothing passes vacuously: an nm output format it no longer parses, a
    # library without the tier objects (renamed files) or without weak symbols must fail it.
    missing = [t for t in TIERS + ("baseline",) if not objects[t]]
    if missing or not weak:
        print(f"isa_symbols: FAIL (nothing to check: no symbols read from objects of tiers "
              f"{', '.join(missing) or '-'}; {len(weak)} weak symbols; is {lib} the engine "
              f"library and {nm} an nm?)")
        return 1
    bad = []
    for sym, defining in weak.items():
        if sym in ALLOWED:
            continue
        isa_tiers = defining - {"baseline"}
        if isa_tiers and len(users[sym]) > 1:
            bad.append((sym, sorted(users[sym])))
    if bad:
        names = subprocess.run(["c++filt"], input="\n".join(s for s, _ in bad),
                               capture_output=True, text=True).stdout.splitlines()
        for (sym, tiers), name in zip(bad, names or [s for s, _ in bad]):
            print(f"isa_symbols: {name} is shared by tiers {', '.join(tiers)}")
        print(f"isa_symbols: FAIL ({len(bad)} symbols): define them out of line in a baseline "
              "file, or give them internal linkage")
        return 1
    counts = ", ".join(f"{t} {len(objects[t])}" for t in TIERS + ("baseline",))
    print(f"isa_symbols: PASS ({len(weak)} weak symbols checked; objects: {counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
