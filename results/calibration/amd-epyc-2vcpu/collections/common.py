"""Shared helpers: start/stop a private redis-server on 127.0.0.1 and build keys."""

import os
import socket
import statistics
import subprocess
import tempfile
import time

import redis

REDIS_BIN = "/usr/bin/redis-server"
HOST = "127.0.0.1"


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="redsim_live21_")
        self.port = free_port()
        self.log = os.path.join(self.dir, "redis.log")
        self.proc = subprocess.Popen(
            [
                REDIS_BIN,
                "--bind",
                HOST,
                "--port",
                str(self.port),
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--logfile",
                self.log,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.pid = self.proc.pid
        with open("/tmp/live21/server.pid", "w") as f:
            f.write(f"{self.pid} {self.port} {self.dir}\n")
        for _ in range(200):
            try:
                r = redis.Redis(host=HOST, port=self.port)
                r.ping()
                r.close()
                r.connection_pool.disconnect()
                break
            except Exception:
                time.sleep(0.05)
        else:
            raise RuntimeError("server did not start")

    def conn(self):
        return redis.Redis(host=HOST, port=self.port, decode_responses=False)

    def stop(self):
        os.kill(self.pid, 15)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, 9)
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.dir])


def used_memory(c):
    return int(c.info("memory")["used_memory"])


def med(xs):
    return statistics.median(xs)


def rng(xs):
    return f"{min(xs)}..{max(xs)}"


# ---- element generators (exact sizes) ----
def fname(i):  # 10 bytes
    return b"f:%08d" % i


def val20(i):  # 20 bytes
    return b"v:%018d" % i


def val100(i):  # 100 bytes
    return b"v:%098d" % i


def member(i):  # 10 bytes, non-integer
    return b"m:%08d" % i


assert (
    len(fname(1)) == 10 and len(val20(1)) == 20 and len(val100(1)) == 100 and len(member(1)) == 10
)


def build(srv, kind, key, n, batch=1000, valf=val20, pipe_chunk=200):
    """Build a key from a *separate* connection that is closed afterwards, so that
    its query buffer does not pollute used_memory.  batch=1 -> one element per command."""
    c = srv.conn()
    p = c.pipeline(transaction=False)
    queued = 0
    for s in range(0, n, batch):
        e = min(n, s + batch)
        if kind == "hash":
            args = []
            for i in range(s, e):
                args.append(fname(i))
                args.append(valf(i))
            p.execute_command("HSET", key, *args)
        elif kind == "set":
            p.execute_command("SADD", key, *[member(i) for i in range(s, e)])
        elif kind == "intset":
            p.execute_command("SADD", key, *[str(i).encode() for i in range(s, e)])
        elif kind == "zset":
            args = []
            for i in range(s, e):
                args.append(b"%d.5" % i)
                args.append(member(i))
            p.execute_command("ZADD", key, *args)
        elif kind == "list":
            p.execute_command("RPUSH", key, *([b"foobar"] * (e - s)))
        else:
            raise ValueError(kind)
        queued += 1
        if queued >= pipe_chunk:
            p.execute()
            queued = 0
    if queued:
        p.execute()
    c.close()
    c.connection_pool.disconnect()


def quiet_used_memory(srv, want_clients=1, timeout=5.0):
    """used_memory read from a fresh connection once it is the only client, so that the
    buffers of other (closed) clients are not counted and the reading client is constant."""
    c = srv.conn()
    t0 = time.time()
    while True:
        i = c.info()
        if int(i["connected_clients"]) <= want_clients or time.time() - t0 > timeout:
            break
        time.sleep(0.01)
    i = c.info("memory")
    c.close()
    c.connection_pool.disconnect()
    return int(i["used_memory"])
