#!/usr/bin/python3
"""seed000_tables.py [MTRACE] -- docs/sim-model.md's two seed 000 tables
(section 7), as markdown on stdout: the prediction of every row of
sim/scenarios/seed000.scn beside its measurement, and the sensitivity of
the threaded rows' predicted mean to each assumed value (every other value
as in seed000.scn; `mtrace sim --scenario seed000.scn --set KEY=V`).

MTRACE defaults to ./mtrace beside sim/.  Deterministic: the same binary
gives the same tables.
"""
import json
import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCN = os.path.join(TOP, "sim", "scenarios", "seed000.scn")
THREADED = ("gil-direct-threaded", "gil-proxy-threaded", "ft-direct-threaded",
            "ft-proxy-threaded")
# (key, values): each assumption of seed000.scn, a lower and a higher value
SENS = (("cores", ("1", "4", "8")), ("sys_us", ("1", "5")), ("wake_us", ("2", "20")),
        ("ctx_cpu_us", ("2", "10")), ("gil_handoff_us", ("8", "100")),
        ("lock_block_cpu_us", ("0", "40")), ("lock_sections", ("0", "5")),
        ("lock_hold_us", ("1", "10")), ("xcore_frac", ("0", "0.44", "0.82")),
        ("server_us", ("30", "120")))
# rows whose scenario sets the key itself (--set does not apply there)
OWN = {"server_us": ("gil-proxy-threaded", "ft-proxy-threaded")}


def run(mtrace, sets=()):
    argv = [mtrace, "sim", "--scenario", SCN, "--json"]
    for kv in sets:
        argv += ["--set", kv]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("seed000_tables: %s: exit %d: %s" % (" ".join(argv), r.returncode,
                                                              r.stderr.strip()[-300:]))
    return {o["scenario"]: o for o in map(json.loads, r.stdout.splitlines())
            if o.get("model") == "contention"}


def main():
    mtrace = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "mtrace")
    base = run(mtrace)
    print("| scenario | measured mean ms | predicted mean ms [range] | error | measured "
          "stdev% | predicted stdev% [range] | p99 ms | binds | util gil/cores/lock |")
    print("|" + "---|" * 9)
    for name, o in base.items():
        m = o["measured_mean_ms"]
        print("| %s | %.3f | %.3f [%.3f-%.3f] | %+.0f %% | %.1f | %.1f [%.1f-%.1f] | %.3f | "
              "%s | %.2f/%.2f/%.2f |" % (
                  name, m, o["mean_ms"], o["mean_lo_ms"], o["mean_hi_ms"],
                  100 * (o["mean_ms"] / m - 1), o["measured_stdev_pct"], o["stdev_pct"],
                  o["stdev_pct_lo"], o["stdev_pct_hi"], o["p99_ms"], o["binding"],
                  o["util"]["gil"], o["util"]["cores"], o["util"]["lock"]))
    print()
    print("| assumption | value | " + " | ".join(t.replace("-threaded", "") for t in THREADED)
          + " |")
    print("|" + "---|" * (2 + len(THREADED)))
    for key, vals in SENS:
        for v in vals:
            alt = run(mtrace, ["%s=%s" % (key, v)])
            cells = []
            for t in THREADED:
                if t in OWN.get(key, ()):
                    cells.append("(own value)")
                    continue
                a, b = alt[t]["mean_ms"], base[t]["mean_ms"]
                cells.append("%.3f (%+.0f %%)" % (a, 100 * (a / b - 1)))
            print("| %s | %s | %s |" % (key, v, " | ".join(cells)))


if __name__ == "__main__":
    main()
