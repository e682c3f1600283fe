"""test_replay_loops.py -- `mtrace replay --pin-loops` and `--batch-loops`:
the loop-thread options replay shares with the capture proxy (core/srv.c).

traces/sample.zst served with --threads 2:
- --batch-loops: the 2 loop threads SCHED_BATCH, the main thread
  SCHED_OTHER (/proc/PID/task/*/stat), pymongo's find_one answered with the
  recorded document;
- --pin-loops: each loop thread allowed on exactly one CPU, the two on
  different CPUs when the process may use two or more, the main thread not
  pinned (/proc/PID/task/*/status Cpus_allowed_list), find_one answered;
- the default: no thread SCHED_BATCH, no loop pinned;
- --batch-loops with --rt-prio 1: usage error, exit 2, nothing listening.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, Env, check  # noqa: E402

from pymongo import MongoClient  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACE = os.path.join(TOP, "traces", "sample.zst")
DOC = {"_id": "test-doc-1", "value": 42}
SCHED_OTHER, SCHED_BATCH = 0, 3


def tasks(pid):
    """Thread ids of pid, the main thread first."""
    return sorted(os.listdir("/proc/%d/task" % pid), key=lambda t: t != str(pid))


def policy(pid, tid):
    with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[41 - 3])  # field 41: policy (fields[0] is field 3)


def allowed(pid, tid):
    """The CPUs thread tid may run on, as a set."""
    with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                cpus = set()
                for part in line.split(":", 1)[1].strip().split(","):
                    lo, _, hi = part.partition("-")
                    cpus.update(range(int(lo), int(hi or lo) + 1))
                return cpus
    raise AssertionError("no Cpus_allowed_list for %s" % tid)


def find_one(port):
    client = MongoClient("mongodb://127.0.0.1:%d/?directConnection=true" % port,
                         serverSelectionTimeoutMS=5000)
    got = client.benchmark_db.test_col.find_one({"_id": DOC["_id"]})
    client.close()
    return got


def loop_tids(pid, want):
    """The threads but the main one, once there are want of them (the loops
    start before 'listening on' is printed; allow them 5 s anyway)."""
    deadline = time.time() + 5
    while True:
        t = tasks(pid)[1:]
        if len(t) >= want or time.time() > deadline:
            return t
        time.sleep(0.02)


def main():
    ncpu = len(os.sched_getaffinity(0))
    with Env() as env:
        p, port, log = env.start_replay(TRACE, extra=["--threads", "2", "--batch-loops"])
        loops = loop_tids(p.pid, 2)
        pol = [policy(p.pid, t) for t in loops]
        check(find_one(port) == DOC, "find_one under --batch-loops: wrong document")
        check(policy(p.pid, str(p.pid)) == SCHED_OTHER,
              "--batch-loops: the main thread is not SCHED_OTHER")
        check(pol.count(SCHED_BATCH) == 2,
              "--batch-loops: want 2 SCHED_BATCH loop threads, got policies %r" % pol)
        print("ok: --batch-loops: loop policies %r, find_one answered" % pol)
        p.terminate()
        p.wait(timeout=20)

        p, port, log = env.start_replay(TRACE, extra=["--threads", "2", "--pin-loops"])
        loops = loop_tids(p.pid, 2)
        sets = [allowed(p.pid, t) for t in loops]
        check(find_one(port) == DOC, "find_one under --pin-loops: wrong document")
        pinned = [s for s in sets if len(s) == 1]
        check(len(pinned) == 2, "--pin-loops: want 2 loops on one CPU each, got %r" % sets)
        if ncpu >= 2:
            check(pinned[0] != pinned[1], "--pin-loops: both loops on CPU %r" % pinned[0])
        check(len(allowed(p.pid, str(p.pid))) == ncpu,
              "--pin-loops: the main thread is pinned too")
        print("ok: --pin-loops: loops on CPUs %r, find_one answered" % sets)
        p.terminate()
        p.wait(timeout=20)

        p, port, log = env.start_replay(TRACE, extra=["--threads", "2"])
        check(find_one(port) == DOC, "find_one by default: wrong document")
        ids = tasks(p.pid)
        check(all(policy(p.pid, t) == SCHED_OTHER for t in ids),
              "default: a thread is not SCHED_OTHER")
        check(all(len(allowed(p.pid, t)) == ncpu for t in ids), "default: a thread is pinned")
        print("ok: default: every thread SCHED_OTHER and unpinned")
        p.terminate()
        p.wait(timeout=20)

    r = subprocess.run([MTRACE, "replay", "--listen", "127.0.0.1:0", "--rt-prio", "1",
                        "--batch-loops", TRACE], capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and "--batch-loops" in r.stderr and r.stderr.count("\n") == 1,
          "--batch-loops --rt-prio 1: exit %d, %r" % (r.returncode, r.stderr))
    print("ok: --batch-loops with --rt-prio refused (exit 2): %s" % r.stderr.strip())


if __name__ == "__main__":
    main()
