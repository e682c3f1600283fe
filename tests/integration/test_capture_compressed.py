"""test_capture_compressed.py -- OP_COMPRESSED through `mtrace capture`.

libmongoc (tests/helpers/mongoc_workload) with compressors=zlib, zstd and
snappy in turn, through the proxy, to tests/helpers/fixedsrv --compress
(which agrees on the client's compressor and compresses its replies).
Checks: every call answered (find_one returns the fixed document); every
non-handshake message of each connection is recorded as OP_COMPRESSED with
that connection's compressor *and* decompressed (dump shows the command and
body from the plain form), none malformed; recorded bytes = forwarded.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import TOP, Env, check, msgs, summary_bytes  # noqa: E402

BUILD = os.environ.get("BUILD", "build/release")


def helper(name):
    path = os.path.join(TOP, BUILD, "helpers", name)
    check(os.access(path, os.X_OK), "%s not built (make helpers)" % path)
    return path


def main():
    with Env() as env:
        srv = env.spawn([helper("fixedsrv"), "--compress"], stdout=subprocess.PIPE, text=True)
        line = srv.stdout.readline()
        check(line.startswith("READY "), "fixedsrv did not start: %r" % line)
        cap = env.start_capture(int(line.split()[1]))
        order = ["zlib", "zstd", "snappy"]
        for comp in order:
            r = subprocess.run([helper("mongoc_workload"),
                                "mongodb://127.0.0.1:%d/?compressors=%s" % (cap.port, comp)],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, "mongoc_workload %s: exit %d %s" % (comp, r.returncode, r.stderr))
            check('"call": "find_one", "ok": { "0" : { "_id" : "test-doc-1", "value" : 42 } }'
                  in r.stdout, "%s: find_one answer wrong:\n%s" % (comp, r.stdout))
        text = cap.stop()
        recs = env.dump(cap.out)
        conns = sorted({m["conn"] for m in msgs(recs)})
        check(len(conns) == 3, "want 3 connections, got %r" % conns)
        for conn, comp in zip(conns, order):
            ms = [m for m in msgs(recs) if m["conn"] == conn]
            packed = [m for m in ms if m["compressed"] is not None]
            plain = [m for m in ms if m["compressed"] is None]
            check(all(m["cmd"].lower() in ("hello", "ismaster") for m in plain if m["dir"] == "c2s"),
                  "%s: uncompressed requests other than the handshake: %r" %
                  (comp, [m["cmd"] for m in plain if m["dir"] == "c2s"]))
            check(len(packed) >= 10, "%s: only %d compressed messages" % (comp, len(packed)))
            for m in packed:
                check(m["compressed"] == comp, "conn %d: compressor %s, want %s" %
                      (conn, m["compressed"], comp))
                check("malformed" not in m["trace_flags"], "%s message not decompressed" % comp)
                check(m["op"] == "OP_MSG" and m.get("body") is not None,
                      "%s message without its plain form: %r" % (comp, m))
            finds = [m for m in packed if m["dir"] == "c2s" and m["cmd"] == "find"]
            check(finds, "%s: no decompressed find request" % comp)
        recorded, forwarded, dropped = summary_bytes(text)
        total = sum(m["len"] for m in msgs(recs))
        check(recorded == forwarded == total and dropped == 0,
              "recorded %d forwarded %d dump %d dropped %d" % (recorded, forwarded, total, dropped))
        print("ok: zlib, zstd and snappy recorded as seen and decompressed")


if __name__ == "__main__":
    main()
