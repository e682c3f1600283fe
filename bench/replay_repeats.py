"""replay_repeats.py RUNS... -- medians of bench/replay_repeats.sh runs against the
issue's targets (p50 <= +1 % + 10 us, p99 <= +5 % + 50 us)."""
import sys, re, statistics, collections
rows = collections.defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r'(\d+) delay (\S+) conns (\d+) rt (\d) pmqos (\S+) (.*)', line)
        if not m: continue
        kv = dict(x.split('=') for x in m.group(6).split())
        p50 = float(kv.get('.achieved.p50_ms', 'nan')); p99 = float(kv.get('.achieved.p99_ms', 'nan'))
        rows[(float(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5))].append((p50, p99))
print("| delay | conns | scheduling | PM QoS | p50 (each run) | p99 (each run) | p99 median | target p50 / p99 |")
print("|---|---|---|---|---|---|---|---|")
for (d, c, rt, pm), v in sorted(rows.items()):
    t50 = d * 1.01 + 0.010; t99 = d * 1.05 + 0.050
    p50s = [x[0] for x in v]; p99s = [x[1] for x in v]
    med50 = statistics.median(p50s); med = statistics.median(p99s)
    met = "met" if med <= t99 and med50 <= t50 else "over"
    nmet = sum(1 for a, b in v if a <= t50 and b <= t99)
    print(f"| {d:g} ms | {c} | {'--rt-prio 1' if rt else 'normal'} | {'off' if pm == 'off' else pm + ' us'} | {min(p50s):.4f}-{max(p50s):.4f} | {', '.join(f'{x:.3f}' for x in p99s)} | {med:.3f} ({met}; {nmet}/{len(v)} runs meet both) | {t50:.3f} / {t99:.3f} |")
