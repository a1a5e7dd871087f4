"""One measured run of each engine, reduced to the figures of the peer table.

Every runner returns (figures, error): figures has vision_s, prefill_s, ttft_s, prompt_tokens,
decode_ms_per_token, peak_rss_mb, load_s (None where an engine does not report one).
"""

import json
import os
import re
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# qvl rows that change the weight formats (issue 49), default precision otherwise.
QVL_WEIGHT_ROWS = {
    "q8": ["--weights", "q8"],
    "q4": ["--weights", "q4"],
    "q4-vq8": ["--weights", "q4", "--vision-weights", "q8"],
}


def run_measured(cmd, timeout, env=None):
    """(exit code or 'timeout', stdout, stderr, peak RSS of the child in MB, wall seconds)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        except OSError as e:
            return f"cannot run: {e}", "", "", None, 0.0
        timed_out = []

        def kill():
            timed_out.append(True)
            p.kill()
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    rc = "timeout" if timed_out else p.returncode
    return rc, stdout, stderr, usage.ru_maxrss / 1024.0, wall


def _tail(text, n=3):
    return "\n".join(text.strip().splitlines()[-n:]) or "(no output)"


def _sec(ms):
    return ms / 1000.0 if isinstance(ms, (int, float)) else None


def run_qvl(qvl_run, model, image, question, n, threads, precision, timeout, warmup_image=None):
    """A single-shot qvl-run call; with warmup_image, the second of two requests in one batch
    (run_qvl_warm)."""
    env = dict(os.environ)
    options = ["-n", str(n), "--ignore-eos", "--temp", "0", "-t", str(threads)]
    if precision in QVL_WEIGHT_ROWS:  # quantized weights, default precision otherwise
        options += QVL_WEIGHT_ROWS[precision]
    elif precision == "no-screen":  # default precision, every logit computed (README: screen)
        env["QVL_LOGITS_SCREEN"] = "0"
    elif precision:
        env["QVL_PRECISION"] = precision
    if warmup_image:
        return run_qvl_warm(qvl_run, model, image, warmup_image, question, n, options, env,
                            timeout)
    cmd = [qvl_run, "-m", model, "-i", image, "-p", question, "--json"] + options
    rc, out, err, rss, _ = run_measured(cmd, timeout, env)
    if rc != 0:
        return None, f"qvl-run exit {rc}: {_tail(err)}"
    try:
        j = json.loads(out)
        t = j["timings_ms"]
        prompt = j.get("prompt_tokens")
        tps = j.get("decode_tokens_per_s")
        return {"load_s": _sec(t.get("load")), "vision_s": _sec(t.get("vision")),
                "prefill_s": _sec(t.get("prefill")), "ttft_s": _sec(t.get("ttft")),
                "prompt_tokens": len(prompt) if isinstance(prompt, list) else prompt,
                "decode_ms_per_token": 1000.0 / tps if tps else None,
                "peak_rss_mb": j.get("peak_rss_mb") or rss}, None
    except (ValueError, KeyError, TypeError) as e:
        return None, f"qvl-run output not understood: {e}"


def run_qvl_warm(qvl_run, model, image, warmup_image, question, n, options, env, timeout):
    """qvl-run --batch with two requests, warmup_image then image (one conversation at a time):
    the figures of the second, as a running server sees them (arenas, buffers and page tables
    already in place). TTFT is from the start of its processing (its queue time excluded)."""
    with tempfile.TemporaryDirectory() as tmp:
        batch, results = os.path.join(tmp, "requests.jsonl"), os.path.join(tmp, "results.jsonl")
        with open(batch, "w") as f:
            for rid, img in (("warmup", warmup_image), ("measured", image)):
                content = [{"type": "image", "image": img}, {"type": "text", "text": question}]
                f.write(json.dumps({"id": rid, "messages": [{"role": "user", "content": content}],
                                    "n_predict": n, "ignore_eos": True, "temperature": 0}) + "\n")
        cmd = [qvl_run, "-m", model, "--batch", batch, "--parallel", "1", "-o", results] + options
        rc, _, err, rss, _ = run_measured(cmd, timeout, env)
        if rc != 0:
            return None, f"qvl-run --batch exit {rc}: {_tail(err)}"
        try:
            with open(results) as f:
                lines = [json.loads(line) for line in f if line.strip()]
            j = next(x for x in lines if x.get("id") == "measured")
            if "error" in j:
                return None, f"qvl-run --batch: {j['error']}"
            t = j["timings_ms"]
            steps = len(j["tokens"]) - 1
            return {"load_s": None, "vision_s": _sec(t["vision"]), "prefill_s": _sec(t["prefill"]),
                    "ttft_s": _sec(t["ttft"] - t["queue"]), "prompt_tokens": j["prompt_tokens"],
                    "decode_ms_per_token": t["decode"] / steps if steps > 0 else None,
                    "peak_rss_mb": rss}, None
        except (OSError, ValueError, KeyError, TypeError, StopIteration) as e:
            return None, f"qvl-run --batch output not understood: {type(e).__name__}: {e}"


def run_hf(python, model, image, question, n, threads, timeout, warmup_image=None,
           dtype="bfloat16"):
    cmd = [python, os.path.join(HERE, "hf_worker.py"), "--model", model, "--image", image,
           "--question", question, "-n", str(n), "--threads", str(threads), "--dtype", dtype]
    if warmup_image:
        cmd += ["--warmup-image", warmup_image]
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(threads))
    rc, out, err, rss, _ = run_measured(cmd, timeout, env)
    if rc != 0:
        return None, f"transformers exit {rc}: {_tail(err)}"
    try:
        j = json.loads(out.strip().splitlines()[-1])
        t = j["timings_ms"]
        return {"load_s": _sec(t["load"]), "vision_s": _sec(t["vision"]),
                "prefill_s": _sec(t["prefill"]), "ttft_s": _sec(t["ttft"]),
                "prompt_tokens": j["prompt_tokens"],
                "decode_ms_per_token": j["decode_ms_per_token"],
                "peak_rss_mb": rss or j.get("peak_rss_mb")}, None
    except (ValueError, KeyError, TypeError, IndexError) as e:
        return None, f"transformers output not understood: {e}; {_tail(out)}"


_LLAMA_PATTERNS = {
    "load_ms": re.compile(r"llama_perf_context_print:\s+load time =\s+([\d.]+) ms"),
    "prompt": re.compile(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens"),
    "eval": re.compile(r"\s eval time =\s+([\d.]+) ms /\s+(\d+) runs"),
}
# Older llama.cpp: one "image slice encoded in N ms" per slice; newer: "mtmd batch encoding done
# in N ms" per batch of images.
_SLICE = re.compile(r"(?:slice encoded|mtmd batch encoding done) in (\d+) ms")


def parse_llamacpp_log(text):
    """Figures from llama-mtmd-cli's log: vision = image encode lines, TTFT = prompt eval time,
    prefill = TTFT - vision, decode = eval time per run."""
    slices = [int(x) for x in _SLICE.findall(text)]
    m_prompt = _LLAMA_PATTERNS["prompt"].search(text)
    m_eval = _LLAMA_PATTERNS["eval"].search(text)
    m_load = _LLAMA_PATTERNS["load_ms"].search(text)
    if not slices or not m_prompt or not m_eval:
        raise ValueError("no 'slice encoded' / 'prompt eval time' / 'eval time' lines")
    vision = sum(slices) / 1000.0
    # In llama-mtmd-cli's perf counters the prompt eval time includes the vision encode (seen
    # on the vendored version: prompt eval 26.9 s = encode 14.1 s + image-token decode 11.3 s +
    # text chunks), so it is the time to first token and prefill is the rest.
    prompt_eval = float(m_prompt.group(1)) / 1000.0
    runs = int(m_eval.group(2))
    return {"load_s": float(m_load.group(1)) / 1000.0 if m_load else None,
            "vision_s": vision, "prefill_s": max(0.0, prompt_eval - vision),
            "ttft_s": prompt_eval,
            "prompt_tokens": int(m_prompt.group(2)),
            "decode_ms_per_token": float(m_eval.group(1)) / runs if runs else None}


def run_llamacpp(bindir, text_gguf, mmproj_gguf, image, question, n, threads, timeout):
    cmd = [os.path.join(bindir, "llama-mtmd-cli"), "-m", text_gguf, "--mmproj", mmproj_gguf,
           "--image", image, "-p", question, "-n", str(n), "--ignore-eos", "--temp", "0",
           "-t", str(threads), "-tb", str(threads), "-c", "4096",
           "--perf", "-v"]  # recent llama.cpp prints its timings only with both
    rc, out, err, rss, _ = run_measured(cmd, timeout)
    if rc != 0:
        return None, f"llama-mtmd-cli exit {rc}: {_tail(err)}"
    try:
        fig = parse_llamacpp_log(err + "\n" + out)
    except ValueError as e:
        return None, f"llama-mtmd-cli output not understood: {e}; {_tail(err)}"
    fig["peak_rss_mb"] = rss
    return fig, None
