"""Part 1: fixed main-thread cost of trivial scripts via INFO commandstats."""
import json, subprocess, statistics, time, sys
from common import Server, wait_quiet, resp

REPS = 5
N = 500000
VAL = "v" * 100
LIB = "#!lua name=lib\nredis.register_function('f', function(keys, args) return 1 end)"
S_RET1 = "return 1"
S_GET = "return redis.call('GET', KEYS[1])"
S_SET = "return redis.call('SET', KEYS[1], ARGV[1])"
S_GET_NR = "redis.call('GET', KEYS[1])"          # no return -> nil reply
S_SET_NR = "redis.call('SET', KEYS[1], ARGV[1])"

def main():
    srv = Server(); r = srv.r; out = {"port": srv.port, "cases": {}}
    try:
        r.set("k100", VAL)
        sha1 = r.script_load(S_RET1)
        shaG = r.script_load(S_GET); shaS = r.script_load(S_SET)
        shaGn = r.script_load(S_GET_NR); shaSn = r.script_load(S_SET_NR)
        r.function_load(LIB)
        cases = [
            ("a_eval_return1", "eval", ["EVAL", S_RET1, "0"]),
            ("b_evalsha_return1", "evalsha", ["EVALSHA", sha1, "0"]),
            ("c_fcall_f", "fcall", ["FCALL", "f", "0"]),
            ("d_evalsha_get", "evalsha", ["EVALSHA", shaG, "1", "k100"]),
            ("e_evalsha_set", "evalsha", ["EVALSHA", shaS, "1", "k100", VAL]),
            ("d2_evalsha_get_noreturn", "evalsha", ["EVALSHA", shaGn, "1", "k100"]),
            ("e2_evalsha_set_noreturn", "evalsha", ["EVALSHA", shaSn, "1", "k100", VAL]),
            ("f_ping", "ping", ["PING"]),
            ("f_get", "get", ["GET", "k100"]),
            ("f_set", "set", ["SET", "k100", VAL]),
        ]
        for name, stat, cmd in cases:
            # wire bytes: request (RESP array of bulk strings) and actual reply bytes via raw socket
            import socket
            s = socket.create_connection(("127.0.0.1", srv.port)); req = resp(*cmd)
            s.sendall(req); time.sleep(0.05); rep = s.recv(65536); s.close()
            c = {"cmd": cmd, "stat": stat, "req_bytes": len(req), "reply_bytes": len(rep),
                 "reply": rep.decode(errors="replace")[:60], "reps": []}
            for i in range(REPS):
                q = wait_quiet()
                r.config_resetstat()
                bcmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(srv.port),
                        "-c", "50", "-P", "16", "-n", str(N), "-q"] + cmd
                t0 = time.time()
                p = subprocess.run(bcmd, capture_output=True, text=True)
                el = time.time() - t0
                cs = r.info("commandstats")
                st = cs.get("cmdstat_" + stat, {})
                rep_ = {"calls": st.get("calls"), "usec": st.get("usec"),
                        "usec_per_call_info": st.get("usec_per_call"),
                        "usec_per_call": st["usec"] / st["calls"] if st.get("calls") else None,
                        "failed_calls": st.get("failed_calls"), "rejected_calls": st.get("rejected_calls"),
                        "all_stats": {k: v for k, v in cs.items()},
                        "bench_out": p.stdout.strip().splitlines()[-1:] if p.stdout else p.stderr[-300:],
                        "wall_s": round(el, 2), "quiet": q}
                c["reps"].append(rep_)
                print(name, i, rep_["usec_per_call"], rep_["bench_out"], q["contention"], flush=True)
            v = [x["usec_per_call"] for x in c["reps"]]
            c["median"] = statistics.median(v); c["min"] = min(v); c["max"] = max(v)
            out["cases"][name] = c
            json.dump(out, open("part1_raw.json", "w"), indent=1)
    finally:
        srv.stop()
    json.dump(out, open("part1_raw.json", "w"), indent=1)

if __name__ == "__main__":
    main()
