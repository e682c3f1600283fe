#!/usr/bin/python3
"""whatif.py -- the what-if workflow (docs/whatif.md); run through tools/whatif.sh.

On a trace (default traces/sample.zst):
  1. host facts: `mtrace calibrate` (or --host FILE);
  2. for delay 0 and 1 ms: `mtrace replay --delay-ms D` serves the trace and
     the client (default: pymongo running seed 000's method, via
     sim/validate_bench.py) measures a sequential run and threaded runs;
     before it, one more sequential-only run is sniffed on lo (`mtrace capture
     --iface lo`, root only) for the server's request->reply times;
  3. `mtrace sim`, calibrated from the sequential runs and the host facts
     only (--calibrate: from the client's own CPU per call when it reports
     it, as the default client does, else solved from the sequential means),
     predicts every threaded row for GIL and free-threaded CPython, and a
     sweep over threads x delay x runtime (calibrated from delay 0's
     sequential run);
  4. prints the table and writes the report folder (whatif_report.py).

Client contract (--client CMD): see docs/whatif.md.  CMD is run by /bin/sh
with {uri} {seq} {threads} {calls} replaced (shell-quoted); stdout lines
"[LABEL-]MODE LATENCY_MS" with MODE seq or tN; lines starting with '{' or
'#' and blank lines are ignored, but a JSON line {"mode": "seq", "cpu_us":
...} (sim/validate_bench.py's row) gives the cpu calibration its figures.
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
import seqcal  # noqa: E402  (beside this file)
import whatif_report  # noqa: E402

DEFAULT_CLIENT = ("{python} " + shlex.quote(os.path.join(TOP, "sim", "validate_bench.py")) +
                  " --seq {seq} --threads {threads} --calls {calls} --label pymongo"
                  " --dump /dev/stdout {uri}")
DELAYS_MEASURED = (0.0, 1.0)
SWEEP_THREADS = (1, 2, 4, 10, 20)
SWEEP_DELAYS = (0.0, 0.5, 1.0, 2.0)
CPU_KEYS = ("cpu_us", "cpu_cv", "xcore_cpu_us")  # a "seq" JSON row's CPU figures
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
    ap.add_argument("--python-ft", help="a free-threaded CPython for mtrace calibrate "
                    "(measures ft_slowdown; default: python3.13t if on PATH)")
    ap.add_argument("--host", help="host facts file from an earlier `mtrace calibrate` "
                    "(default: measure them, about 20 s)")
    ap.add_argument("--no-sniff", action="store_true",
                    help="do not sniff lo for the server's service times")
    ap.add_argument("--calibrate", choices=("auto", "cpu", "each", "delay0"), default="auto",
                    help="cpu: the client's Python CPU from its own CPU per call in the "
                         "sequential runs (the default client reports it; docs/whatif.md); "
                         "each: solved from every delay's sequential mean; delay0: solved "
                         "from delay 0's sequential mean only; auto (default): cpu when the "
                         "client reported its CPU per call, else each")
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

def client_command(a, uri, seq, threads, xcore=False):
    tmpl = a.client or (DEFAULT_CLIENT + (" --xcore" if xcore else ""))
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
    "mode" (the "seq" row may carry cpu_us, cpu_cv, xcore_cpu_us)."""
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


def run_client(a, procs, uri, seq, threads, what, env_extra, xcore=False):
    """Runs the client; returns ({mode: [latency ms]}, {mode: its JSON row})."""
    cmd = client_command(a, uri, seq, threads, xcore)
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
    meas = {"delays": {}, "sniff": {}, "sniff_note": ""}
    threads = ",".join(str(t) for t in a.thread_list)
    for i, d in enumerate(DELAYS_MEASURED):
        p, port, log, summ = start_replay(a, procs, d, raw)
        uri = "mongodb://127.0.0.1:%d/" % port
        progress("%d/6 mtrace replay --delay-ms %g on 127.0.0.1:%d" % (2 + i, d, port))
        try:
            if d == 0 or meas["sniff"].get(0.0):
                meas["sniff"][d], why = sniff_seq(a, procs, port, uri, raw, d)
                if meas["sniff"][d] is None:
                    meas["sniff_note"] = why
                    progress("  server service times: not sniffed (%s)" % why)
            groups, info = run_client(a, procs, uri, a.calls, threads, "delay %g" % d, {},
                                      xcore=d == 0 and not a.client)
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
                             "replay": replay_summary(summ, log)}
    if all(meas["sniff"].get(d) for d in DELAYS_MEASURED):
        meas["sniff_note"] = ("sniffed on lo (mtrace capture --iface lo) during one more "
                              "sequential run at each delay")
        meas["server_p50_us"] = server_p50_us(a, meas["sniff"][0.0])
    else:
        meas["sniff"] = {}
    return meas


def seq_cpu(info):
    """The CPU figures of the client's "seq" JSON row: {key: number}."""
    r = info.get("seq") or {}
    out = {}
    for k in CPU_KEYS:
        v = r.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
                (v >= 0 or k == "xcore_cpu_us"):  # seqcal clamps a negative xcore to 0
            out[k] = float(v)
    return out


# ---- predicting -------------------------------------------------------------

def server_lines(meas, delay, measured):
    """mtrace replay as the server.  A measured delay with a sniffed trace:
    the service times are that trace's request->reply times (the delay as
    replay achieved it included).  Otherwise the delay is modelled (inline
    deadline timer) on top of delay 0's sniffed service times, or of the
    model's defaults when nothing was sniffed."""
    tr = meas["sniff"].get(delay) if measured else None
    if tr:
        return ["trace = %s" % tr]
    out = ["proxy = deadline", "proxy_delay_ms = %g" % delay] if delay > 0 else []
    if meas["sniff"].get(0.0):
        out.append("trace = %s" % meas["sniff"][0.0])
    return out


def section(meas, name, rt, threads, calls, delay, extra, measured=True):
    """One scenario section."""
    out = ["", "[%s]" % name, "runtime = %s" % ("gil" if rt == "gil" else "free-threaded"),
           "threads = %d" % threads, "calls = %d" % calls]
    return out + server_lines(meas, delay, measured) + extra


def seq_row(meas, d):
    """Delay d's sequential run as seqcal wants it: mean, stdev% and the
    client's CPU figures (those it reported)."""
    return dict(meas["delays"][d]["rows"]["seq"], **meas["delays"][d]["cpu"])


def choose_calibration(a, meas):
    """Sets a.cal_mode (cpu, each or delay0), a.cal_sections (the sections
    other rows calibrate from), a.fitted (rows whose mean is solved to match
    the measurement) and a.cal_note (what the report says)."""
    cpu0 = meas["delays"][0.0]["cpu"].get("cpu_us", 0) > 0
    if a.calibrate == "cpu" and not cpu0:
        raise WhatifError("--calibrate cpu: the client printed no sequential CPU per call "
                          "(a JSON line with \"mode\": \"seq\" and \"cpu_us\"; "
                          "docs/whatif.md)")
    a.cal_mode = "cpu" if a.calibrate == "cpu" or (a.calibrate == "auto" and cpu0) else \
        "delay0" if a.calibrate == "delay0" else "each"
    delays = DELAYS_MEASURED[:2 if a.cal_mode == "each" else 1]
    a.cal_sections = ["d%g-seq-gil" % d for d in delays]
    a.fitted = [] if a.cal_mode == "cpu" else list(a.cal_sections)
    if a.cal_mode == "cpu":
        a.cal_note = ("the client's own CPU per call in the sequential runs (time.thread_time "
                      "around each call): Python CPU and its variation from delay 0's run, the "
                      "cross-core and cold-cache charges as listed under Calibration; every "
                      "row's mean and stdev% is a prediction, the sequential ones included")
    else:
        why = "" if a.calibrate != "auto" else \
            " (the client reported no CPU per call, see docs/whatif.md)"
        a.cal_note = ("the client's Python CPU solved from %s so the simulated sequential run "
                      "has the measured mean and stdev%% (marked *fitted*)%s" % (
                          "delay 0's sequential mean only; delay 1's sequential row is a "
                          "prediction too" if a.cal_mode == "delay0"
                          else "each delay's sequential mean", why))


def cal_section(a, meas, d, measured=True):
    """The section calibrated from delay d's sequential run: d<D>-seq-gil."""
    seq = seq_row(meas, d)
    if a.cal_mode != "cpu":
        seq = meas["delays"][d]["rows"]["seq"]
    return section(meas, "d%g-seq-gil" % d, "gil", 1, a.calls, d, measured=measured, extra=[
        "exclude_first = 1"] + seqcal.cpu_lines([seq]) + [
        "measured.mean_ms = %.5f" % seq["mean_ms"], "measured.stdev_pct = %.3f" % seq["stdev_pct"]])


HEAD = ["# generated by tools/whatif.sh: mtrace replay of %s as the server",
        "# calibrated from the sequential runs only (the calibrate.* section and the",
        "# [calibrated] lines); every other section is a prediction (calibrate_from).",
        "# measured.* only label rows."]


def calibrated_lines(a, meas):
    """The global lines calibrated from the client's sequential runs: none
    (the model takes the client's CPU per call and its cv from the
    calibration section's calibrate.* lines)."""
    return []


def head_lines(a, meas):
    out = [HEAD[0] % a.trace] + HEAD[1:]
    return out + calibrated_lines(a, meas)


def model_scn(a, meas, path):
    """The measured scenarios: per delay, the sequential GIL row calibrates;
    every other row is predicted for GIL and free-threaded CPython."""
    lines = head_lines(a, meas)
    for d in DELAYS_MEASURED:
        rows = meas["delays"][d]["rows"]
        cal = "d%g-seq-gil" % d
        if cal in a.cal_sections:
            lines += cal_section(a, meas, d)
        else:  # a prediction too: the Python CPU calibrated at delay 0
            cal = a.cal_sections[0]
            seq = rows["seq"]
            lines += section(meas, "d%g-seq-gil" % d, "gil", 1, a.calls, d, [
                "exclude_first = 1", "calibrate_from = %s" % cal,
                "measured.mean_ms = %.5f" % seq["mean_ms"],
                "measured.stdev_pct = %.3f" % seq["stdev_pct"]])
        lines += section(meas, "d%g-seq-ft" % d, "ft", 1, a.calls, d,
                         ["exclude_first = 1", "calibrate_from = %s" % cal])
        prev = 1
        for t in a.thread_list:
            for rt in ("gil", "ft"):
                r = rows.get("t%d" % t) if rt == "gil" else None
                extra = ["pool_initial = %d" % prev, "calibrate_from = %s" % cal]
                if r:
                    extra += ["measured.mean_ms = %.5f" % r["mean_ms"],
                              "measured.stdev_pct = %.3f" % r["stdev_pct"]]
                lines += section(meas, "d%g-t%d-%s" % (d, t, rt), rt, t, a.threads_calls, d,
                                 extra)
            prev = max(prev, t)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def sweep_scn(a, meas, path):
    """The what-if grid, every point calibrated from delay 0's sequential
    run: sweep-<runtime>-t<threads>-d<delay>, one open connection at start."""
    lines = head_lines(a, meas) + cal_section(a, meas, 0.0)
    for rt in ("gil", "ft"):
        for t in SWEEP_THREADS:
            for d in SWEEP_DELAYS:  # 1 thread: the sequential run's shape
                calls, first = (a.calls, 1) if t == 1 else (a.threads_calls, 0)
                lines += section(meas, "sweep-%s-t%d-d%g" % (rt, t, d), rt, t, calls, d,
                                 ["pool_initial = 1", "exclude_first = %d" % first,
                                  "calibrate_from = d0-seq-gil"], measured=False)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def sim(a, args, params_path=None):
    argv = [a.mtrace, "sim", "--json", "--seed", str(a.seed)] + args
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise WhatifError("mtrace sim failed (exit %d): %s\n  command: %s" % (
            r.returncode, r.stderr.strip()[-800:], " ".join(shlex.quote(x) for x in argv)))
    if params_path:
        with open(params_path, "w") as f:
            f.write("# " + " ".join(shlex.quote(x) for x in argv) + "\n" + r.stderr)
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip().startswith("{")]


def predict(a, host, meas, out):
    """Writes model.scn and sweep.scn and runs mtrace sim on them.  If the
    client's CPU per call cannot calibrate the model (auto), says why and
    solves it from the sequential means instead."""
    choose_calibration(a, meas)
    progress("4/6 mtrace sim: calibrated from the sequential runs (%s), predicting" % a.cal_mode)
    scn = model_scn(a, meas, os.path.join(out, "model.scn"))
    try:
        rows = sim(a, ["--host", host, "--scenario", scn], os.path.join(out, "params.txt"))
    except WhatifError as e:
        if a.calibrate != "auto" or a.cal_mode != "cpu":
            raise
        progress("  the CPU calibration failed, solving from the sequential means: %s" % e)
        a.calibrate = "each"
        choose_calibration(a, meas)
        a.cal_note += ("; the CPU per call could not calibrate the model: %s"
                       % str(e).splitlines()[0])
        scn = model_scn(a, meas, os.path.join(out, "model.scn"))
        rows = sim(a, ["--host", host, "--scenario", scn], os.path.join(out, "params.txt"))
    sscn = sweep_scn(a, meas, os.path.join(out, "sweep.scn"))
    sweep = [r for r in sim(a, ["--host", host, "--scenario", sscn, "--no-params"])
             if r["scenario"].startswith("sweep-")]
    return scn, rows, sweep


def host_facts(a, out):
    path = os.path.join(out, "host.txt")
    if a.host:
        if not os.path.exists(a.host):
            raise WhatifError("--host %s: no such file" % a.host)
        if os.path.abspath(a.host) != os.path.abspath(path):
            shutil.copy(a.host, path)
        progress("1/6 host facts from %s" % a.host)
        return path
    progress("1/6 host facts: mtrace calibrate (about 20 s)")
    argv = [a.mtrace, "calibrate", "--python", a.python, "-o", path]
    if a.python_ft:
        argv += ["--python-ft", a.python_ft]
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
        scn, rows, sweep = predict(a, host, meas, out)
        progress("5/6 report: tables and gnuplot plots in %s" % out)
        rep = whatif_report.build(a, out, meas, rows, sweep, DELAYS_MEASURED)
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
