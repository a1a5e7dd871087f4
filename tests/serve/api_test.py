"""qvl-serve's HTTP contract (shared docs/serve.md) through the official openai Python client, on
127.0.0.1 with the tiny test checkpoint: plain and streamed answers equal qvl-run's greedy ones,
data-URI images, multi-turn, stop strings, seeds, usage, every error status with its body,
8 concurrent clients on --parallel 4, quantized weights (--weights q8; --weights q4 with
--vision-weights q8), a disconnect that frees the slot, and videos (video_cases.py).

usage: api_test.py --serve QVL_SERVE --run QVL_RUN --model DIR --images DIR --venv DIR"""
import concurrent.futures
import json
import os
import socket
import struct
import sys
import threading
import time
import subprocess

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util as su  # noqa: E402

ap = su.arg_parser()
ap.add_argument("--venv", required=True)
args = ap.parse_args()
su.ensure_venv(args.venv, ("openai", "jsonschema"))

import openai  # noqa: E402

JPG = os.path.join(args.images, "baseline420.jpg")
PNG = os.path.join(args.images, "gray8.png")
if not os.path.exists(PNG):
    PNG = JPG
check = su.Checks("serve_api")


def tiny_png_bomb(width=20000, height=20000):
    """A PNG whose header promises width*height pixels (over the server's pixel limit)."""
    return su.png(width, height, b"\0" * (width * 3 + 1) * 4)


server = su.Server(args.serve, args.model, "-c", "4096")
client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def ask(conv, n, **kw):
    return client.chat.completions.create(model="tiny", messages=su.to_openai(conv),
                                          max_tokens=n, temperature=0, **kw)


def test_plain_equals_qvl_run():
    conv = [("user", ["Hi, who are you?"])]
    ref = su.qvl_run_answer(args.run, args.model, conv, 12)
    r = ask(conv, 12)
    check(r.object == "chat.completion" and r.model == "tiny", "object and echoed model")
    check(r.choices[0].message.role == "assistant", "role assistant")
    check(r.choices[0].message.content == ref["text"],
          f"greedy text {r.choices[0].message.content!r} != qvl-run {ref['text']!r}")
    check(r.choices[0].finish_reason == ("length" if len(ref["tokens"]) == 12 else "stop"),
          "finish_reason")
    check(r.usage.prompt_tokens == len(ref["prompt_tokens"]), "usage.prompt_tokens")
    check(r.usage.completion_tokens == len(ref["tokens"]), "usage.completion_tokens")
    check(r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens, "total_tokens")
    timings = r.model_extra.get("timings") or {}
    for k in ("queue_ms", "image_decode_ms", "vision_ms", "prefill_ms", "ttft_ms", "decode_ms",
              "cached_prompt_tokens"):
        check(k in timings, f"timings.{k}")


def test_stream_equals_plain_and_has_usage():
    conv = [("user", [("image", JPG), "What is in this picture?"])]
    ref = su.qvl_run_answer(args.run, args.model, conv, 10)
    chunks = list(ask(conv, 10, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(text == ref["text"], f"streamed {text!r} != qvl-run {ref['text']!r}")
    check(chunks[0].choices[0].delta.role == "assistant", "first delta has the role")
    last = chunks[-1]
    check(chunks[-2].choices[0].finish_reason in ("stop", "length"),
          "the chunk before the usage chunk has finish_reason")
    check(last.choices == [] and all(c.usage is None for c in chunks[:-1]),
          "include_usage: a last chunk with choices [] (OpenAI's shape)")
    check(last.usage is not None and last.usage.prompt_tokens == len(ref["prompt_tokens"])
          and last.usage.completion_tokens == len(ref["tokens"]), "usage in the last chunk")
    check(all(c.object == "chat.completion.chunk" for c in chunks), "chunk objects")
    no_usage = list(ask(conv, 3, stream=True))
    check(all(c.usage is None for c in no_usage), "no usage unless asked")


def test_png_and_multi_turn():
    conv = [("system", ["You are terse."]),
            ("user", [("image", PNG), "Describe it."]),
            ("assistant", ["A small picture."]),
            ("user", [("image", JPG), "And this one, compared?"])]
    ref = su.qvl_run_answer(args.run, args.model, conv, 8)
    r = ask(conv, 8)
    check(r.choices[0].message.content == ref["text"], "multi-turn with two images = qvl-run")
    check(r.usage.prompt_tokens == len(ref["prompt_tokens"]), "multi-turn prompt tokens")


def test_stop_strings():
    conv = [("user", ["Tell me a story."])]
    full = ask(conv, 24).choices[0].message.content
    stop = full[6:9]
    cut = full.find(stop)
    r = ask(conv, 24, stop=[stop, "\x01never"])
    check(r.choices[0].message.content == full[:cut],
          f"stop {stop!r}: {r.choices[0].message.content!r} != {full[:cut]!r}")
    check(r.choices[0].finish_reason == "stop", "stop string -> finish_reason stop")
    streamed = "".join(c.choices[0].delta.content or "" for c in ask(conv, 24, stop=stop, stream=True)
                       if c.choices)
    check(streamed == full[:cut], "stop string when streaming")


def test_seed_reproducible():
    conv = [("user", ["Say something random."])]
    def sample(seed):
        return client.chat.completions.create(model="m", messages=su.to_openai(conv), max_tokens=16,
                                              temperature=1.0, top_p=1.0, seed=seed,
                                              extra_body={"top_k": 0}).choices[0].message.content
    a, b, c = sample(42), sample(42), sample(43)
    check(a == b, "same seed, same text")
    check(a != c, "another seed, another text (random weights: near-certain)")


def expect_error(status, fn, needle, code=None):
    try:
        fn()
    except openai.APIStatusError as e:
        check(e.status_code == status, f"status {e.status_code} != {status} ({needle})")
        body = e.body if isinstance(e.body, dict) else {}
        err = body.get("error", body)
        msg = err.get("message", "") if isinstance(err, dict) else ""
        check(needle in msg, f"message {msg!r} lacks {needle!r}")
        if code is not None:
            check(err.get("code") == code, f"code {err.get('code')!r} != {code!r}")
        check("type" in err, "error.type present")
        return e
    check(False, f"no error for {needle}")


def test_client_errors():
    bad_image = [{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "data:image/png;base64,aGVsbG8gd29ybGQ="}}]}]
    expect_error(400, lambda: client.chat.completions.create(model="m", messages=bad_image),
                 "messages[0].content[0]")
    bomb = "data:image/png;base64," + __import__("base64").b64encode(tiny_png_bomb()).decode()
    expect_error(400, lambda: client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": bomb}}]}]),
        "pixel")
    expect_error(400, lambda: client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "https://example.com/cat.png"}}]}]), "--allowed-media-hosts")
    expect_error(400, lambda: client.chat.completions.create(model="m", messages=[
        {"role": "robot", "content": "x"}]), "messages[0].role")
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], max_tokens=100000),
        "does not fit the context", code="context_length_exceeded")
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], temperature=-1), "temperature")
    status, _, body = su.http("POST", server.url + "/v1/chat/completions", b'{"messages": [')
    check(status == 400 and b"malformed JSON" in body, f"malformed JSON -> 400 ({status})")
    status, _, body = su.http("GET", server.url + "/v1/nothing")
    check(status == 404 and json.loads(body)["error"]["code"] == "not_found", "404 body")


def test_limits_key_and_queue():
    with su.Server(args.serve, args.model, "--api-key", "sekret", "--max-body-mb", "1",
                   "--max-queue", "0", "-c", "16384") as s:
        keyed = openai.OpenAI(base_url=s.url + "/v1", api_key="sekret", max_retries=0)
        wrong = openai.OpenAI(base_url=s.url + "/v1", api_key="nope", max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        expect_error(401, lambda: wrong.chat.completions.create(model="m", messages=msgs),
                     "invalid API key", code="invalid_api_key")
        status, _, body = su.http("GET", s.url + "/v1/models")
        check(status == 401 and b"missing API key" in body, "401 without a key")
        check(keyed.models.list().data[0].id == os.path.basename(args.model.rstrip("/")),
              "models with the key")
        check(su.http("GET", s.url + "/health")[0] == 200, "/health needs no key")
        big = {"messages": [{"role": "user", "content": "x" * (2 << 20)}]}
        status, _, body = su.http("POST", s.url + "/v1/chat/completions", big,
                                  headers={"Authorization": "Bearer sekret",
                                           "Content-Type": "application/json"})
        check(status == 413 and b"--max-body-mb" in body, f"413 over the body limit ({status})")
        # A long answer holds the only slot until the 503 has been seen (then its client leaves,
        # which cancels it): no race with how fast it is generated.
        holder = su.hold_slot(s.port, headers={"Authorization": "Bearer sekret"})
        check(su.metrics(s.url).get("qvl_slots_busy", 0) == 1,
              "--max-queue 0 still admits a request while the slot is free")
        try:
            keyed.chat.completions.create(model="m", messages=msgs, max_tokens=2)
            check(False, "no 503 with a full queue")
        except openai.APIStatusError as e:
            check(e.status_code == 503, f"queue full -> 503 ({e.status_code})")
            check(e.response.headers.get("retry-after") == "1", "Retry-After header")
            err = e.body.get("error", e.body) if isinstance(e.body, dict) else {}
            check(err.get("code") == "queue_full", "queue_full code")
        check(su.still_open(holder), "the slot-holding answer was still running at the 503")
        holder.close()
        su.wait_until(lambda: su.metrics(s.url).get("qvl_slots_busy", 1) == 0, "the held slot to be freed")


def test_concurrent_clients_equal_qvl_run():
    convs = [[("user", [f"Question number {i}: what do you see?"])] for i in range(4)]
    convs += [[("user", [("image", JPG if i % 2 else PNG), f"Image question {i}"])] for i in range(4)]
    refs = [su.qvl_run_answer(args.run, args.model, c, 10)["text"] for c in convs]

    par = su.Server(args.serve, args.model, "-c", "4096", "--parallel", "4")

    def client_job(k):
        mine = openai.OpenAI(base_url=par.url + "/v1", api_key="x", max_retries=0, timeout=300)
        bad = []
        for j in range(3):
            i = (k + j) % len(convs)
            stream = (k + j) % 2 == 0
            if stream:
                text = "".join(c.choices[0].delta.content or "" for c in mine.chat.completions.create(
                    model="m", messages=su.to_openai(convs[i]), max_tokens=10, temperature=0,
                    stream=True) if c.choices)
            else:
                text = mine.chat.completions.create(model="m", messages=su.to_openai(convs[i]),
                                                    max_tokens=10, temperature=0).choices[0].message.content
            if text != refs[i]:
                bad.append((i, text, refs[i]))
        return bad

    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(client_job, range(8)))
    finally:
        check(par.stop() == 0, "--parallel 4 server stopped cleanly")
    for bad in results:
        for i, got, want in bad:
            check(False, f"concurrent conversation {i}: {got!r} != qvl-run {want!r}")


def quantized_server_equals_qvl_run(flags):
    # A server loaded with quantized weights gives the same greedy answers as qvl-run with the
    # same flags (which differ from bf16's on the tiny checkpoint's near-tied logits), alone and
    # in a batch; the image conversation runs the vision tower.
    name = " ".join(flags)
    convs = [[("user", ["Hi, who are you?"])],
             [("user", [("image", JPG), "What is in this picture?"])]]
    refs = [su.qvl_run_answer(args.run, args.model, c, 10, extra=flags)["text"] for c in convs]
    quant = su.Server(args.serve, args.model, "-c", "4096", "--parallel", "2", *flags)
    try:
        mine = openai.OpenAI(base_url=quant.url + "/v1", api_key="x", max_retries=0, timeout=300)

        def answer(conv):
            return mine.chat.completions.create(model="m", messages=su.to_openai(conv),
                                                max_tokens=10, temperature=0).choices[0].message.content
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            together = list(pool.map(answer, convs))
        alone = [answer(c) for c in convs]
    finally:
        check(quant.stop() == 0, f"{name} server stopped cleanly")
    for i, want in enumerate(refs):
        check(alone[i] == want, f"{name} conversation {i}: {alone[i]!r} != qvl-run {name} {want!r}")
        check(together[i] == want, f"{name} conversation {i} beside another: {together[i]!r} != {want!r}")
    return refs


def test_q8_weights_equal_qvl_run():
    quantized_server_equals_qvl_run(("--weights", "q8"))
    bad = subprocess.run([args.serve, "-m", args.model, "--weights", "int4"], capture_output=True,
                         text=True, timeout=60)
    check(bad.returncode == 2 and "--weights" in bad.stderr,
          f"--weights int4 is a usage error naming the flag (exit {bad.returncode}: {bad.stderr!r})")


def test_q4_text_q8_vision_equal_qvl_run():
    # 4-bit text and the int8 vision tower together: qvl-run's answers, and the image answer is
    # not the one of 4-bit text alone (so the server did load the int8 vision tower).
    both = quantized_server_equals_qvl_run(("--weights", "q4", "--vision-weights", "q8"))
    conv = [("user", [("image", JPG), "What is in this picture?"])]
    text_only = su.qvl_run_answer(args.run, args.model, conv, 10, extra=("--weights", "q4"))["text"]
    check(both[1] != text_only, f"--vision-weights q8 changes the image answer ({text_only!r})")
    bad = subprocess.run([args.serve, "-m", args.model, "--vision-weights", "q4"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 2 and "--vision-weights" in bad.stderr,
          f"--vision-weights q4 is a usage error naming the flag (exit {bad.returncode}: {bad.stderr!r})")


def test_disconnect_cancels():
    before = su.metrics(server.url)
    body = json.dumps({"messages": [{"role": "user", "content": "go"}], "max_tokens": 3000,
                       "ignore_eos": True, "stream": True}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(su.raw_post(body))
    sock.recv(4096)  # headers and the first tokens: it is running
    sock.close()
    t = time.time()
    key = 'qvl_requests_total{outcome="cancelled"}'

    def cancelled():
        m = su.metrics(server.url)
        return m if m["qvl_slots_busy"] == 0 and m[key] > before[key] else None
    m = su.wait_until(cancelled, "the disconnected stream to be cancelled and its slot freed")
    took = time.time() - t
    check(m["qvl_slots_busy"] == 0, "slot freed after disconnect")
    check(m['qvl_requests_total{outcome="cancelled"}'] > before['qvl_requests_total{outcome="cancelled"}'],
          "counted as cancelled")
    check(m["qvl_generated_tokens_total"] - before["qvl_generated_tokens_total"] < 3000,
          "generation stopped early")
    print(f"     disconnect noticed and slot freed in {took * 1000:.0f} ms (printed only)")


def test_metrics_and_page():
    m = su.metrics(server.url)
    for k in ('qvl_requests_total{outcome="ok"}', "qvl_time_to_first_token_seconds_count",
              "qvl_request_duration_seconds_count", "qvl_prompt_tokens_total",
              "qvl_generated_tokens_total", "qvl_cached_prompt_tokens_total",
              "qvl_image_cache_hits_total", "qvl_slots_busy", "qvl_queue_length"):
        check(k in m, f"/metrics has {k}")
    check(m['qvl_requests_total{outcome="ok"}'] > 0, "ok requests counted")
    status, headers, body = su.http("GET", server.url + "/")
    check(status == 200 and body.startswith(b"<!doctype html>") and b"v1/chat/completions" in body,
          "chat page at /")
    check(b"http://" not in body and b"https://" not in body, "the page loads nothing remote")


def log_softmax_of_dumped_logits(conv):
    """qvl-run's last-prompt-position logits (--dump-logits), as log-softmax in double."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "logits.npy")
        su.qvl_run_answer(args.run, args.model, conv, 1, extra=("--dump-logits", path))
        raw = open(path, "rb").read()
    header = struct.unpack("<H", raw[8:10])[0]
    logits = struct.unpack(f"<{(len(raw) - 10 - header) // 4}f", raw[10 + header:])
    import math
    mx = max(logits)
    log_z = mx + math.log(sum(math.exp(v - mx) for v in logits))
    return [v - log_z for v in logits]


def test_logprobs_and_logit_bias():
    conv = [("user", ["Name a colour."])]
    want = log_softmax_of_dumped_logits(conv)
    plain = ask(conv, 6, logprobs=True, top_logprobs=20)
    streamed = list(ask(conv, 6, logprobs=True, top_logprobs=20, stream=True))
    entries = plain.choices[0].logprobs.content
    s_entries = [e for c in streamed if c.choices and c.choices[0].logprobs
                 for e in c.choices[0].logprobs.content]
    check(len(entries) == plain.usage.completion_tokens == len(s_entries),
          f"one logprobs entry per token ({len(entries)}, {len(s_entries)})")
    ids = su.qvl_run_answer(args.run, args.model, conv, 6)["tokens"]
    for name, got in (("plain", entries), ("streamed", s_entries)):
        first = got[0]
        check(len(first.top_logprobs) == 20, f"{name}: 20 top_logprobs")
        ranked = sorted(range(len(want)), key=lambda i: -want[i])[:20]
        check(all(abs(t.logprob - want[i]) < 1e-3 for t, i in zip(first.top_logprobs, ranked)),
              f"{name}: top_logprobs = log-softmax of qvl-run --dump-logits within 1e-3")
        check(all(e.logprob == e.top_logprobs[0].logprob and e.token == e.top_logprobs[0].token
                  for e in got), f"{name}: greedy tokens are their best top logprob")
        check(abs(first.logprob - want[ids[0]]) < 1e-3, f"{name}: the token's own logprob")
        check(all(bytes(e.bytes).decode("utf-8", "replace") == e.token or "\ufffd" in e.token
                  for e in got), f"{name}: bytes spell the token")
    check(plain.choices[0].message.content ==
          "".join(c.choices[0].delta.content or "" for c in streamed if c.choices),
          "streamed text = plain text with logprobs")
    check(ask(conv, 2).choices[0].logprobs is None, "no logprobs unless asked")
    # +100 on a token that greedy would not pick: the answer is that token, as top_logprobs
    # names it (the first alternative that is whole UTF-8 text).
    alt = next(t for t in entries[0].top_logprobs[1:] if "\ufffd" not in t.token and t.token.strip())
    forced_id = ranked[[t.token for t in entries[0].top_logprobs].index(alt.token)]
    forced = ask(conv, 3, logit_bias={str(forced_id): 100})
    check(forced.choices[0].message.content == alt.token * 3,
          f"logit_bias +100 forces {alt.token!r}: {forced.choices[0].message.content!r}")


def test_unknown_fields_refused():
    msgs = [{"role": "user", "content": "x"}]
    create = client.chat.completions.create
    expect_error(400, lambda: create(model="m", messages=msgs, extra_body={"frobnicate": 1}),
                 "frobnicate")
    expect_error(400, lambda: create(model="m", messages=msgs, tools=[{"type": "retrieval"}]),
                 "tools[0]")
    expect_error(400, lambda: create(model="m", messages=msgs,
                                     response_format={"type": "xml"}), "response_format.type")
    expect_error(400, lambda: create(model="m", messages=msgs, logprobs=True, top_logprobs=21),
                 "top_logprobs")
    expect_error(400, lambda: create(model="m", messages=msgs, logit_bias={"999999": 5}),
                 "logit_bias")
    ok = create(model="m", messages=msgs, max_completion_tokens=2, user="u", metadata={"k": "v"},
                response_format={"type": "text"})
    check(ok.usage.completion_tokens <= 2, "max_completion_tokens, user, metadata accepted")


def test_webp_and_gif_answer_as_png():
    answers = {}
    for ext in ("png", "webp", "gif"):
        path = os.path.join(args.images, "palette16." + ext)
        answers[ext] = ask([("user", [("image", path), "What is this?"])], 8).choices[0].message.content
    check(answers["webp"] == answers["png"] == answers["gif"],
          f"WebP and GIF answers equal the PNG answer for the same pixels: {answers}")


def test_allowed_media_hosts():
    import http.server
    images = args.images

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=images, **kw)

        def log_message(self, *a):
            pass

        def do_GET(self):
            if self.path.startswith("/away"):  # a redirect to another host
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{port}/palette16.png")
                self.end_headers()
            elif self.path.startswith("/here"):  # a redirect on the same host
                self.send_response(301)
                self.send_header("Location", "/palette16.png")
                self.end_headers()
            elif self.path.startswith("/slow"):  # never answers before the test has seen the timeout
                released.wait(120)
            else:
                super().do_GET()

    released = threading.Event()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with su.Server(args.serve, args.model, "--allowed-media-hosts", "127.0.0.1",
                       "--media-fetch-timeout-s", "1") as s:
            c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0)

            def ask_url(url):
                return c.chat.completions.create(model="m", max_tokens=8, temperature=0, messages=[
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                 {"type": "text", "text": "What is this?"}]}])
            png = os.path.join(args.images, "palette16.png")
            ref = ask([("user", [("image", png), "What is this?"])], 8).choices[0].message.content
            r = ask_url(f"http://127.0.0.1:{port}/palette16.png")
            check(r.choices[0].message.content == ref, "an allowed-host URL = the data-URI answer")
            timings = (r.model_extra or {}).get("timings") or {}
            check(timings.get("image_decode_ms", 0) > 0, f"the fetch is in timings: {timings}")
            check(ask_url(f"http://127.0.0.1:{port}/here").choices[0].message.content == ref,
                  "a redirect on the same host is followed")
            expect_error(400, lambda: ask_url(f"http://localhost:{port}/palette16.png"),
                         "host 'localhost' is not in --allowed-media-hosts")
            expect_error(400, lambda: ask_url(f"http://127.0.0.1:{port}/away"), "another host")
            expect_error(400, lambda: ask_url(f"http://127.0.0.1:{port}/missing.png"), "HTTP 404")
            expect_error(400, lambda: ask_url(f"http://127.0.0.1:{port}/slow/palette16.png"),
                         "longer than 1 s")
    finally:
        released.set()
        httpd.shutdown()


def test_n_choices_one_prefill():
    conv = [("user", [("image", JPG), "Describe it."])]
    with su.Server(args.serve, args.model, "--parallel", "2") as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0)
        msgs = su.to_openai(conv)

        def create(**kw):
            return c.chat.completions.create(model="m", messages=msgs, max_tokens=6, **kw)
        r = create(n=2, temperature=0)
        one = create(temperature=0)
        check(len(r.choices) == 2 and [ch.index for ch in r.choices] == [0, 1], "n=2: two choices")
        check(all(ch.message.content == one.choices[0].message.content for ch in r.choices),
              "greedy choices equal the single answer")
        timings = (r.model_extra or {}).get("timings") or {}
        check(timings.get("prefilled_tokens") == r.usage.prompt_tokens,
              f"n=2 prefilled the prompt once: {timings} vs {r.usage.prompt_tokens}")
        check(r.usage.completion_tokens == 2 * one.usage.completion_tokens
              and r.usage.prompt_tokens == one.usage.prompt_tokens,
              "usage: the prompt once, every choice's tokens")
        seeded = create(n=2, temperature=1.0, seed=7, extra_body={"top_k": 0})
        alone = [create(temperature=1.0, seed=7 + i, extra_body={"top_k": 0}).choices[0]
                 .message.content for i in range(2)]
        check([ch.message.content for ch in seeded.choices] == alone,
              "choice i samples with seed + i, as a request alone")
        chunks = list(create(n=2, temperature=1.0, seed=7, stream=True, extra_body={"top_k": 0},
                             stream_options={"include_usage": True}))
        texts = ["", ""]
        for ch in chunks:
            for d in ch.choices:
                texts[d.index] += d.delta.content or ""
        check(texts == alone, f"streamed choices by index: {texts} vs {alone}")
        check(chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == r.usage.prompt_tokens,
              "one usage chunk for both choices")


def test_structured_outputs():
    import structured_cases
    structured_cases.run(client, check, expect_error)


def test_videos():
    import video_cases
    video_cases.run(client, check, expect_error, server.url, su, args)


def test_tools_and_tokenize():
    import tool_cases
    tool_cases.run(client, check, expect_error, server.url, su.http, args.model)


check.run((test_structured_outputs, test_tools_and_tokenize, test_logprobs_and_logit_bias, test_n_choices_one_prefill, test_allowed_media_hosts, test_unknown_fields_refused,
           test_webp_and_gif_answer_as_png, test_plain_equals_qvl_run, test_stream_equals_plain_and_has_usage, test_png_and_multi_turn,
           test_stop_strings, test_seed_reproducible, test_client_errors, test_limits_key_and_queue,
           test_concurrent_clients_equal_qvl_run, test_q8_weights_equal_qvl_run,
           test_q4_text_q8_vision_equal_qvl_run,
           test_disconnect_cancels, test_metrics_and_page, test_videos))
rc = server.stop()
check(rc == 0, f"SIGTERM exit code {rc}")
check.finish()
