"""test_fault_upstream_restart.py -- the upstream server is killed (SIGKILL)
and restarted on the same port three times while four pymongo threads keep
calling through `mtrace capture` (proxy) and, when this process may open
the loopback interface, a live capture (`--iface lo`) records the same
upstream traffic from the wire.  Scripted fault; runtime about 10 s.

Checks:
  - after each restart pymongo recovers through the proxy (successful calls
    in every phase), the proxy never exits;
  - when the clients are gone, the proxy holds no more file descriptors
    than before the first client (no socket leaked by the failures);
  - the proxy stops cleanly (exit 0, nothing dropped) and its trace is
    readable to the end record; every connection opened has its close
    record; every find pymongo saw succeed is in the trace with its reply
    on the same connection (successes <= recorded pairs <= attempts);
  - the live trace: readable, one close per open, and it too holds at least
    one recorded find/reply pair per successful call (the proxy's upstream
    connections are what it sees) -- unless the capture itself reports
    kernel drops or gaps (a loaded machine): then it may lack pairs, but
    only pairs the proxy trace has, and the loss must be in its stats.
Without CAP_NET_RAW the live half prints SKIP with the reason; the proxy
half still runs.
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import (MTRACE, Env, check, fail, free_port, msgs,  # noqa: E402
                         summary_bytes)

from pymongo import MongoClient  # noqa: E402
from pymongo.errors import PyMongoError  # noqa: E402

DOC = {"_id": "test-doc-1", "value": 42}
THREADS = 4
PHASE_S = 1.5
DOWNTIMES = (0.0, 0.5, 1.0)  # seconds between the kill and the restart


class Workload:
    """THREADS pymongo clients calling find_one until stopped; counts
    attempts and successes per phase."""

    def __init__(self, port):
        self.port = port
        self.phase = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ok = {}
        self.attempts = 0
        self.errors = []
        self.threads = [threading.Thread(target=self.run) for _ in range(THREADS)]

    def run(self):
        c = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % self.port,
                        retryReads=False, serverSelectionTimeoutMS=3000,
                        socketTimeoutMS=3000, connectTimeoutMS=1000)
        col = c.benchmark_db.test_col
        while not self.stop.is_set():
            phase = self.phase
            with self.lock:
                self.attempts += 1
            try:
                if col.find_one({"_id": DOC["_id"]}) == DOC:
                    with self.lock:
                        self.ok[phase] = self.ok.get(phase, 0) + 1
            except PyMongoError as e:
                with self.lock:
                    self.errors.append(type(e).__name__)
                time.sleep(0.05)
        c.close()

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)
            check(not t.is_alive(), "a client thread did not finish")


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def start_live(env, port):
    """Starts a live capture of port on lo; returns (proc, out) or None."""
    out = env.path("live.zst")
    err = open(env.path("live.err"), "w")
    p = env.spawn([MTRACE, "capture", "--iface", "lo", "--port", str(port),
                   "--duration", "120", "-o", out],
                  stdout=subprocess.DEVNULL, stderr=err)
    err.close()
    for _ in range(200):
        if os.path.exists(out) and os.path.getsize(out) > 0:
            return p, out
        if p.poll() is not None:
            break
        time.sleep(0.05)
    with open(env.path("live.err")) as f:
        text = f.read().strip()
    if p.poll() is not None and ("ermission" in text or "not permitted" in text):
        print("SKIP live capture half: %s" % text.splitlines()[-1])
        return None
    fail("live capture did not start (exit %s): %s" % (p.poll(), text))


def find_pairs(recs):
    """The find requests with a reply (response_to) on the same conn:
    {(request_id, k): (conn, t_ns of the request)}, k counting the pairs
    with that request_id (pymongo 3.11 draws request ids at random: two
    connections may use the same one, ~3 % of runs at 16 000 calls by the
    birthday bound, 2 of 8 runs seen; the
    proxy's and the live trace number their connections differently, so
    the id, not the conn, is what names a pair in both)."""
    reqs = {(m["conn"], m["request_id"]): m["t_ns"] for m in msgs(recs, "c2s")
            if isinstance(m.get("body"), dict) and "find" in m["body"]}
    pairs = {}
    for m in msgs(recs, "s2c"):
        key = (m["conn"], m["response_to"])
        if key in reqs:
            k = 0
            while (m["response_to"], k) in pairs:
                k += 1
            pairs[(m["response_to"], k)] = (m["conn"], reqs[key])
    return pairs


def check_trace(recs, what, successes, attempts, other=None):
    """Checks one trace; other: find_pairs() of the proxy trace, to name
    what a live trace lacks.  Returns find_pairs() of this one."""
    check(recs and recs[-1]["type"] == "end", "%s: trace not readable to its end" % what)
    opened = {r["conn"] for r in recs if r["type"] == "conn_open"}
    closed = {r["conn"] for r in recs if r["type"] == "conn_close"}
    check(opened == closed, "%s: connections without a close record: %r" %
          (what, sorted(opened - closed)))
    pairs = find_pairs(recs)
    stats = ([r["stats"] for r in recs if r["type"] == "stats"] or [{}])[-1]
    lost = stats.get("kernel_dropped", 0) + stats.get("gaps", 0)
    if other is not None and len(pairs) < successes:
        lack = sorted(set(other) - set(pairs))
        print("%s lacks %d pairs of the proxy trace, e.g. (request_id, proxy conn, "
              "t_ns): %r" % (what, len(lack), [(r[0],) + other[r] for r in lack[:10]]))
        print("%s stats: %r" % (what, stats))
        if lost > 0 and set(pairs) <= set(other):
            # The kernel dropped packets (a loaded machine): a live capture
            # cannot hold them, but it must say so -- and it did.
            print("%s: %d kernel drops, %d gaps reported: the loss is accounted "
                  "for; completeness not checkable in this run" %
                  (what, stats.get("kernel_dropped", 0), stats.get("gaps", 0)))
            successes = 0
    check(successes <= len(pairs) <= attempts,
          "%s: %d find/reply pairs recorded, client saw %d successes of %d calls" %
          (what, len(pairs), successes, attempts))
    reasons = sorted({r["reason"] for r in recs if r["type"] == "conn_close"})
    print("%s: %d connections, %d find/reply pairs (client: %d ok of %d), closes %s" %
          (what, len(opened), len(pairs), successes, attempts, reasons))
    return pairs


def main():
    with Env() as env:
        port = free_port()
        env.start_mock("--port", str(port))
        live = start_live(env, port)
        cap = env.start_capture(port)
        base = nfds(cap.proc.pid)
        w = Workload(cap.port)
        w.start()
        time.sleep(PHASE_S)
        for i, down in enumerate(DOWNTIMES):
            env.mock_proc.kill()
            env.mock_proc.wait()
            time.sleep(down)
            env.start_mock("--port", str(port))
            w.phase = i + 1
            time.sleep(PHASE_S)
            check(cap.proc.poll() is None, "the proxy exited after kill %d" % (i + 1))
        w.join()
        total = sum(w.ok.values())
        print("client: ok per phase %r, %d attempts, errors %r" %
              (w.ok, w.attempts, sorted(set(w.errors))))
        for ph in range(len(DOWNTIMES) + 1):
            check(w.ok.get(ph, 0) > 0, "no successful call in phase %d (after restart %d)"
                  % (ph, ph))
        check(w.errors, "no client error at all: the upstream was not killed?")
        n = base
        for _ in range(100):
            n = nfds(cap.proc.pid)
            if n <= base:
                break
            time.sleep(0.05)
        check(n <= base, "proxy holds %d fds after the clients left, %d before" % (n, base))
        print("proxy: %d fds before the first client, %d after the last" % (base, n))
        text = cap.stop()
        _, _, dropped = summary_bytes(text)
        check(dropped == 0, "proxy dropped %d records" % dropped)
        proxied = check_trace(env.dump(cap.out), "proxy trace", total, w.attempts)
        if live is not None:
            time.sleep(0.3)  # the last packets
            live[0].send_signal(signal.SIGINT)
            rc = live[0].wait(20)
            with open(env.path("live.err")) as f:
                text = f.read()
            print(text.strip())
            check(rc == 0, "live capture exited %d" % rc)
            check_trace(env.dump(live[1]), "live trace", total, w.attempts, proxied)
        print("ok: upstream killed and restarted %d times" % len(DOWNTIMES))


if __name__ == "__main__":
    main()
