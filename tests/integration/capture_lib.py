"""capture_lib.py -- helpers for the `mtrace capture` proxy integration tests
(test_capture_*.py).  Run under /usr/bin/python3 (pymongo, mockupdb).

    with Env() as env:
        mock = env.start_mock()                  # MockupDB, returns its port
        cap = env.start_capture(target=mock, extra=["--delay-ms", "1"])
        ... clients use cap.port ...
        summary = cap.stop()                     # SIGINT, returns stderr text
        recs = env.dump(cap.out)                 # `mtrace dump --json`, parsed

Everything started is killed and the temp dir removed on exit.  Only
127.0.0.1 is used; ports are picked by the kernel (port 0) or free_port().
"""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.environ.get("TOP") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
MTRACE = os.environ.get("MTRACE") or os.path.join(TOP, "mtrace")
PYTHON = "/usr/bin/python3"


try:
    from pymongo import monitoring
    _Listener = monitoring.CommandListener
except ImportError:  # a test that does not drive pymongo
    _Listener = object


class Recorder(_Listener):
    """pymongo command monitoring (MongoClient(..., event_listeners=[rec])):
    the request ids of the commands the client started, in order (ids), per
    command name (by_name), and as (request_id, command name) pairs (cmds:
    pass these to check_pairs).  pymongo 3.11 draws request ids at random,
    so two commands (or a command and a handshake/heartbeat, which are not
    monitored) may share an id: count with the command name, not the id
    alone."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ids = []
        self.by_name = {}
        self.cmds = []

    def started(self, event):
        with self.lock:
            self.ids.append(event.request_id)
            self.by_name.setdefault(event.command_name, []).append(event.request_id)
            self.cmds.append((event.request_id, event.command_name))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    def count(self, name):
        with self.lock:
            return len(self.by_name.get(name, []))

    def named(self, name):
        """The (request_id, name) pairs of the commands called name."""
        with self.lock:
            return [c for c in self.cmds if c[1] == name]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Capture:
    """A running `mtrace capture` proxy."""

    def __init__(self, env, proc, port, out, errpath):
        self.env, self.proc, self.port, self.out = env, proc, port, out
        self.errpath = errpath

    def stderr(self):
        with open(self.errpath) as f:
            return f.read()

    def stop(self, sig=signal.SIGINT, timeout=10):
        """Signals the proxy, waits, returns its stderr; fails on a bad exit."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            fail("capture did not stop within %ds of signal %d" % (timeout, sig))
        text = self.stderr()
        check(rc == 0, "capture exited %d:\n%s" % (rc, text))
        return text


def wait_listening(p, log, what):
    """The port in the 'listening on 127.0.0.1:PORT' line that process p
    (mtrace capture or replay) writes to log; fails after 10 s or if p
    exits first."""
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.02)
    with open(log) as f:
        fail("%s did not start (exit %s):\n%s" % (what, p.poll(), f.read()))


class Env:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="mtrace-cap.")
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)
        return False

    def path(self, name):
        return os.path.join(self.tmp, name)

    def spawn(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        return p

    def start_mock(self, *args):
        """Starts mockmongo.py on a kernel-chosen port; returns the port."""
        p = self.spawn([PYTHON, os.path.join(TOP, "tests/integration/mockmongo.py"),
                        "--port", "0"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
        line = p.stdout.readline()
        m = re.match(r"READY (\d+)", line)
        check(m is not None, "mockmongo did not start: %r" % line)
        self.mock_proc = p
        return int(m.group(1))

    def start_capture(self, target, out=None, extra=(), expect_ok=True):
        """Starts the proxy on 127.0.0.1:0 -> target; waits for its
        'listening on' line and returns a Capture."""
        out = out or self.path("trace.%d.zst" % len(self.procs))
        errpath = out + ".stderr"
        tgt = target if isinstance(target, str) else "127.0.0.1:%d" % target
        errf = open(errpath, "w")
        p = self.spawn([MTRACE, "capture", "--listen", "127.0.0.1:0",
                        "--target", tgt, "-o", out] + list(extra),
                       stdout=subprocess.DEVNULL, stderr=errf)
        errf.close()
        return Capture(self, p, wait_listening(p, errpath, "capture"), out, errpath)

    def start_replay(self, trace, extra=(), log=None):
        """Starts `mtrace replay` of trace on 127.0.0.1:0 (extra: more
        options); waits for its 'listening on' line; returns (process,
        port, path of its stderr log)."""
        log = log or self.path("replay.%d.log" % len(self.procs))
        with open(log, "w") as errf:
            p = self.spawn([MTRACE, "replay", "--listen", "127.0.0.1:0"] + list(extra) + [trace],
                           stderr=errf)
        return p, wait_listening(p, log, "replay"), log

    def dump(self, trace, allow_error=False):
        """Runs `mtrace dump --json TRACE` and returns the parsed records."""
        r = subprocess.run([MTRACE, "dump", "--json", trace],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and not allow_error:
            fail("mtrace dump exited %d: %s" % (r.returncode, r.stderr[-2000:]))
        recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
        return recs


def op_msg(request_id, doc, response_to=0):
    """An OP_MSG (flags 0, one body section) of doc, for raw-socket clients
    and (with response_to) raw upstreams."""
    import bson  # python3-bson; imported here: not every test needs it
    body = bson.encode(doc)
    return struct.pack("<iiiiIB", 16 + 5 + len(body), request_id, response_to, 2013,
                       0, 0) + body


def hdr(length, opcode=2013, request_id=7):
    """A bare 16-byte message header announcing length bytes."""
    return struct.pack("<iiii", length, request_id, 0, opcode)


def wait_closed(sock, limit, what="connection"):
    """Seconds until the peer closed sock, reading and dropping what it
    sends; fails after limit seconds, naming the connection what."""
    t0 = time.time()
    sock.settimeout(limit)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        fail("%s not closed within %.0f s" % (what, limit))
    return time.time() - t0


def rss_kb(pid):
    """VmRSS of process pid in kB (0 when the line is missing)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class GoodClient(threading.Thread):
    """A pymongo client (heartbeat 0.5 s, so its monitor is never idle)
    running find_one({_id: "test-doc-1"}) in a loop until stop is set;
    counts its successes (ok) and keeps its errors."""

    def __init__(self, port, pause=0.01):
        super().__init__(daemon=True)
        self.port, self.pause, self.ok, self.errors = port, pause, 0, []
        self.stop = threading.Event()

    def run(self):
        from pymongo import MongoClient
        c = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % self.port,
                        heartbeatFrequencyMS=500, serverSelectionTimeoutMS=5000)
        col = c.benchmark_db.test_col
        while not self.stop.is_set():
            try:
                check(col.find_one({"_id": "test-doc-1"})["value"] == 42, "bad doc")
                self.ok += 1
            except Exception as e:  # noqa: BLE001
                self.errors.append(repr(e))
            time.sleep(self.pause)
        c.close()

    def finish(self, min_ok=50):
        """Stops the loop; fails on any error or fewer than min_ok finds."""
        self.stop.set()
        self.join(10)
        print("pymongo: %d finds, %d errors" % (self.ok, len(self.errors)))
        check(not self.errors, "pymongo saw errors: %s" % self.errors[:3])
        check(self.ok > min_ok, "too few finds: %d" % self.ok)


class BadClients:
    """The misbehaving clients both servers' limits tests start against
    port: a slow-loris sending a valid ping one byte a second (loris_closed
    gets the time its send failed), an idle connection, a header announcing
    200000 bytes and one with messageLength -5 (each followed by a few
    bytes).  start() returns once the server has closed the last two."""

    def __init__(self, port):
        self.port = port
        self.loris_closed = []

    def _slow(self):
        for b in op_msg(7, {"ping": 1, "$db": "admin"}):
            try:
                self.loris.send(bytes([b]))
            except OSError:
                self.loris_closed.append(time.time())
                return
            time.sleep(1)

    def start(self):
        addr = ("127.0.0.1", self.port)
        self.loris = socket.create_connection(addr)
        self.loris_thread = threading.Thread(target=self._slow, daemon=True)
        self.t0 = time.time()
        self.loris_thread.start()
        self.idle = socket.create_connection(addr)
        big = socket.create_connection(addr)
        big.sendall(hdr(200000) + b"\0" * 100)
        neg = socket.create_connection(addr)
        neg.sendall(hdr(-5) + b"\0" * 8)
        check(wait_closed(big, 5) < 5, "oversized message not closed")
        check(wait_closed(neg, 5) < 5, "negative length not closed")
        return self

    def check_loris(self, within):
        """Fails unless the slow-loris was closed within `within` seconds
        of its start, before it sent its whole message."""
        self.loris_thread.join(10)
        check(self.loris_closed, "slow-loris was never closed (or sent its "
              "whole message)")
        took = self.loris_closed[0] - self.t0
        print("slow-loris closed after %.1f s" % took)
        check(took < within, "slow-loris closed after %.1f s" % took)


def flood(port, data):
    """Sends data on a new connection (SO_RCVBUF 4 KiB) whose replies are
    never read, from a thread; returns (thread, outcome list, socket): the
    list gets "all" when everything was sent, "closed" when the peer
    closed.  The caller keeps the socket open as long as it holds it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    done = []

    def send():
        try:
            sock.sendall(data)
            done.append("all")
        except OSError:
            done.append("closed")
    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t, done, sock


def op_msg_burst(count, size, first_id, response_to, fill):
    """count OP_MSG replies to response_to, ids first_id.., each about size
    bytes: {ok: 1.0, i: <index>, pad: <size - 64 bytes of fill>}."""
    import bson
    pad = bson.Binary(fill * (size - 64))
    return b"".join(op_msg(first_id + i, {"ok": 1.0, "i": i, "pad": pad}, response_to)
                    for i in range(count))


def recv_msg(sock, timeout=None):
    """One whole wire message read from sock (exactly its bytes), or None
    at EOF; with timeout (seconds), also None when it does not come in time
    (without, the socket's own timeout applies)."""
    if timeout is not None:
        sock.settimeout(timeout)
    data = b""
    try:
        for want in (4, None):  # the length field, then the rest
            n = want or struct.unpack("<i", data[:4])[0]
            while len(data) < n:
                chunk = sock.recv(n - len(data))
                if not chunk:
                    return None
                data += chunk
    except socket.timeout:
        if timeout is None:
            raise
        return None
    return data


def recv_request_id(sock):
    """Reads one whole wire message from sock and returns its request id;
    raises ConnectionError at EOF before a whole message."""
    req = recv_msg(sock)
    if req is None:
        raise ConnectionError("EOF before a whole request")
    return struct.unpack("<i", req[4:8])[0]


def read_to_end(sock, timeout=10, step=1 << 20, pause=0.0):
    """(bytes, how it ended: 'eof', 'reset' or 'timeout'): reads sock in
    recv(step) calls, sleeping pause seconds after each, until EOF, a reset
    or no byte for timeout seconds."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(step)
            if not chunk:
                return data, "eof"
            data += chunk
            if pause:
                time.sleep(pause)
    except ConnectionResetError:
        return data, "reset"
    except socket.timeout:
        return data, "timeout"


SIOCOUTQ = 0x5411  # linux/sockios.h (TIOCOUTQ): bytes not yet acked by the peer


def wait_sent(sock, secs=10):
    """True once sock's send queue is empty (the peer has every byte),
    False if it is not within secs seconds."""
    import fcntl
    deadline = time.time() + secs
    while time.time() < deadline:
        buf = bytearray(4)
        fcntl.ioctl(sock.fileno(), SIOCOUTQ, buf)
        if struct.unpack("i", buf)[0] == 0:
            return True
        time.sleep(0.01)
    return False


def reset_close(sock):
    """Closes sock with a reset (RST: SO_LINGER on, 0 s)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class RawUpstream:
    """A plain TCP server on 127.0.0.1 (kernel-chosen self.port) for
    raw-socket tests.  A thread accepts up to `conns` connections, one
    after the other (giving up when none comes within accept_timeout
    seconds: self.error then says so), and calls the subclass's
    serve_conn(sock) for each: in that thread, or with threaded in a
    thread of its own.  An OSError from serve_conn is kept in self.error.
    conn_timeout (seconds), when given, is set on each accepted socket.
    A subclass sets its own fields, then calls start()."""

    def __init__(self, conns=1, backlog=4, accept_timeout=15, conn_timeout=None,
                 threaded=False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.conns, self.accept_timeout = conns, accept_timeout
        self.conn_timeout, self.threaded = conn_timeout, threaded
        self.error = None
        self.threads = []
        self.th = threading.Thread(target=self._accept_loop, daemon=True)

    def start(self):
        self.th.start()

    def _accept_loop(self):
        self.sock.settimeout(self.accept_timeout)
        for i in range(self.conns):
            try:
                s, _ = self.sock.accept()
            except socket.timeout:
                self.error = "%d of %d connections within %d s" % (i, self.conns,
                                                                  self.accept_timeout)
                return
            if self.conn_timeout is not None:
                s.settimeout(self.conn_timeout)
            if not self.threaded:
                self._serve(s)
                continue
            t = threading.Thread(target=self._serve, args=(s,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, s):
        try:
            self.serve_conn(s)
        except OSError as e:
            self.error = e

    def serve_conn(self, s):
        raise NotImplementedError

    def join(self, timeout):
        """Waits up to timeout seconds for the accepting thread and for
        each connection's thread, closes the listening socket; True when
        every thread has ended."""
        self.th.join(timeout)
        for t in self.threads:
            t.join(timeout)
        self.sock.close()
        return not self.th.is_alive() and not any(t.is_alive() for t in self.threads)


def msgs(recs, direction=None):
    return [r for r in recs if r.get("type") == "msg" and
            (direction is None or r["dir"] == direction)]


def summary_bytes(text):
    """(recorded, forwarded, dropped) from the proxy's summary."""
    m = re.search(r"recorded (\d+) bytes [!=]+ forwarded (\d+) bytes .*dropped (\d+)",
                  text)
    check(m is not None, "no summary line in:\n" + text)
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _pair_key(item):
    """(request_id, lower-case command name or None) of a check_pairs item."""
    if isinstance(item, tuple):
        return item[0], item[1].lower()
    return item, None


def check_pairs(recs, request_ids, what, exact=True):
    """request_ids: ids, or (request_id, command name) pairs (Recorder.cmds),
    one per call the client made.  A (request_id, name) that appears k
    times stands for k c2s requests with that id and command in the trace
    (exactly k; at least k when exact is False, e.g. when calls outside
    the list may have drawn the same id), each with a s2c reply
    (response_to) on its connection, stamped after it.  Request ids are
    not unique (pymongo 3.11 draws them at random): on each connection the
    requests with an id are paired in time order with the replies to that
    id, and with exact a connection must have as many replies to an id as
    requests with it."""
    c2s, replies = {}, {}
    for r in msgs(recs, "c2s"):
        c2s.setdefault(r["request_id"], []).append(r)
    for r in msgs(recs, "s2c"):
        replies.setdefault((r["conn"], r["response_to"]), []).append(r)
    want = {}
    for item in request_ids:
        key = _pair_key(item)
        want[key] = want.get(key, 0) + 1
    for (rid, cmd), k in sorted(want.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        name = "%d%s" % (rid, "" if cmd is None else " (%s)" % cmd)
        all_reqs = c2s.get(rid, [])
        reqs = [r for r in all_reqs if cmd is None or str(r.get("cmd")).lower() == cmd]
        if exact:
            check(len(reqs) == k, "%s: request %s recorded %d times, want %d" %
                  (what, name, len(reqs), k))
        else:
            check(len(reqs) >= k, "%s: request %s recorded %d times, want at least %d" %
                  (what, name, len(reqs), k))
        paired = 0
        conns = sorted({r["conn"] for r in reqs} |
                       ({c for (c, t) in replies if t == rid} if exact else set()))
        for conn in conns:
            on_conn = sorted((r for r in all_reqs if r["conn"] == conn),
                             key=lambda r: r["t_ns"])
            reps = sorted(replies.get((conn, rid), []), key=lambda r: r["t_ns"])
            if exact:
                check(len(reps) == len(on_conn),
                      "%s: conn %d has %d requests with id %d and %d replies to it" %
                      (what, conn, len(on_conn), rid, len(reps)))
            for req, rep in zip(on_conn, reps):
                check(rep["t_ns"] >= req["t_ns"],
                      "%s: reply to %s stamped before its request" % (what, name))
                if cmd is None or str(req.get("cmd")).lower() == cmd:
                    paired += 1
        check(paired >= k, "%s: request %s has a reply on its connection %d times, want %d"
              % (what, name, paired, k))
