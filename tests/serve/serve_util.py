"""Shared helpers of the qvl-serve tests: start the server on a free port (reading its readiness
line), stop it, run qvl-run for reference answers, and re-run a test inside the venv that holds
the official openai client (created on first use; the test is skipped when PyPI is unreachable)."""
import atexit
import base64
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

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
    mime = {"png": "image/png", "webp": "image/webp", "gif": "image/gif"}.get(ext, "image/jpeg")
    with open(path, "rb") as f:
        return f"data:{mime};base64," + base64.b64encode(f.read()).decode()


def to_openai(conv):
    """A conversation given as [(role, [text or ('image', path)...])] in OpenAI form."""
    msgs = []
    for role, parts in conv:
        content = []
        for p in parts:
            if isinstance(p, tuple):
                content.append({"type": "image_url", "image_url": {"url": data_uri(p[1])}})
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
                content.append({"type": "image", "image": os.path.abspath(p[1])})
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
