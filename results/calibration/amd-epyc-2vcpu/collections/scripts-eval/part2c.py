"""Part 2c: same as loop_1B / loop_2B but the client busy-polls (select timeout 0) instead of sleeping in select."""
import json, time
from common import Server, wait_quiet
from part2 import trial, analyse, S_LOOP, N_SIMPLE, TRIALS

def main():
    srv = Server(); r = srv.r; out = {"port": srv.port, "sets": {}}
    log = lambda *a: print(*a, flush=True)
    try:
        r.config_set("busy-reply-threshold", 100); r.config_set("slowlog-log-slower-than", 10000)
        for sname, nB in (("loop_1B_spin", 1), ("loop_2B_spin", 2)):
            trials = []
            for i in range(TRIALS):
                q = wait_quiet(log); r.slowlog_reset(); time.sleep(0.2)
                tr = trial(srv.port, S_LOOP % N_SIMPLE, nB=nB, spin=True)
                ev = r.slowlog_get(10); tr["server_duration_ms"] = ev[0]["duration"] / 1000 if ev else None
                tr["analysis"] = analyse(tr); tr["quiet"] = q; trials.append(tr)
                a = tr["analysis"]; w = a["windows"]
                log(sname, i, f"A={a['a_t_ms']:.1f} busy={a['n_busy']} rtt_med={a['rtt']['median']:.4f} rpm={a['replies_per_ms']:.2f} "
                    f"win={w['count']} hist={w['replies_per_window_hist']} period={w['period_ms']['median']:.4f} dur={w['duration_ms']['median']:.4f}")
            out["sets"][sname] = {"script": S_LOOP % N_SIMPLE, "nB": nB, "spin": True, "trials": trials}
            json.dump(out, open("part2c_raw.json", "w"), indent=1)
    finally:
        srv.stop()
    json.dump(out, open("part2c_raw.json", "w"), indent=1)

if __name__ == "__main__":
    main()
