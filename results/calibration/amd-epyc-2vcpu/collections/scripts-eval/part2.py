"""Part 2/3: service window while a Lua script is busy (busy-reply-threshold 100 ms)."""
import json, socket, select, time, statistics, sys
from common import Server, wait_quiet, resp

pc = time.perf_counter
N_SIMPLE = 43_100_000
S_SIMPLE = "local i=0 while i<tonumber(ARGV[1]) do i=i+1 end return i"  # not used (see below)
S_LOOP = "local i=0 while i<%d do i=i+1 end return i"
S_CALL = "local i=0 while i<%d do redis.call('PING') i=i+1 end return i"
CAP_MS = 2000.0
TRIALS = 5

def conn(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

PING = resp("PING")  # *1\r\n$4\r\nPING\r\n  (14 bytes)

def trial(port, script, nB=1, b_start=150.0, c_at=None, spin=False):
    A = conn(port); Bs = [conn(port) for _ in range(nB)]; C = conn(port) if c_at is not None else None
    for s in Bs + ([C] if C else []):   # warm the connections (outside the timed window)
        s.sendall(PING); assert s.recv(100) == b"+PONG\r\n"
    req = resp("EVAL", script, "0")
    pings = []              # dicts: conn, seq, t_send, t_reply, reply
    outstanding = {}        # sock -> ping dict
    bufs = {}
    names = {A: "A"}; names.update({b: f"B{i+1}" for i, b in enumerate(Bs)})
    if C: names[C] = "C"
    a_reply = None; a_t = None; b_started = False; c_sent = False
    t0 = pc(); A.sendall(req)
    def now(): return (pc() - t0) * 1000.0
    def send_ping(s, label):
        p = {"conn": label, "t_send": now(), "t_reply": None, "reply": None}
        s.sendall(PING); outstanding[s] = p; pings.append(p)
    while True:
        t = now()
        if C and not c_sent and t >= c_at:
            send_ping(C, "C"); c_sent = True
        if not b_started and t >= b_start and a_t is None:
            for b in Bs: send_ping(b, names[b])
            b_started = True
        pending = []
        if C and not c_sent: pending.append(c_at)
        if not b_started and a_t is None: pending.append(b_start)
        timeout = max(0.0, (min(pending) - now()) / 1000.0) if pending else 0.05
        if spin: timeout = 0.0   # busy-poll client (no idle wake-up latency)
        socks = [A] + Bs + ([C] if C else [])
        rd, _, _ = select.select(socks, [], [], timeout)
        for s in rd:
            data = s.recv(65536); tr = now()
            if not data: raise RuntimeError("conn closed " + names[s])
            bufs[s] = bufs.get(s, b"") + data
            while b"\r\n" in bufs[s]:
                line, bufs[s] = bufs[s].split(b"\r\n", 1)
                if s is A:
                    a_reply = line.decode(); a_t = tr
                else:
                    p = outstanding.pop(s)
                    p["t_reply"] = tr; p["reply"] = line.decode()[:5]
                    p["after_A"] = a_t is not None
                    if s is not C and a_t is None and tr < CAP_MS:
                        send_ping(s, names[s])
        t = now()
        if a_t is not None and not outstanding and (not C or c_sent):
            break
        if t > CAP_MS + 5000:
            raise RuntimeError("trial overran")
    for s in socks: s.close()
    return {"a_reply": a_reply, "a_t": a_t, "pings": pings}

def pct(v, q):
    v = sorted(v); 
    if not v: return None
    k = (len(v) - 1) * q; f = int(k); c = min(f + 1, len(v) - 1)
    return v[f] + (v[c] - v[f]) * (k - f)

def dist(v):
    return {"n": len(v), "min": min(v) if v else None, "p10": pct(v, .1), "median": pct(v, .5),
            "p90": pct(v, .9), "max": max(v) if v else None}

def analyse(tr, b_start=150.0):
    a_t = tr["a_t"]
    bp = [p for p in tr["pings"] if p["conn"].startswith("B")]
    busy = [p for p in bp if p["reply"] == "-BUSY" and b_start <= p["t_reply"] <= a_t]
    rtts = [p["t_reply"] - p["t_send"] for p in busy]
    first = {}
    for p in bp:
        first.setdefault(p["conn"], p)
    # gaps between successive BUSY replies (per connection)
    gaps = []
    for cname in sorted(set(p["conn"] for p in busy)):
        ts = [p["t_reply"] for p in busy if p["conn"] == cname]
        gaps += [b - a for a, b in zip(ts, ts[1:])]
    span = a_t - min(p["t_send"] for p in bp) if bp else None
    res = {"a_t_ms": a_t, "a_reply": tr["a_reply"], "n_busy": len(busy),
           "n_busy_per_conn": {c: sum(1 for p in busy if p["conn"] == c) for c in sorted(set(p["conn"] for p in bp))},
           "n_pong_after": sum(1 for p in bp if p["reply"] == "+PONG"),
           "rtt": dist(rtts), "gap": dist(gaps),
           "replies_per_ms": len(busy) / span if span else None, "span_ms": span,
           "first_ping": {c: {"t_send": f["t_send"], "t_reply": f["t_reply"], "reply": f["reply"]} for c, f in first.items()}}
    # hook windows: cluster all BUSY replies (all B conns) separated by > 0.1 ms
    ev = sorted((p["t_reply"], p["conn"]) for p in busy)
    wins = []
    for t, c in ev:
        if wins and t - wins[-1]["end"] <= 0.1:
            wins[-1]["end"] = t; wins[-1]["n"] += 1; wins[-1]["conns"][c] = wins[-1]["conns"].get(c, 0) + 1
        else:
            wins.append({"start": t, "end": t, "n": 1, "conns": {c: 1}})
    inner = wins[1:-1] if len(wins) > 2 else wins
    nconn = len(set(p["conn"] for p in bp))
    res["windows"] = {"count": len(wins),
                      "replies_per_window": dist([w["n"] for w in inner]),
                      "replies_per_window_hist": {str(k): sum(1 for w in inner if w["n"] == k) for k in sorted(set(w["n"] for w in inner))},
                      "frac_windows_all_conns_served": (sum(1 for w in inner if len(w["conns"]) == nconn) / len(inner)) if inner else None,
                      "period_ms": dist([b["start"] - a["start"] for a, b in zip(wins, wins[1:])]),
                      "duration_ms": dist([w["end"] - w["start"] for w in inner])}
    cp = [p for p in tr["pings"] if p["conn"] == "C"]
    if cp: res["C_ping"] = {"t_send": cp[0]["t_send"], "t_reply": cp[0]["t_reply"], "reply": cp[0]["reply"]}
    bc = sorted(set(p["conn"] for p in busy))
    if len(bc) == 2:
        t1 = [p["t_reply"] for p in busy if p["conn"] == bc[0]]
        t2 = [p["t_reply"] for p in busy if p["conn"] == bc[1]]
        import bisect
        d = []
        for x in t1:
            i = bisect.bisect_left(t2, x); cands = [t2[j] for j in (i - 1, i) if 0 <= j < len(t2)]
            d.append(min(abs(x - y) for y in cands))
        res["pair_dt"] = dist(d)
        res["pair_frac_lt_0.05ms"] = sum(1 for x in d if x < 0.05) / len(d)
        res["pair_frac_lt_0.1ms"] = sum(1 for x in d if x < 0.1) / len(d)
    return res

def main():
    srv = Server(); r = srv.r; port = srv.port
    out = {"port": port, "N_simple": N_SIMPLE, "cap_ms": CAP_MS, "sets": {}}
    log = lambda *a: print(*a, flush=True)
    try:
        r.config_set("busy-reply-threshold", 100)
        r.config_set("slowlog-log-slower-than", 10000)
        # calibration: timing of the simple loop and of the redis.call loop (below threshold)
        cal = {}
        q = wait_quiet(log)
        cal["quiet"] = q
        for name, tmpl, n in [("loop", S_LOOP, 10_000_000), ("call", S_CALL, 40_000)]:
            ts = []
            for _ in range(5):
                r.slowlog_reset(); r.config_set("slowlog-log-slower-than", 0)
                t = pc(); r.eval(tmpl % n, 0); el = (pc() - t) * 1000
                sl = r.slowlog_get(1)[0]["duration"] / 1000.0
                r.config_set("slowlog-log-slower-than", 10000)
                ts.append({"client_ms": el, "server_ms": sl})
            med = statistics.median(x["server_ms"] for x in ts)
            cal[name] = {"N": n, "runs": ts, "median_server_ms": med, "ns_per_iter": med * 1e6 / n}
            log("cal", name, cal[name]["ns_per_iter"], "ns/iter")
        n_call = int(round(300.0e6 / cal["call"]["ns_per_iter"], -3))
        cal["N_call_chosen"] = n_call
        out["calibration"] = cal
        log("N_call =", n_call)
        sets = [
            ("loop_1B", S_LOOP % N_SIMPLE, 1, None),
            ("loop_2B", S_LOOP % N_SIMPLE, 2, None),
            ("call_1B", S_CALL % n_call, 1, None),
            ("loop_1B_plusC20", S_LOOP % N_SIMPLE, 1, 20.0),
        ]
        for sname, script, nB, c_at in sets:
            trials = []
            for i in range(TRIALS):
                q = wait_quiet(log)
                r.slowlog_reset()
                time.sleep(0.2)
                tr = trial(port, script, nB=nB, c_at=c_at)
                sl = r.slowlog_get(10)
                ev = [e for e in sl if (e["command"] if isinstance(e["command"], bytes) else e["command"].encode()).startswith(b"EVAL")]
                tr["server_duration_ms"] = ev[0]["duration"] / 1000.0 if ev else None
                tr["analysis"] = analyse(tr); tr["quiet"] = q
                trials.append(tr)
                a = tr["analysis"]
                log(sname, i, f"A={a['a_t_ms']:.1f} srv={tr['server_duration_ms']} busy={a['n_busy']} "
                    f"rtt_med={a['rtt']['median']} gap_med={a['gap']['median']} rpm={a['replies_per_ms']} "
                    f"first={a['first_ping']} C={a.get('C_ping')} pair={a.get('pair_frac_lt_0.05ms')}")
            out["sets"][sname] = {"script": script, "nB": nB, "c_at": c_at, "trials": trials}
            json.dump(out, open("part2_raw.json", "w"), indent=1)
    finally:
        srv.stop()
    json.dump(out, open("part2_raw.json", "w"), indent=1)

if __name__ == "__main__":
    main()
