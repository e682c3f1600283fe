"""test_capture_node.py -- the Node.js driver (mongodb@6) through
`mtrace capture` to MockupDB (without topologyVersion: MockupDB 1.8 rejects
the streaming monitor's exhaustAllowed).  Same checks as the pymongo test:
every call answered correctly (capture_node_client.js), exactly one request
and one reply per command the driver started, handshakes answered,
recorded bytes = forwarded bytes = the dump's total, nothing dropped.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib import TOP, Env, check, check_pairs, msgs, summary_bytes  # noqa: E402

SEQ, PAR = 30, 40


def main():
    node_modules = os.path.join(TOP, "tests/integration/node_modules/mongodb")
    check(os.path.isdir(node_modules),
          "tests/integration/node_modules/mongodb missing: run tools/deps.sh --check-or-install")
    with Env() as env:
        mock = env.start_mock()
        cap = env.start_capture(mock)
        uri = "mongodb://127.0.0.1:%d/?directConnection=true" % cap.port
        r = subprocess.run(["node", os.path.join(TOP, "tests/integration/capture_node_client.js"),
                            uri, str(SEQ), str(PAR)], capture_output=True, text=True,
                           timeout=120)
        out = r.stdout.strip().splitlines()
        check(r.returncode == 0 and out, "node client failed (%d): %s %s" %
              (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
        res = json.loads(out[-1])
        check(res["ok"], "node client: %s" % res.get("error"))
        text = cap.stop()

        recs = env.dump(cap.out)
        names = res["names"]
        check(names.get("find", 0) == SEQ + PAR + 1, "driver find count %r" % names)
        ids = set(res["ids"])
        check(len(ids) == len(res["ids"]), "driver reused a request id")
        check_pairs(recs, res["ids"], "node")
        others = [r for r in msgs(recs, "c2s") if r["request_id"] not in ids]
        for r in others:
            check(r["cmd"].lower() in ("ismaster", "hello"),
                  "request %s not started by the driver" % r["cmd"])
        check_pairs(recs, [r["request_id"] for r in others], "handshake/monitor")
        check(len(msgs(recs)) == 2 * (len(ids) + len(others)),
              "%d messages for %d exchanges" % (len(msgs(recs)), len(ids) + len(others)))
        recorded, forwarded, dropped = summary_bytes(text)
        total = sum(m["len"] for m in msgs(recs))
        check(recorded == forwarded == total,
              "recorded %d, forwarded %d, dump total %d" % (recorded, forwarded, total))
        check(dropped == 0, "dropped %d" % dropped)
        print("ok: %d driver commands, %d handshakes/heartbeats, %d messages"
              % (len(ids), len(others), len(msgs(recs))))


if __name__ == "__main__":
    main()
