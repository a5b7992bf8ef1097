"""How many 'foobar' entries fit in one quicklist node (list-max-listpack-size -2)?
Push one element at a time and watch MEMORY USAGE SAMPLES 0 for the per-node jumps."""

import json

from common import *

srv = Server()
try:
    m = srv.conn()
    p = m.pipeline(transaction=False)
    N = 3500
    for _i in range(N):
        p.rpush("L", "foobar")
        p.execute_command("MEMORY", "USAGE", "L", "SAMPLES", 0)
    res = p.execute()
    mu = res[1::2]
    d = [mu[i] - mu[i - 1] for i in range(1, N)]
    jumps = [(i + 1, d[i - 1]) for i in range(1, N) if d[i - 1] != 8]
    print("first MU", mu[0], "enc", m.object("encoding", "L"))
    print("non-8 steps (len_after_push, delta):", jumps[:20])
    m.delete("L")
    build(srv, "list", "L", 1_000_000, 1000)
    print("1M MU", m.execute_command("MEMORY", "USAGE", "L", "SAMPLES", 0))
    json.dump({"mu": mu, "jumps": jumps}, open("/tmp/live21/list_probe.json", "w"))
finally:
    srv.stop()
