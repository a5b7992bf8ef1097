import json, statistics
from part2 import dist
P1 = json.load(open("part1_raw.json")); P2 = json.load(open("part2_raw.json"))
P2b = json.load(open("part2b_raw.json")); P2c = json.load(open("part2c_raw.json"))
P2r1 = json.load(open("part2b_raw_run1_slowlog0cal.json"))
L = []; w = L.append
f2 = lambda x: "-" if x is None else f"{x:.2f}"
f3 = lambda x: "-" if x is None else f"{x:.3f}"

w("# Redis 7.0.15 calibration measurements (2 vCPU, loopback)\n")
w("Server: `/usr/bin/redis-server` 7.0.15 (jemalloc), own instance on 127.0.0.1:<free port>, `--save \"\" --appendonly no`, throw-away `--dir` (mktemp -d), stopped by PID (SIGTERM, wait) and dir removed after each script. Client: Python 3.11 (raw sockets / redis-py 8.1.0), redis-benchmark 7.0.15.\n")
w("Contention: before every repetition/trial the scripts poll `pgrep -f \"ctime.py|warm_up|pytest|bench_s0\"` every 10 s (≤20 min) and start only when nothing matches. Every measurement recorded below started with no match (`quiet.contention=false` in every raw record; some trials waited up to 600 s). The check is made at the start of each repetition only, so something that started *during* a ~0.3 s trial cannot be excluded (see outliers noted below).\n")

# ---------------- Part 1
w("## Part 1 — fixed main-thread cost (INFO commandstats usec_per_call)\n")
w("Method: `CONFIG RESETSTAT`, then `redis-benchmark -h 127.0.0.1 -p PORT -c 50 -P 16 -n 500000 -q <command...>`, then `INFO commandstats`; usec_per_call = usec/calls of the outer command (computed from the integer `usec` total, so finer than INFO's 2-decimal field). 5 repetitions each. This is the time inside `call()` on the main thread (command proc incl. Lua and inner redis.call), **excluding** socket read/parse and reply write. Key `k100` holds a 100-byte string. Wire bytes = RESP2 request (array of bulk strings, as sent by redis-benchmark/redis-py) and the exact reply bytes read back from the server.\n")
w("| case | command | req bytes | reply | reply bytes | usec/call median | range (min–max) | 5 reps | inner cmd usec/call |")
w("|---|---|---|---|---|---|---|---|---|")
for k, c in P1["cases"].items():
    v = [x["usec_per_call"] for x in c["reps"]]
    cmd = " ".join(a if len(a) < 45 else a[:6] + "…(%dB)" % len(a) for a in c["cmd"])
    inner = ""
    st = c["reps"][0]["all_stats"]
    if c["stat"] == "evalsha" and ("cmdstat_get" in st or "cmdstat_set" in st):
        ins = [statistics.median(r["all_stats"][n]["usec"] / r["all_stats"][n]["calls"] for r in c["reps"]) for n in ("cmdstat_get", "cmdstat_set") if n in st]
        inner = f"{ins[0]:.3f}"
    rep = c["reply"].replace("\r\n", "\\r\\n")[:14]
    w(f"| {k} | `{cmd}` | {c['req_bytes']} | `{rep}` | {c['reply_bytes']} | **{statistics.median(v):.3f}** | {min(v):.3f}–{max(v):.3f} | {', '.join(f'{x:.3f}' for x in v)} | {inner} |")
w("")
w("Scripts: (a) `EVAL \"return 1\" 0`; (b) `SCRIPT LOAD \"return 1\"` → sha e0e1f9fa…, `EVALSHA <sha> 0`; (c) `FUNCTION LOAD \"#!lua name=lib\\nredis.register_function('f', function(keys, args) return 1 end)\"`, `FCALL f 0`; (d) `return redis.call('GET', KEYS[1])` as `EVALSHA <sha> 1 k100`; (e) `return redis.call('SET', KEYS[1], ARGV[1])` as `EVALSHA <sha> 1 k100 <100 B>`; d2/e2 = same without `return` (reply nil `$-1`); (f) `PING`, `GET k100`, `SET k100 <100 B>` for reference. redis-benchmark throughput lines (client and server share the 2 vCPUs, so not a server-capacity figure) are in part1_raw.json (`bench_out`), e.g. PING ≈1.3–1.4 M rps, EVALSHA return-1 ≈0.84 M rps, FCALL ≈0.99 M rps, EVAL ≈0.6 M rps.\n")
w("Derived: script-call fixed overhead ≈ EVALSHA(0 keys) 0.50 µs, EVAL 0.53 µs (+~0.03 µs for SHA1 of the body + dict lookup), FCALL 0.39 µs. A script with one key and one redis.call: GET ≈1.03 µs (inner GET itself 0.09 µs, vs 0.07 µs standalone), SET ≈1.37 µs (inner SET 0.16 µs vs 0.12 µs standalone); i.e. going from 0 keys/no call to 1 key + 1 redis.call adds ≈0.5 µs beyond the inner command's own time. Returning the value vs not returning changes little (≤0.08 µs).\n")

# ---------------- Part 2
def set_rows(sets, names):
    w("| set | trial | script dur (server, ms) | A reply at (ms) | -BUSY replies 150ms→end | per conn | replies/ms | RTT min | p10 | median | p90 | max | hook-window period median (ms) | replies per window (hist) |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for src, s in names:
        for i, t in enumerate(sets[src][s]["trials"]):
            a = t["analysis"]; r = a["rtt"]; wn = a["windows"]
            lab = s + (" (N=683k)" if src == "p2" and s == "call_1B" else (" (N=908k)" if s == "call_1B" else ""))
            w(f"| {lab} | {i} | {f2(t['server_duration_ms'])} | {f2(a['a_t_ms'])} | {a['n_busy']} | {','.join(str(v) for v in a['n_busy_per_conn'].values())} | {f2(a['replies_per_ms'])} | {f3(r['min'])} | {f3(r['p10'])} | {f3(r['median'])} | {f3(r['p90'])} | {f3(r['max'])} | {f3(wn['period_ms']['median'])} | {wn['replies_per_window_hist']} |")

def pooled(trials):
    rt = []; n = []; rpm = []; dur = []
    for t in trials:
        bp = [p for p in t["pings"] if p["conn"].startswith("B") and p["reply"] == "-BUSY" and 150 <= p["t_reply"] <= t["a_t"]]
        rt += [p["t_reply"] - p["t_send"] for p in bp]; n.append(t["analysis"]["n_busy"]); rpm.append(t["analysis"]["replies_per_ms"]); dur.append(t["server_duration_ms"])
    return dist(rt), n, rpm, dur

S = {"p2": P2["sets"], "p2b": P2b["sets"], "p2c": P2c["sets"], "r1": P2r1["sets"]}
w("## Part 2 — service window while a script is busy (`CONFIG SET busy-reply-threshold 100`)\n")
w(f"Method (part2.py): connection A sends on a raw socket `EVAL \"local i=0 while i<43100000 do i=i+1 end return i\" 0` (RESP, t=0 = just before A's sendall). Connection(s) B (already connected and warmed with one PING) send `PING` (`*1\\r\\n$4\\r\\nPING\\r\\n`, 14 B) at 150 ms, and on each reply immediately the next one, until A's reply arrives (hard stop 2 s). One single-threaded Python loop (select.select, TCP_NODELAY) serves A and all B's; times are time.perf_counter ms after A's send. 'RTT' = reply time − send time of the PINGs answered with -BUSY between 150 ms and A's reply. 'replies/ms' = -BUSY replies / (A reply time − first B send). Hook windows = groups of replies separated by ≤0.1 ms. Script duration = SLOWLOG duration of the EVAL. Every PING sent during the script got `-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.` (the last PING of each B, sent just before the script ended, got +PONG after it). Calibration (below threshold, no clients): empty loop {P2['calibration']['loop']['ns_per_iter']:.2f} ns/iteration; redis.call('PING') loop {P2b['call_calibration']['points'][2]['ns_per_iter']:.0f} ns/iteration (N=200k, slowlog threshold 10 ms).\n")

w("### Summary (pooled over 5 trials)\n")
w("| set | what | script dur ms (5 trials) | -BUSY replies per trial | replies/ms per trial | RTT pooled: n | min | p10 | median | p90 | max |")
w("|---|---|---|---|---|---|---|---|---|---|---|")
desc = {"loop_1B": "empty loop, 1 back-to-back B", "loop_2B": "empty loop, 2 back-to-back B (B1+B2 combined)",
        "call_1B": "redis.call('PING') loop N=908000, 1 B", "loop_1B_plusC20": "empty loop, 1 B + one PING on C at 20 ms",
        "loop_1B_spin": "empty loop, 1 B, client busy-polls", "loop_2B_spin": "empty loop, 2 B, client busy-polls",
        "call_1B_N683k": "redis.call('PING') loop N=683000 (~215 ms), 1 B"}
for src, s, lab in [("p2", "loop_1B", "loop_1B"), ("p2", "loop_2B", "loop_2B"), ("p2", "loop_1B_plusC20", "loop_1B_plusC20"),
                    ("p2b", "call_1B", "call_1B"), ("p2", "call_1B", "call_1B_N683k"), ("p2c", "loop_1B_spin", "loop_1B_spin"), ("p2c", "loop_2B_spin", "loop_2B_spin")]:
    d, n, rpm, dur = pooled(S[src][s]["trials"])
    w(f"| {lab} | {desc[lab]} | {', '.join(f'{x:.0f}' for x in dur)} | {', '.join(map(str, n))} | {', '.join(f'{x:.2f}' for x in rpm)} | {d['n']} | {f3(d['min'])} | {f3(d['p10'])} | {f3(d['median'])} | {f3(d['p90'])} | {f3(d['max'])} |")
w("")
b0 = [t["server_duration_ms"] for t in P2b["sets"]["loop_0B"]["trials"]]; c0 = [t["server_duration_ms"] for t in P2b["sets"]["call_0B"]["trials"]]
w(f"No-client baselines (same scripts, nobody else connected, part2b.py): empty loop N=43.1M: {', '.join(f'{x:.0f}' for x in b0)} ms; redis.call loop N=908000: {', '.join(f'{x:.0f}' for x in c0)} ms. Run-to-run variation of the script itself (≈296–335 ms) is larger than any slowdown caused by serving the B connections, so the per-window cost cannot be resolved from total durations (2 B: 335–357 ms vs 1 B: 305–332 ms vs none 296–335 ms).\n")

w("### Per trial\n")
set_rows(S, [("p2", "loop_1B"), ("p2", "loop_2B"), ("p2", "loop_1B_plusC20"), ("p2b", "call_1B"), ("p2", "call_1B"), ("p2c", "loop_1B_spin"), ("p2c", "loop_2B_spin")])
w("\n(the second `call_1B` block is the first run with N=683000, script ≈215 ms; it was sized with a calibration inflated by `slowlog-log-slower-than 0`, which also logs every inner redis.call — ≈440 vs ≈310 ns/iteration. The N=908000 run is the valid ~300 ms one: 278–290 ms.)\n")

# two B
w("### Two B connections: served in the same window?\n")
w("| set | trial | frac of B1 replies with a B2 reply within 0.05 ms | within 0.1 ms | median |B1−B2| (ms) | windows serving both |")
w("|---|---|---|---|---|---|")
for src, s in [("p2", "loop_2B"), ("p2c", "loop_2B_spin")]:
    for i, t in enumerate(S[src][s]["trials"]):
        a = t["analysis"]
        w(f"| {s} | {i} | {a['pair_frac_lt_0.05ms']:.3f} | {a['pair_frac_lt_0.1ms']:.3f} | {a['pair_dt']['median']:.4f} | {a['windows']['frac_windows_all_conns_served']:.3f} |")
w("")

# ---------------- Part 3
w("## Part 3 — the held PING under the 100 ms threshold\n")
w("`loop_1B_plusC20`: a third connection C sends one PING at ~20 ms (before the threshold, so it is held unread); B starts at 150 ms as before. Also listed: the first B PING (sent at 150 ms, after the threshold) in every set.\n")
w("| trial | C PING sent (ms) | C reply at (ms) | reply | C reply − 100 ms | script dur (ms) |")
w("|---|---|---|---|---|---|")
for i, t in enumerate(P2["sets"]["loop_1B_plusC20"]["trials"]):
    c = t["analysis"]["C_ping"]
    w(f"| {i} | {c['t_send']:.2f} | {c['t_reply']:.3f} | {c['reply']} | {c['t_reply'] - 100:.3f} | {t['server_duration_ms']:.1f} |")
w("")
w("| set | first B PING sent (ms) → reply at (ms) per trial [RTT] |")
w("|---|---|")
for src, s in [("p2", "loop_1B"), ("p2", "loop_2B"), ("p2", "loop_1B_plusC20"), ("p2b", "call_1B"), ("p2", "call_1B"), ("p2c", "loop_1B_spin"), ("p2c", "loop_2B_spin")]:
    cells = []
    for t in S[src][s]["trials"]:
        fp = t["analysis"]["first_ping"]
        cells.append("; ".join(f"{k} {v['t_send']:.2f}→{v['t_reply']:.2f} [{v['t_reply'] - v['t_send']:.2f}]" for k, v in fp.items()))
    w(f"| {s}{' (N=683k)' if src == 'r1' or (src == 'p2' and s == 'call_1B') else ''} | {' / '.join(cells)} |")
w("")
L.append(open("interpretation.md").read())
open("results.md", "w").write("\n".join(L) + "\n")
print("\n".join(L))
