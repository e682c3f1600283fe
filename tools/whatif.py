#!/usr/bin/python3
"""whatif.py -- the what-if workflow (docs/whatif.md); run through tools/whatif.sh.

On a trace (default traces/sample.zst):
  1. host facts: `mtrace calibrate` (or --host FILE);
  2. for delay 0 and 1 ms: `mtrace replay --delay-ms D` serves the trace and
     the client (default: pymongo running seed 000's method, via
     sim/validate_bench.py) measures a sequential run and threaded runs;
     at delay 0, one more sequential-only run is sniffed on lo (`mtrace
     capture --iface lo`, root only) for the server's request->reply times;
  3. `mtrace sim` one-liners, calibrated from the sequential runs and the
     host facts only (--calibrate: from the client's own CPU per call and
     driver-lock sections when it reports them, as the default client does,
     else solved from the sequential means), predict every measured row for
     GIL and free-threaded CPython, each with its interval and binding
     resource, and a sweep over threads x delay x runtime (calibrated from
     delay 0's sequential run);
  4. prints the table and writes the report folder (whatif_report.py).

Client contract (--client CMD): see docs/whatif.md.  CMD is run by /bin/sh
with {uri} {seq} {threads} {calls} replaced (shell-quoted); stdout lines
"[LABEL-]MODE LATENCY_MS" with MODE seq or tN; lines starting with '{' or
'#' and blank lines are ignored, but a JSON line {"mode": "seq", "cpu_us":
...} (sim/validate_bench.py's row) gives the cpu calibration its figures
(cpu_us, cpu_cv, lock_sections, lock_hold_us), and a JSON row of a threaded
mode may give "conns", the connections open when it started.
"""
import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "tools"))
import whatif_report  # noqa: E402

DEFAULT_CLIENT = ("{python} " + shlex.quote(os.path.join(TOP, "sim", "validate_bench.py")) +
                  " --seq {seq} --xcore 400 --threads {threads} --calls {calls} --label pymongo"
                  " --dump /dev/stdout {uri}")
DELAYS_MEASURED = (0.0, 1.0)
SWEEP_THREADS = (1, 2, 4, 10, 20)
SWEEP_DELAYS = (0.0, 0.5, 1.0, 2.0)
CPU_KEYS = ("cpu_us", "cpu_cv", "lock_sections", "lock_hold_us", "lock_before",
            "xcore_cpu_us", "xcore_pin_cpu_us")  # "seq" row
LINE_RE = re.compile(r"^(?:\S*-)?(seq|t[1-9][0-9]*)\s+(\S+)\s*$")
T0 = time.monotonic()


class WhatifError(Exception):
    """A step failed: the message says which and what to do."""


def progress(msg):
    print("whatif [%5.1fs] %s" % (time.monotonic() - T0, msg), file=sys.stderr, flush=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="tools/whatif.sh",
        description="Replay a trace with delay 0 and 1 ms, measure a client against it, "
                    "predict the scenarios not run with mtrace sim, and write a report.")
    ap.add_argument("--trace", default=os.path.join(TOP, "traces", "sample.zst"),
                    help="trace to replay (default traces/sample.zst)")
    ap.add_argument("--client", help="client command (default: pymongo, seed 000's method); "
                    "see docs/whatif.md for its contract")
    ap.add_argument("--out", default=os.path.join(TOP, "report"),
                    help="report folder (default report/)")
    ap.add_argument("--calls", type=int, default=1000,
                    help="sequential calls, the first one excluded (default 1000)")
    ap.add_argument("--threads-calls", type=int, default=100,
                    help="calls per thread in threaded runs (default 100)")
    ap.add_argument("--threads", default="10,2,4,20",
                    help="threaded runs, in order (default 10,2,4,20: seed 000's 10 x 100 "
                         "right after the sequential run, then more for the thread plot)")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="Python for the default client and mtrace calibrate")
    ap.add_argument("--host", help="host facts file from an earlier `mtrace calibrate` "
                    "(default: measure them, about 10 s)")
    ap.add_argument("--no-sniff", action="store_true",
                    help="do not sniff lo for the server's service times")
    ap.add_argument("--calibrate", choices=("auto", "cpu", "mean"), default="auto",
                    help="cpu: the client's Python CPU from its own CPU per call in each "
                         "delay's sequential run (the default client reports it; "
                         "docs/whatif.md); mean: solved from each sequential mean and stdev%%; "
                         "auto (default): cpu when the client reported its CPU per call, "
                         "else mean")
    ap.add_argument("--timeout", type=float, default=600,
                    help="stop a client run after this many seconds (default 600)")
    ap.add_argument("--seed", type=int, default=1, help="mtrace sim's seed (default 1)")
    ap.add_argument("--mtrace", default=os.path.join(TOP, "mtrace"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.calls < 3 or a.threads_calls < 2:
        ap.error("--calls must be >= 3 and --threads-calls >= 2")
    try:
        a.thread_list = [int(x) for x in a.threads.split(",") if x.strip()]
    except ValueError:
        ap.error("--threads wants a comma-separated list of thread counts, got %r" % a.threads)
    if not a.thread_list or any(t < 1 or t > 1000 for t in a.thread_list):
        ap.error("--threads: thread counts must be 1..1000")
    for path, what in ((a.trace, "--trace"), (a.mtrace, "mtrace binary")):
        if not os.path.exists(path):
            ap.error("%s: %s does not exist%s" % (what, path,
                     " (run `make whatif` or `make`)" if what != "--trace" else ""))
    return a


# ---- processes ----------------------------------------------------------

class Procs:
    """Every process the workflow starts; stop_all() ends them (by handle)."""

    def __init__(self):
        self.live = []

    def start(self, argv, **kw):
        p = subprocess.Popen(argv, **kw)
        self.live.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10, group=False):
        """Signals p (its whole process group if group) and waits for it."""
        if p.poll() is None:
            self._signal(p, sig, group)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(p, signal.SIGKILL, group)
                p.wait()
        self.forget(p)
        return p.returncode

    def forget(self, p):
        if p in self.live:
            self.live.remove(p)

    @staticmethod
    def _signal(p, sig, group):
        try:
            if group:
                os.killpg(p.pid, sig)  # the client's own session (start_new_session)
            else:
                p.send_signal(sig)
        except ProcessLookupError:
            pass

    def stop_all(self):
        for p in list(self.live):
            self.stop(p, timeout=3, group=getattr(p, "mt_group", False))


def wait_for(pred, secs, what):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise WhatifError("%s: not ready after %d s" % (what, secs))


def start_replay(a, procs, delay, raw):
    log = os.path.join(raw, "replay-delay%g.log" % delay)
    summ = os.path.join(raw, "replay-delay%g.json" % delay)
    for f in (log, summ):
        if os.path.exists(f):
            os.unlink(f)
    # --spin-us 0, as sim/validate.sh: the model's server does not busy-wait,
    # and replay's adaptive spin would take up to a core from the client on
    # a small host, a cost the prediction does not charge.
    p = procs.start([a.mtrace, "replay", "--listen", "127.0.0.1:0", "--delay-ms", "%g" % delay,
                     "--spin-us", "0", "--summary-json", summ, a.trace], stdout=subprocess.DEVNULL,
                    stderr=open(log, "w"))

    def port():
        if p.poll() is not None:
            raise WhatifError("mtrace replay exited %d: %s" % (p.returncode, tail(log)))
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", open(log).read())
        return m and int(m.group(1))
    return p, wait_for(port, 10, "mtrace replay"), log, summ


def tail(path, n=5):
    try:
        return " | ".join(open(path).read().strip().splitlines()[-n:])
    except OSError:
        return "(no log)"


# ---- the client ---------------------------------------------------------

def client_command(a, uri, seq, threads):
    tmpl = a.client or DEFAULT_CLIENT
    vals = {"uri": uri, "seq": str(seq), "threads": threads, "calls": str(a.threads_calls),
            "python": a.python}
    cmd = tmpl
    for k, v in vals.items():
        cmd = cmd.replace("{%s}" % k, shlex.quote(v))
    if "{uri}" not in tmpl:
        cmd += " " + shlex.quote(uri)
    return cmd


def parse_client_line(line, lineno, groups):
    """One stdout line of the client into groups {mode: [ms]}; False if ignored."""
    s = line.strip()
    if not s or s[0] in "{#":
        return False
    m = LINE_RE.match(s)
    if not m:
        raise WhatifError("client output line %d: expected '[LABEL-]seq MS' or '[LABEL-]tN MS', "
                          "got %r (docs/whatif.md, client contract)" % (lineno, s[:120]))
    try:
        v = float(m.group(2))
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v < 0:
        raise WhatifError("client output line %d: latency %r is not a number of ms >= 0"
                          % (lineno, m.group(2)))
    groups.setdefault(m.group(1), []).append(v)
    return True


def json_row(line, what, info):
    """A client's JSON summary line: echoed as progress, kept in info by its
    "mode" (the "seq" row may carry CPU_KEYS, a threaded one "conns")."""
    try:
        r = json.loads(line)
    except ValueError:
        return
    if not isinstance(r, dict):
        return
    if isinstance(r.get("mode"), str):
        info[r["mode"]] = r
    try:
        progress("  %s: %s n=%s mean %.3f ms stdev %.1f%%%s" % (
            what, r.get("mode"), r.get("n"), r.get("mean_ms"), r.get("stdev_pct"),
            "".join(", %s %s" % (k, r[k]) for k in CPU_KEYS if k in r)))
    except TypeError:
        pass


def run_client(a, procs, uri, seq, threads, what, env_extra):
    """Runs the client; returns ({mode: [latency ms]}, {mode: its JSON row})."""
    cmd = client_command(a, uri, seq, threads)
    if a.client:
        progress("  %s: %s" % (what, cmd))
    env = dict(os.environ, MTRACE_URI=uri, MTRACE_SEQ_CALLS=str(seq), MTRACE_THREADS=threads,
               MTRACE_CALLS=str(a.threads_calls), **env_extra)
    errf = os.path.join(a.raw, "client-%s.err" % re.sub(r"[^A-Za-z0-9.]+", "-", what))
    p = procs.start(["/bin/sh", "-c", cmd], stdout=subprocess.PIPE, stderr=open(errf, "w"),
                    text=True, env=env, start_new_session=True)
    p.mt_group = True
    fired = threading.Event()

    def on_timeout():
        fired.set()
        Procs._signal(p, signal.SIGTERM, True)
    timer = threading.Timer(a.timeout, on_timeout)
    timer.start()
    groups, info, n, ok = {}, {}, 0, False
    try:
        for n, line in enumerate(p.stdout, 1):
            if line.startswith("{"):
                json_row(line, what, info)
            parse_client_line(line, n, groups)
        ok = True
    finally:
        timer.cancel()
        p.stdout.close()
        rc = p.wait() if ok else procs.stop(p, signal.SIGTERM, 3, True)
        procs.forget(p)
    if rc != 0:
        last = open(errf).read().strip().splitlines()[-3:] or ["(nothing on stderr)"]
        why = " (stopped after --timeout %g s)" % a.timeout if fired.is_set() else ""
        raise WhatifError("client exited %d%s: %s\n  client stderr: %s" % (
            rc, why, cmd, "\n  client stderr: ".join(x[:300] for x in last)))
    if len(groups.get("seq", [])) < 2:
        raise WhatifError("client printed %d sequential latencies (need >= 2 'seq MS' lines): %s"
                          % (len(groups.get("seq", [])), cmd))
    return groups, info


def replay_summary(path, log):
    try:
        s = json.load(open(path))
    except (OSError, ValueError) as e:
        raise WhatifError("replay summary %s unreadable (%s): %s" % (path, e, tail(log)))
    if s.get("missed"):
        first = [l for l in open(log) if "miss #" in l][:1]
        raise WhatifError("mtrace replay had no recorded reply for %d requests: the trace does "
                          "not hold what the client asks (%s); record the client with mtrace "
                          "capture, or give --client a command that asks what the trace holds"
                          % (s["missed"], first[0].strip()[:400] if first else "see " + log))
    return s


# ---- sniffing the server's service times ---------------------------------

def sniff_seq(a, procs, port, uri, raw, d):
    """A sequential-only run sniffed on lo; returns (trace path or None, why)."""
    if a.no_sniff:
        return None, "--no-sniff"
    if os.geteuid() != 0:
        return None, "not root (live capture needs CAP_NET_RAW)"
    out = os.path.join(raw, "sniff-delay%g.zst" % d)
    log = os.path.join(raw, "sniff-delay%g.log" % d)
    if os.path.exists(out):
        os.unlink(out)
    p = procs.start([a.mtrace, "capture", "--iface", "lo", "--port", str(port), "--duration",
                     "60", "-o", out], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    try:
        wait_for(lambda: (p.poll() is None and os.path.exists(out) and os.path.getsize(out) > 0)
                 or p.poll() is not None, 10, "mtrace capture --iface lo")
        if p.poll() is not None:
            return None, "mtrace capture --iface lo exited %d: %s" % (p.returncode, tail(log))
        time.sleep(0.3)
        run_client(a, procs, uri, min(a.calls, 300), "", "sniffed %g" % d, {})
        time.sleep(0.3)
    finally:
        rc = procs.stop(p, signal.SIGINT)
    if rc != 0:
        return None, "mtrace capture --iface lo exited %d: %s" % (rc, tail(log))
    return out, "sniffed"


def server_p50_us(a, trace):
    """p50 request->reply of the most frequent command in a trace, in us."""
    r = subprocess.run([a.mtrace, "stats", "--json", trace], capture_output=True, text=True)
    try:
        lat = json.loads(r.stdout)["latency_ms"]
    except (ValueError, KeyError, TypeError):
        return None
    best = None
    for cmd, v in lat.items():
        if isinstance(v, dict) and v.get("p50") is not None and v.get("count", 0) > 0:
            if best is None or v["count"] > best["count"]:
                best = v
    return best["p50"] * 1000 if best else None


# ---- measuring ------------------------------------------------------------

def summarize(v):
    v = sorted(v)
    mean = statistics.mean(v)
    return {"n": len(v), "mean_ms": mean,
            "stdev_pct": 100 * statistics.stdev(v) / mean if len(v) > 1 and mean > 0 else 0.0,
            "p50_ms": v[len(v) // 2], "p99_ms": v[min(len(v) - 1, int(0.99 * len(v)))],
            "max_ms": v[-1]}


def measure(a, procs, raw):
    """Replays the trace at each delay and runs the client; returns a dict."""
    meas = {"delays": {}, "sniff": None, "sniff_note": ""}
    threads = ",".join(str(t) for t in a.thread_list)
    for i, d in enumerate(DELAYS_MEASURED):
        p, port, log, summ = start_replay(a, procs, d, raw)
        uri = "mongodb://127.0.0.1:%d/" % port
        progress("%d/6 mtrace replay --delay-ms %g on 127.0.0.1:%d" % (2 + i, d, port))
        try:
            if d == 0:
                meas["sniff"], why = sniff_seq(a, procs, port, uri, raw, d)
                if meas["sniff"] is None:
                    meas["sniff_note"] = why
                    progress("  server service times: not sniffed (%s)" % why)
            groups, info = run_client(a, procs, uri, a.calls, threads, "delay %g" % d, {})
        except WhatifError as e:
            procs.stop(p)
            replay_summary(summ, log)  # misses explain a client failure best
            raise e
        finally:
            rc = procs.stop(p)
        if rc != 0:
            raise WhatifError("mtrace replay exited %d: %s" % (rc, tail(log)))
        latf = os.path.join(raw, "latencies-delay%g.txt" % d)
        with open(latf, "w") as f:
            for mode, v in groups.items():
                for x in v:
                    f.write("d%g-%s %.5f\n" % (d, mode, x))
        meas["delays"][d] = {"rows": {m: summarize(v) for m, v in groups.items()},
                             "latencies": latf, "uri": uri, "cpu": seq_cpu(info),
                             "info": info, "replay": replay_summary(summ, log)}
    if meas["sniff"]:
        meas["sniff_note"] = ("sniffed on lo (mtrace capture --iface lo) during one more "
                              "sequential run at delay 0; the delay is the prediction's "
                              "--delay-ms")
        meas["server_p50_us"] = server_p50_us(a, meas["sniff"])
    return meas


def seq_cpu(info):
    """The CPU figures of the client's "seq" JSON row: {key: number}."""
    r = info.get("seq") or {}
    out = {}
    for k in CPU_KEYS:
        v = r.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
                v >= 0:
            out[k] = float(v)
    return out


# ---- predicting -------------------------------------------------------------

def seq_facts(a, meas, d):
    """mtrace sim options from delay d's sequential run: its mean and
    stdev%, and with the cpu calibration the client's CPU per call, its cv
    and the driver-lock sections (those the client reported)."""
    row = meas["delays"][d]["rows"]["seq"]
    cpu = meas["delays"][d]["cpu"]
    out = ["--seq-mean-ms", "%.5f" % row["mean_ms"], "--seq-delay-ms", "%g" % d]
    if a.cal_mode == "cpu":
        out += ["--seq-cpu-us", "%.3f" % cpu["cpu_us"]]
        # the sequential runs at every measured delay: the idle curve; the
        # smallest delay's calls with their segments on alternating cores:
        # xcore_frac
        out += ["--seq-cpu-at", ",".join("%g:%.3f" % (x, meas["delays"][x]["cpu"]["cpu_us"])
                                         for x in DELAYS_MEASURED)]
        c0 = meas["delays"][DELAYS_MEASURED[0]]["cpu"]
        if "xcore_cpu_us" in c0 and "xcore_pin_cpu_us" in c0:
            out += ["--seq-xcore-cpu-us", "%.3f" % c0["xcore_cpu_us"],
                    "--seq-pinned-cpu-us", "%.3f" % c0["xcore_pin_cpu_us"]]
        if "cpu_cv" in cpu:
            out += ["--seq-cpu-cv", "%.4f" % cpu["cpu_cv"]]
        else:
            out += ["--seq-stdev-pct", "%.3f" % row["stdev_pct"]]
    else:
        out += ["--seq-stdev-pct", "%.3f" % row["stdev_pct"]]
    if "lock_sections" in cpu and "lock_hold_us" in cpu:
        out += ["--lock-sections", "%g" % round(cpu["lock_sections"]),
                "--lock-hold-us", "%.3f" % cpu["lock_hold_us"]]
        if "lock_before" in cpu:
            out += ["--lock-before", "%g" % round(cpu["lock_before"])]
    return out


def choose_calibration(a, meas):
    """Sets a.cal_mode (cpu or mean), a.fitted (rows whose mean is solved to
    match the measurement) and a.cal_note (what the report says)."""
    cpu = all(meas["delays"][d]["cpu"].get("cpu_us", 0) > 0 for d in DELAYS_MEASURED)
    if a.calibrate == "cpu" and not cpu:
        raise WhatifError("--calibrate cpu: the client printed no sequential CPU per call "
                          "(a JSON line with \"mode\": \"seq\" and \"cpu_us\"; "
                          "docs/whatif.md)")
    a.cal_mode = "cpu" if a.calibrate == "cpu" or (a.calibrate == "auto" and cpu) else "mean"
    a.fitted = [] if a.cal_mode == "cpu" else ["d%g-seq-gil" % d for d in DELAYS_MEASURED]
    locks = all("lock_sections" in meas["delays"][d]["cpu"] for d in DELAYS_MEASURED)
    lock_note = ("; the driver lock's sections per call and hold from the same run "
                 "(Topology._lock instrumented)" if locks else
                 "; no driver-lock sections (the client reported none)")
    if a.cal_mode == "cpu":
        a.cal_note = ("each delay's rows from that delay's sequential run: the client's own CPU "
                      "per call (time.thread_time around each call) and its cv" + lock_note +
                      "; py_call_us from the delay-0 run's CPU and the idle curve from both "
                      "delays' (--seq-cpu-at), xcore_frac from the delay-0 run's calls with every "
                      "Python segment moved between two CPUs and kept on one when the "
                      "client reported them; "
                      "every row's mean is a prediction, the sequential ones included")
    else:
        why = "" if a.calibrate != "auto" else \
            " (the client reported no CPU per call, see docs/whatif.md)"
        a.cal_note = ("each delay's rows from that delay's sequential run: the client's Python "
                      "CPU solved so the simulated sequential run has the measured mean and "
                      "stdev%% (those rows marked *fitted*)%s%s" % (why, lock_note))


def sim(a, args, params_path=None):
    argv = [a.mtrace, "sim", "--json", "--seed", str(a.seed)] + args
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise WhatifError("mtrace sim failed (exit %d): %s\n  command: %s" % (
            r.returncode, r.stderr.strip()[-800:], " ".join(shlex.quote(x) for x in argv)))
    if params_path:
        with open(params_path, "w") as f:
            f.write("# " + " ".join(shlex.quote(x) for x in argv) + "\n" + r.stderr)
    rows = [json.loads(l) for l in r.stdout.splitlines() if l.strip().startswith("{")]
    if not rows:
        raise WhatifError("mtrace sim printed no prediction: %s" % " ".join(argv))
    return rows, argv


def pool_initial(a, meas, d, t):
    """Connections open when delay d's t-thread row started: the client's
    "conns" when it reported it, else the largest earlier row (seed 000's
    method: the pool keeps the connections of the rows before)."""
    info = meas["delays"][d]["info"].get("t%d" % t, {})
    if isinstance(info.get("conns"), int) and info["conns"] > 0:
        return info["conns"]
    prev = [x for x in a.thread_list[:a.thread_list.index(t)]]
    return max([1] + prev)


def predict(a, host, meas, out):
    """Every measured row for GIL and free-threaded CPython, from its own
    delay's sequential run, and the what-if sweep from delay 0's: mtrace sim
    one-liners.  Returns (rows {id: prediction}, sweep [predictions],
    commands {id: argv})."""
    choose_calibration(a, meas)
    progress("4/6 mtrace sim: calibrated from the sequential runs (%s), predicting" % a.cal_mode)
    trace = ["--trace", meas["sniff"]] if meas["sniff"] else []
    rows, cmds = {}, {}
    for d in DELAYS_MEASURED:
        base = ["--host", host] + trace + seq_facts(a, meas, d) + ["--delay-ms", "%g" % d]
        for rt in ("gil", "ft"):
            rtn = ["--runtime", "gil" if rt == "gil" else "free-threaded"]
            pp = os.path.join(out, "params.txt") if (d, rt) == (0.0, "gil") else None
            r, argv = sim(a, base + rtn + ["--threads", "1", "--calls", str(a.calls)], pp)
            rows["d%g-seq-%s" % (d, rt)] = r[0]
            cmds["d%g-seq-%s" % (d, rt)] = argv
            for t in a.thread_list:
                r, argv = sim(a, base + rtn + ["--threads", str(t), "--calls",
                                              str(a.threads_calls), "--pool-initial",
                                              str(pool_initial(a, meas, d, t))])
                rows["d%g-t%d-%s" % (d, t, rt)] = r[0]
                cmds["d%g-t%d-%s" % (d, t, rt)] = argv
    sweep = []
    base = ["--host", host] + trace + seq_facts(a, meas, 0.0)
    for rt in ("gil", "free-threaded"):
        r, argv = sim(a, base + ["--runtime", rt, "--calls", str(a.threads_calls),
                                 "--sweep=threads=" + ",".join(map(str, SWEEP_THREADS)),
                                 "--sweep=delay=" + ",".join("%g" % x for x in SWEEP_DELAYS)])
        sweep += r
        cmds["sweep-" + rt] = argv
    with open(os.path.join(out, "commands.txt"), "w") as f:
        f.writelines("%s: %s\n" % (k, " ".join(shlex.quote(x) for x in c))
                     for k, c in cmds.items())
    return rows, sweep, cmds


def host_facts(a, out):
    path = os.path.join(out, "host.txt")
    if a.host:
        if not os.path.exists(a.host):
            raise WhatifError("--host %s: no such file" % a.host)
        if os.path.abspath(a.host) != os.path.abspath(path):
            shutil.copy(a.host, path)
        progress("1/6 host facts from %s" % a.host)
        return path
    progress("1/6 host facts: mtrace calibrate (about 10 s)")
    argv = [a.mtrace, "calibrate", "--python", a.python, "-o", path]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise WhatifError("mtrace calibrate failed (exit %d): %s" % (r.returncode,
                                                                     r.stderr.strip()[-400:]))
    return path


def main(argv):
    a = parse_args(argv)
    out = os.path.abspath(a.out)
    raw = a.raw = os.path.join(out, "raw")
    os.makedirs(raw, exist_ok=True)
    a.trace = os.path.abspath(a.trace)
    procs = Procs()
    try:
        host = host_facts(a, out)
        meas = measure(a, procs, raw)
        rows, sweep, cmds = predict(a, host, meas, out)
        progress("5/6 report: tables and gnuplot plots in %s" % out)
        rep = whatif_report.build(a, out, meas, rows, sweep, DELAYS_MEASURED, cmds)
        progress("6/6 done in %.1f s" % (time.monotonic() - T0))
    except (WhatifError, RuntimeError) as e:
        print("whatif: error: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("whatif: interrupted", file=sys.stderr)
        return 130
    finally:
        procs.stop_all()
    print(rep["text"])
    print("\nreport: %s/report.md (table), report.json, %s" % (
        out, ", ".join(os.path.basename(p) for p in rep["plots"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
