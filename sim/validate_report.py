#!/usr/bin/python3
"""validate_report.py OUTDIR THREADS -- second half of sim/validate.sh.

Reads OUTDIR/meas{0,1}.jsonl (validate_bench.py rows, several repetitions),
OUTDIR/host.txt (mtrace calibrate) and the sniffed sequential traces
OUTDIR/seq{0,1}.zst; writes OUTDIR/validate.scn (calibrated from the
sequential rows only), runs mtrace sim on it and on the seed scenarios, and
replaces the text between <!-- validation:begin --> and <!-- validation:end
--> in docs/sim-model.md.  Inputs and outputs are copied to docs/sim-validation/.
With VALIDATE_NO_DOC=1 in the environment it only prints the tables (a quick
look on a busy machine that should not replace the documented run).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tools"))
import seqcal  # noqa: E402  (the calibration lines tools/whatif.py writes too)
MTRACE = os.path.join(TOP, "mtrace")
DOC = os.path.join(TOP, "docs", "sim-model.md")
KEEP = os.path.join(TOP, "docs", "sim-validation")


# VALIDATE_SIM_SET="k=v k=v": extra settings for every mtrace sim run (a
# before/after on kept measurements: VALIDATE_NO_DOC=1 VALIDATE_SIM_SET=...
# sim/validate_report.py OUT 2,4,10,20)
EXTRA = [a for kv in os.environ.get("VALIDATE_SIM_SET", "").split() for a in ("--set", kv)]
NOPRE = ["--set", "send_preempt_p=0", "--set", "send_preempt_busy_p=0"]


def sim_json(args):
    out = subprocess.run([MTRACE, "sim", "--json", "--no-params"] + args + EXTRA, check=True,
                         capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def sniff_ok(path):
    """The sniffed trace exists and mtrace sim finds request/reply pairs in it."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return False
    r = subprocess.run([MTRACE, "sim", "--trace", path, "--no-params"], capture_output=True,
                       text=True)
    return r.returncode == 0


def load_meas(path):
    """A JSON-lines file of runs, grouped by their "mode"."""
    rows = {}
    for line in open(path):
        r = json.loads(line)
        rows.setdefault(r["mode"], []).append(r)
    return rows


def find_p50_us(trace):
    r = subprocess.run([MTRACE, "stats", "--json", trace], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["latency_ms"]["find"]["p50"] * 1000
    except (ValueError, KeyError):
        return None


def srvcpu_lines(out, trace):
    """Round 14: what validate.sh measured around the sniffed delay-0 run
    (srvcpu0.txt: replay's and the sniffer's thread CPU before and after;
    sniffmeas0.json: that run's client), as comments: the request->reply
    samples on the wire already hold replay's wake-up and switch-in
    (`server_wake_in_trace`, off)."""
    try:
        r0, s0, r1, s1 = (int(x) for x in open(os.path.join(out, "srvcpu0.txt")).read().split())
        st = json.loads(subprocess.run([MTRACE, "stats", "--json", trace], capture_output=True,
                                       text=True).stdout)["latency_ms"]["find"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    n = st["count"]
    lines = ["# sniffed delay-0 run (round 14): replay CPU %.1f us and the sniffer's %.1f us per "
             "request (thread run time / %d finds); request->reply on the wire mean %.1f us, p50 "
             "%.1f us: it holds replay's wake-up and switch-in (--set server_wake_in_trace=1 stops "
             "adding wake_us and ctx_cpu_us to it)"
             % ((r1 - r0) / 1e3 / n, (s1 - s0) / 1e3 / n, n, st["mean"] * 1e3, st["p50"] * 1e3)]
    try:
        m = json.loads(open(os.path.join(out, "sniffmeas0.json")).read().splitlines()[0])
        lines.append("# the sniffed run's client: mean %.1f us, CPU %.1f us per call (mean less "
                     "CPU %.1f us)" % (m["mean_ms"] * 1e3, m["cpu_us"], m["mean_ms"] * 1e3 - m["cpu_us"]))
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return lines


def cold_lines(out):
    """py_cold_*: the same client's sequential runs at delay 0 and 1 ms
    (tools/seqcal.py).  VALIDATE_NO_COLD=1 leaves it out."""
    if os.environ.get("VALIDATE_NO_COLD"):
        return []
    s0 = load_meas(os.path.join(out, "meas0.jsonl"))["seq"]
    s1 = load_meas(os.path.join(out, "meas1.jsonl"))["seq"]
    return seqcal.cold_lines(s0, s1, "sequential runs at delay 0 and 1 ms "
                             "(validate_bench.py, means of the repetitions)")


def xcore_replace(lines, note, keep, why):
    """note (a gil_xcore_cpu_us line) takes the place of lines' own
    gil_xcore_cpu_us line, which is kept as a comment saying why; when
    VALIDATE_XCORE is one of keep, note is only added as a comment."""
    if os.environ.get("VALIDATE_XCORE") in keep:
        return lines + ["# %s (not applied: VALIDATE_XCORE=%s)" %
                        (note, os.environ["VALIDATE_XCORE"])]
    return ["# %s (replaced: %s)" % (l, why) if l.startswith("gil_xcore_cpu_us ") else l
            for l in lines] + [note]


def xcore_poll_lines(seq0, lines):
    """Round 12: validate_bench.py --xcore-ab's figure with a PM QoS request
    of 0 held: the working set's move without the halted vCPU's wake-up,
    which the alternating phase pays more often (~26 us of ~73 on the
    quiet machine, docs/sim-history.md round 12).  It takes the place of
    the halting figure (kept as a comment); VALIDATE_XCORE=halt keeps the
    halting figure instead (the comment then names the polling one).
    lines unchanged when not measured (older data sets, or someone else
    held 0 already)."""
    rows = [r for r in seq0 if "xcore_poll_cpu_us" in r and r.get("pmqos_before_us") != 0]
    if not rows:
        return lines
    poll = max(0.0, statistics.mean(r["xcore_poll_cpu_us"] for r in rows))
    halt = statistics.mean(r["xcore_cpu_us"] for r in rows)
    note = ("gil_xcore_cpu_us = %.3f [calibrated] the delay-0 sequential run with a PM QoS "
            "request of 0 held (validate_bench.py --xcore-ab, mean of %d repetitions; "
            "halting %.1f, halting share %.1f us)" % (poll, len(rows), halt, halt - poll))
    return xcore_replace(lines, note, ("halt",), "round 12, VALIDATE_XCORE=halt keeps it")


def xpair_lines(seq0, lines):
    """Round 15: validate_bench.py --xpair's figure, the working set's move
    between two threads on two cores (cross minus same, one call in flight)
    with a PM QoS request of 0 held, takes the place of round 12's one
    thread alternating (kept as a comment): the model's home cores charge
    it at hand-overs between threads, never a thread that moves.
    VALIDATE_XCORE=poll or halt keeps round 12's or the halting figure.
    lines unchanged when not measured."""
    rows = [r for r in seq0 if "xpair_poll_cpu_us" in r and r.get("pmqos_before_us") != 0]
    if not rows:
        return lines
    poll = max(0.0, statistics.mean(r["xpair_poll_cpu_us"] for r in rows))
    note = ("gil_xcore_cpu_us = %.3f [calibrated] the delay-0 sequential client as two threads "
            "in strict alternation, on two cores minus on one, PM QoS request of 0 held "
            "(validate_bench.py --xpair, mean of %d repetitions; halting %.1f; against one "
            "thread on one core %.1f polling, %.1f halting)" % (
                poll, len(rows), statistics.mean(r["xpair_cpu_us"] for r in rows),
                statistics.mean(r["xpair_poll_one_us"] for r in rows),
                statistics.mean(r["xpair_one_us"] for r in rows)))
    return xcore_replace(lines, note, ("poll", "halt"), "round 15, VALIDATE_XCORE=poll keeps it")


def scenario(out, threads, use_cpu=True):
    lines = ["# generated by sim/validate.sh: this machine, mtrace replay as the server",
             "releases = 3 [constant] pymongo 3.11 (Debian): sendall, recv_into(header), recv_into(body)"]
    tr0 = os.path.join(out, "seq0.zst")
    p50 = find_p50_us(tr0) if sniff_ok(tr0) else None
    if p50:
        lines.append("server_cpu_us = %.2f [trace] p50 of find request->reply sniffed at delay 0: "
                     "replay's own work; the rest of each sample (delay, timer, hiccups) waits" % p50)
        lines += srvcpu_lines(out, tr0)
    else:
        lines.append("server_cpu_frac = 0.7 [assumption] no sniffed trace")
    seq0 = load_meas(os.path.join(out, "meas0.jsonl"))["seq"]
    lines += seqcal.xcore_line(seq0, "the delay-0 sequential run (one thread, mean of "
                               "the repetitions)")
    lines = xcore_poll_lines(seq0, lines)
    lines = xpair_lines(seq0, lines)
    lines += cold_lines(out)
    meas = {}
    for d in (0, 1):
        m = load_meas(os.path.join(out, "meas%d.jsonl" % d))
        meas[d] = m
        seq = m["seq"]
        # the server's request->reply times at this delay (replay's achieved
        # delay included), sniffed during a sequential run
        tr = os.path.join(out, "seq%d.zst" % d)
        delay_lines = [] if sniff_ok(tr) or not d else \
            ["proxy = deadline", "proxy_inline = 1", "proxy_delay_ms = 1"]
        lines.append("")
        lines.append("[d%d-seq]" % d)
        lines += ["threads = 1", "calls = 1000", "exclude_first = 1"] + delay_lines
        if sniff_ok(tr):
            lines.append("trace = %s" % tr)
        if d == 0:  # the client's Python CPU does not depend on the delay:
            # calibrate from the delay-0 sequential row, predict the others
            # py_cv from the CPU's own variation, not from the latency
            # stdev% (stalls off the CPU are in that), unless asked
            drop = set() if use_cpu else {"cpu_us", "cpu_cv"}
            if os.environ.get("VALIDATE_CV_FROM_STDEV"):
                drop.add("cpu_cv")
            lines += seqcal.cpu_lines([{k: v for k, v in r.items() if k not in drop}
                                       for r in seq])
        else:
            lines.append("calibrate_from = d0-seq")
        lines.append("measured.mean_ms = %.5f" % statistics.mean(r["mean_ms"] for r in seq))
        lines.append("measured.stdev_pct = %.3f" % statistics.mean(r["stdev_pct"] for r in seq))
        prev = 1
        for t in threads:
            rows = m["t%d" % t]
            lines += ["", "[d%d-t%d]" % (d, t), "threads = %d" % t, "calls = 100",
                      "pool_initial = %d" % prev, "calibrate_from = d0-seq"]
            lines += delay_lines
            if sniff_ok(tr):
                lines.append("trace = %s" % tr)
            lines.append("measured.mean_ms = %.5f" % statistics.mean(r["mean_ms"] for r in rows))
            lines.append("measured.stdev_pct = %.3f" % statistics.mean(r["stdev_pct"] for r in rows))
            prev = max(prev, t)
    path = os.path.join(out, "validate.scn" if use_cpu else "validate-mean.scn")
    open(path, "w").write("\n".join(lines) + "\n")
    return path, meas


# VALIDATE_SYNTH_CPU=0: table 1b calibrated as before round 15 (Python CPU
# from the 1-thread row's mean less the modelled sleep) even when the
# measurements have the thread CPU
SYNTH_CPU = os.environ.get("VALIDATE_SYNTH_CPU", "1") != "0"


def synth_rows(out, host):
    """Synthetic GIL workload: calibrated from its 1-thread row, the sleep
    (measured alone) is the off-CPU wait; predicts 2, 4, 10 threads."""
    path = os.path.join(out, "synth.jsonl")
    if not os.path.exists(path):
        return []
    m = load_meas(path)
    sleep_us = statistics.mean(r["mean_ms"] for r in m["sleep"]) * 1000
    t1 = m["t1"]
    shape = ["--host", host, "--set", "releases=2", "--set", "py_pre_frac=1",
             "--set", "py_post_frac=0", "--set", "server_cpu_frac=0",
             "--set", "server_shares_cores=0", "--set", "net_us=0",
             "--set", "calls=200", "--set", "exclude_first=1", "--set", "pool_initial=100"]
    # time.sleep measured alone already contains its own wake-up; the model's
    # path around the off-CPU wait adds wake-ups and syscalls of its own
    # (send, the waiter's and the client's wake-up and context-switch CPU):
    # measure that path with no Python and no wait and take it out, so the
    # wait is not counted twice (it was before 2026-11-30: the calibrated
    # Python CPU came out ~40 % too small)
    path = sim_json(shape + ["--set", "threads=1", "--set", "py_call_us=0", "--set", "py_cv=0",
                             "--set", "server_us=0", "--set", "wake_cv=0"])[0]["mean_ms"] * 1000
    wait_us = max(sleep_us - path, 0.0)
    base = shape + ["--seq-mean-ms", "%.5f" % statistics.mean(r["mean_ms"] for r in t1),
                    "--seq-stdev-pct", "%.3f" % statistics.mean(r["stdev_pct"] for r in t1),
                    "--seq-calls", "200", "--set", "server_us=%.2f" % wait_us]
    # round 15: with the 1-thread row's thread CPU per iteration (cpu_us,
    # validate_synth.py since round 15) the Python CPU comes from it, as in
    # table 1, not from the mean less the modelled sleep; that split moved
    # with the host facts' wake-up CPU (30 us of path at 02:47, 88 at 20:28)
    # and the 4-10-thread rows with it (docs/sim-history.md round 15)
    cpu_us = [r["cpu_us"] for r in t1 if "cpu_us" in r]
    from_cpu = SYNTH_CPU and cpu_us and len(cpu_us) == len(t1)
    if from_cpu:
        base += ["--seq-cpu-us", "%.3f" % statistics.mean(cpu_us)]
    lines = ["| threads | measured mean ms (reps min-max) | predicted | err | measured stdev% | predicted | diff (pts) | |",
             "|---|---|---|---|---|---|---|---|"]
    for mode in sorted((k for k in m if k.startswith("t")), key=lambda k: int(k[1:])):
        rows = m[mode]
        try:
            p = sim_json(base + ["--set", "threads=%s" % mode[1:]])[0]
        except subprocess.CalledProcessError as e:
            # e.g. the host facts' wake-ups exceed the measured 1-thread
            # loop: the Python CPU cannot be solved; say so, go on
            lines.append("| %s | calibration failed: mtrace sim exit %d (%s) |||||||" % (
                mode[1:], e.returncode, (e.stderr or "").strip().splitlines()[-1:] or ""))
            continue
        mm = statistics.mean(r["mean_ms"] for r in rows)
        ms = statistics.mean(r["stdev_pct"] for r in rows)
        e, v = verdict(p["mean_ms"], mm, p["stdev_pct"], ms)
        lines.append("| %s | %.3f (%.3f-%.3f) | %.3f | %+.1f%% | %.1f | %.1f | %+.1f | %s |" % (
            mode[1:], mm, min(r["mean_ms"] for r in rows), max(r["mean_ms"] for r in rows),
            p["mean_ms"], e, ms, p["stdev_pct"], p["stdev_pct"] - ms,
            "fitted" if mode == "t1" and not from_cpu else v))
    return ["", "### 1b. Synthetic GIL workload on this machine (no driver, no server)", "",
            "sim/validate_synth.py: each thread loops (pure-Python work of ~0.2 ms, then "
            "`time.sleep(0.0002)`, which releases the GIL).  Model: `releases = 2`, all Python "
            "before the release, the sleep as an off-CPU wait of %.0f us (time.sleep(0.0002) "
            "measured alone, %.0f us, less the %.0f us of wake-ups and syscalls the model's "
            "path adds around it); Python CPU calibrated from the 1-thread row%s; same host facts.  "
            "Not independent of `gil_switch_stretch`: mtrace calibrate measures that term with "
            "the same kind of loop (3 threads, time.sleep(0.0003))." % (
                wait_us, sleep_us, path,
                " (its thread CPU per iteration, %.0f us, since round 15: the mean is then "
                "predicted)" % statistics.mean(cpu_us)
                if from_cpu else " (its mean)"),
            ""] + lines


def handover_rows(out, host):
    """Table 1d: sim/validate_handover.py (a pymongo-shaped loop on
    socketpairs to an echo process) against the model, calibrated from its
    1-thread row, with the waiters' block/wake CPU charged to the next taker
    (gil_wake_cpu_waiter = 0) and to the futile waiter (= 1)."""
    path = os.path.join(out, "handover.jsonl")
    if not os.path.exists(path):
        return []
    m = load_meas(path)
    t1 = m["t1"]
    base = ["--host", host, "--set", "releases=3", "--set", "py_pre_frac=0.5",
            "--set", "py_post_frac=0.4", "--set", "server_us=20", "--set", "server_cv=0.3",
            "--set", "server_cpu_frac=1", "--set", "calls=300", "--set", "exclude_first=5",
            "--seq-mean-ms", "%.5f" % statistics.mean(r["mean_ms"] for r in t1),
            "--seq-stdev-pct", "%.3f" % statistics.mean(r["stdev_pct"] for r in t1),
            "--seq-calls", "300"]
    lines = ["| threads | measured mean ms (min-max) | pred. (0) | err | pred. (1) | err | "
             "measured stdev% | (0) | (1) | measured p50 / p99 ms | (0) | (1) | "
             "measured hand-overs per call: send + recv hdr + recv body | (0) | (1) | "
             "measured vcsw per call | pred. blocks (0) | (1) | measured ivcsw per call | "
             "pred. send preemptions per call |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode in sorted(m, key=lambda k: int(k[1:])):
        rows, n = m[mode], mode[1:]
        try:
            p = [sim_json(base + ["--set", "threads=%s" % n, "--set", "pool_initial=%s" % n,
                                  "--set", "gil_wake_cpu_waiter=%d" % w])[0] for w in (0, 1)]
        except subprocess.CalledProcessError as e:
            lines.append("| %s | calibration failed: mtrace sim exit %d |" % (n, e.returncode))
            continue
        avg = lambda k: statistics.mean(r[k] for r in rows)
        mm = avg("mean_ms")
        # predicted hand-overs after each release (send, recv header,
        # recv body), as validate_handover.py counts them, and the GIL
        # switches per call
        sw = ["%s (switches %.2f)" % (" + ".join("%.2f" % x for x in q.get("handovers_per_release", [])),
                                      q["gil_switches"] / (q["threads"] * q["calls"])) for q in p]
        lines.append("| %s | %.3f (%.3f-%.3f) | %.3f | %+.0f%% | %.3f | %+.0f%% | %.0f | %.0f | %.0f | "
                     "%.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %.2f + %.2f + %.2f = %.2f | %s | %s | "
                     "%.2f | %.2f | %.2f | %.2f | %.2f |" % (
                         n, mm, min(r["mean_ms"] for r in rows), max(r["mean_ms"] for r in rows),
                         p[0]["mean_ms"], 100 * (p[0]["mean_ms"] / mm - 1),
                         p[1]["mean_ms"], 100 * (p[1]["mean_ms"] / mm - 1),
                         avg("stdev_pct"), p[0]["stdev_pct"], p[1]["stdev_pct"],
                         avg("p50_ms"), avg("p99_ms"), p[0]["p50_ms"], p[0]["p99_ms"],
                         p[1]["p50_ms"], p[1]["p99_ms"], avg("handover_send"),
                         avg("handover_recv_hdr"), avg("handover_recv_body"),
                         avg("handovers_per_call"), sw[0], sw[1], avg("vcsw"),
                         p[0]["blocks_per_call"], p[1]["blocks_per_call"], avg("ivcsw"),
                         p[0].get("send_preempts_per_call", float("nan"))))
    return ["", "### 1d. Who takes the GIL at each release: a pymongo-shaped loop (no driver)", "",
            "sim/validate_handover.py: each thread loops over ~75 us of Python, `sendall` of 100 "
            "bytes, ~7.5 us, `recv(16)`, ~7.5 us, `recv(84)`, ~60 us, on its own socketpair to an "
            "echo process; the order of the Python segments gives, per release, the share after "
            "which another thread ran first (a hand-over).  Model: `releases = 3`, the same "
            "Python split, the echo as a 20 us server (assumption: a Python epoll loop's recv + "
            "sendall), Python CPU calibrated from the 1-thread row; same host facts; (0) the GIL "
            "waiters' block/wake CPU paid by the next taker (`gil_wake_cpu_waiter = 0`), (1) by "
            "the futile waiter on its own core (the default since round 4, docs/sim-history.md).  Predicted hand-overs per call "
            "are the hand-overs after each release (send + recv header + recv body) and the GIL switches per call; predicted blocks per call count every time a client "
            "thread blocks (GIL waits, replies), to compare with the measured voluntary context "
            "switches.  A diagnostic of the mechanism, not used to set anything.", ""] + lines


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def dist_rows(out, pred):
    """Table 1e: the per-call latency distribution of repetition 1
    (validate_bench.py --dump: OUT/lat{0,1}.txt) against the model's, at
    p10 / p50 / p90 / p99: where the model's spread differs, not only by
    how much its stdev% does."""
    lat = {}
    for d in (0, 1):
        path = os.path.join(out, "lat%d.txt" % d)
        if not os.path.exists(path):
            continue
        for line in open(path):
            k, x = line.split()
            lat.setdefault(k, []).append(float(x))
    if not lat:
        return []
    byname = {p["scenario"]: p for p in pred}
    rows = ["| row | measured p10 / p50 / p90 / p99 ms | predicted | measured stdev% | predicted |",
            "|---|---|---|---|---|"]
    for k in sorted(lat, key=lambda k: (k[:2], int(k[4:]) if k[3:4] == "t" else 0)):
        v, p = lat[k], byname.get(k)
        if p is None or len(v) < 2:
            continue
        m = statistics.mean(v)
        rows.append("| %s | %.3f / %.3f / %.3f / %.3f | %.3f / %.3f / %.3f / %.3f | %.1f | %.1f |" % (
            k, pct(v, .1), pct(v, .5), pct(v, .9), pct(v, .99), p["p10_ms"], p["p50_ms"],
            p["p90_ms"], p["p99_ms"], 100 * statistics.stdev(v) / m, p["stdev_pct"]))
    return ["", "### 1e. Latency distribution of repetition 1, measured and predicted", "",
            "Per-call latencies of the first repetition (validate_bench.py --dump) against the "
            "model's, same rows as table 1: the spread's shape, not only its stdev%.", ""] + rows


def verdict(pm, mm, ps, ms):
    e = 100 * (pm - mm) / mm
    ok = abs(e) <= 10 and abs(ps - ms) <= 10
    return e, ("ok" if ok else "MISS")


def cpu_cell(rows):
    """Measured client CPU per call (us) and voluntary context switches per
    call of the calling thread, means over the repetitions (diagnostic)."""
    if not all("cpu_us" in r for r in rows):
        return "n/a"
    c = "%.0f" % statistics.mean(r["cpu_us"] for r in rows)
    if all("vcsw" in r for r in rows):
        c += " / %.2f" % statistics.mean(r["vcsw"] for r in rows)
    if all("ivcsw" in r for r in rows):
        c += " / %.2f" % statistics.mean(r["ivcsw"] for r in rows)
    return c


def table_validation(pred, meas, threads, cpu_cal=False):
    out = ["| delay | row | measured mean ms (reps min-max) | predicted | err | measured stdev% (min-max) | predicted | diff (pts) | pred p50 / p99 ms | meas. CPU us / vcsw / ivcsw per call | pred. CPU us / blocks / send preemptions per call | |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    byname = {p["scenario"]: p for p in pred}
    for d in (0, 1):
        for mode in ["seq"] + ["t%d" % t for t in threads]:
            rows = meas[d][mode]
            p = byname["d%d-%s" % (d, mode)]
            mm = statistics.mean(r["mean_ms"] for r in rows)
            ms = statistics.mean(r["stdev_pct"] for r in rows)
            e, v = verdict(p["mean_ms"], mm, p["stdev_pct"], ms)
            if mode == "seq" and d == 0 and not cpu_cal:
                v = "fitted"
            out.append("| %d ms | %s | %.3f (%.3f-%.3f) | %.3f | %+.1f%% | %.1f (%.1f-%.1f) | %.1f | %+.1f | %.3f / %.3f | %s | %.0f / %.2f / %.2f | %s |" % (
                d, "sequential" if mode == "seq" else "%s threads x 100" % mode[1:], mm,
                min(r["mean_ms"] for r in rows), max(r["mean_ms"] for r in rows), p["mean_ms"], e,
                ms, min(r["stdev_pct"] for r in rows), max(r["stdev_pct"] for r in rows),
                p["stdev_pct"], p["stdev_pct"] - ms, p["p50_ms"], p["p99_ms"], cpu_cell(rows),
                p.get("cpu_per_call_us", float("nan")), p.get("blocks_per_call", float("nan")),
                p.get("send_preempts_per_call", float("nan")), v))
    return out


# Round 16: a 10-20-thread repetition either has pymongo 3.11's
# Topology._lock convoy or not, and its worker threads' voluntary switches
# per call say which (>= 10 or <= 8 in every kept data set's rows: the split
# falls between; docs/sim-model.md "pymongo's Topology._lock convoy").
CONVOY_VCSW = 9.0


def table_convoy(pred, meas, threads):
    """The threaded rows whose repetitions split by the convoy: the model
    (no driver lock) against each side.  [] when no repetition had it or
    the runs did not record voluntary switches."""
    byname = {p["scenario"]: p for p in pred}
    out = []
    for d in (0, 1):
        for mode in ["t%d" % t for t in threads]:
            rows = meas[d][mode]
            if not all("vcsw" in r for r in rows):
                return []
            conv = [r["mean_ms"] for r in rows if r["vcsw"] >= CONVOY_VCSW]
            free = [r["mean_ms"] for r in rows if r["vcsw"] < CONVOY_VCSW]
            if not conv:
                continue
            pm = byname["d%d-%s" % (d, mode)]["mean_ms"]

            def cell(v):
                if not v:
                    return "- | -"
                m = statistics.mean(v)
                return "%.3f (%d) | %+.1f%%" % (m, len(v), 100 * (pm - m) / m)
            out.append("| %d ms | %s threads | %.3f | %s | %s |" % (
                d, mode[1:], pm, cell(free), cell(conv)))
    if not out:
        return []
    return ["", "### 1f. Threaded rows split by pymongo's `Topology._lock` convoy (round 16)", "",
            "A repetition counts as convoyed when its worker threads made at least %.0f voluntary "
            "switches per call (kept data sets: >= 10 with the convoy, <= 8 without).  The model "
            "has no driver lock; its mean against the repetitions on each side, (n) repetitions."
            % CONVOY_VCSW, "",
            "| delay | row | predicted mean ms | measured, no convoy (n) | err | measured, convoy (n) | err |",
            "|---|---|---|---|---|---|---|"] + out


def table_seed000(pred):
    out = ["| row | measured mean ms | predicted | err | measured stdev% | predicted | diff (pts) | pred p50 / p99 ms | |",
           "|---|---|---|---|---|---|---|---|---|"]
    for p in pred:
        mm, ms = p["measured_mean_ms"], p["measured_stdev_pct"]
        e, v = verdict(p["mean_ms"], mm, p["stdev_pct"], ms)
        if p["scenario"].endswith("direct-seq"):
            v = "fitted"
        out.append("| %s | %.3f | %.3f | %+.1f%% | %.1f | %.1f | %+.1f | %.3f / %.3f | %s |" % (
            p["scenario"], mm, p["mean_ms"], e, ms, p["stdev_pct"], p["stdev_pct"] - ms,
            p["p50_ms"], p["p99_ms"], v))
    return out


def table_seed001(pred):
    out = ["| workload | procs | lock | measured total s | predicted | err | wake-ups | futile |",
           "|---|---|---|---|---|---|---|---|"]
    for p in pred:
        mt = p["measured_total_s"]
        out.append("| %s | %d | %s | %.3f | %.3f | %+.0f%% | %d | %d |" % (
            p["scenario"].rsplit("-", 2)[0], p["procs"], "yes" if p["lock"] else "no", mt,
            p["total_s"], 100 * (p["total_s"] - mt) / mt, p["wakeups"], p["futile"]))
    return out


def contended_gap(host):
    """Rounds 1-6's gil_handoff_us: the contended idle gap mtrace calibrate
    prints as a comment since round 7 (None when absent)."""
    for line in open(host):
        if line.startswith("# contended GIL idle gap"):
            return float(line.rsplit(":", 1)[1].split()[0])
    return None


def ablation(host, scn, scn_mean, seed0_path):
    """Before/after on the same measurements: (a) the model before
    2026-11-30 (Python CPU solved from the sequential mean, no take-over
    stretch), (b) + gil_switch_stretch, (c) + Python CPU from the sequential
    run's client CPU (this machine only: seed 000 has no CPU figure), each
    without the GIL waiters' block/wake CPU; (d) the model now: (c), or (b)
    for seed 000, + gil_wake_cpu_us; ... (h) the model now; (h') (h) with
    rounds 1-6's gil_handoff_us, the contended idle gap (host.txt comment;
    seed000.scn's old assumption, 30 us)."""
    out = ["| row | measured mean ms (stdev%) | (a) before | (b) + stretch | (c) + CPU calibration | (d) + gil_wake_cpu_us, paid by the next taker | (e) (d) paid by the futile waiter | (f) (d) + send preemption | (g) (e) + send preemption | (h) (g) + cross-core hand-over CPU | (h') (h) with the contended hand-off (rounds 1-6) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    def cell(p, meas):
        return "%.3f (%+.1f%%; %.1f)" % (p["mean_ms"], 100 * (p["mean_ms"] / meas - 1), p["stdev_pct"])
    runs = [(["--host", host, "--scenario", scn_mean], ["--host", host, "--scenario", scn]),
            (["--scenario", seed0_path], None)]
    gaps = [contended_gap(host), 30.0]
    w0 = ["--set", "gil_wake_cpu_us=0", "--set", "gil_xcore_cpu_us=0"]
    x0 = ["--set", "gil_xcore_cpu_us=0"]
    for (mean_args, cpu_args), gap in zip(runs, gaps):
        a = sim_json(mean_args + w0 + NOPRE + ["--set", "gil_switch_stretch=0"])
        b = sim_json(mean_args + w0 + NOPRE)
        use_c = cpu_args and "calibrate.seq_cpu_us" in open(scn).read()
        c = sim_json(cpu_args + w0 + NOPRE) if use_c else None
        now = cpu_args if use_c else mean_args
        w_0, w_1 = ["--set", "gil_wake_cpu_waiter=0"], ["--set", "gil_wake_cpu_waiter=1"]
        d = sim_json(now + NOPRE + w_0 + x0)
        e = sim_json(now + NOPRE + w_1 + x0)
        f = sim_json(now + w_0 + x0)
        g = sim_json(now + w_1 + x0)
        h = sim_json(now + w_1)
        hp = sim_json(now + w_1 + ["--set", "gil_handoff_us=%g" % gap]) if gap else None
        for i in range(len(a)):
            if a[i]["runtime"] != "gil" or a[i]["scenario"].endswith(("d0-seq", "direct-seq")):
                continue
            m = a[i]["measured_mean_ms"]
            out.append("| %s | %.3f (%.1f) | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                a[i]["scenario"], m, a[i]["measured_stdev_pct"], cell(a[i], m), cell(b[i], m),
                cell(c[i], m) if c else "n/a", cell(d[i], m), cell(e[i], m), cell(f[i], m),
                cell(g[i], m), cell(h[i], m), cell(hp[i], m) if hp else "n/a"))
    return out


def load_line(out):
    """The load the measurements ran under.  validate.sh writes, before
    calibrate ("start") and before each repetition, /proc/loadavg and
    validate_load.py's count of runnable tasks that are not the
    validation's (others=MEAN max=MAX, sampled while none of its processes
    runs).  The 1-min load average alone cannot tell: calibrate, run just
    before the first repetition, leaves it at 8-15 on a quiet machine."""
    path = os.path.join(out, "load.txt")
    if not os.path.exists(path):
        return []
    l1, oth, omax, start = [], [], [], None
    for line in open(path):
        f = line.split()
        if len(f) < 3:
            continue
        o = [float(x.split("=")[1]) for x in f if x.startswith("others=")]
        if f[0] == "start":
            start = (float(f[2]), o[0] if o else None)
            continue
        l1.append(float(f[2]))
        oth += o
        omax += [float(x.split("=")[1]) for x in f if x.startswith("max=")]
    if not l1:
        return []
    text = "Load average (1 min) before each repetition: %.2f-%.2f (mean %.2f) on %s cores" % (
        min(l1), max(l1), statistics.mean(l1), os.cpu_count())
    if start is not None:
        text += " (%.2f before calibrate)" % start[0]
    if len(oth) < len(l1):
        text += ("; it includes validate.sh's own calibration step, run just before the first "
                 "repetition (runnable tasks of other jobs not sampled in this run).")
    elif statistics.mean(oth) < 0.25:
        text += ("; runnable tasks not the validation's, sampled for 1 s before each "
                 "repetition: mean %.2f (max %.0f): nothing else ran, the load average is "
                 "validate.sh's own (calibrate and the earlier repetitions)."
                 % (statistics.mean(oth), max(omax or [0])))
    else:
        text += ("; runnable tasks not the validation's, sampled for 1 s before each "
                 "repetition: mean %.2f (max %.0f): other jobs ran on the machine."
                 % (statistics.mean(oth), max(omax or [0])))
    return ["", text] + pmqos_line(out)


def pmqos_line(out):
    """validate.sh's VALIDATE_PMQOS: the PM QoS request held for the run."""
    path = os.path.join(out, "pmqos.txt")
    if not os.path.exists(path):
        return ["", "PM QoS: no CPU wake-up latency request held (idle vCPUs may halt: "
                "cpuidle's default)."]
    held, cur = open(path).read().split()[:2]
    return ["", "PM QoS: /dev/cpu_dma_latency held at %s us for the whole run (calibrate and "
            "every measurement; the kernel applied %s us): idle vCPUs %s (VALIDATE_PMQOS=%s)."
            % (held, cur, "poll instead of halting" if cur == "0" else "use only idle states "
               "that exit within that bound", held)]


def main():
    out, threads = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    scn, meas = scenario(out, threads)
    scn_mean, _ = scenario(out, threads, use_cpu=False)
    cpu_cal = "calibrate.seq_cpu_us" in open(scn).read()
    host = os.path.join(out, "host.txt")
    pred = sim_json(["--host", host, "--scenario", scn])
    seed0 = sim_json(["--scenario", os.path.join(TOP, "sim/scenarios/seed000.scn")])
    seed1 = sim_json(["--scenario", os.path.join(TOP, "sim/scenarios/seed001.scn")])
    # everything is written to OUT/keep first and copied to docs/ only when
    # the whole report succeeded (a failed run must not leave docs/
    # sim-validation/ out of step with the tables in docs/sim-model.md)
    keep = os.path.join(out, "keep")
    os.makedirs(keep, exist_ok=True)
    for f in ("host.txt", "meas0.jsonl", "meas1.jsonl", "synth.jsonl", "handover.jsonl",
              "load.txt", "pmqos.txt"):
        if os.path.exists(os.path.join(out, f)):
            shutil.copy(os.path.join(out, f), keep)
    txt = open(scn).read().replace(out, "OUT")
    open(os.path.join(keep, "validate.scn"), "w").write(txt)
    params = subprocess.run([MTRACE, "sim", "--host", host, "--scenario", scn, "--only", "d0-t10"],
                            capture_output=True, text=True).stdout.replace(out, "OUT")
    open(os.path.join(keep, "params-d0-t10.txt"), "w").write(params)
    for d in (0, 1):
        lat = os.path.join(out, "lat%d.txt" % d)
        if os.path.exists(lat):
            subprocess.run([MTRACE, "sim", "--host", host, "--scenario", scn, "--only", "d%d-" % d,
                            "--no-params", "--plot", os.path.join(keep, "cdf-delay%d.png" % d),
                            "--measured", lat], capture_output=True)
    sniff = "server service times: sniffed on lo (mtrace capture --iface lo) during one extra sequential run" \
        if sniff_ok(os.path.join(out, "seq0.zst")) else \
        "server service times: sniffing failed; the model's default server_us (assumption) was used"
    body = ["<!-- validation:begin (generated by sim/validate.sh; do not edit) -->", "",
            "### 1. This machine: pymongo 3.11 / CPython 3.11 (GIL) against mtrace replay", "",
            "Host facts (`mtrace calibrate`): see [sim-validation/host.txt](sim-validation/host.txt). "
            + sniff + ".  Means are over %d repetitions; the range is the run-to-run spread." % len(meas[0]["seq"]),
            ("Calibrated from the sequential rows only: the delay-0 row's client CPU per call (time.thread_time around each call) gives the Python CPU, "
             + ("the variation of that CPU over the calls (`calibrate.seq_cpu_cv`) the Python variation (py_cv), so the row's stdev% is predicted too; "
                if "calibrate.seq_cpu_cv" in open(scn).read() else "its stdev% the Python variation; ")
             + "its mean is predicted, like every other row.  "
             + ("The delay-1 sequential row's CPU per call gives the cold-cache charge (`py_cold_cpu_us`: delay-1 minus delay-0 CPU per call; the ramp from each sequential run's mean less its CPU per call): that row's CPU is an input, its mean still a prediction."
                if "py_cold_cpu_us" in open(scn).read() else
                "No cold-cache charge (`py_cold_cpu_us`): the delay-1 rows take the delay-0 CPU per call.")
             if cpu_cal else
             "Calibrated from the delay-0 sequential row only (marked fitted): the client's Python CPU does not depend on the delay, as in seed000.scn; every other row is a prediction."),
            "Target: mean within 10%, stdev% within 10 points.", ""]
    body += table_validation(pred, meas, threads, cpu_cal)
    body += load_line(out)
    body += table_convoy(pred, meas, threads)
    body += dist_rows(out, pred)
    body += synth_rows(out, host)
    body += handover_rows(out, host)
    body += ["", "### 1c. Before / after the 2026-11-30 changes, same measurements", "",
             "Each cell: predicted mean ms (error vs measured; predicted stdev%).  (a) the model as it was: "
             "Python CPU solved from the delay-0 sequential mean, no take-over term; (b) the same plus "
             "`gil_switch_stretch` (measured here by mtrace calibrate; an assumption in seed000.scn); "
             "(c) (b) with the Python CPU taken from the sequential run's client CPU per call "
             "(`calibrate.seq_cpu_us`, validate_bench.py's time.thread_time around each call) instead "
             "of solved from its mean: the d0 sequential row then becomes a prediction too.  Seed 000's "
             "table has no CPU figure, so (c) does not apply to it.  (a)-(c) without, (d) with "
             "`gil_wake_cpu_us` (the GIL waiters' block/wake CPU, measured by mtrace calibrate; an "
             "assumption in seed000.scn); (e) is (d) with that CPU paid by "
             "the woken waiter that finds the GIL taken, on its own core, instead of by the next "
             "taker with the GIL held (`gil_wake_cpu_waiter = 1`, round 3 in sim-history.md).  (a)-(e) without, "
             "(f) and (g) with the wake-up preemption at a send (`send_preempt_p`, "
             "`send_preempt_busy_p`, measured by mtrace calibrate; round 4): (g) was the model "
             "(round 4 made the futile waiter's placement the default, as in the source); (h) is "
             "the model now: (g) plus `gil_xcore_cpu_us`, the CPU a new GIL holder pays when the "
             "previous holder ran on another core (round 5; here calibrated from the sequential "
             "run with alternating cores, validate_bench.py --xcore, with a PM QoS request of 0 held "
             "when the run measured it, --xcore-ab, round 12, or since round 15 from the same "
             "client as two threads alternating calls, on two cores minus on one, when the run "
             "measured it, --xpair; an assumption in seed000.scn).  "
             "Every column on this machine's rows also has round 6's cold-cache charge "
             "(`py_cold_*`, from the two sequential runs) and, from (c) on, py_cv from the "
             "sequential client CPU's cv (`calibrate.seq_cpu_cv`) when the run measured it.  "
             "Every column uses the signalled GIL waiter's latency of round 7 (`gil_handoff_us`: "
             "the cold two-thread hand-off); (h') is (h) with rounds 1-6's figure, the contended "
             "idle gap mtrace calibrate now prints as a comment (seed 000: the old assumption, "
             "30 us): the convoy of sim-history.md rounds 6-7.  Every column also has "
             "`gil_mutex_signal_us` (round 9: drop_gil's signal under gil->mutex) when the "
             "host facts measured it; `VALIDATE_SIM_SET=gil_mutex_signal_us=0` shows the "
             "tables without it.", ""]
    body += ablation(host, scn, scn_mean, os.path.join(TOP, "sim/scenarios/seed000.scn"))
    body += ["", "Latency CDFs, predicted (solid) and measured (dashed, repetition 1): "
             "[delay 0](sim-validation/cdf-delay0.png), [delay 1 ms](sim-validation/cdf-delay1.png).", "",
             "### 2. Seed 000's table (assumed host facts: sim/scenarios/seed000.scn)", ""]
    body += table_seed000(seed0)
    body += ["", "### 2b. Sensitivity of seed 000's threaded rows to assumed host facts (not used to pick them)", "",
             "Each grid point is calibrated again from its own sequential row.", ""]
    for sweep in (["cores=2,4,8"], ["gil_handoff_us=7,20,40"], ["wake_us=5,20,50"],
                  ["gil_switch_stretch=0,0.1,0.2,0.35"], ["gil_wake_cpu_us=0,5,12,24,36"],
                  ["gil_wake_cpu_waiter=0,1"], ["send_preempt_p=0,0.5,1"],
                  ["gil_xcore_cpu_us=0,10,40,80"], ["gil_mutex_signal_us=0,3,6,10"]):
        rows = sim_json(["--scenario", os.path.join(TOP, "sim/scenarios/seed000.scn"),
                         "--sweep"] + sweep + ["--only", "threaded"])
        body += ["| %s | predicted mean ms | stdev%% | measured mean ms | stdev%% |" % sweep[0].split("=")[0],
                 "|---|---|---|---|---|"]
        body += ["| %s | %.3f | %.1f | %.3f | %.1f |" % (r["scenario"], r["mean_ms"], r["stdev_pct"],
                 r["measured_mean_ms"], r["measured_stdev_pct"]) for r in rows]
        body += [""]
    body += ["", "### 3. Seed 001's table (assumptions: sim/scenarios/seed001.scn)", ""]
    body += table_seed001(seed1)
    body += ["", "<!-- validation:end -->"]
    if os.environ.get("VALIDATE_NO_DOC"):
        print("\n".join(body))
        return
    os.makedirs(KEEP, exist_ok=True)
    if not os.path.exists(os.path.join(keep, "pmqos.txt")) and \
            os.path.exists(os.path.join(KEEP, "pmqos.txt")):
        os.remove(os.path.join(KEEP, "pmqos.txt"))  # an earlier run's
    for f in os.listdir(keep):
        shutil.copy(os.path.join(keep, f), KEEP)
    doc = open(DOC).read()
    a = doc.index("<!-- validation:begin")
    b = doc.index("<!-- validation:end -->") + len("<!-- validation:end -->")
    open(DOC, "w").write(doc[:a] + "\n".join(body) + doc[b:])
    print("\n".join(body))


if __name__ == "__main__":
    main()
