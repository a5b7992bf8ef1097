"""Turn mem_raw*.json / free_raw.json into results tables (markdown on stdout)."""

import json
import statistics

med = statistics.median


def fmt(x, nd=1):
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}"


def mr(xs, nd=1):
    return f"{fmt(med(xs), nd)} ({fmt(min(xs), nd)}–{fmt(max(xs), nd)})"


out = []
P = out.append

# ---------------- memory ----------------
for fn, title in [
    ("mem_raw_lt_off.json", "latency-tracking no (clean first rep)"),
    ("mem_raw.json", "default config (latency-tracking yes)"),
]:
    d = json.load(open("/tmp/live21/" + fn))
    P(f"\n### Memory, {title} — `{fn}`\n")
    P(
        "| case | n | how built | encoding | used_memory delta, raw per rep (B) | median delta (B) | median B/elem | MEMORY USAGE SAMPLES 0, raw (B) | median MU B/elem |"
    )
    P("|---|---|---|---|---|---|---|---|---|")
    for c in d["cases"]:
        ds = [r["delta"] for r in c["reps"]]
        mus = [r["memory_usage"] for r in c["reps"]]
        encs = sorted(set(r["encoding"] for r in c["reps"]))
        how = "1 elem/cmd" if c["batch"] == 1 else f"{min(c['batch'], c['n'])} elems/cmd"
        P(
            f"| {c['name']} | {c['n']:,} | {how} | {','.join(encs)} | {', '.join(map(str, ds))} | {fmt(med(ds))} | {med(ds) / c['n']:.2f} | {', '.join(map(str, mus))} | {med(mus) / c['n']:.2f} |"
        )

# ---------------- free ----------------
d = json.load(open("/tmp/live21/free_raw.json"))
ALLOCS = {
    "a": 3 * 1_000_000,
    "b": 2 * 1_000_000,
    "c": 3 * 1_000_000,
    "d": 2 * 979,
    "e": 3 * 3_000_000,
}
cases = []
for r in d["runs"]:
    if r["case"] not in cases:
        cases.append(r["case"])

P("\n### DEL vs UNLINK — main-thread time (5 reps each)\n")
P(
    "| case | encoding | key bytes (used_memory) | cmd | client wall µs, raw | wall median (range) | commandstats usec, raw | cmdstat median (range) | SLOWLOG µs, raw | allocs freed | ns/alloc (median cmdstat) | ns/element |"
)
P("|---|---|---|---|---|---|---|---|---|---|---|---|")
for cs in cases:
    for cmd, wp in [("DEL", False), ("UNLINK", False), ("DEL", True)]:
        rs = [
            r
            for r in d["runs"]
            if r["case"] == cs and r["cmd"] == cmd and bool(r.get("ping_n")) == wp
        ]
        if not rs:
            continue
        n = rs[0]["len"]
        walls = [r["wall_us"] for r in rs]
        us = [r["cmdstat_usec"] for r in rs]
        sl = [r["slowlog_us"][0] if r["slowlog_us"] else None for r in rs]
        kb = med([r["key_bytes"] for r in rs])
        al = ALLOCS[cs[0]]
        label = cmd + (" (+PING thread)" if wp else "")
        nsa = (
            ("%.1f" % (med(us) * 1000 / al))
            if cmd == "DEL"
            else ("%.3f (O(1) on main thread)" % (med(us) * 1000 / al))
        )
        P(
            f"| {cs} | {rs[0]['encoding']} | {fmt(int(kb))} | {label} | {', '.join(fmt(w) for w in walls)} | {mr(walls)} | {', '.join(map(str, us))} | {mr(us, 0)} | {', '.join(map(str, sl))} | {al:,} | {nsa} | {med(us) * 1000 / n:.2f} |"
        )

P(
    "\n### UNLINK — background (bio lazyfree thread) drain, polled every ~2 ms after UNLINK returned\n"
)
P(
    "| case | ms until lazyfree_pending_objects==0, raw | median (range) | ms until used_memory ≤ baseline+256KB, raw | median (range) | bio ns/alloc (median) | freed at 25% / 50% / 75% of drain time | largest single-poll drop (% of key) | lazyfreed_objects after |"
)
P("|---|---|---|---|---|---|---|---|---|")
for cs in cases:
    rs = [r for r in d["runs"] if r["case"] == cs and r["cmd"] == "UNLINK"]
    p0 = [r["ms_until_pending0"] for r in rs]
    bk = [r["ms_until_base"] for r in rs]
    shapes = []
    jumps = []
    for r in rs:
        tr = r["freed_frac_trace"]
        T = r["ms_until_base"]
        if len(tr) < 4:
            shapes.append("done in ≤1 poll")
        else:

            def at(f):
                best = max((p for p in tr if p[0] <= f * T), key=lambda p: p[0])
                return best[1]

            shapes.append(f"{at(0.25):.2f}/{at(0.5):.2f}/{at(0.75):.2f}")
        j = 0
        for a, b in zip(tr, tr[1:], strict=False):
            j = max(j, b[1] - a[1])
        jumps.append(round(100 * j, 1))
    al = ALLOCS[cs[0]]
    lz = sorted(set(r["lazyfreed_objects"] for r in rs))
    P(
        f"| {cs} | {', '.join(fmt(x, 1) for x in p0)} | {mr(p0, 1)} | {', '.join(fmt(x, 1) for x in bk)} | {mr(bk, 1)} | {med(bk) * 1e6 / al:.1f} | {'; '.join(shapes)} | {', '.join(map(str, jumps))} | {lz} |"
    )

P("\n### Another client's PING during DEL of case (a)\n")
P(
    "| rep | DEL cmdstat usec | DEL wall µs | pings sent | median PING µs | max PING µs (overlapping the DEL) |"
)
P("|---|---|---|---|---|---|")
rs = [r for r in d["runs"] if r.get("ping_n")]
for i, r in enumerate(rs):
    P(
        f"| {i + 1} | {r['cmdstat_usec']:,} | {fmt(r['wall_us'])} | {r['ping_n']} | {r['ping_median_us']} | {fmt(r['ping_overlap_max_us'])} |"
    )
P(
    f"| **median** | {fmt(med([r['cmdstat_usec'] for r in rs]))} | {fmt(med([r['wall_us'] for r in rs]))} | | {med([r['ping_median_us'] for r in rs])} | {fmt(med([r['ping_overlap_max_us'] for r in rs]))} |"
)
print("\n".join(out))
