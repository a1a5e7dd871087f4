"""The soak of tests/serve/reliability_test.py (issue 47): well-behaved streaming clients alone,
then beside hostile ones (disconnecting mid-stream, reading slowly, sending malformed or
oversized requests, slow-loris and idle connections); every valid request must succeed, the
server's RSS must stay flat after warm-up, and the valid clients' time to first token is
reported for both phases."""
import base64
import http.client
import json
import os
import random
import selectors
import socket
import statistics
import threading
import time

import serve_util as su


def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Soak:
    def __init__(self, port, pid, images, valid_clients=4):
        self.port, self.pid, self.valid_clients = port, pid, valid_clients
        jpg = open(os.path.join(images, "baseline420.jpg"), "rb").read()
        self.image = "data:image/jpeg;base64," + base64.b64encode(jpg).decode()

    # ---- well-behaved clients: streamed answers, time to first token measured
    def valid_request(self, rng):
        content = rng.choice([
            "Write one sentence about the sea.",
            "List three colours.",
            [{"type": "image_url", "image_url": {"url": self.image}},
             {"type": "text", "text": "What is in this picture?"}],
        ])
        body = {"messages": [{"role": "user", "content": content}], "stream": True,
                "max_tokens": rng.choice([8, 16, 24]), "temperature": rng.choice([0, 0.8]),
                "seed": rng.randrange(1000)}
        t0 = time.time()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            conn.request("POST", "/v1/chat/completions", json.dumps(body),
                         {"Content-Type": "application/json"})
            r = conn.getresponse()
            if r.status != 200:
                return None, f"status {r.status}: {r.read()[:200]!r}"
            ttft, events = None, []
            for raw in r:
                line = raw.decode().rstrip("\n")
                if not line.startswith("data: "):
                    continue
                events.append(line[6:])
                if ttft is None and '"content":"' in line and '"content":""' not in line:
                    ttft = time.time() - t0
            if not events or events[-1] != "[DONE]" or any(e.startswith('{"error"') for e in events):
                return None, f"stream did not complete: {events[-2:]!r}"
            return (ttft if ttft is not None else time.time() - t0), None
        finally:
            conn.close()

    def run_valid(self, seconds, stop_hostile=None):
        end = time.time() + seconds
        lock = threading.Lock()
        out = {"ok": 0, "failed": 0, "ttft": [], "errors": []}

        def client(k):
            rng = random.Random(k)
            while time.time() < end:
                try:
                    ttft, err = self.valid_request(rng)
                except Exception as e:  # noqa: BLE001 -- any client-side failure counts
                    ttft, err = None, repr(e)
                with lock:
                    if err:
                        out["failed"] += 1
                        out["errors"].append(err)
                    else:
                        out["ok"] += 1
                        out["ttft"].append(ttft)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(self.valid_clients)]
        for t in threads:
            t.start()
        return threads, out

    # ---- hostile clients
    def raw(self, payload, read=True, timeout=10):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            s.sendall(payload)
            return s.recv(256) if read else b""
        finally:
            s.close()

    def disconnecter(self, stop, stats):
        rng = random.Random(1)
        while not stop.is_set():
            body = json.dumps({"messages": [{"role": "user", "content": "tell me a story"}],
                               "stream": rng.random() < 0.7, "max_tokens": 64}).encode()
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=60)
                s.sendall(su.raw_post(body))
                # Gone while queued, during prefill or mid-stream: after a few hundred bytes or
                # a few seconds, whichever first (a non-streamed answer is never waited for).
                s.settimeout(rng.uniform(0.2, 4.0))
                want, got = rng.randrange(0, 1500), 0
                try:
                    while got < want:
                        b = s.recv(4096)
                        if not b:
                            break
                        got += len(b)
                except OSError:
                    pass
                s.close()
                stats["disconnects"] += 1
            except OSError:
                pass
            stop.wait(rng.uniform(0.2, 1.5))

    def slow_reader(self, stop, stats):
        body = json.dumps({"messages": [{"role": "user", "content": "go on"}], "stream": True,
                           "max_tokens": 24, "ignore_eos": True}).encode()
        while not stop.is_set():
            try:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
                s.settimeout(5)
                s.connect(("127.0.0.1", self.port))
                s.sendall(su.raw_post(body))
                t0 = time.time()
                while not stop.is_set() and time.time() - t0 < 20 and s.recv(1):
                    time.sleep(0.3)
                s.close()
                stats["slow_reads"] += 1
            except OSError:
                pass

    def malformed(self, stop, stats):
        rng = random.Random(2)
        cases = [
            (b"BLAH / HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
            (b"GET / HTTP/1.1\r\nX-Junk: " + b"a" * 20000 + b"\r\n\r\n", b"431"),
            (b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\n\r\n", b"414"),
            (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{\"messages", b"400"),
            (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 900000000\r\n\r\n{", b"413"),
        ]
        while not stop.is_set():
            try:
                if rng.random() < 0.2:  # a chunked body far over --max-body-mb
                    s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
                    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                    chunk, got = b"100000\r\n" + b"x" * (1 << 20) + b"\r\n", b""
                    sel = selectors.DefaultSelector()
                    sel.register(s, selectors.EVENT_READ)
                    for _ in range(64):
                        s.sendall(chunk)
                        if sel.select(0):
                            got = s.recv(64)
                            break
                    s.close()
                    want, resp = b"413", got
                else:
                    payload, want = rng.choice(cases)
                    resp = self.raw(payload)
                stats["malformed"] += 1
                if want not in resp.split(b"\r\n", 1)[0]:
                    stats["malformed_unexpected"] += 1
            except OSError:
                stats["malformed_unexpected"] += 1
            stop.wait(0.3)

    def loris(self, stop, stats):
        su.slow_connections(self.port, stop, stats, n_loris=100, n_idle=100, subnet="127.0.3")

    def run_hostile(self, stop, stats):
        workers = [self.disconnecter, self.disconnecter, self.slow_reader, self.malformed, self.loris]
        threads = [threading.Thread(target=w, args=(stop, stats)) for w in workers]
        for t in threads:
            t.start()
        return threads

    # ---- the two phases
    def phase(self, seconds, hostile, health_url_get):
        stats = {"disconnects": 0, "slow_reads": 0, "malformed": 0, "malformed_unexpected": 0,
                 "loris_closed": 0}
        stop = threading.Event()
        bad = self.run_hostile(stop, stats) if hostile else []
        t_start = time.time()
        valid, out = self.run_valid(seconds)
        rss, health = [], []
        while any(t.is_alive() for t in valid):
            time.sleep(2)
            rss.append((time.time() - t_start, su.proc_status_kb(self.pid, "VmRSS")))
            t = time.time()
            code = health_url_get()
            health.append((time.time() - t, code))
        stop.set()
        for t in valid + bad:
            t.join()
        out.update(stats=stats, rss=rss, health=health, seconds=seconds, hostile=hostile)
        return out


def table(base, hostile):
    def row(name, r):
        t = r["ttft"]
        return (f"| {name} | {r['seconds']:.0f} | {r['ok'] + r['failed']} | {r['failed']} | "
                f"{percentile(t, 50) * 1000:.0f} | {percentile(t, 95) * 1000:.0f} | "
                f"{max((h for h, _ in r['health']), default=0) * 1000:.0f} |")
    lines = ["| valid clients | seconds | requests | failed | TTFT P50 ms | TTFT P95 ms | /health worst ms |",
             "|---|---|---|---|---|---|---|", row("alone", base), row("beside hostile clients", hostile)]
    rss = hostile["rss"]
    if rss:
        lines += ["", "| t (s, hostile phase) | RSS MB |", "|---|---|"]
        step = max(1, len(rss) // 10)
        for t, kb in rss[::step] + ([rss[-1]] if (len(rss) - 1) % step else []):
            lines.append(f"| {t:.0f} | {kb / 1024:.1f} |")
    lines += ["", f"hostile clients: {json.dumps(hostile['stats'])}"]
    return "\n".join(lines)


def rss_flat(rss, warmup_fraction=0.2, tolerance=0.05):
    """(flat, reference MB, worst MB): after warm-up no sample above the warm-up peak by more
    than the tolerance."""
    if not rss:
        return True, 0, 0
    cut = rss[-1][0] * warmup_fraction
    warm = [kb for t, kb in rss if t <= cut] or [rss[0][1]]
    after = [kb for t, kb in rss if t > cut] or warm
    ref, worst = max(warm), max(after)
    return worst <= ref * (1 + tolerance), ref / 1024, worst / 1024


def summary(out):
    return statistics.median(out["ttft"]) if out["ttft"] else float("nan")
