#!/usr/bin/env python3
"""Size rule of docs/style.md: no C++ source file over 600 lines, no function over 80 lines.

Run from the repository root (scripts/test.sh does, in CI):
    python3 scripts/check_sizes.py [--max-file 600] [--max-function 80] [paths...]

Paths default to engine/, apps/, include/, bench/ and tests/support/. The test suites
(tests/<layer>/*_test.cpp) are excepted: a test file is a list of independent cases, and a long
table of cases or one scenario told step by step reads better whole than split; the helpers
they share (tests/support) are held to the rule.

A function is a brace block opened after a parameter list at namespace or class scope (not after
if/for/while/switch/catch, not a lambda or an initializer inside another function); its length
counts from the line its signature starts on to its closing brace. The scan strips comments,
string and character literals first, so braces inside them do not count. Prints one line per
violation, "path:line: ...", and exits 1 when there is any.

--baseline FILE lists the violations that predate the check, one "path" (a file) or
"path function" (a function) a line: they are reported but do not fail, and an entry that is no
longer a violation fails (remove it from the list), so the list only shrinks.
"""

import argparse
import pathlib
import re
import sys

SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc"}
DEFAULT_ROOTS = ["engine", "apps", "include", "bench", "tests/support"]
CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")


def strip_code(text):
    """The text with comments and string/char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text[i:j].count("\n"))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = min(j + 1, n)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(first line, last line, name) of every function body in the stripped text."""
    code = strip_code(text)
    found = []
    # Scopes: each open brace pushes "function", "block" (inside a function) or "scope"
    # (namespace, class, enum, extern, initializer at namespace scope).
    stack = []
    line = 1
    head_start = 0  # offset where the text before the next brace began
    starts = []  # offsets of function bodies' heads, parallel to "function" entries
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            if not stack or stack[-1] == "scope":
                head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            inside_function = any(k in ("function", "block") for k in stack)
            kind = "scope"
            if inside_function:
                kind = "block"
            elif ")" in head and not CONTROL.search(head.strip().split("\n")[-1]) and not re.search(
                r"=\s*\[", head
            ) and not re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", head):
                kind = "function"
            stack.append(kind)
            if kind == "function":
                start_line = line - head.rstrip().count("\n") - (len(head) - len(head.lstrip()) and 0)
                # The signature starts at the first non-blank line of the head.
                lead = head[: len(head) - len(head.lstrip())]
                start_line = line - head.count("\n") + lead.count("\n")
                name = re.findall(r"([~\w:<>]+)\s*\(", head)
                starts.append((start_line, name[0] if name else "?"))
            head_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "function":
                first, name = starts.pop()
                found.append((first, line, name))
            if not stack or stack[-1] == "scope":
                head_start = i + 1
    return found


def check(path, max_file, max_function):
    """(key, message) per violation; key is "path" or "path function"."""
    text = path.read_text(encoding="utf-8", errors="replace")
    problems = []
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if lines > max_file:
        problems.append((str(path), f"{path}:1: {lines} lines, over {max_file}"))
    for first, last, name in functions(text):
        length = last - first + 1
        if length > max_function:
            problems.append((f"{path} {name}",
                             f"{path}:{first}: function {name} is {length} lines, over {max_function}"))
    return problems


def read_baseline(path):
    if not path:
        return set()
    entries = set()
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            entries.add(line)
    return entries


def sources(roots):
    for root in roots:
        p = pathlib.Path(root)
        if p.is_file():
            yield p
            continue
        for f in sorted(p.rglob("*")):
            if f.suffix in SOURCE_SUFFIXES and f.is_file():
                yield f


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=DEFAULT_ROOTS)
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--baseline", help="violations that predate the check (see above)")
    args = ap.parse_args()
    baseline = read_baseline(args.baseline)
    problems = []
    scanned = set()
    for f in sources(args.paths):
        scanned.add(str(f))
        problems += check(f, args.max_file, args.max_function)
    count = len(scanned)
    baseline = {k for k in baseline if k.split(" ", 1)[0] in scanned}
    new = [m for k, m in problems if k not in baseline]
    old = [m for k, m in problems if k in baseline]
    seen = {k for k, _ in problems}
    fixed = sorted(baseline - seen)
    for m in old:
        print(f"{m} (baseline)")
    for m in new:
        print(m)
    for k in fixed:
        print(f"{args.baseline}: '{k}' is within the limits now: remove it from the baseline")
    print(f"check_sizes: {count} files, {len(new)} new violations, {len(old)} in the baseline, "
          f"{len(fixed)} stale baseline entries (files {args.max_file} lines, functions "
          f"{args.max_function})")
    return 1 if new or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
