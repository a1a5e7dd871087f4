"""qvl-serve in front of hostile clients and operators (issue 47), through the real binary on
loopback: a 200 MiB chunked body against --max-body-mb 1 gets 413 with little memory; 300
slow-loris and 300 idle connections (from several 127.0.x.y addresses, under the per-client cap)
leave /health under 1 s and a real request's answer equal to qvl-run's; the per-client cap
closes the excess at once; a queued stream gets ": keep-alive" comments; SIGTERM turns /health
to 503 at once and an answer cut at --shutdown-grace-s ends with an error event (streamed) or a
503 (not streamed), never finish_reason "stop"; the start-up line says how many threads and why.
Every check here failed on the cpp-httplib server this replaced.

usage: hardening_test.py --serve QVL_SERVE --run QVL_RUN --model DIR --images DIR [--only TEST]..."""
import argparse
import http.client
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util as su  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--serve", required=True)
ap.add_argument("--run", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--images", required=True)
ap.add_argument("--only", action="append", help="run only these test functions (repeatable)")
args = ap.parse_args()

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def connect(port, source="127.0.0.1", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def timed_health(url):
    t = time.time()
    status, _, _ = su.http("GET", url + "/health", timeout=5)
    return status, time.time() - t


def chat(content, n, **kw):
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": n, "temperature": 0}
    body.update(kw)
    return body


def test_chunked_body_limit():
    with su.Server(args.serve, args.model, "--max-body-mb", "1") as s:
        su.http("GET", s.url + "/health")
        before = status_kb(s.proc.pid, "VmHWM")
        c = connect(s.port, timeout=30)
        c.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"100000\r\n" + b"x" * (1 << 20) + b"\r\n"
        sent, answer = 0, b""
        sel = selectors.DefaultSelector()
        sel.register(c, selectors.EVENT_READ)
        try:
            while sent < 200 and not answer:
                c.sendall(chunk)
                sent += 1
                if sel.select(0):
                    answer = c.recv(65536)
        except OSError:
            pass
        if not answer:
            try:
                answer = c.recv(65536)
            except OSError:
                pass
        c.close()
        grew_mb = (status_kb(s.proc.pid, "VmHWM") - before) / 1024
        print(f"     200 MiB chunked: answer after {sent} MiB sent, peak RSS grew {grew_mb:.1f} MB")
        check(answer.startswith(b"HTTP/1.1 413"), f"chunked body over the limit: {answer[:60]!r}")
        check(b"--max-body-mb" in answer, "the 413 names --max-body-mb")
        check(sent < 200, "the 413 came before the body ended")
        check(grew_mb < 48, f"peak RSS grew {grew_mb:.1f} MB (limit 48)")


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def loris_and_idle(port, stop, counts, n_loris=300, n_idle=300, per_address=50, reconnect_at_once=True):
    """n_loris connections sending a header byte per second and n_idle sending nothing, spread
    over 127.0.1.x addresses (per_address each); reconnects what the server closes, at once or
    at the next one-second tick."""
    sources = [f"127.0.1.{i + 1}" for i in range((n_loris + n_idle) // per_address + 1)]
    sel = selectors.DefaultSelector()
    conns = {}

    def open_one(i):
        try:
            s = connect(port, sources[i // per_address], timeout=5)
        except OSError:
            counts["refused"] += 1
            return
        s.setblocking(False)
        conns[s] = i
        sel.register(s, selectors.EVENT_READ)
        if i < n_loris:
            s.send(b"POST /v1/chat/completions HTTP/1.1\r\n")

    for i in range(n_loris + n_idle):
        open_one(i)
    counts["opened"] = len(conns)
    later = []
    last = time.time()
    while not stop.is_set():
        for key, _ in sel.select(0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # closed by the server at its deadline: come back
                i = conns.pop(s)
                sel.unregister(s)
                s.close()
                counts["closed_by_server"] += 1
                if reconnect_at_once:
                    open_one(i)
                else:
                    later.append(i)
        if time.time() - last >= 1:
            last = time.time()
            for i in later:
                open_one(i)
            later.clear()
            for s, i in list(conns.items()):
                if i < n_loris:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
    for s in conns:
        s.close()


def test_slow_and_idle_connections():
    raise_fd_limit(4096)
    conv = [("user", ["Describe the weather in one sentence."])]
    want = su.qvl_run_answer(args.run, args.model, conv, 24)["text"]
    with su.Server(args.serve, args.model, "--header-timeout-s", "4") as s:
        stop = threading.Event()
        counts = {"opened": 0, "closed_by_server": 0, "refused": 0}
        t = threading.Thread(target=loris_and_idle, args=(s.port, stop, counts))
        t.start()
        time.sleep(3)
        worst = 0
        for _ in range(12):  # over two header deadlines
            status, dt = timed_health(s.url)
            check(status == 200, f"/health beside 600 slow connections: {status}")
            worst = max(worst, dt)
            time.sleep(0.5)
        status, _, out = su.http("POST", s.url + "/v1/chat/completions", chat(su.to_openai(conv)[0]["content"], 24),
                                 timeout=120)
        got = json.loads(out)["choices"][0]["message"]["content"] if status == 200 else None
        m_status, _, _ = su.http("GET", s.url + "/metrics", timeout=5)
        stop.set()
        t.join()
        print(f"     600 slow/idle connections: /health worst {worst * 1000:.0f} ms; {counts}")
        check(counts["opened"] >= 590, f"connections opened: {counts}")
        check(worst < 1.0, f"/health took {worst:.2f} s")
        check(m_status == 200, "/metrics answered")
        check(counts["closed_by_server"] >= 300, f"the header deadline closed them: {counts}")
        check(got == want, f"answer beside slow clients {got!r} != qvl-run's {want!r}")
        # The per-client cap: the 65th connection from one address is closed at once.
        mine = [connect(s.port, "127.0.2.1") for _ in range(64)]
        extra = connect(s.port, "127.0.2.1")
        t0 = time.time()
        try:
            closed = extra.recv(1) == b""
        except OSError:
            closed = True
        check(closed and time.time() - t0 < 1, "the connection over the per-client cap closed at once")
        for c in mine + [extra]:
            c.close()


def stream_lines(conn, body):
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    return conn.getresponse()


def test_keepalive_while_queued():
    with su.Server(args.serve, args.model, "--parallel", "1", "--sse-keepalive-s", "0.2", "-c", "8192") as s:
        long_conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        first = stream_lines(long_conn, chat("go on", 3000, ignore_eos=True, stream=True))
        first.read1(64)
        queued = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        r = stream_lines(queued, chat("short", 4, stream=True))
        text = r.read().decode()
        head = text.split("data: {", 1)[0]
        print(f"     queued stream: {head.count(': keep-alive')} keep-alive comments before its first chunk")
        check(head.count(": keep-alive\n\n") >= 2, f"keep-alives while queued: {text[:200]!r}")
        check(text.endswith("data: [DONE]\n\n"), "the queued stream completed")
        long_conn.close()
        queued.close()


def test_shutdown_cuts_with_an_error():
    s = su.Server(args.serve, args.model, "--parallel", "2", "--shutdown-grace-s", "0.5", "-c", "16384")
    streamed = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
    r = stream_lines(streamed, chat("go on", 16000, ignore_eos=True, stream=True))
    first = r.read1(256)
    whole = {}

    def non_streamed():
        whole["r"] = su.http("POST", s.url + "/v1/chat/completions",
                             chat("and on", 16000, ignore_eos=True), timeout=120)

    t = threading.Thread(target=non_streamed)
    t.start()
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    t0 = time.time()
    health = None
    while time.time() - t0 < 0.3:
        health, _ = timed_health(s.url)
        if health == 503:
            break
    check(health == 503, f"/health right after SIGTERM: {health}")
    late, headers, _ = su.http("POST", s.url + "/v1/chat/completions", chat("late", 2))
    check(late == 503 and headers.get("Retry-After"), f"a new request while draining: {late}")
    rest = r.read().decode()
    t.join()
    text = first.decode(errors="replace") + rest
    events = [line[6:] for line in text.split("\n") if line.startswith("data: ")]
    err = json.loads(events[-2]) if len(events) >= 2 and events[-2].startswith("{") else {}
    check(events and events[-1] == "[DONE]", "the cut stream ends with [DONE]")
    check(err.get("error", {}).get("type") == "server_error" and err["error"].get("code") == "shutdown_deadline",
          f"the cut stream's last event is the error: {events[-2:]!r}")
    check('"finish_reason":"stop"' not in text, "a cut stream never says finish_reason stop")
    status, _, body = whole["r"]
    check(status == 503 and b"shutdown_deadline" in body, f"the cut non-streamed answer: {status} {body[:120]!r}")
    rc = s.proc.wait(15)
    check(rc == 0, f"exit code {rc}")
    s._drain.join(5)  # the last stderr lines
    log = "".join(s.log)
    check("2 answers cut" in log, "the exit line counts the cut answers:\n" + log[-400:])


def sse_events(text):
    return [line[6:] for line in text.split("\n") if line.startswith("data: ")]


def test_engine_error_after_start():
    """An engine failure after the answer started (QVL_FAULT_AFTER_TOKENS, the engine's test hook):
    the stream carries the tokens so far, then the error event and [DONE]; the non-streamed answer
    is a 500, not a 200 with partial text; /metrics counts both as errors."""
    with su.Server(args.serve, args.model, env={"QVL_FAULT_AFTER_TOKENS": "3"}) as s:
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        r = stream_lines(conn, chat("go on", 40, ignore_eos=True, stream=True))
        text = r.read().decode()
        conn.close()
        events = sse_events(text)
        err = json.loads(events[-2]) if len(events) >= 2 and events[-2].startswith("{") else {}
        check(r.status == 200 and events and events[-1] == "[DONE]", f"the failed stream ends with [DONE]: {text[-200:]!r}")
        check(err.get("error", {}).get("type") == "server_error" and err["error"].get("code") == "engine_error"
              and "injected fault" in err["error"].get("message", ""), f"the failed stream's last event: {events[-2:]!r}")
        check(len(events) >= 3, f"chunks came before the error: {events!r}")
        check('"finish_reason":"stop"' not in text and '"finish_reason":"length"' not in text,
              "a failed stream never reports a normal finish")
        status, _, body = su.http("POST", s.url + "/v1/chat/completions", chat("go on", 40, ignore_eos=True),
                                  timeout=120)
        check(status == 500 and b"engine_error" in body and b"injected fault" in body,
              f"the failed non-streamed answer: {status} {body[:160]!r}")
        errors = su.metrics(s.url).get('qvl_requests_total{outcome="error"}', 0)
        check(errors == 2, f"/metrics counts the two failed answers as errors: {errors}")


def big_png(width, height):
    """A flat grey PNG: a small file whose decode and resize take a while (width x height x 3)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = (b"\x00" + b"\x80" * (3 * width)) * height
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")


def test_keepalive_during_image_decode():
    """A stream whose image takes a while to decode and resize (6000x6000) gets keep-alive
    comments meanwhile. The image needs more tokens than the default context holds, so the
    request is refused right after its decode: every comment counted came during decode and
    resize, none during vision or prefill."""
    import base64
    big = "data:image/png;base64," + base64.b64encode(big_png(6000, 6000)).decode()
    with su.Server(args.serve, args.model, "--sse-keepalive-s", "0.02", "--max-body-mb", "8") as s:
        body = chat([{"type": "image_url", "image_url": {"url": big}}, {"type": "text", "text": "what?"}], 2,
                    stream=True)
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        t = time.time()
        text = stream_lines(conn, body).read().decode()
        dt = time.time() - t
        conn.close()
        n = text.split("data: {", 1)[0].count(": keep-alive\n\n")
        print(f"     6000x6000 image: {n} keep-alive comments in {dt:.2f} s of decode and resize")
        check("context_length_exceeded" in text and text.endswith("data: [DONE]\n\n"),
              f"refused for its context after the decode: {text[-200:]!r}")
        check(n >= 3, f"keep-alives during the image decode: {n} in {dt:.2f} s")


def test_caps_full():
    """1200 slow-loris and idle connections against the default cap of 1024: the server makes
    room by closing the oldest waiting ones (which come back every second), /health and /metrics
    still answer within 1 s and a real request is answered as qvl-run answers it."""
    raise_fd_limit(8192)
    conv = [("user", ["Describe the weather in one sentence."])]
    want = su.qvl_run_answer(args.run, args.model, conv, 24)["text"]
    with su.Server(args.serve, args.model, "--header-timeout-s", "30") as s:
        stop = threading.Event()
        counts = {"opened": 0, "closed_by_server": 0, "refused": 0}
        t = threading.Thread(target=loris_and_idle, args=(s.port, stop, counts, 600, 600, 50, False))
        t.start()
        time.sleep(4)
        worst = 0
        for _ in range(6):
            status, dt = timed_health(s.url)
            check(status == 200, f"/health with the caps full: {status}")
            worst = max(worst, dt)
            time.sleep(0.3)
        t0 = time.time()
        m_status, _, _ = su.http("GET", s.url + "/metrics", timeout=5)
        m_dt = time.time() - t0
        status, _, out = su.http("POST", s.url + "/v1/chat/completions", chat(su.to_openai(conv)[0]["content"], 24),
                                 timeout=120)
        got = json.loads(out)["choices"][0]["message"]["content"] if status == 200 else None
        stop.set()
        t.join()
        print(f"     1200 slow/idle connections, cap 1024: /health worst {worst * 1000:.0f} ms, "
              f"/metrics {m_dt * 1000:.0f} ms; {counts}")
        check(counts["opened"] >= 1150, f"connections opened: {counts}")
        check(counts["closed_by_server"] >= 1200 - 1024, f"the cap made room by closing waiting ones: {counts}")
        check(worst < 1.0 and m_status == 200 and m_dt < 1.0, f"/health {worst:.2f} s, /metrics {m_status} {m_dt:.2f} s")
        check(got == want, f"answer with the caps full {got!r} != qvl-run's {want!r}")


def test_threads_line():
    out = subprocess.run(["taskset", "-c", "0", args.serve, "-m", args.model, "--port", "0", "--help"],
                         capture_output=True, text=True).stdout
    check("--shutdown-grace-s" in out and "--sse-keepalive-s" in out, "--help lists the new flags")
    p = subprocess.Popen(["taskset", "-c", "0", args.serve, "-m", args.model, "--host", "127.0.0.1", "--port", "0"],
                         stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stderr:
        lines.append(line)
        if "listening on" in line:
            break
    p.send_signal(signal.SIGTERM)
    p.wait(20)
    check(any("qvl-serve: 1 compute threads (1 physical core among 1 allowed CPU" in x for x in lines),
          "the start-up line under taskset -c 0: " + "".join(lines))


for fn in (test_threads_line, test_chunked_body_limit, test_keepalive_while_queued,
           test_shutdown_cuts_with_an_error, test_engine_error_after_start, test_keepalive_during_image_decode,
           test_slow_and_idle_connections, test_caps_full):
    if args.only and fn.__name__ not in args.only:
        continue
    t = time.time()
    n = len(failures)
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        failures.append(f"{fn.__name__}: {e!r}")
        print(f"FAIL: {fn.__name__} raised {e!r}", flush=True)
    print(f"{'ok  ' if len(failures) == n else 'FAIL'} {fn.__name__} ({time.time() - t:.1f}s)", flush=True)
if failures:
    print(f"serve_hardening: FAIL ({len(failures)})")
    sys.exit(1)
print("serve_hardening: PASS")
