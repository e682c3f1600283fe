"""test_capture_rt.py -- `mtrace capture --rt-prio`: the event loops under
SCHED_FIFO, the trace writer not.

pymongo (sequential, then 4 threads) through `--rt-prio 1 --delay-ms 1` to
MockupDB: every call answered with the right document, one request and one
reply per command in the trace, recorded = forwarded bytes, nothing
dropped, and no reply released before its delay (achieved p50 >= the
requested 1.000 ms; a direction check, not a timing one).  While it runs:
its loop threads are SCHED_FIFO at priority 1 and its writer thread
SCHED_OTHER (/proc/PID/task/*/stat).  `--batch-loops`: the loops
SCHED_BATCH, the rest SCHED_OTHER, a pymongo call answered; without it
(the default) every thread SCHED_OTHER.  Then the refusals: --rt-prio 100
exits 2 (usage); without CAP_SYS_NICE (setpriv) it exits 1 with a clear
message, before creating the trace file.
"""
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, Recorder, check, check_pairs, msgs, summary_bytes  # noqa: E402

from pymongo import MongoClient  # noqa: E402

DOC = {"_id": "test-doc-1", "value": 42}
SCHED_OTHER, SCHED_FIFO, SCHED_BATCH = 0, 1, 3


def thread_policies(pid):
    """[(policy, rt_priority, nice)] of every thread of pid, the main
    thread first."""
    out = []
    tids = sorted(os.listdir("/proc/%d/task" % pid), key=lambda t: t != str(pid))
    for tid in tids:
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        # after the comm: field 3 is fields[0]; nice 19, rt_priority 40, policy 41
        out.append((int(fields[41 - 3]), int(fields[40 - 3]), int(fields[19 - 3])))
    return out


def check_policies(pid):
    # the loop threads switch themselves once started: allow them 5 s
    deadline = time.time() + 5
    while True:
        pol = thread_policies(pid)
        if sum(p[0] == SCHED_FIFO for p in pol) >= 2 or time.time() > deadline:
            break
        time.sleep(0.02)
    fifo = [p for p in pol if p[0] == SCHED_FIFO]
    other = [p for p in pol if p[0] == SCHED_OTHER]
    # 2 loops (--threads 2) FIFO; the writer (nice +10 from the process's
    # nice, at most 19: the test may itself run under nice) and the main
    # thread normal (a sanitizer may add a thread of its own, also normal)
    base = pol[0][2]
    check(len(fifo) == 2 and all(p[1] == 1 for p in fifo),
          "want 2 SCHED_FIFO prio 1 loop threads, got %r" % pol)
    check(pol[0][0] == SCHED_OTHER and len(other) == len(pol) - 2
          and any(p[2] == min(base + 10, 19) for p in other[1:]),
          "want the main thread (nice %d) and the nice +10 writer SCHED_OTHER, "
          "got %r" % (base, pol))
    print("ok: thread policies %r" % sorted(pol))


def check_batch_loops(env, mock):
    """--batch-loops: 2 SCHED_BATCH loops, main and writer SCHED_OTHER;
    the default: no SCHED_BATCH thread."""
    cap = env.start_capture(mock, extra=("--threads", "2", "--batch-loops"))
    check("(SCHED_BATCH)" in cap.stderr(), "no SCHED_BATCH in the start line:\n"
          + cap.stderr())
    deadline = time.time() + 5
    while True:
        pol = thread_policies(cap.proc.pid)
        if sum(p[0] == SCHED_BATCH for p in pol) >= 2 or time.time() > deadline:
            break
        time.sleep(0.02)
    client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                         serverSelectionTimeoutMS=5000)
    check(client.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC,
          "find_one through --batch-loops: wrong document")
    client.close()
    cap.stop()
    check(sum(p[0] == SCHED_BATCH for p in pol) == 2 and pol[0][0] == SCHED_OTHER
          and all(p[0] in (SCHED_BATCH, SCHED_OTHER) for p in pol),
          "--batch-loops: want 2 SCHED_BATCH loops, main and writer SCHED_OTHER, got %r" % pol)
    print("ok: --batch-loops thread policies %r" % sorted(pol))
    cap = env.start_capture(mock, extra=("--threads", "2"))
    client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % cap.port,
                         serverSelectionTimeoutMS=5000)
    check(client.benchmark_db.test_col.find_one({"_id": DOC["_id"]}) == DOC,
          "find_one through the default proxy: wrong document")
    pol = thread_policies(cap.proc.pid)  # the loops have served a call
    client.close()
    cap.stop()
    check(all(p[0] == SCHED_OTHER for p in pol),
          "default: want every thread SCHED_OTHER, got %r" % pol)
    print("ok: default thread policies %r" % sorted(pol))


def run_clients(port, rec):
    client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % port,
                         serverSelectionTimeoutMS=5000, event_listeners=[rec])
    col = client.benchmark_db.test_col
    for _ in range(30):
        check(col.find_one({"_id": DOC["_id"]}) == DOC, "sequential find_one: wrong document")
    errors = []

    def worker():
        try:
            for _ in range(10):
                got = col.find_one({"_id": DOC["_id"]})
                if got != DOC:
                    errors.append(got)
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "threaded find_one failed: %r" % errors[:3])
    client.close()


def check_refusals(env, mock):
    out = env.path("refused.zst")
    r = subprocess.run([MTRACE, "capture", "--listen", "127.0.0.1:0", "--target",
                        "127.0.0.1:%d" % mock, "-o", out, "--rt-prio", "100"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and "--rt-prio" in r.stderr,
          "--rt-prio 100: exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(out), "--rt-prio 100 created the trace")
    print("ok: --rt-prio 100 refused (exit 2)")
    r = subprocess.run([MTRACE, "capture", "--listen", "127.0.0.1:0", "--target",
                        "127.0.0.1:%d" % mock, "-o", out, "--rt-prio", "1", "--batch-loops"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and "--batch-loops" in r.stderr,
          "--rt-prio 1 --batch-loops: exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(out), "--rt-prio with --batch-loops created the trace")
    print("ok: --batch-loops with --rt-prio refused (exit 2)")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        print("SKIP: no setpriv(1); the EPERM case is not checked")
        return
    r = subprocess.run([setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice",
                        MTRACE, "capture", "--listen", "127.0.0.1:0", "--target",
                        "127.0.0.1:%d" % mock, "-o", out, "--rt-prio", "1"],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 1 and "SCHED_FIFO" in r.stderr and "CAP_SYS_NICE" in r.stderr,
          "--rt-prio 1 without CAP_SYS_NICE: exit %d, %r" % (r.returncode, r.stderr))
    check(not os.path.exists(out), "a refused --rt-prio left a trace file")
    print("ok: --rt-prio without CAP_SYS_NICE refused (exit 1): %s" % r.stderr.strip())


def main():
    with Env() as env:
        mock = env.start_mock()
        cap = env.start_capture(mock, extra=("--threads", "2", "--rt-prio", "1",
                                             "--delay-ms", "1"))
        check("(SCHED_FIFO)" in cap.stderr(), "no SCHED_FIFO in the start line:\n"
              + cap.stderr())
        check_policies(cap.proc.pid)
        rec = Recorder()
        run_clients(cap.port, rec)
        text = cap.stop()

        recs = env.dump(cap.out)
        check(recs[-1]["type"] == "end", "trace does not end with an end record")
        check_pairs(recs, rec.cmds, "pymongo")
        finds = [r for r in msgs(recs, "c2s") if r["cmd"] == "find"]
        check(len(finds) == 30 + 40, "%d find in the trace, want 70" % len(finds))
        recorded, forwarded, dropped = summary_bytes(text)
        total = sum(r["len"] for r in msgs(recs))
        check(recorded == forwarded == total,
              "recorded %d, forwarded %d, dump total %d" % (recorded, forwarded, total))
        check(dropped == 0, "dropped %d" % dropped)
        m = re.search(r"requested 1\.000 ms; achieved p50 ([0-9.]+) ms, p99 ([0-9.]+) ms", text)
        check(m is not None, "no achieved-delay line:\n" + text)
        check(float(m.group(1)) >= 1.0, "a reply released early: p50 %s ms" % m.group(1))
        print("ok: %d commands under --rt-prio 1 --delay-ms 1; achieved p50 %s, p99 %s ms"
              % (len(rec.ids), m.group(1), m.group(2)))
        check_refusals(env, mock)
        check_batch_loops(env, mock)


if __name__ == "__main__":
    main()
