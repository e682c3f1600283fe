#!/usr/bin/python3
"""whatif_report.py -- second half of tools/whatif.py: the measured-vs-predicted
table (terminal and Markdown), report.json, and the gnuplot plots.  Not a
program of its own: whatif.py calls build().

Every predicted number comes from `mtrace sim --json` (sim_rows: {id:
prediction} for the measured rows, sweep for the what-if grid); every
measured number from the client's latencies (meas, see whatif.measure)."""
import datetime
import json
import os
import re
import subprocess

RT_NAME = {"gil": "GIL", "ft": "free-threaded"}
SCHEMA = 2
PRED_KEYS = ("mean_ms", "mean_lo_ms", "mean_hi_ms", "stdev_pct", "stdev_pct_lo", "stdev_pct_hi",
             "p50_ms", "p50_lo_ms", "p50_hi_ms", "p99_ms", "p99_lo_ms", "p99_hi_ms", "runs")
PARAM_RE = re.compile(r"^#?\s*(\S+)\s+=\s+(\S+)\s+\[(\w+)\]\s*(.*)$")
# the client's parameters, set from its sequential run, listed under Calibration
CAL_PARAMS = ("py_call_us", "py_cv", "xcore_frac", "lock_sections", "lock_hold_us", "server_us")


def fmt_delay(d):
    return "%g ms" % d


def mode_name(mode, a):
    if mode == "seq":
        return "sequential %d calls" % (a.calls - 1)
    return "%s threads x %d" % (mode[1:], a.threads_calls)


def row_order(a, delays):
    """(delay, mode, runtime) of the main table: seed 000's four rows per
    runtime first (sequential and the first thread count), then the rest."""
    first = ["seq", "t%d" % a.thread_list[0]]
    rest = ["t%d" % t for t in a.thread_list[1:]]
    out = []
    for modes in (first, rest):
        for rt in ("gil", "ft"):
            for d in delays:
                out += [(d, m, rt) for m in modes]
    return out


def binding(p):
    """'gil 0.93' style: the binding resource and its simulated utilisation."""
    b = p.get("binding", "?")
    u = (p.get("util") or {}).get(b)
    return "%s %.2f" % (b, u) if isinstance(u, (int, float)) else b


def main_rows(a, meas, sim_rows, delays):
    rows = []
    for d, mode, rt in row_order(a, delays):
        name = "d%g-%s-%s" % (d, mode, rt)
        p = sim_rows.get(name)
        if p is None:
            continue
        m = meas["delays"][d]["rows"].get(mode) if rt == "gil" else None
        r = {"scenario": "delay %s, %s, %s" % (fmt_delay(d), mode_name(mode, a), RT_NAME[rt]),
             "id": name, "delay_ms": d, "threads": 1 if mode == "seq" else int(mode[1:]),
             "runtime": RT_NAME[rt], "measured": m,
             "predicted": {k: p[k] for k in PRED_KEYS if k in p},
             "binding": p.get("binding"), "util": p.get("util"), "bound": p.get("bound"),
             "lock_blocks_per_call": p.get("lock_blocks_per_call"),
             "role": "fitted" if name in a.fitted else "predicted",
             "error_pct": None, "stdev_diff_pts": None, "inside": None}
        if m:
            r["error_pct"] = 100 * (p["mean_ms"] - m["mean_ms"]) / m["mean_ms"]
            r["stdev_diff_pts"] = p["stdev_pct"] - m["stdev_pct"]
            if "mean_lo_ms" in p:
                r["inside"] = p["mean_lo_ms"] <= m["mean_ms"] <= p["mean_hi_ms"]
        rows.append(r)
    return rows


def sweep_rows(a, meas, sweep):
    out = []
    for p in sweep:
        t, d = p["threads"], p["proxy_delay_ms"]
        rt = "gil" if p["runtime"] == "gil" else "ft"
        m = None
        if rt == "gil" and d in meas["delays"]:
            m = meas["delays"][d]["rows"].get("seq" if t == 1 else "t%d" % t)
        out.append({"runtime": RT_NAME[rt], "threads": t, "delay_ms": d,
                    "predicted": {k: p[k] for k in PRED_KEYS if k in p},
                    "binding": p.get("binding"), "util": p.get("util"),
                    "measured": m and {k: m[k] for k in ("n", "mean_ms", "stdev_pct")}})
    return out


def cell(x, f="%.3f"):
    return "-" if x is None else f % x


def interval(p, k, f="%.3f"):
    """p[k] with its interval: mean_ms -> mean_lo_ms..mean_hi_ms, stdev_pct
    -> stdev_pct_lo..stdev_pct_hi (only the value when sim gave none)."""
    lo, hi = (k[:-3] + "_lo_ms", k[:-3] + "_hi_ms") if k.endswith("_ms") else \
        (k + "_lo", k + "_hi")
    if p.get(lo) is None or p.get(hi) is None:
        return f % p[k]
    return (f + " [" + f + "-" + f + "]") % (p[k], p[lo], p[hi])


def table_cells(r):
    m, p = r["measured"], r["predicted"]
    if r["role"] == "fitted":
        err = "fitted"
    elif m:
        err = "%+.0f%% / %+.0f pts" % (r["error_pct"], r["stdev_diff_pts"])
    else:
        err = "not measured"
    return [r["scenario"], cell(m and m["mean_ms"]), cell(m and m["stdev_pct"], "%.1f%%"),
            interval(p, "mean_ms"), interval(p, "stdev_pct", "%.1f") + "%",
            binding({"binding": r["binding"], "util": r["util"]}), err]


HEAD = ["scenario", "measured mean ms", "stdev%", "predicted mean ms [interval]",
        "stdev% [interval]", "binds (util)", "error (mean / stdev%)"]


def text_table(rows):
    cells = [HEAD] + [table_cells(r) for r in rows]
    w = [max(len(c[i]) for c in cells) for i in range(len(HEAD))]
    lines = []
    for k, c in enumerate(cells):
        lines.append("  ".join(c[i].ljust(w[i]) if i == 0 else c[i].rjust(w[i])
                               for i in range(len(c))))
        if k == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def md_table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c) + " |" for c in body]
    return out


def md_sweep(sw):
    grid = {}
    for r in sw:
        grid[(r["threads"], r["delay_ms"], r["runtime"])] = r
    body = []
    for t in sorted({r["threads"] for r in sw}):
        for d in sorted({r["delay_ms"] for r in sw}):
            g, f = grid.get((t, d, "GIL")), grid.get((t, d, "free-threaded"))
            if not g or not f:
                continue
            m = g["measured"]
            body.append(["%d" % t, fmt_delay(d),
                         interval(g["predicted"], "mean_ms"),
                         "%.1f%%" % g["predicted"]["stdev_pct"], binding(g),
                         interval(f["predicted"], "mean_ms"),
                         "%.1f%%" % f["predicted"]["stdev_pct"], binding(f),
                         "%.3f / %.1f%%" % (m["mean_ms"], m["stdev_pct"]) if m else "-"])
    return md_table(["threads", "delay", "GIL mean ms [interval]", "stdev%", "binds",
                     "free-threaded mean ms [interval]", "stdev%", "binds",
                     "measured (GIL) mean / stdev%"], body)


# ---- plots -------------------------------------------------------------

def plot_latency(a, out, cmd, d, meas):
    """CDFs at delay d of the first threaded row: measured (dashed) vs
    mtrace sim (solid), drawn by mtrace sim --plot (gnuplot); cmd is the
    mtrace sim command that predicted the row."""
    raw = os.path.join(out, "raw")
    t = "t%d" % a.thread_list[0]
    mfile = os.path.join(raw, "plot-delay%g-measured.txt" % d)
    with open(meas["delays"][d]["latencies"]) as f, open(mfile, "w") as g:
        for line in f:
            lab = line.split()[0]
            if lab.endswith("-" + t):
                g.write("measured-" + line)
    png = os.path.join(out, "latency-delay%g.png" % d)
    argv = [x for x in cmd if x != "--json"] + ["--no-params", "--plot", png, "--measured",
                                                 mfile]
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("mtrace sim --plot failed: %s" % r.stderr.strip()[-400:])
    return png


def plot_threads(a, out, sw, delays):
    """Mean and stdev% against thread count: the sweep's central values as
    lines with their intervals as bars (GIL solid, free-threaded dashed,
    one colour per delay), measured points."""
    raw = os.path.join(out, "raw")
    dls = sorted({r["delay_ms"] for r in sw})
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    files = []
    for i, d in enumerate(dls):
        for rt in ("GIL", "free-threaded"):
            pts = sorted((r["threads"], r["predicted"]["mean_ms"],
                          r["predicted"].get("mean_lo_ms", r["predicted"]["mean_ms"]),
                          r["predicted"].get("mean_hi_ms", r["predicted"]["mean_ms"]),
                          r["predicted"]["stdev_pct"],
                          r["predicted"].get("stdev_pct_lo", r["predicted"]["stdev_pct"]),
                          r["predicted"].get("stdev_pct_hi", r["predicted"]["stdev_pct"]))
                         for r in sw if r["delay_ms"] == d and r["runtime"] == rt)
            path = os.path.join(raw, "threads-d%g-%s.dat" % (d, rt))
            with open(path, "w") as f:
                f.writelines("%d %.6f %.6f %.6f %.4f %.4f %.4f\n" % p for p in pts)
            c = colors[i % len(colors)]
            files.append((path, "lines lw 2 dt %d lc rgb '%s'" % (1 if rt == "GIL" else 2, c),
                          "predicted %s, delay %g ms" % (rt, d), c))
    for d in delays:
        i = dls.index(d) if d in dls else 0
        pts = sorted((r["threads"], r["measured"]["mean_ms"], r["measured"]["stdev_pct"])
                     for r in sw if r["delay_ms"] == d and r["runtime"] == "GIL"
                     and r["measured"])
        path = os.path.join(raw, "threads-d%g-measured.dat" % d)
        with open(path, "w") as f:
            f.writelines("%d %.6f %.4f\n" % p for p in pts)
        if pts:
            files.append((path, "points pt 7 ps 1.5 lc rgb '%s'" % colors[i % len(colors)],
                          "measured GIL, delay %g ms" % d, None))

    def plot(col, lo, hi, mcol):
        parts = []
        for path, style, title, c in files:
            if c is None:
                parts.append("'%s' using 1:%d with %s title '%s'" % (path, mcol, style, title))
            else:
                parts.append("'%s' using 1:%d with %s title '%s'" % (path, col, style, title))
                parts.append("'%s' using 1:%d:%d:%d with yerrorbars lc rgb '%s' pt 0 notitle"
                             % (path, col, lo, hi, c))
        return "plot " + ", ".join(parts)
    png = os.path.join(out, "threads.png")
    gp = ["set terminal pngcairo size 1300,560 font 'sans,10'", "set output '%s'" % png,
          "set multiplot layout 1,2 title 'mtrace whatif: latency against client threads "
          "(lines: mtrace sim sweep, client calibrated at delay 0, bars: its interval; "
          "points: measured)'",
          "set grid", "set logscale x 2", "set xrange [0.8:25]", "set xlabel 'client threads'",
          "set xtics (1,2,4,10,20)", "set key top left font ',9'", "set ylabel 'mean latency (ms)'",
          plot(2, 3, 4, 2), "set ylabel 'stdev (% of mean)'", "unset key", plot(5, 6, 7, 3),
          "unset multiplot"]
    script = os.path.join(raw, "threads.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("gnuplot failed: %s" % r.stderr.strip()[-400:])
    return png


def calibration(out):
    """The CAL_PARAMS as mtrace sim printed them for the delay-0 sequential
    GIL row (params.txt): [{name, value, origin, note}]."""
    got = []
    path = os.path.join(out, "params.txt")
    if not os.path.exists(path):
        return got
    with open(path) as f:
        for line in f:
            m = PARAM_RE.match(line.strip())
            if m and m.group(1) in CAL_PARAMS:
                try:
                    v = float(m.group(2))
                except ValueError:
                    continue
                got.append({"name": m.group(1), "value": v, "origin": m.group(3),
                            "note": m.group(4).strip()})
    return got


def md_calibration(a, cal):
    out = ["## Calibration", "",
           "Calibration `%s`: %s.  The client's parameters as `mtrace sim` took them for the "
           "delay-0 rows (params.txt has every parameter with its origin; commands.txt every "
           "mtrace sim command):" % (a.cal_mode, a.cal_note), ""]
    out += ["- %s = %g [%s] %s" % (c["name"], c["value"], c["origin"], c["note"]) for c in cal]
    return out + [""]


# ---- the report ------------------------------------------------------------

def server_note(meas):
    if meas["sniff"]:
        return meas["sniff_note"] + "; replay's p50 request->reply at delay 0: %.1f us" % (
            meas.get("server_p50_us") or 0)
    return "the model's default server time (an assumption; not sniffed: %s)" % \
        meas["sniff_note"]


def notes(a, meas, rows):
    out = ["Measured rows: the client against `mtrace replay` (%s). Predicted rows: `mtrace sim`, "
           "calibrated from the host facts and the sequential runs only, calibration `%s`: %s; "
           "no threaded measurement is used." % (
               "pymongo, seed 000's method" if not a.client else "client `%s`" % a.client,
               a.cal_mode, a.cal_note),
           "Predicted: the central value over %s runs (seeds) and, in brackets, their 5-95 %% "
           "range; binds: the resource that limits the row (gil, cores, lock, pool or delay) "
           "and its simulated utilisation.  Error: predicted minus measured mean, in %% of the "
           "measured mean / stdev%% difference in points." % (
               rows[0]["predicted"].get("runs", "several") if rows else "several"),
           "Free-threaded rows are predictions only: the client ran on GIL CPython; "
           "`ft_slowdown` is an assumption (see params.txt)." if not a.client else
           "The model is a CPython client's: measured rows are your client's, compared with a "
           "GIL CPython client of the same sequential cost; free-threaded rows are predictions "
           "only.",
           "Server service times: %s." % server_note(meas)]
    s0, s1 = (meas["delays"][d]["rows"]["seq"] for d in (0.0, 1.0))
    if not 0.5 <= s1["p50_ms"] - s0["p50_ms"] <= 3:
        out.append("WARNING: the sequential medians at delay 1 and 0 differ by %.3f ms, not about "
                   "1 ms: does the client time the requests replay answers?"
                   % (s1["p50_ms"] - s0["p50_ms"]))
    bad = [r for r in rows if r["role"] == "predicted" and r["measured"]
           and (abs(r["error_pct"]) > 25 or abs(r["stdev_diff_pts"]) > 25)]
    if bad:
        out.append("Prediction and measurement disagree by more than 25%% (mean) or 25 points "
                   "(stdev%%) on: %s." % "; ".join(r["scenario"] for r in bad))
    return out


def build(a, out, meas, sim_rows, sweep, delays, cmds):
    host = os.path.join(out, "host.txt")
    rows = main_rows(a, meas, sim_rows, delays)
    cal = calibration(out)
    sw = sweep_rows(a, meas, sweep)
    first = "t%d" % a.thread_list[0]
    plots = [plot_latency(a, out, cmds["d%g-%s-gil" % (d, first)], d, meas) for d in delays]
    plots.append(plot_threads(a, out, sw, delays))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    seed = a.seed
    rep = {"schema": SCHEMA, "tool": "mtrace whatif (tools/whatif.sh)", "created": now,
           "trace": a.trace, "client": a.client or "default: pymongo, sim/validate_bench.py",
           "calls": a.calls, "threads": a.thread_list, "threads_calls": a.threads_calls,
           "calibrate": a.calibrate, "fitted": a.fitted,
           "calibration": {"mode": a.cal_mode, "note": a.cal_note,
                           "client_cpu": {"%g" % d: meas["delays"][d]["cpu"] for d in delays},
                           "params": cal},
           "seed": seed, "host_facts": os.path.basename(host), "commands": "commands.txt",
           "server_service_times": server_note(meas),
           "server_p50_us": meas.get("server_p50_us"),
           "replay": {"%g" % d: meas["delays"][d]["replay"] for d in delays},
           "rows": rows, "sweep": sw, "plots": [os.path.basename(p) for p in plots]}
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    nt = notes(a, meas, rows)
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shown = os.path.relpath(a.trace, top) if a.trace.startswith(top + os.sep) else a.trace
    md = ["# mtrace what-if report", "",
          "Created %s from `%s` (seed %s). Every prediction is one `mtrace sim` command "
          "(commands.txt) on host.txt and the sequential runs' figures." % (now, shown, seed), ""]
    md += md_table(HEAD, [table_cells(r) for r in rows])
    md += [""] + ["- " + n for n in nt]
    md += [""] + md_calibration(a, cal)
    md += ["", "## What-if sweep (mtrace sim)", "",
           "Calibrated from the delay-0 sequential run; each thread runs %d calls from one "
           "open connection and one server session (threads 1: one thread, %d calls).  "
           "Measured threaded rows ran one after another on one client (its pool already "
           "held connections)." % (a.threads_calls, a.threads_calls), ""]
    md += md_sweep(sw)
    md += ["", "## Plots", ""]
    md += ["![%s](%s)" % (os.path.basename(p), os.path.basename(p)) for p in plots]
    md += ["", "Latency CDFs of the %s-thread GIL row: solid lines are mtrace sim, dashed are "
           "measured.  Files: host.txt (host facts), commands.txt (every mtrace sim command), "
           "params.txt (every model parameter with its origin, delay 0's sequential GIL row), "
           "raw/ (latencies, replay logs and summaries)." % first[1:], ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md))
    nt.append("Calibration (params.txt): " + "; ".join(
        "%s = %g [%s]" % (c["name"], c["value"], c["origin"]) for c in cal))
    text = text_table(rows) + "\n\n" + "\n".join("* " + n for n in nt)
    return {"text": text, "plots": plots, "json": rep}
