"""Part 1: memory per element (used_memory delta and MEMORY USAGE SAMPLES 0)."""

import json

from common import *

REPS = 3
CASES = [
    # name, kind, n, batch
    ("a hash 100 (batch)", "hash", 100, 1000),
    ("b hash 1000 (batch)", "hash", 1000, 1000),
    ("b' hash 1000 (1/cmd)", "hash", 1000, 1),
    ("c hash 512 (1/cmd)", "hash", 512, 1),
    ("c hash 513 (1/cmd)", "hash", 513, 1),
    ("d set 512 ints (1/cmd)", "intset", 512, 1),
    ("d set 513 ints (1/cmd)", "intset", 513, 1),
    ("d set 1000 str (batch)", "set", 1000, 1000),
    ("e zset 128 (1/cmd)", "zset", 128, 1),
    ("e zset 129 (1/cmd)", "zset", 129, 1),
    ("e zset 1000 (batch)", "zset", 1000, 1000),
    ("e' zset 1000 (1/cmd)", "zset", 1000, 1),
    ("f list 1M foobar (batch)", "list", 1_000_000, 1000),
]


def main():
    srv = Server()
    out = {"pid": srv.pid, "port": srv.port, "cases": []}
    try:
        m = srv.conn()
        out["version"] = m.info("server")["redis_version"]
        cfg = m.config_get("*max*listpack*")
        cfg.update(m.config_get("set-max-intset-entries"))
        cfg.update(m.config_get("list-max-listpack-size"))
        out["config"] = {str(k): str(v) for k, v in cfg.items()}
        import os

        if os.environ.get("LT_OFF"):
            m.config_set("latency-tracking", "no")
        out["latency_tracking"] = m.config_get("latency-tracking")
        m.set("dummy", "x")  # so the db dict table already exists
        # noise: baseline read twice with nothing in between
        m.close()
        m.connection_pool.disconnect()
        out["noise"] = [quiet_used_memory(srv) - quiet_used_memory(srv) for _ in range(5)]
        m = srv.conn()
        for name, kind, n, batch in CASES:
            reps = []
            for _r in range(REPS):
                key = "k"
                m.delete(key)
                m.close()
                m.connection_pool.disconnect()
                b0 = quiet_used_memory(srv)
                build(srv, kind, key, n, batch)
                b1 = quiet_used_memory(srv)
                m = srv.conn()
                enc = m.object("encoding", key)
                enc = enc.decode() if isinstance(enc, bytes) else enc
                mu = m.execute_command("MEMORY", "USAGE", key, "SAMPLES", 0)
                ln = {
                    "hash": "HLEN",
                    "set": "SCARD",
                    "intset": "SCARD",
                    "zset": "ZCARD",
                    "list": "LLEN",
                }[kind]
                cnt = m.execute_command(ln, key)
                m.delete(key)
                m.close()
                m.connection_pool.disconnect()
                b2 = quiet_used_memory(srv)
                m = srv.conn()
                reps.append(
                    {
                        "delta": b1 - b0,
                        "memory_usage": mu,
                        "encoding": enc,
                        "len": cnt,
                        "after_del_minus_base": b2 - b0,
                    }
                )
                print(name, reps[-1], flush=True)
            out["cases"].append({"name": name, "kind": kind, "n": n, "batch": batch, "reps": reps})
    finally:
        srv.stop()
    json.dump(
        out,
        open("/tmp/live21/mem_raw%s.json" % ("_lt_off" if os.environ.get("LT_OFF") else ""), "w"),
        indent=1,
    )


if __name__ == "__main__":
    main()
