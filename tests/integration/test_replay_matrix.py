#!/usr/bin/python3
"""test_replay_matrix.py -- one trace serves every driver.

Each driver (pymongo, the Node.js driver, libmongoc) runs the same calls
(matrix_workload.py, matrix_workload.js, tests/helpers/mongoc_matrix.c:
find_one, a find with no match, a find over three batches, aggregate,
count, insert, update, find-and-modify, delete, a failing command) through
`mtrace capture` to
MockupDB; the three drivers see the same answers.  Each trace is then
replayed by `mtrace replay` to each of the other two drivers: 0 misses, and
every answer equals the recorded one.  The drivers send the same operations
differently: find_one is limit 1 + singleBatch from pymongo and Node,
limit 1 alone from libmongoc (an application's find with limit 1); pymongo
sends update statements with multi: false, upsert: false, the others
without; findAndModify carries new: false, upsert: false from pymongo,
remove: false too from Node, none of them from libmongoc; Node sends
insert's documents in the command, pymongo and libmongoc as a kind-1
sequence;
so with --strict (exact matching) every trace misses calls of each other
driver and replay exits 1.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import PYTHON, TOP, Env, check  # noqa: E402

HERE = os.path.join(TOP, "tests", "integration")
BUILD = os.environ.get("BUILD", "build/release")
MONGOC = os.path.join(TOP, BUILD, "helpers", "mongoc_matrix")
CALLS = ["find_one", "find_empty", "find_batches", "aggregate", "count", "insert",
         "update", "find_and_modify", "delete", "fail"]
DRIVERS = {
    "pymongo": lambda uri: [PYTHON, os.path.join(HERE, "matrix_workload.py"), uri],
    "node": lambda uri: ["node", os.path.join(HERE, "matrix_workload.js"), uri],
    "mongoc": lambda uri: [MONGOC, uri],
}


def run(driver, port):
    """The driver's answers against 127.0.0.1:port, as {call: answer},
    each answer normalised (JSON, sorted keys)."""
    uri = "mongodb://127.0.0.1:%d/?directConnection=true" % port
    r = subprocess.run(DRIVERS[driver](uri), cwd=HERE, capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "%s against port %d exited %d: %s"
          % (driver, port, r.returncode, r.stderr[-1500:]))
    got = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        got[d.pop("call")] = json.dumps(d, sort_keys=True)
    check(sorted(got) == sorted(CALLS), "%s ran %s" % (driver, sorted(got)))
    return got


def replay(env, trace, name, clients, extra=()):
    """Serves trace to each driver of clients in turn; returns ({driver:
    answers}, summary, exit status, log text)."""
    summ = env.path(name + ".json")
    rep, port, log = env.start_replay(trace, ["--summary-json", summ] + list(extra),
                                      log=env.path(name + ".log"))
    got = {c: run(c, port) for c in clients}
    rep.terminate()
    rc = rep.wait(10)
    with open(summ) as f, open(log) as lf:
        return got, json.load(f), rc, lf.read()


def main():
    check(os.access(MONGOC, os.X_OK), "%s not built (make helpers)" % MONGOC)
    with Env() as env:
        mock = env.start_mock()
        traces, recorded = {}, {}
        for d in DRIVERS:
            cap = env.start_capture(target=mock, out=env.path(d + ".zst"))
            recorded[d] = run(d, cap.port)
            cap.stop()
            traces[d] = cap.out
        for d in DRIVERS:
            check(recorded[d] == recorded["pymongo"],
                  "MockupDB answered %s and pymongo differently:\n%s\n%s"
                  % (d, recorded[d], recorded["pymongo"]))
        check(json.loads(recorded["pymongo"]["fail"]).get("error") == 2 and
              len(json.loads(recorded["pymongo"]["find_batches"])["ok"]) == 250,
              "recorded answers: %r" % recorded["pymongo"])
        cases = 0
        for d in DRIVERS:
            others = [o for o in DRIVERS if o != d]
            got, summ, rc, log = replay(env, traces[d], "from-" + d, others)
            check(rc == 0, "replay of the %s trace exited %d: %s" % (d, rc, log[-2000:]))
            check(summ["missed"] == 0,
                  "replay of the %s trace to %s: %d misses:\n%s"
                  % (d, others, summ["missed"], log[-3000:]))
            for o in others:
                for c in CALLS:
                    check(got[o][c] == recorded[d][c],
                          "%s trace replayed to %s: %s answered %s, recorded %s"
                          % (d, o, c, got[o][c], recorded[d][c]))
                    cases += 1
        strict_missed = {}
        for d in DRIVERS:
            others = [o for o in DRIVERS if o != d]
            got, summ, rc, log = replay(env, traces[d], "strict-" + d, others, ["--strict"])
            check(summ["missed"] > 0 and rc == 1,
                  "--strict replay of the %s trace to %s: %d misses, exit %d (want misses, exit 1)"
                  % (d, others, summ["missed"], rc))
            differ = sorted("%s:%s" % (o, c) for o in others for c in CALLS
                            if got[o][c] != recorded[d][c])
            for o in others:
                # every pair of drivers sends some operation differently
                check(any(json.loads(got[o][c]).get("error") == 47 for c in CALLS),
                      "--strict: the %s trace served every call of %s" % (d, o))
                if "mongoc" in (d, o):  # find with limit 1 alone
                    check(json.loads(got[o]["find_one"]).get("error") == 47,
                          "--strict: the %s trace's find_one answered %s %s (want miss 47)"
                          % (d, o, got[o]["find_one"]))
            check(len(differ) == summ["missed"],
                  "--strict: %d misses but %s answered otherwise" % (summ["missed"], differ))
            strict_missed[d] = " ".join(differ)
        print("ok: %d cross-driver answers (3 traces x 2 other drivers x %d calls) equal the "
              "recorded ones with 0 misses; --strict misses (exit 1): %s"
              % (cases, len(CALLS), "; ".join("%s trace: %s" % (d, m)
                                              for d, m in strict_missed.items())))


if __name__ == "__main__":
    main()
