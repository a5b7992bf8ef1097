"""Part 2: main-thread time of DEL vs UNLINK on big keys, bio drain of UNLINK,
and PING latency of another client during DEL."""

import json
import os
import threading
import time

from common import *

REPS = int(os.environ.get("REPS", "3"))
CASES = [
    # name, kind, n, valf, allocs_per_elem
    ("a hash 1M f10/v20", "hash", 1_000_000, val20),
    ("b set 1M m10", "set", 1_000_000, None),
    ("c zset 1M m10 score x.5", "zset", 1_000_000, None),
    ("d list 1M foobar", "list", 1_000_000, None),
    ("e hash 3M f10/v100", "hash", 3_000_000, val100),
]
only = os.environ.get("ONLY")
if only:
    CASES = [c for c in CASES if c[0][0] in only]


def cmdstat(m, name):
    s = m.info("commandstats").get("cmdstat_" + name)
    return s


def slowlog_for(m, name):
    out = []
    for e in m.slowlog_get(50000):
        cmd = e.get("command") or b""
        if isinstance(cmd, bytes):
            cmd = cmd.decode(errors="replace")
        if cmd.upper().startswith(name.upper() + " "):
            out.append(e["duration"])
    return out


def ping_loop(srv, stop, lat):
    c = srv.conn()
    c.ping()
    while not stop.is_set():
        t = time.perf_counter()
        c.ping()
        lat.append((t, time.perf_counter() - t))
    c.close()
    c.connection_pool.disconnect()


def run_one(srv, kind, n, valf, cmd, with_ping=False):
    m = srv.conn()
    m.config_set("slowlog-log-slower-than", 10000)
    m.config_set("slowlog-max-len", 50000)
    m.delete("big")
    m.slowlog_reset()
    m.close()
    m.connection_pool.disconnect()
    base = quiet_used_memory(srv)
    tb = time.perf_counter()
    build(srv, kind, "big", n, 1000, valf=valf if valf else val20, pipe_chunk=50)
    build_s = time.perf_counter() - tb
    m = srv.conn()
    # let any incremental rehash of the big dict finish (serverCron activerehashing) so
    # that every rep frees the same structure
    time.sleep(1.0)
    full = used_memory(m)
    enc = m.object("encoding", "big")
    enc = enc.decode() if isinstance(enc, bytes) else enc
    length = m.execute_command(
        {"hash": "HLEN", "set": "SCARD", "zset": "ZCARD", "list": "LLEN"}[kind], "big"
    )
    m.config_set("slowlog-log-slower-than", 0)
    m.config_resetstat()
    m.slowlog_reset()
    full = used_memory(m)
    stop = threading.Event()
    lat = []
    th = None
    if with_ping:
        th = threading.Thread(target=ping_loop, args=(srv, stop, lat))
        th.start()
        time.sleep(0.2)
    t0 = time.perf_counter()
    r = m.execute_command(cmd, "big")
    t1 = time.perf_counter()
    res = {
        "cmd": cmd,
        "encoding": enc,
        "len": length,
        "build_s": round(build_s, 2),
        "base_used": base,
        "full_used": full,
        "key_bytes": full - base,
        "wall_us": round((t1 - t0) * 1e6, 1),
        "reply": r,
    }
    poll = []
    if cmd == "UNLINK":
        # poll every ~2 ms until pending==0 and memory back to baseline
        tol = 256 * 1024
        tend = time.perf_counter() + 60
        while time.perf_counter() < tend:
            tp = time.perf_counter()
            i = m.info("memory")
            um = int(i["used_memory"])
            pend = int(i["lazyfree_pending_objects"])
            if not poll:
                res["lazyfreed_objects_at_first_poll"] = i.get("lazyfreed_objects")
            poll.append((round((tp - t1) * 1e3, 3), um, pend))
            if pend == 0 and um <= base + tol:
                break
            time.sleep(0.002)
        res["poll_n"] = len(poll)
        pend0 = next((p[0] for p in poll if p[2] == 0), None)
        back = next((p[0] for p in poll if p[1] <= base + tol), None)
        res["ms_until_pending0"] = pend0
        res["ms_until_base"] = back
        res["first_poll"] = poll[0]
        # shape: fraction of the key's bytes already freed at each poll
        kb = full - base
        res["freed_frac_trace"] = [(p[0], round((full - p[1]) / kb, 3), p[2]) for p in poll]
    if with_ping:
        time.sleep(0.2)
        stop.set()
        th.join()
        # pings that overlapped the DEL
        ov = [l for (t, l) in lat if t < t1 and t + l > t0]
        res["ping_n"] = len(lat)
        res["ping_max_us"] = round(max(l for _, l in lat) * 1e6, 1)
        res["ping_overlap_max_us"] = round(max(ov) * 1e6, 1) if ov else None
        res["ping_median_us"] = round(sorted(l for _, l in lat)[len(lat) // 2] * 1e6, 1)
    st = cmdstat(m, cmd.lower())
    res["cmdstat"] = st
    res["cmdstat_usec"] = int(st["usec"]) if st else None
    res["slowlog_us"] = slowlog_for(m, cmd)
    allinfo = m.info("everything")
    res["lazyfreed_objects"] = allinfo.get("lazyfreed_objects")
    res["after_used_minus_base"] = used_memory(m) - base
    m.config_set("slowlog-log-slower-than", 10000)
    m.close()
    m.connection_pool.disconnect()
    return res


def main():
    srv = Server()
    out = {"pid": srv.pid, "port": srv.port, "runs": []}
    print("server pid", srv.pid, "port", srv.port, flush=True)
    try:
        m = srv.conn()
        out["version"] = m.info("server")["redis_version"]
        out["config"] = {
            k: m.config_get(k)[k]
            for k in [
                "lazyfree-lazy-user-del",
                "latency-tracking",
                "activerehashing",
                "hz",
                "list-max-listpack-size",
            ]
        }
        m.set("dummy", "x")
        m.close()
        m.connection_pool.disconnect()
        for name, kind, n, valf in CASES:
            plan = [("DEL", False)] * REPS + [("UNLINK", False)] * REPS
            if name.startswith("a"):
                plan += [("DEL", True)] * REPS
            for cmd, wp in plan:
                r = run_one(srv, kind, n, valf, cmd, wp)
                r["case"] = name
                out["runs"].append(r)
                short = {k: v for k, v in r.items() if k not in ("freed_frac_trace", "cmdstat")}
                print(name, short, flush=True)
                json.dump(
                    out,
                    open("/tmp/live21/free_raw%s.json" % (("_" + only) if only else ""), "w"),
                    indent=1,
                )
    finally:
        srv.stop()
        print("stopped", srv.pid, flush=True)


if __name__ == "__main__":
    main()
