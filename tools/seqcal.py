"""seqcal.py -- scenario lines that calibrate mtrace sim from a client's own
sequential runs (docs/sim-model.md, "Calibration"): the client CPU per call
and its variation, the cross-core figure, the cold-cache charge.  Shared by
tools/whatif.py; the same lines as sim/validate_report.py writes.

Each function takes the rows of one sequential run or of several
repetitions of it: dicts as sim/validate_bench.py prints them ("mean_ms",
"stdev_pct", "cpu_us", "cpu_cv", "xcore_cpu_us"); a figure missing from
any row leaves its lines out."""
import statistics


def _mean(rows, key):
    return statistics.mean(r[key] for r in rows)


def _have(rows, key):
    return bool(rows) and all(r.get(key) is not None for r in rows)


def cpu_lines(seq0):
    """calibrate.* lines of the calibration section: the sequential mean and
    stdev%, the client CPU per call (-> py_call_us) and its cv (-> py_cv).
    Only the first two when the rows have no cpu_us."""
    out = ["calibrate.seq_mean_ms = %.5f" % _mean(seq0, "mean_ms"),
           "calibrate.seq_stdev_pct = %.3f" % _mean(seq0, "stdev_pct")]
    if _have(seq0, "cpu_us"):
        out.append("calibrate.seq_cpu_us = %.3f" % _mean(seq0, "cpu_us"))
        if _have(seq0, "cpu_cv"):
            out.append("calibrate.seq_cpu_cv = %.4f" % _mean(seq0, "cpu_cv"))
    return out


def xcore_line(seq0, src):
    """gil_xcore_cpu_us from the delay-0 sequential client's --xcore figure
    (alternating cores minus one core), or [] when not measured."""
    if not _have(seq0, "xcore_cpu_us"):
        return []
    return ["gil_xcore_cpu_us = %.3f [calibrated] %s: client CPU per call with consecutive "
            "calls on alternating cores minus on one core (validate_bench.py --xcore)"
            % (max(0.0, _mean(seq0, "xcore_cpu_us")), src)]


def cold_lines(seq0, seq1, src):
    """py_cold_*: the same client's sequential runs at delay 0 and 1 ms.
    The time per call in which the client runs no Python (mean less CPU per
    call) is the ramp's start (delay 0) and end (delay 1); the CPU per call
    the delay-1 run adds is the charge.  [] when a run lacks cpu_us or the
    delay-1 run does not wait longer."""
    if not (_have(seq0, "cpu_us") and _have(seq1, "cpu_us")):
        return []
    c0, c1 = _mean(seq0, "cpu_us"), _mean(seq1, "cpu_us")
    a0 = _mean(seq0, "mean_ms") * 1000 - c0
    a1 = _mean(seq1, "mean_ms") * 1000 - c1
    if a1 <= a0:
        return []
    return ["py_cold_cpu_us = %.3f [calibrated] %s: client CPU per call at delay 1 (%.1f) "
            "minus at delay 0 (%.1f)" % (max(0.0, c1 - c0), src, c1, c0),
            "py_cold_lo_us = %.3f [calibrated] %s: delay 0, mean less CPU per call" % (a0, src),
            "py_cold_hi_us = %.3f [calibrated] %s: delay 1, mean less CPU per call" % (a1, src)]
