#!/usr/bin/env python3
"""qvl-run --json-schema and --grammar on the tiny checkpoint: every answer, greedy and sampled,
ends with finish_reason "stop" and is JSON that the `jsonschema` package (PyPI, in a venv under
the build folder) validates; a grammar answer matches it; refused schemas exit 4 naming the
keyword. Prints "json_schema_cli: PASS"."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "serve"))
import serve_util  # noqa: E402

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "ü"]}, "maxItems": 3},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "age", "tags", "ok"],
        "additionalProperties": False,
    },
    "nested_unicode": {
        "$defs": {"Line": {"type": "object", "properties": {
            "品名": {"type": "string", "minLength": 1, "maxLength": 8},
            "qty": {"type": "integer", "minimum": 1, "maximum": 99},
            "price": {"type": "number", "minimum": 0, "maximum": 1000}},
            "required": ["品名", "qty"], "additionalProperties": False}},
        "type": "object",
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1, "maxItems": 2},
            "note": {"anyOf": [{"type": "string", "maxLength": 6}, {"type": "null"}]},
            "kind": {"enum": ["invoice", "receipt"]},
        },
        "required": ["lines", "note", "kind"],
        "additionalProperties": False,
    },
}


def run(args, extra):
    cmd = [args.run, "-m", args.model, "-p", "Answer in JSON.", "-n", "2000", "-c", "4096",
           "-t", "1", "--json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--venv", required=True)
    args = ap.parse_args()
    serve_util.ensure_venv(args.venv, ("jsonschema",))
    import jsonschema  # noqa: E402  (from the venv)

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, schema in SCHEMAS.items():
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(schema, f, ensure_ascii=False)
            for sampling in (["--temp", "0"], ["--temp", "1", "--seed", "7"], ["--temp", "0.8", "--top-k", "40", "--seed", "3"]):
                p = run(args, ["--json-schema", path, *sampling])
                label = f"{name} {' '.join(sampling)}"
                if p.returncode != 0:
                    failures.append(f"{label}: exit {p.returncode}: {p.stderr[-300:]}")
                    continue
                report = json.loads(p.stdout)
                if report["finish_reason"] != "stop":
                    failures.append(f"{label}: finish_reason {report['finish_reason']}")
                    continue
                try:
                    jsonschema.validate(json.loads(report["text"]), schema)
                except Exception as e:  # noqa: BLE001 - any failure is the finding
                    failures.append(f"{label}: {report['text']!r} does not validate: {e}")
        grammar = os.path.join(tmp, "g.gbnf")
        with open(grammar, "w") as f:
            f.write('root ::= "answer: " ( "yes" | "no" ) " (" [0-9]{1,3} "%)"\n')
        p = run(args, ["--grammar", grammar, "--temp", "1", "--seed", "5"])
        text = json.loads(p.stdout)["text"] if p.returncode == 0 else ""
        if not re.fullmatch(r"answer: (yes|no) \([0-9]{1,3}%\)", text):
            failures.append(f"grammar: {text!r} (exit {p.returncode})")
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            json.dump({"type": "number", "multipleOf": 3}, f)
        p = run(args, ["--json-schema", bad])
        if p.returncode != 4 or "'multipleOf'" not in p.stderr:
            failures.append(f"unsupported keyword: exit {p.returncode}, {p.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("json_schema_cli: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
