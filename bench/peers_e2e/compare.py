"""The peer table of bench/e2e_bench.py: qvl beside Hugging Face transformers and llama.cpp, measured
in one run on the same checkpoint, images, question and thread count (issue 14's format).

With --peers-warm, qvl and Hugging Face also get rows measured on a second request in one
process, after a first on another image of the same size ("second request"): what a running
server answers in. The other rows are a fresh process's first request.

Engines alternate within each repeat (qvl, its extra precisions, then each peer, for each image;
reversed in every other repeat), so a slow spell of the shared machine hits every engine alike;
each cell is the median of the repeats.

After the table come issue 14's targets as paired ratios: each repeat divides one engine's figure
by the other's from the same repeat, and the verdict uses the median of those ratios. A shared
host's slow spells last seconds to minutes and move both runs of a pair together, so the paired
ratio varies far less than either engine's own times (whose medians may come from different
repeats).
"""

import statistics
import sys

from . import runners, setup_env

COLUMNS = [("448 vision", "448x448", "vision_s", "s"),
           ("448 prefill", "448x448", "prefill_s", "s"),
           ("448 TTFT", "448x448", "ttft_s", "s"),
           ("1280 vision", "1280x720", "vision_s", "s"),
           ("1280 TTFT", "1280x720", "ttft_s", "s"),
           ("decode ms/token", "448x448", "decode_ms_per_token", "ms"),
           ("peak RSS", None, "peak_rss_mb", "MB")]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build_engines(args):
    """[(key, label, run(image_path) -> (figures, error))]; setup failures become error rows."""
    engines, errors = [], {}
    q = dict(qvl_run=args.qvl_run, model=args.model, question=args.question_text,
             n=args.peer_n, threads=args.peer_threads, timeout=args.timeout)
    isa = f", QVL_ISA={args.isa}" if getattr(args, "isa", None) else ""
    for prec in [args.precision] + [p for p in args.qvl_extra if p != args.precision]:
        label = "qvl " + (" ".join(runners.QVL_WEIGHT_ROWS[prec])
                          if prec in runners.QVL_WEIGHT_ROWS else
                          "QVL_LOGITS_SCREEN=0" if prec == "no-screen" else
                          f"QVL_PRECISION={prec}" if prec else "(default precision)") + isa
        engines.append((f"qvl-{prec or 'default'}", label,
                        lambda img, warm, prec=prec: runners.run_qvl(image=img, precision=prec,
                                                                     **q)))
        if args.peers_warm:
            engines.append((f"qvl-{prec or 'default'}-warm", label + ", second request",
                            lambda img, warm, prec=prec: runners.run_qvl(
                                image=img, precision=prec, warmup_image=warm, **q)))
    cache = args.peers_cache
    common = dict(model=args.model, question=args.question_text, n=args.peer_n,
                  threads=args.peer_threads, timeout=args.timeout)
    py = None
    if {"hf", "hf-f32", "llamacpp"} & set(args.peers):
        try:
            py = setup_env.ensure_venv(cache)  # convert_hf_to_gguf.py runs in it too
        except setup_env.SetupError as e:
            for key in {"hf", "hf-f32", "llamacpp"} & set(args.peers):
                errors[key] = f"setup: {e}"
    # hf: the checkpoint's own bf16; hf-f32: float32, the fair peer on CPUs without bf16
    # arithmetic (AVX2 only), where torch's bf16 matrix products are several times slower.
    for key, dtype, tag in (("hf", "bfloat16", "bf16"), ("hf-f32", "float32", "f32")):
        if key not in args.peers or not py:
            continue
        v = setup_env.venv_versions(py)
        label = (f"Hugging Face transformers {v.get('transformers', '?')}, torch "
                 f"{v.get('torch', '?').split('+')[0]}, {tag}, sdpa")
        engines.append((key, label, lambda img, warm, dtype=dtype: runners.run_hf(
            python=py, image=img, dtype=dtype, **common)))
        if args.peers_warm:
            engines.append((key + "-warm", label + ", second request",
                            lambda img, warm, dtype=dtype: runners.run_hf(
                                python=py, image=img, warmup_image=warm, dtype=dtype,
                                **common)))
    if "llamacpp" in args.peers and py:
        try:
            bindir = setup_env.ensure_llamacpp(cache)
            wanted = getattr(args, "llamacpp_rows", None)  # None: every row
            rows = [r for r in (
                ("text-bf16", "mmproj-bf16", "llama.cpp (llama-mtmd-cli, bf16 GGUF)"),
                ("text-q8_0", "mmproj-bf16", "llama.cpp q8_0 text model"),
                ("text-q4_k_m", "mmproj-q8_0", "llama.cpp Q4_K_M text, Q8_0 mmproj"))
                if wanted is None or r[0] in wanted]
            # Only the GGUFs the chosen rows read (Q4_K_M is made from the bf16 text model).
            needed = {m for _, m, _ in rows} | {"text-bf16" if k == "text-q4_k_m" else k
                                                for k, _, _ in rows}
            ggufs = {k: setup_env.ensure_gguf(cache, args.model, k, py)
                     for k in ("mmproj-bf16", "text-bf16", "text-q8_0", "mmproj-q8_0")
                     if k in needed}
            if any(k == "text-q4_k_m" for k, _, _ in rows):
                ggufs["text-q4_k_m"] = setup_env.ensure_quantized_gguf(
                    cache, ggufs["text-bf16"], bindir, "Q4_K_M")
            for key, mmproj, label in rows:
                # One request per process: first-request rows only (the warm-up image unused).
                engines.append((f"llamacpp-{key}", label, lambda img, _warm, key=key, mm=mmproj:
                                runners.run_llamacpp(
                                    bindir=bindir, text_gguf=ggufs[key],
                                    mmproj_gguf=ggufs[mm], image=img,
                                    question=args.question_text, n=args.peer_n,
                                    threads=args.peer_threads, timeout=args.timeout)))
        except setup_env.SetupError as e:
            errors["llamacpp"] = f"setup: {e}"
    return engines, errors


# The order engines run in within a round: each pair of a target next to each other or one apart
# (a paired ratio is only as steady as the minute between its two runs); engines in no target
# follow in table order.
RUN_ORDER = ["llamacpp-text-bf16", "qvl-q4-vq8", "qvl-default", "hf", "qvl-q8",
             "llamacpp-text-q8_0", "qvl-q4", "llamacpp-text-q4_k_m", "qvl-q8-warm", "hf-warm",
             "qvl-default-warm", "qvl-q4-vq8-warm"]


def run_order(engines):
    """engines (key, label, run) in RUN_ORDER, the others after them in their own order."""
    rank = {key: i for i, key in enumerate(RUN_ORDER)}
    return sorted(engines, key=lambda e: rank.get(e[0], len(RUN_ORDER)))


# Issue 14's targets: (what, image, figure, engine, reference engine, the most the ratio may be).
TARGETS = [("448 TTFT, bf16 vs HF", "448x448", "ttft_s", "qvl-default", "hf", 0.75),
           ("448 TTFT, q8 vs HF", "448x448", "ttft_s", "qvl-q8", "hf", 0.60),
           ("1280 TTFT, bf16 vs HF", "1280x720", "ttft_s", "qvl-default", "hf", 0.60),
           ("1280 TTFT, q8 vs HF", "1280x720", "ttft_s", "qvl-q8", "hf", 0.60),
           ("448 decode, bf16 vs llama.cpp bf16", "448x448", "decode_ms_per_token",
            "qvl-default", "llamacpp-text-bf16", 0.95),
           ("1280 decode, bf16 vs llama.cpp bf16", "1280x720", "decode_ms_per_token",
            "qvl-default", "llamacpp-text-bf16", 0.95),
           ("448 decode, q8 vs qvl bf16", "448x448", "decode_ms_per_token", "qvl-q8",
            "qvl-default", 0.62),
           ("1280 decode, q8 vs qvl bf16", "1280x720", "decode_ms_per_token", "qvl-q8",
            "qvl-default", 0.62),
           ("448 decode, q8 vs llama.cpp q8_0", "448x448", "decode_ms_per_token", "qvl-q8",
            "llamacpp-text-q8_0", 0.95),
           ("1280 decode, q8 vs llama.cpp q8_0", "1280x720", "decode_ms_per_token", "qvl-q8",
            "llamacpp-text-q8_0", 0.95)]
# Issue 49's: 4-bit text weights and the int8 vision tower (its vision time against the default
# row's bf16 tower; the text weights do not enter the vision figure).
TARGETS += [(f"{short} {what}", lab, key, a, b, limit)
            for short, lab in (("448", "448x448"), ("1280", "1280x720"))
            for what, key, a, b, limit in (
                ("decode, q4 vs qvl q8", "decode_ms_per_token", "qvl-q4", "qvl-q8", 0.65),
                ("decode, q4 vs llama.cpp Q4_K_M", "decode_ms_per_token", "qvl-q4",
                 "llamacpp-text-q4_k_m", 0.90),
                ("vision, vision q8 vs bf16", "vision_s", "qvl-q4-vq8", "qvl-default", 0.65))]
TARGETS += [("448 TTFT, q4 + vision q8 vs HF", "448x448", "ttft_s", "qvl-q4-vq8", "hf", 0.50)]
# With --peers-warm, the same TTFT targets on the second requests: like with like (bench/README.md:
# a first-request Hugging Face row runs its vision tower warm, a first-request qvl row cold).
TARGETS += [(what + ", second request", lab, key, a + "-warm", b + "-warm", limit)
            for what, lab, key, a, b, limit in TARGETS if key == "ttft_s"]


def paired_ratios(a_runs, b_runs, key):
    """Ratios a/b of `key` over the repeats where both engines produced it, in repeat order.

    a_runs and b_runs hold one entry per repeat (None where that repeat failed)."""
    out = []
    for a, b in zip(a_runs, b_runs):
        va = a.get(key) if a else None
        vb = b.get(key) if b else None
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and vb > 0:
            out.append(va / vb)
    return out


def target_rows(runs):
    """[{target, ratios, median, min, max, limit, verdict}] for the targets whose engines ran."""
    rows = []
    for what, lab, key, a, b, limit in TARGETS:
        if a not in runs or b not in runs:
            continue
        r = paired_ratios(runs[a].get(lab, []), runs[b].get(lab, []), key)
        med = median(r)
        rows.append({"target": what, "limit": limit, "ratios": r, "median": med,
                     "min": min(r, default=None), "max": max(r, default=None),
                     "verdict": "-" if med is None else ("met" if med <= limit else "MISSED")})
    return rows


def median(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "ms":
        return f"{v:.0f}"
    return f"{v / 1000:.2f} GB"


def run_peer_table(args, image_paths):
    """Runs the table, prints it as markdown, returns its JSON form; failures are kept as errors."""
    engines, setup_errors = build_engines(args)
    labels = [lab for lab, _, _ in args.images_for_peers]
    # One entry per repeat, None for a failed run, so that repeats stay paired across engines.
    runs = {key: {lab: [] for lab in labels} for key, _, _ in engines}
    errors = {key: {} for key, _, _ in engines}
    order = run_order(engines)
    for r in range(max(1, args.repeat)):
        for lab in labels:
            # Odd rounds run the engines in reverse, so a machine that drifts during a round
            # favours no engine of a pair on balance.
            for key, name, run in (order if r % 2 == 0 else order[::-1]):
                log(f"peers: run {r + 1}/{args.repeat}, {lab}: {name}")
                fig, err = run(image_paths[lab], image_paths[lab + args.warmup_suffix])
                if err:
                    log(f"peers: {name}, {lab}: {err}")
                    errors[key][lab] = err
                runs[key][lab].append(None if err else fig)
    rows = []
    for key, name, _ in engines:
        done = {lab: [f for f in runs[key][lab] if f] for lab in labels}
        med = {lab: {k: median([f.get(k) for f in done[lab]])
                     for k in ("load_s", "vision_s", "prefill_s", "ttft_s", "prompt_tokens",
                               "decode_ms_per_token", "peak_rss_mb")}
               for lab in labels if done[lab]}
        rows.append({"engine": key, "label": name, "medians": med,
                     "per_run": {lab: runs[key][lab] for lab in labels},
                     "runs": {lab: len(done[lab]) for lab in labels},
                     "errors": errors[key]})
    for peer, err in setup_errors.items():
        rows.append({"engine": peer, "label": peer, "medians": {}, "runs": {},
                     "errors": {"setup": err}})
    print_table(args, rows)
    targets = target_rows(runs)
    print_targets(targets)
    return {"threads": args.peer_threads, "n_predict": args.peer_n, "repeat": args.repeat,
            "question": args.question_text, "rows": rows, "targets": targets}


def print_targets(targets):
    if not targets:
        return
    print("\n== Issue 14 targets, paired per repeat (ratio of the two engines' runs in the same "
          "repeat; verdict on the median)\n")
    print("| target | at most | median ratio | range | per repeat | verdict |")
    print("|---|---|---|---|---|---|")
    for t in targets:
        if t["median"] is None:
            print(f"| {t['target']} | {t['limit']:.2f}x | - | - | - | - |")
            continue
        each = ", ".join(f"{x:.2f}" for x in t["ratios"])
        print(f"| {t['target']} | {t['limit']:.2f}x | {t['median']:.3f}x | "
              f"{t['min']:.2f}-{t['max']:.2f} | {each} | {t['verdict']} |")


def print_table(args, rows):
    prompt = None
    for row in rows:
        prompt = prompt or row["medians"].get("448x448", {}).get("prompt_tokens")
    heads = [h if h != "448 prefill" or not prompt else f"448 prefill ({prompt:.0f} tok, qvl)"
             for h, _, _, _ in COLUMNS]
    print(f"\n== Peers: {args.peer_threads} thread(s), {args.peer_n} tokens, medians of "
          f"{args.repeat} run(s), engines alternating\n")
    print("| engine | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for row in rows:
        med = row["medians"]
        cells = []
        for _, lab, key, unit in COLUMNS:
            if lab is None:
                v = max([m[key] for m in med.values() if m.get(key) is not None], default=None)
            else:
                v = med.get(lab, {}).get(key)
            cells.append(fmt(v, unit))
        print(f"| {row['label']} | " + " | ".join(cells) + " |")
    for row in rows:
        for lab, err in row["errors"].items():
            print(f"- {row['label']}, {lab}: FAILED: {err}")
    print("\nPrompt tokens per engine (448x448 / 1280x720): " + "; ".join(
        f"{r['engine']} {r['medians'].get('448x448', {}).get('prompt_tokens')}"
        f"/{r['medians'].get('1280x720', {}).get('prompt_tokens')}" for r in rows))
