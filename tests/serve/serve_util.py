"""Shared helpers of the qvl-serve tests: start the server on a free port (reading its readiness
line), stop it, run qvl-run for reference answers, re-run a test inside the venv that holds the
official openai client (created on first use; the test is skipped when PyPI is unreachable), the
command line, checks and test loop every serve test has, event waits with a generous outer
timeout (no wall-clock bound decides a pass: issue 52 item 7), raw sockets, slow-loris and idle
connections, a slot held by a long stream, and PNG files made to measure."""
import argparse
import atexit
import base64
import json
import os
import re
import resource
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib

SKIP = 77  # CTest SKIP_RETURN_CODE


def skip(reason):
    """Exits as skipped, or as failed under CI=true: CI installs every package the tests need
    (scripts/install-deps.sh --browser, scripts/install-test-tools.sh), so a skip there would hide
    a test that did not run."""
    if os.environ.get("CI", "").lower() == "true":
        print(f"FAIL: CI=true and this test would skip: {reason}")
        sys.exit(1)
    print(f"SKIP: {reason}")
    sys.exit(SKIP)
READY = re.compile(r"qvl-serve: listening on http://([^\s:]+|\[[^\]]+\]):(\d+)")


def ensure_venv(venv_dir, packages=("openai",)):
    """Re-executes this script inside venv_dir (created with the packages if absent)."""
    venv_dir = os.path.abspath(venv_dir)
    if os.path.realpath(sys.prefix) == os.path.realpath(venv_dir):
        return
    python = os.path.join(venv_dir, "bin", "python")
    marker = os.path.join(venv_dir, ".qvl-ready-" + "-".join(packages))
    if not os.path.exists(marker):
        try:
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv_dir],
                           check=True, timeout=120)
            subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            *packages], check=True, timeout=600)
            open(marker, "w").close()
        except (subprocess.SubprocessError, OSError) as e:
            skip(f"cannot install {' '.join(packages)} into {venv_dir} (PyPI unreachable?): {e}")
    os.execv(python, [python, *sys.argv])


class Server:
    """A qvl-serve process on 127.0.0.1 and a free port; stderr is kept in self.log."""

    def __init__(self, binary, model, *args, env=None, timeout=60, threads=1):
        cmd = [binary, "-m", model, "--host", "127.0.0.1", "--port", "0", "-t", str(threads), *args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     text=True, env=full_env)
        self.log = []
        deadline = time.time() + timeout
        self.port = None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = READY.search(line)
            if m:
                self.port = int(m.group(2))
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("qvl-serve did not become ready:\n" + "".join(self.log))
        atexit.register(self._kill_if_running)  # a test that dies leaves no server behind
        self._drain = threading.Thread(target=self._read_rest, daemon=True)
        self._drain.start()
        self.url = f"http://127.0.0.1:{self.port}"

    def _read_rest(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def _kill_if_running(self):
        if self.proc.poll() is None:
            self.proc.kill()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http(method, url, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) without raising on 4xx/5xx."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None and "Content-Type" not in (headers or {}):
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def metrics(url):
    """The /metrics samples as {name{labels}: value}."""
    _, _, body = http("GET", url + "/metrics")
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def data_uri(path):
    ext = path.rsplit(".", 1)[-1]
    mime = {"png": "image/png", "webp": "image/webp", "gif": "image/gif", "mp4": "video/mp4",
            "webm": "video/webm"}.get(ext, "image/jpeg")
    with open(path, "rb") as f:
        return f"data:{mime};base64," + base64.b64encode(f.read()).decode()


def to_openai(conv):
    """A conversation given as [(role, [text, ('image', path) or ('video', path)...])] in OpenAI
    form."""
    msgs = []
    for role, parts in conv:
        content = []
        for p in parts:
            if isinstance(p, tuple):
                key = p[0] + "_url"
                content.append({"type": key, key: {"url": data_uri(p[1])}})
            else:
                content.append({"type": "text", "text": p})
        msgs.append({"role": role, "content": content})
    return msgs


def qvl_run_answer(qvl_run, model, conv, n, ctx=4096, extra=()):
    """qvl-run's greedy answer for the same conversation (--messages, --temp 0, --json), with
    the extra qvl-run arguments given (e.g. --weights q8)."""
    msgs = []
    for role, parts in conv:
        content = []
        for p in parts:
            if isinstance(p, tuple):
                content.append({"type": p[0], p[0]: os.path.abspath(p[1])})
            else:
                content.append({"type": "text", "text": p})
        msgs.append({"role": role, "content": content})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(msgs, f)
        path = f.name
    try:
        out = subprocess.run([qvl_run, "-m", model, "--messages", path, "--temp", "0", "--json",
                              "-n", str(n), "-c", str(ctx), "-t", "1", "-q", *extra],
                             capture_output=True, text=True, timeout=120, check=True)
    finally:
        os.unlink(path)
    return json.loads(out.stdout)


# ---- the command line, checks and test loop of every serve test

def arg_parser(doc=None):
    """The options every serve test takes (tests/serve/serve_tests.cmake passes them all)."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--serve", required=True)
    ap.add_argument("--run", default=None)
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", required=True)
    return ap


class Checks:
    """Collects failures so that one failing check does not hide the others; run() times each
    test function and records an exception as its failure; finish() prints the line CTest's
    PASS_REGULAR_EXPRESSION looks for and exits."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def __call__(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what, flush=True)
        return cond

    def run(self, fns, only=None):
        for fn in fns:
            if only and fn.__name__ not in only:
                continue
            t, n = time.time(), len(self.failures)
            try:
                fn()
            except Exception as e:  # noqa: BLE001 -- a failing case must not hide the others
                self.failures.append(f"{fn.__name__}: {e!r}")
                print(f"FAIL: {fn.__name__} raised {e!r}", flush=True)
            print(f"{'ok  ' if len(self.failures) == n else 'FAIL'} {fn.__name__} ({time.time() - t:.1f}s)",
                  flush=True)

    def finish(self):
        if self.failures:
            print(f"{self.name}: FAIL ({len(self.failures)})")
            sys.exit(1)
        print(f"{self.name}: PASS")


class WaitTimeout(AssertionError):
    pass


def wait_until(pred, what, timeout=120, interval=0.01):
    """Polls pred until it returns something true and returns that. The timeout only guards
    against a hang: it is far above any expected wait, and running out is a failure that names
    what was awaited (what may be a function, called then, to show the state at that time)."""
    end = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > end:
            raise WaitTimeout(f"waited {timeout} s for {what() if callable(what) else what}")
        time.sleep(interval)


# ---- raw sockets and request bodies

def connect(port, source="127.0.0.1", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def closed_by_peer(sock, timeout=60):
    """True when the peer closes (EOF or reset) within the hang guard; False when it is still
    open then, so a connection that should have been closed at once cannot pass by timing out."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def still_open(sock):
    """True when the peer has neither closed nor reset sock (nothing to read yet)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def raw_post(body, path="/v1/chat/completions", headers=None):
    """An HTTP/1.1 POST of a JSON body (bytes or an object) as raw bytes."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def chat_body(content, n=8, **kw):
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": n, "temperature": 0}
    body.update(kw)
    return body


def sse_events(text):
    return [line[6:] for line in text.split("\n") if line.startswith("data: ")]


def png(width, height, idat_raw):
    """A PNG of width x height 8-bit RGB whose image data is idat_raw (compressed here): a
    header can promise more pixels than the data holds."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(idat_raw, 1))
            + chunk(b"IEND", b""))


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def proc_status_kb(pid, key):
    """A /proc/PID/status field in kB (VmRSS, VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def hold_slot(port, max_tokens=16000, headers=None):
    """Starts a streamed greedy answer of max_tokens (ignore_eos) on a raw socket and returns it
    once its first chunk came back (the headers and keep-alive comments can come while it is
    still queued; a chunk means it holds a slot). It holds the slot until the socket is closed
    (the server then cancels it). Needs a context of max_tokens plus a few."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    sock.sendall(raw_post(chat_body("go on", max_tokens, ignore_eos=True, stream=True), headers=headers))
    got = b""
    while b"data: {" not in got:
        part = sock.recv(4096)
        if not part:
            break
        got += part
    if not got.startswith(b"HTTP/1.1 200") or b"data: {" not in got:
        raise AssertionError(f"the slot-holding request did not start: {got[:200]!r}")
    return sock


def slow_connections(port, stop, counts, n_loris=300, n_idle=300, per_address=50, subnet="127.0.1",
                     reconnect_at_once=True):
    """n_loris connections sending a header byte per second and n_idle sending nothing, spread
    over subnet.x source addresses (per_address each, under the per-client cap), until stop is
    set. What the server closes comes back at once or at the next one-second tick. counts gets
    opened (after the first wave), refused, closed_by_server and loris_closed."""
    for key in ("opened", "refused", "closed_by_server", "loris_closed"):
        counts.setdefault(key, 0)
    sources = [f"{subnet}.{i + 1}" for i in range((n_loris + n_idle) // per_address + 1)]
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
    later, last = [], time.time()
    while not stop.is_set():
        for key, _ in sel.select(0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # closed by the server: come back
                i = conns.pop(s)
                sel.unregister(s)
                s.close()
                counts["closed_by_server"] += 1
                counts["loris_closed"] += i < n_loris
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
