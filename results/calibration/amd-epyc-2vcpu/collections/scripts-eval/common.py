import os, socket, subprocess, tempfile, time, shutil, json

PAT = "ctime.py|warm_up|pytest|bench_s0"

def contention():
    r = subprocess.run(["pgrep", "-af", PAT], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if l.strip()]

def wait_quiet(log=print, max_s=1200, poll=10):
    """Poll every 10 s up to 20 min until pgrep finds nothing. Returns dict describing state."""
    t0 = time.time(); waited = False
    while True:
        c = contention()
        if not c:
            return {"contention": False, "waited_s": round(time.time() - t0, 1),
                    "loadavg": os.getloadavg()}
        if time.time() - t0 >= max_s:
            log(f"[wait_quiet] still contended after {max_s}s: {c}")
            return {"contention": True, "procs": c, "waited_s": round(time.time() - t0, 1),
                    "loadavg": os.getloadavg()}
        if not waited:
            log(f"[wait_quiet] waiting for: {c}")
            waited = True
        time.sleep(poll)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

class Server:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="s23redis.")
        self.proc = subprocess.Popen(
            ["/usr/bin/redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
             "--dir", self.dir, "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--logfile", os.path.join(self.dir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis
        self.r = redis.Redis(host="127.0.0.1", port=self.port)
        for _ in range(100):
            try:
                self.r.ping(); break
            except Exception:
                time.sleep(0.05)
        print(f"[server] pid={self.proc.pid} port={self.port} dir={self.dir}", flush=True)

    def stop(self):
        try: self.r.close()
        except Exception: pass
        self.proc.terminate()   # SIGTERM to our own pid only
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill(); self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        print(f"[server] stopped pid={self.proc.pid}, removed {self.dir}", flush=True)

def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        if isinstance(a, str): a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
