"""test_capture_listen.py -- `--listen` of `mtrace capture` and `mtrace
replay` go through one parser (core/addr.h) and one listener (core/srv.h):

1. the same forms start both: `localhost:0`, `127.0.0.1:0` and, when the
   machine has an IPv6 loopback, `[::1]:0`; each prints the address it
   bound ("listening on IP:PORT", IPv6 in brackets);
2. the same forms are refused by both with exit 2 and a line that names the
   option: no port, a port out of range, a name that does not resolve;
3. real drivers by name: `mtrace replay --listen localhost:P1` of
   traces/sample.zst behind `mtrace capture --listen localhost:P2 --target
   localhost:P1`; pymongo and the Node.js driver connect to
   mongodb://localhost:P2 and get the recorded document; the capture's trace
   holds their finds, and a second capture on the same port is refused
   (the listener's probe).
"""
import os
import re
import socket
import subprocess
import sys
import time

from capture_lib import MTRACE, TOP, Env, check, fail, free_port

SAMPLE = os.path.join(TOP, "traces", "sample.zst")
DOC = {"_id": "test-doc-1", "value": 42}


def has_ipv6():
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


def wait_bound(p, log, what):
    """The address of the 'listening on ADDR' line of p's log."""
    deadline = time.time() + 10
    while time.time() < deadline:
        with open(log) as f:
            m = re.search(r"listening on (\S+:\d+)", f.read())
        if m:
            return m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.02)
    with open(log) as f:
        fail("%s did not start (exit %s):\n%s" % (what, p.poll(), f.read()))


def start(env, kind, listen, target=None, out=None):
    log = env.path("%s.%d.log" % (kind, len(env.procs)))
    if kind == "capture":
        argv = [MTRACE, "capture", "--listen", listen, "--target",
                target or "127.0.0.1:%d" % free_port(),
                "-o", out or env.path("c.%d.zst" % len(env.procs))]
    else:
        argv = [MTRACE, "replay", "--listen", listen, "--threads", "2", SAMPLE]
    with open(log, "w") as errf:
        p = env.spawn(argv, stdout=subprocess.DEVNULL, stderr=errf)
    return p, wait_bound(p, log, kind), log


def stop(p, log, what):
    p.send_signal(2)
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        fail("%s did not stop on SIGINT" % what)
    with open(log) as f:
        text = f.read()
    check(rc == 0, "%s exited %d:\n%s" % (what, rc, text))
    return text


def same_forms(env):
    forms = [("localhost:0", r"127\.0\.0\.1:\d+|\[::1\]:\d+"),
             ("127.0.0.1:0", r"127\.0\.0\.1:\d+")]
    if has_ipv6():
        forms.append(("[::1]:0", r"\[::1\]:\d+"))
    else:
        print("SKIP [::1] form: no IPv6 loopback on this machine")
    for listen, want in forms:
        for kind in ("capture", "replay"):
            p, bound, log = start(env, kind, listen)
            check(re.fullmatch(want, bound) is not None,
                  "%s --listen %s: bound %s, want %s" % (kind, listen, bound, want))
            check(not bound.endswith(":0"), "%s --listen %s: port 0 not replaced"
                  % (kind, listen))
            stop(p, log, "%s --listen %s" % (kind, listen))
            print("ok: %s --listen %s -> listening on %s" % (kind, listen, bound))


def same_refusals(env):
    for bad, why in (("localhost", "HOST:PORT"), ("localhost:65536", "HOST:PORT"),
                     ("no-such-host.invalid:1", "no-such-host.invalid")):
        for kind in ("capture", "replay"):
            argv = [MTRACE, kind, "--listen", bad]
            argv += ["-o", env.path("never.zst")] if kind == "capture" else [SAMPLE]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            check(r.returncode == 2, "%s --listen %s: exit %d (want 2): %s"
                  % (kind, bad, r.returncode, r.stderr))
            check("--listen" in r.stderr and why in r.stderr,
                  "%s --listen %s: the message lacks '--listen' or '%s': %r"
                  % (kind, bad, why, r.stderr))
            check(len(r.stderr.strip().splitlines()) == 1,
                  "%s --listen %s: more than one line: %r" % (kind, bad, r.stderr))
    check(not os.path.exists(env.path("never.zst")), "a refused capture made a trace")
    print("ok: the same bad --listen forms refused by both (exit 2)")


NODE_CLIENT = r"""
const { MongoClient } = require(process.argv[2] + "/mongodb");
(async () => {
  const c = new MongoClient(process.argv[1], { serverSelectionTimeoutMS: 5000 });
  await c.connect();
  const doc = await c.db("benchmark_db").collection("test_col")
                     .findOne({ _id: "test-doc-1" });
  console.log(JSON.stringify(doc));
  await c.close();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def drivers_by_name(env):
    import pymongo

    rport, cport = free_port(), free_port()
    rp, rbound, rlog = start(env, "replay", "localhost:%d" % rport)
    out = env.path("localhost.zst")
    cp, cbound, clog = start(env, "capture", "localhost:%d" % cport,
                             target="localhost:%d" % rport, out=out)
    check(cbound.endswith(":%d" % cport) and rbound.endswith(":%d" % rport),
          "bound %s / %s, want ports %d / %d" % (cbound, rbound, cport, rport))
    url = "mongodb://localhost:%d/" % cport
    c = pymongo.MongoClient(url, serverSelectionTimeoutMS=5000)
    for _ in range(5):
        got = c.benchmark_db.test_col.find_one({"_id": "test-doc-1"})
        check(got == DOC, "pymongo through capture -> replay: %r" % got)
    c.close()
    node = subprocess.run(["node", "-e", NODE_CLIENT, url,
                           os.path.join(TOP, "tests/integration/node_modules")],
                          capture_output=True, text=True, timeout=60)
    check(node.returncode == 0, "node driver failed: %s" % node.stderr)
    check('"value":42' in node.stdout, "node driver got %r" % node.stdout)
    # the port is taken: a second proxy there is refused by the probe bind
    r = subprocess.run([MTRACE, "capture", "--listen", "localhost:%d" % cport,
                        "--target", "localhost:%d" % rport, "-o",
                        env.path("second.zst")],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and "cannot listen on" in r.stderr,
          "second capture on a used port: exit %d, %r" % (r.returncode, r.stderr))
    summary = stop(cp, clog, "capture")
    stop(rp, rlog, "replay")
    check(re.search(r"connections: [1-9]\d* accepted", summary) is not None,
          "capture summary: %s" % summary)
    finds = [rec for rec in env.dump(out)
             if rec.get("type") == "msg" and rec.get("dir") == "c2s"
             and "find" in str(rec.get("cmd", rec.get("command", "")))]
    check(len(finds) >= 6, "the trace holds %d finds (want 5 pymongo + 1 node):"
          " %r" % (len(finds), env.dump(out)[:5]))
    print("ok: pymongo x5 and the Node.js driver by name through capture "
          "(%s) -> replay (%s); %d finds recorded" % (cbound, rbound, len(finds)))


def main():
    with Env() as env:
        same_forms(env)
        same_refusals(env)
        drivers_by_name(env)
    print("ok")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
