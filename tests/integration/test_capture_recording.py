"""test_capture_recording.py -- `mtrace capture --recording`: mongod's traffic
recordings imported into traces.

Real traffic first: pymongo's replay workload (replay_workload.py, 4
threads) through `mtrace capture` to MockupDB, and libmongoc with
compressors=zlib, zstd and snappy through the proxy to fixedsrv --compress.
Each trace's messages are written as a recording by tests/helpers/mkrecording
(written from the server's traffic_recorder.cpp layouts): the event layout
(3 .bin files and checksum.txt) and the date layout (one file, no session
events, no direction).  Each recording imported back must give:
  - dump: the same messages in the same order, with the same connection,
    direction, opcode, ids, command, namespace, flags, length, compressor
    and body (the decompressed form present for OP_COMPRESSED), times
    within the layout's precision (1 us / 1 ms) of the original's, the
    connections' endpoints; source "recording";
  - stats: the same connections, messages, bytes and per-command counts,
    latencies within 1 us (event layout);
  - mtrace replay --strict of the imported trace answers the same
    workload with the same documents and errors, and no miss.
Then damaged recordings (truncated, a bad size, a file changed after its
checksum was written, an OP_MSG whose CRC-32C does not match, an unknown
record, a file of the directory missing): each exits 1 with one line naming the problem and the offset, and
its trace holds every complete record.  And usage: --recording with a proxy
option or with --pcap is exit 2; a missing directory exit 1, no trace left.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import MTRACE, PYTHON, TOP, Env, check, msgs  # noqa: E402

BUILD = os.environ.get("BUILD", "build/release")
WL = os.path.join(TOP, "tests/integration/replay_workload.py")
SAME = ("conn", "dir", "op", "request_id", "response_to", "flags", "cmd", "db",
        "coll", "compressed", "len", "body", "sequences", "cursor_id", "ndocs",
        "error")


def helper(name):
    path = os.path.join(TOP, BUILD, "helpers", name)
    check(os.access(path, os.X_OK), "%s not built (make helpers)" % path)
    return path


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)


def header(recs):
    return next(r for r in recs if r["type"] == "header")


def wall(h, t):
    return h["start_wall_ns"] + t - h["start_mono_ns"]


def compare_dumps(env, a_path, b_path, prec_ns, what):
    a, b = env.dump(a_path), env.dump(b_path)
    ha, hb = header(a), header(b)
    check(hb["source"] == "recording" and hb["ts_precision_ns"] == prec_ns,
          "%s: header %r" % (what, hb))
    ma, mb = msgs(a), msgs(b)
    check(len(ma) == len(mb) and len(ma) > 20,
          "%s: %d messages, the original %d" % (what, len(mb), len(ma)))
    for i, (x, y) in enumerate(zip(ma, mb)):
        for k in SAME:
            check(x.get(k) == y.get(k), "%s: message %d %s: %r != %r" %
                  (what, i, k, y.get(k), x.get(k)))
        d = wall(ha, x["t_ns"]) - wall(hb, y["t_ns"])
        check(0 <= d < prec_ns, "%s: message %d is %d ns off" % (what, i, d))
    oa = {r["conn"]: (r["client"], r["server"]) for r in a if r["type"] == "conn_open"}
    ob = {r["conn"]: (r["client"], r["server"]) for r in b if r["type"] == "conn_open"}
    check(oa == ob, "%s: connections %r, the original %r" % (what, ob, oa))
    closes = [r for r in b if r["type"] == "conn_close"]
    check(len(closes) == len(ob), "%s: %d closes for %d opens" % (what, len(closes), len(ob)))
    return len(ma)


def stats(path):
    r = run([MTRACE, "stats", "--json", path])
    check(r.returncode == 0, "stats %s: %s" % (path, r.stderr))
    return json.loads(r.stdout)


def compare_stats(a_path, b_path, latency, what):
    a, b = stats(a_path), stats(b_path)
    check(a["connections"] == b["connections"], "%s: connections" % what)
    for k in ("total", "c2s", "s2c", "bytes", "compressed", "compressors", "malformed"):
        check(a["messages"][k] == b["messages"][k], "%s: messages.%s %r != %r" %
              (what, k, b["messages"][k], a["messages"][k]))
    check(a["by_command"] == b["by_command"], "%s: by_command differs" % what)
    if latency:
        for cmd, la in a["latency_ms"].items():
            lb = b["latency_ms"][cmd]
            check(la["count"] == lb["count"] and abs(la["mean"] - lb["mean"]) <= 0.001,
                  "%s: %s latency %r vs %r" % (what, cmd, lb, la))


def import_rec(env, src, out, extra=(), want=0):
    r = run([MTRACE, "capture", "--recording", src, "-o", out] + list(extra))
    check(r.returncode == want, "import %s: exit %d (want %d): %s" %
          (src, r.returncode, want, r.stderr))
    return r.stderr


def make_rec(src, out, *opts):
    r = run([helper("mkrecording")] + list(opts) + [src, out])
    check(r.returncode == 0, "mkrecording %s: %s" % (" ".join(opts), r.stderr))


def pymongo_leg(env):
    mock = env.start_mock()
    cap = env.start_capture(mock, out=env.path("a.zst"))
    uri = "mongodb://127.0.0.1:%d/" % cap.port
    r = run([PYTHON, WL, uri, "--threads", "4"])
    check(r.returncode == 0, "workload through capture: %s" % r.stderr)
    want = r.stdout
    cap.stop()
    make_rec(cap.out, env.path("rec"), "--files", "3")
    err = import_rec(env, env.path("rec"), env.path("b.zst"))
    check("file checksums: 3 ok, 0 bad, 0 absent; 0 problems" in err, "summary: %s" % err)
    n = compare_dumps(env, cap.out, env.path("b.zst"), 1000, "event layout")
    compare_stats(cap.out, env.path("b.zst"), True, "event layout")
    make_rec(cap.out, env.path("rec.bin"), "--layout", "date")
    import_rec(env, env.path("rec.bin"), env.path("c.zst"))
    compare_dumps(env, cap.out, env.path("c.zst"), 1000000, "date layout")
    compare_stats(cap.out, env.path("c.zst"), False, "date layout")
    p, port, log = env.start_replay(env.path("b.zst"), ["--strict"])
    r = run([PYTHON, WL, "mongodb://127.0.0.1:%d/" % port, "--threads", "4"])
    check(r.returncode == 0, "workload against replay: %s" % r.stderr)
    check(r.stdout == want, "replay of the imported trace answered differently:\n%s\n---\n%s" %
          (r.stdout[:1500], want[:1500]))
    p.terminate()
    check(p.wait(10) == 0, "replay --strict exited non-zero (misses?): %s" % open(log).read()[-800:])
    print("ok: pymongo: %d messages, event and date layouts, replay answered %d calls"
          % (n, len(want.splitlines())))
    return cap.out


def compressed_leg(env):
    srv = env.spawn([helper("fixedsrv"), "--compress"], stdout=subprocess.PIPE, text=True)
    line = srv.stdout.readline()
    check(line.startswith("READY "), "fixedsrv did not start: %r" % line)
    cap = env.start_capture(int(line.split()[1]), out=env.path("z.zst"))
    for comp in ("zlib", "zstd", "snappy"):
        r = run([helper("mongoc_workload"),
                 "mongodb://127.0.0.1:%d/?compressors=%s" % (cap.port, comp)])
        check(r.returncode == 0, "mongoc_workload %s: %s" % (comp, r.stderr))
    cap.stop()
    make_rec(cap.out, env.path("zrec"))
    import_rec(env, env.path("zrec"), env.path("zb.zst"))
    n = compare_dumps(env, cap.out, env.path("zb.zst"), 1000, "compressed")
    compare_stats(cap.out, env.path("zb.zst"), True, "compressed")
    comps = stats(env.path("zb.zst"))["messages"]["compressors"]
    check(set(comps) == {"zlib", "zstd", "snappy"}, "compressors %r" % comps)
    print("ok: compressed: %d messages, OP_COMPRESSED with its decompressed form" % n)


DAMAGE = {
    "truncate": "the file ends inside a record",
    "badsize": "record size 60000000 is over",
    "badsum": "checksum.txt says",
    "msgcrc": "OP_MSG CRC-32C does not match",
    "unknown": "unknown event type 9",
}


def damage_leg(env, trace):
    full = len(msgs(env.dump(env.path("b.zst"))))
    for kind, text in DAMAGE.items():
        d = env.path("bad-" + kind)
        make_rec(trace, d, "--files", "2", "--damage", kind)
        out = env.path("bad-%s.zst" % kind)
        err = import_rec(env, d, out, ["--quiet"], want=1)
        lines = [l for l in err.splitlines() if l.strip()]
        check(len(lines) == 2 and text in lines[0] and "offset" in lines[0] or
              kind == "badsum" and len(lines) == 2 and text in lines[0],
              "%s: want one problem line and the closing line: %r" % (kind, lines))
        check("holds every record that could be read" in lines[1], "%s: %r" % (kind, lines))
        got = len(msgs(env.dump(out)))
        lost = {"truncate": (0, 1), "badsize": (1, full // 2)}.get(kind, (0, 0))
        check(full - lost[1] <= got <= full - lost[0],
              "%s: %d messages of %d kept" % (kind, got, full))
        print("ok: %s: exit 1, '%s', %d of %d messages kept" % (kind, text, got, full))
    # a file of the directory gone: checksum.txt still lists it
    d = env.path("bad-missing")
    make_rec(trace, d, "--files", "3")
    os.unlink(os.path.join(d, sorted(f for f in os.listdir(d) if f.endswith(".bin"))[1]))
    err = import_rec(env, d, env.path("bad-missing.zst"), ["--quiet"], want=1)
    lines = [l for l in err.splitlines() if l.strip()]
    check(len(lines) == 2 and "checksum.txt lists" in lines[0] and "missing" in lines[0],
          "missing file: %r" % lines)
    got = len(msgs(env.dump(env.path("bad-missing.zst"))))
    check(0 < got < full, "missing file: %d of %d messages" % (got, full))
    print("ok: missing file: exit 1, named from checksum.txt, %d of %d messages kept" % (got, full))


def usage_leg(env):
    r = run([MTRACE, "capture", "--recording", env.path("rec"), "--target",
             "127.0.0.1:1", "-o", env.path("u.zst")])
    check(r.returncode == 2 and "--recording takes only" in r.stderr, "proxy option: %r" % r.stderr)
    r = run([MTRACE, "capture", "--recording", env.path("rec"), "--pcap", "x", "-o",
             env.path("u.zst")])
    check(r.returncode == 2, "--pcap too: exit %d" % r.returncode)
    r = run([MTRACE, "capture", "--recording", env.path("nope"), "-o", env.path("u.zst")])
    check(r.returncode == 1 and "nope" in r.stderr and len(r.stderr.splitlines()) == 1,
          "missing directory: %r" % r.stderr)
    os.mkdir(env.path("empty"))
    r = run([MTRACE, "capture", "--recording", env.path("empty"), "-o", env.path("u.zst")])
    check(r.returncode == 1 and "no .bin files" in r.stderr, "empty directory: %r" % r.stderr)
    check(not os.path.exists(env.path("u.zst")), "a trace was left by a refused import")
    r = run([MTRACE, "capture", "--recording", env.path("rec"), "-o", env.path("b.zst")])
    check(r.returncode == 1 and "--force" in r.stderr, "existing output: %r" % r.stderr)
    print("ok: usage errors exit 2, missing input exit 1")


def main():
    with Env() as env:
        trace = pymongo_leg(env)
        compressed_leg(env)
        damage_leg(env, trace)
        usage_leg(env)


if __name__ == "__main__":
    main()
