"""test_capture_pmqos.py -- `mtrace capture --cpu-dma-latency US`: a PM QoS
CPU wake-up latency request held from start to exit.

pymongo through the proxy started with `--cpu-dma-latency 0` to MockupDB:
while it runs, the proxy holds /dev/cpu_dma_latency open (/proc/PID/fd)
and the device reads 0; every find_one gets its document; the summary says
what was held; after exit the device reads what it read before.  Live mode
(`--iface lo --duration`) holds and reports it the same way.  Refusals:
out of range exits 2, --pcap exits 2, and an unprivileged user (setpriv)
exits 1 with a clear message before the trace file is created.

The request is global (every process's wake-ups on the host), so the test
takes the benchmarks' lock file ($MTRACE_BENCH_LOCK, default
/tmp/mtrace-bench.lock) while it holds one, when that file exists: a
benchmark running meanwhile is not measured under a request it did not ask
for.
"""
import fcntl
import os
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, check, fail  # noqa: E402

from pymongo import MongoClient  # noqa: E402

DEV = "/dev/cpu_dma_latency"
DOC = {"_id": "test-doc-1", "value": 42}
LOCK = os.environ.get("MTRACE_BENCH_LOCK", "/tmp/mtrace-bench.lock")


def current():
    with open(DEV, "rb") as f:
        return struct.unpack("i", f.read(4))[0]


def holds_dev(pid):
    fds = "/proc/%d/fd" % pid
    for fd in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, fd)) == DEV:
                return True
        except OSError:
            pass
    return False


def take_lock():
    """The benchmarks' lock, if the file exists: waits up to 240 s."""
    if not os.path.exists(LOCK):
        return None
    f = open(LOCK, "a")
    deadline = time.time() + 240
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            if time.time() > deadline:
                print("SKIP: %s held by a benchmark for 240 s" % LOCK)
                sys.exit(77)
            time.sleep(0.5)


def check_usage(env, mock):
    out = env.path("usage.zst")
    for extra, what in ((["--cpu-dma-latency", "-1"], "microseconds"),
                        (["--cpu-dma-latency", "2000000001"], "microseconds"),
                        (["--cpu-dma-latency", "x"], "microseconds")):
        r = subprocess.run([MTRACE, "capture", "--listen", "127.0.0.1:0", "--target",
                            "127.0.0.1:%d" % mock, "-o", out] + extra,
                           capture_output=True, text=True, timeout=20)
        check(r.returncode == 2 and what in r.stderr,
              "%r: exit %d, %r" % (extra, r.returncode, r.stderr))
    r = subprocess.run([MTRACE, "capture", "--pcap", env.path("none.pcap"), "-o", out,
                        "--cpu-dma-latency", "0"], capture_output=True, text=True,
                       timeout=20)
    check(r.returncode == 2 and "--pcap" in r.stderr,
          "--pcap with --cpu-dma-latency: exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(out), "a usage error created the trace")
    print("ok: out-of-range values and --pcap refused (exit 2)")


def check_unprivileged(env, mock):
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        print("SKIP: no setpriv(1); the refusal is not checked")
        return
    # a directory the unprivileged user could create the trace in
    os.chmod(env.tmp, 0o711)
    d = env.path("nobody")
    os.mkdir(d)
    os.chmod(d, 0o777)
    out = os.path.join(d, "refused.zst")
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                        MTRACE, "capture", "--listen", "127.0.0.1:0", "--target",
                        "127.0.0.1:%d" % mock, "-o", out, "--cpu-dma-latency", "0"],
                       capture_output=True, text=True, timeout=20)
    if r.returncode in (126, 127):
        print("SKIP: user 65534 cannot run %s (%s)" % (MTRACE, r.stderr.strip()))
        return
    check(r.returncode == 1 and DEV in r.stderr and "root" in r.stderr,
          "--cpu-dma-latency 0 as user 65534: exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(out), "a refused --cpu-dma-latency left a trace file")
    print("ok: unprivileged --cpu-dma-latency refused (exit 1): %s" % r.stderr.strip())


def check_proxy(env, mock, before):
    cap = env.start_capture(mock, extra=("--cpu-dma-latency", "0"))
    check("holding CPU wake-up latency <= 0 us" in cap.stderr(),
          "no start line for the request:\n" + cap.stderr())
    check(holds_dev(cap.proc.pid), "the proxy does not hold %s open" % DEV)
    during = current()
    check(during == 0, "%s reads %d while the proxy holds 0" % (DEV, during))
    client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                         serverSelectionTimeoutMS=5000)
    col = client.benchmark_db.test_col
    for _ in range(20):
        check(col.find_one({"_id": DOC["_id"]}) == DOC, "find_one: wrong document")
    client.close()
    text = cap.stop()
    m = re.search(r"cpu wake-up latency: held <= (\d+) us on %s from start to exit "
                  r"\(host bound at exit: (-?\d+) us\)" % DEV, text)
    check(m is not None and m.group(1) == "0" and m.group(2) == "0",
          "no or wrong held-latency line in the summary:\n" + text)
    after = current()
    check(after == before, "%s reads %d after exit, %d before" % (DEV, after, before))
    print("ok: proxy held %s = 0 while serving 20 find_one (before/after %d)"
          % (DEV, before))


def check_live(env, mock, before):
    out = env.path("live.zst")
    r = subprocess.run([MTRACE, "capture", "--iface", "lo", "--port", str(mock),
                        "--duration", "0.3", "--cpu-dma-latency", "0", "-o", out],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0 and "permission" in r.stderr.lower():
        print("SKIP: live capture refused here: %s" % r.stderr.strip())
        return
    check(r.returncode == 0, "live capture: exit %d, %r" % (r.returncode, r.stderr))
    check("held <= 0 us on %s" % DEV in r.stderr,
          "live capture summary lacks the held request:\n" + r.stderr)
    check(current() == before, "%s not restored after live capture" % DEV)
    print("ok: live capture held and reported the request")


def main():
    with Env() as env:
        mock = env.start_mock()
        check_usage(env, mock)
        if not os.path.exists(DEV):
            r = subprocess.run([MTRACE, "capture", "--listen", "127.0.0.1:0",
                                "-o", env.path("x.zst"), "--cpu-dma-latency", "0"],
                               capture_output=True, text=True, timeout=20)
            check(r.returncode == 1 and DEV in r.stderr,
                  "no %s: exit %d, %r" % (DEV, r.returncode, r.stderr))
            print("SKIP: no %s on this kernel (refusal checked)" % DEV)
            sys.exit(77)
        check_unprivileged(env, mock)
        if not os.access(DEV, os.W_OK):
            print("SKIP: %s not writable (not root)" % DEV)
            sys.exit(77)
        lock = take_lock()
        try:
            before = current()
            check_proxy(env, mock, before)
            check_live(env, mock, before)
        finally:
            if lock is not None:
                lock.close()


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        fail("timed out: %s" % e)
