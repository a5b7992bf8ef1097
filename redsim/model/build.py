"""Turn a validated scenario into the kernel's flat arrays (a ``World``).

No Redis source: the wiring from a validated scenario to the kernel's arrays;
each mechanism it configures names the Redis code it follows.
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model import disk, fork, latency, preload, presets
from redsim.model import state as S
from redsim.model.call import zipf_cdf
from redsim.model.commands import _TABLE, COMMAND_IDS, DEFAULT_COUNT
from redsim.model.db import LRU_CLOCK_START
from redsim.model.eviction import EVPOOL_SIZE, time_limit
from redsim.model.histogram import LOG2_BUCKETS, N_BUCKETS
from redsim.model.memory import CLIENT_STRUCT_BYTES, STARTUP_BYTES
from redsim.model.rng import RandomStreams, server_seeds
from redsim.model.trace import parse_trace

US = 1e-6
_DIST = {"fixed": S.DIST_FIXED, "exponential": S.DIST_EXPONENTIAL,
         "uniform": S.DIST_UNIFORM, "lognormal": S.DIST_LOGNORMAL,
         "empirical": S.DIST_EMPIRICAL}
_KIND = {"closed": S.KIND_CLOSED, "open": S.KIND_OPEN, "trace": S.KIND_TRACE}


class _Empirical:
    """Collects the empirical distributions' tables into ``tb_emp_p``/``tb_emp_x``."""

    def __init__(self) -> None:
        self.p: list[float] = []
        self.x: list[float] = []

    def dist(self, d) -> tuple[int, float, float, float, float]:
        """The kernel's (kind, mean, low, high, sigma) for a scenario distribution;
        an empirical one's table is appended and its first and last point's index
        given as low and high."""
        if d.kind != "empirical":
            return _DIST[d.kind], float(d.mean), float(d.low), float(d.high), float(d.sigma)
        assert 2 <= len(d.table_p) == len(d.table_x) <= S.EMP_MAX_POINTS
        first = len(self.p)
        self.p.extend(d.table_p)
        self.x.extend(d.table_x)
        return S.DIST_EMPIRICAL, float(d.mean), float(first), float(len(self.p) - 1), 0.0

    def arrays(self) -> dict[str, np.ndarray]:
        if not self.p:
            return {"emp_p": np.zeros(1), "emp_x": np.zeros(1)}
        return {"emp_p": np.asarray(self.p, np.float64), "emp_x": np.asarray(self.x, np.float64)}


def _command_table(scenario):
    overrides = scenario.engine.cpu.commands
    n = len(_TABLE)
    shape = np.array([c.shape for c in _TABLE], np.int64)
    fixed = np.array([c.fixed_us for c in _TABLE]) * US
    per_byte = np.array([c.per_byte_us for c in _TABLE]) * US
    per_elem = np.array([c.per_element_us for c in _TABLE]) * US
    for name, cost in overrides.items():
        i = COMMAND_IDS[name.upper()]
        if cost.fixed is not None:
            fixed[i] = cost.fixed * US
        if cost.per_byte is not None:
            per_byte[i] = cost.per_byte * US
        if cost.per_element is not None:
            per_elem[i] = cost.per_element * US
    k = scenario.engine.cpu.scale
    fixed, per_byte, per_elem = fixed * k, per_byte * k, per_elem * k
    namelen = np.array([len(c.name) for c in _TABLE], np.int64)
    effect = np.array([c.effect for c in _TABLE], np.int64)
    write = np.array([1 if c.write else 0 for c in _TABLE], np.int64)
    denyoom = np.array([1 if c.denyoom else 0 for c in _TABLE], np.int64)
    assert len(namelen) == n
    return shape, fixed, per_byte, per_elem, namelen, effect, denyoom, write


def _memoryless(grp) -> bool:
    """Whether a group's sources run as one uniformized think clock
    (``clients.think_clock``): a closed loop with exponential think."""
    return grp.kind == "closed" and grp.think.kind == "exponential" and grp.think.mean > 0


def _wheel_size(groups, n_slots: list[int]) -> tuple[float, int]:
    """Bucket width (s) and bucket count of the timing wheel (``model/wheel.py``).

    The width is the mean gap between wheel events the scenario implies — each
    thinking source fires once per mean think time, an open loop at its peak
    rate — so a bucket holds about one event; the wheel spans about two mean
    think times (2^6 to 2^22 buckets; four measured no faster at 10,000
    sources), so few events wait in the heap.
    """
    rate = 0.0
    sources = 0
    for grp, n in zip(groups, n_slots, strict=True):
        if grp.kind == "open":
            rate += max([grp.rate or 0.0] + [step.rate for step in grp.profile or []])
        elif _memoryless(grp):
            rate += 1.0 / float(grp.think.mean)  # one clock, not one per source
        elif not (grp.kind == "trace" and grp.trace_timing == "recorded"):
            rate += n / max(float(grp.think.mean), 1e-6)
            sources += n
    width = min(max(1.0 / rate, 1e-7), 1.0) if rate > 0 else 1.0
    n_buckets = 1 << int(math.ceil(math.log2(min(max(2 * sources, 64), 1 << 22))))
    return width, n_buckets


def forks_possible(scenario) -> bool:
    """Whether the run can fork: save points, an AOF that may be rewritten, or events."""
    server = scenario.server
    return bool(server.save or (server.appendonly and server.auto_aof_rewrite_percentage)
                or scenario.events)


def heap_huge(scenario) -> bool:
    """Whether Redis's heap is mapped with 2 MB transparent huge pages: THP
    ``always`` on the host and ``disable-thp no`` (Redis otherwise calls
    ``prctl(PR_SET_THP_DISABLE)``; with ``madvise`` its allocator asks for none)."""
    return (scenario.host.transparent_huge_pages == "always"
            and not scenario.server.disable_thp)


def _pages(scenario, n_keys: int) -> tuple[int, int]:
    """Page size (log2) a copy-on-write fault copies and the bitmap's words.

    The bitmap covers the largest memory a fork could see: maxmemory (or,
    without one, 4 KB per key row and at least 1 GB), twice over for what
    maxmemory does not count, in pages of 32 bits a word.
    """
    shift = (fork.HUGE_PAGE_SHIFT if heap_huge(scenario) and scenario.host.thp_cow == "copy-huge"
             else fork.SMALL_PAGE_SHIFT)
    if not forks_possible(scenario):
        return shift, 1
    span = scenario.server.maxmemory or max(n_keys * 4096, 1 << 30)
    pages = (2 * span + (1 << shift) - 1) >> shift
    return shift, (pages + 31) // 32


def rdb_bytes(w: S.World) -> int:
    """What ``fork.rdb_bytes`` counts, for the keys present now (numpy)."""
    present = w.ks_cost > 0
    v = w.ks_vlen[present]
    klen = int(w.I[S.KEY_LEN])
    per = fork.RDB_KEY_OVERHEAD + klen + np.where(v >= 0, v, fork.RDB_INT_BYTES)
    ttl = int(np.count_nonzero(w.ks_xpos[present] >= 0))
    return int(per.sum()) + ttl * fork.RDB_EXPIRE_BYTES + 18


def _persistence(scenario, seed: int, F: np.ndarray, I: np.ndarray,
                 fsync: tuple[int, float, float, float, float] | None) -> None:
    """AOF, disk, fork and latency-monitor settings into the scalars."""
    server, d, host = scenario.server, scenario.disk, scenario.host
    cpu = scenario.engine.cpu
    I[S.AOF_ON] = 1 if server.appendonly else 0
    I[S.AOF_POLICY] = {"always": S.FSYNC_ALWAYS, "everysec": S.FSYNC_EVERYSEC,
                       "no": S.FSYNC_NO}[server.appendfsync]
    I[S.AOF_RW_PERC] = server.auto_aof_rewrite_percentage
    I[S.AOF_RW_MIN] = server.auto_aof_rewrite_min_size
    I[S.NO_FSYNC_RW] = 1 if server.no_appendfsync_on_rewrite else 0
    I[S.N_SAVE] = len(server.save)
    I[S.LM_THRESHOLD] = server.latency_monitor_threshold
    F[S.AOF_POSTPONE_START] = -1.0
    F[S.AOF_LAST_FSYNC] = 0.0
    F[S.AOF_BG_END] = 0.0
    F[S.C_AOF_WRITE] = cpu.aof_write * US * cpu.scale
    F[S.C_AOF_WRITE_B] = cpu.aof_write_per_byte * US * cpu.scale
    preset = presets.DISK_PRESETS[d.preset]
    if d.fsync is None:
        kind, mean, lo, hi, sig = (S.DIST_LOGNORMAL, preset.fsync_mean_s, 0.0, math.inf,
                                   preset.fsync_sigma)
    else:
        kind, mean, lo, hi, sig = fsync
    I[S.DISK_KIND] = kind
    F[S.DISK_MEAN], F[S.DISK_LOW], F[S.DISK_HIGH], F[S.DISK_SIGMA] = mean, lo, hi, sig
    F[S.DISK_BW] = d.write_bandwidth or preset.write_bandwidth
    I[S.DISK_RNG1], I[S.DISK_RNG2] = disk.disk_seeds(seed)
    per_gb = host.fork_per_gb if host.fork_per_gb is not None else (
        presets.FORK_PRESETS[host.fork].ms_per_gb * 1e-3)
    I[S.HEAP_HUGE] = 1 if heap_huge(scenario) else 0
    F[S.FORK_FIXED] = host.fork_fixed
    F[S.FORK_PER_BYTE] = per_gb / 2**30
    F[S.COW_FAULT] = host.cow_fault
    F[S.COW_COPY_B] = 1.0 / host.cow_copy_bandwidth
    F[S.CHILD_KEY_RATE] = host.child_keys_per_sec
    F[S.CHILD_END] = math.inf
    F[S.T_LAST_BGSAVE_TRY] = -math.inf


def build_world(scenario, seed: int) -> tuple[S.World, RandomStreams, dict]:
    """Allocate and fill every array for one run.

    Returns the world, the random streams that feed it, and a small dict of
    sizes the driver needs (windows, groups' names).
    """
    groups = scenario.clients
    G = len(groups)
    cpu = scenario.engine.cpu
    emp = _Empirical()
    fsync = emp.dist(scenario.disk.fsync) if scenario.disk.fsync is not None else None

    # --- connection slots, pools and request slots, group by group -------------
    pool_group, pool_max, pool_base = [], [], []
    conn_pool, conn_group = [], []
    slot_group, slot_pool = [], []
    traces = []
    g_fields: dict[str, list] = {f: [] for f in S.Groups._fields}
    mix_cmd, mix_cum, mix_keys, mix_count, mix_ttl = [], [], [], [], []
    prof_t, prof_rate = [], []
    zipf_parts: list[np.ndarray] = []
    zipf_len = 0
    tr_parts = []
    tr_len = 0
    max_pipeline = 1
    for gi, grp in enumerate(groups):
        kind = _KIND[grp.kind]
        g_fields["kind"].append(kind)
        g_fields["pipeline"].append(grp.pipeline)
        max_pipeline = max(max_pipeline, grp.pipeline)
        g_fields["processes"].append(grp.processes)
        g_fields["pool_base"].append(len(pool_group))
        for _ in range(grp.processes):
            p = len(pool_group)
            pool_group.append(gi)
            pool_max.append(grp.pool.max_size)
            pool_base.append(len(conn_pool))
            conn_pool.extend([p] * grp.pool.max_size)
            conn_group.extend([gi] * grp.pool.max_size)
        # Request slots: one per source for closed loops; a bounded free list for
        # arrivals (each process can hold max-size in flight + max-waiters waiting).
        g_fields["slot_base"].append(len(slot_group))
        recorded = kind == S.KIND_TRACE and grp.trace_timing == "recorded"
        memoryless = _memoryless(grp)
        if kind == S.KIND_OPEN or recorded:
            n_slots = min(grp.processes * (grp.pool.max_size + grp.pool.max_waiters), 2_000_000)
            slot_pool.extend([-1] * n_slots)
        elif memoryless:
            # A process never has more requests out than its pool holds plus its
            # waiters, plus one being rejected, nor more than it has threads.
            n_slots = grp.processes * min(grp.threads,
                                          grp.pool.max_size + grp.pool.max_waiters + 1)
            slot_pool.extend([-1] * n_slots)
        else:
            n_slots = grp.processes * grp.threads
            for p in range(grp.processes):
                slot_pool.extend([g_fields["pool_base"][-1] + p] * grp.threads)
        slot_group.extend([gi] * n_slots)
        g_fields["n_slots"].append(n_slots)
        for prefix, d in (("think", grp.think), ("vs", grp.value_size)):
            k, mean, lo, hi, sig = emp.dist(d)
            g_fields[f"{prefix}_kind"].append(k)
            g_fields[f"{prefix}_mean"].append(mean)
            g_fields[f"{prefix}_low"].append(lo)
            g_fields[f"{prefix}_high"].append(hi)
            g_fields[f"{prefix}_sigma"].append(sig)
        g_fields["key_size"].append(grp.key_size)
        g_fields["keys"].append(grp.keyspace.keys)
        if grp.keyspace.distribution == "zipf":
            g_fields["zipf_base"].append(zipf_len)
            part = zipf_cdf(grp.keyspace.keys, grp.keyspace.zipf_exponent)
            zipf_parts.append(part)
            zipf_len += len(part)
        else:
            g_fields["zipf_base"].append(-1)
        g_fields["mix_start"].append(len(mix_cmd))
        total = sum(m.weight for m in grp.mix)
        acc = 0.0
        for m in grp.mix:
            cid = COMMAND_IDS[m.command.upper()]
            acc += m.weight / total
            mix_cmd.append(cid)
            mix_cum.append(acc)
            mix_keys.append(m.keys)
            shape = _TABLE[cid].shape
            mix_count.append(m.count if m.count is not None else DEFAULT_COUNT.get(shape, 0))
            mix_ttl.append(int(math.ceil(m.ttl)) if m.ttl else 0)
        mix_cum[-1] = 1.0
        g_fields["mix_end"].append(len(mix_cmd))
        g_fields["prof_start"].append(len(prof_t))
        if kind == S.KIND_OPEN:
            if grp.profile:
                for step in grp.profile:
                    prof_t.append(step.at)
                    prof_rate.append(step.rate)
            else:
                prof_t.append(0.0)
                prof_rate.append(grp.rate)
        g_fields["prof_end"].append(len(prof_t))
        g_fields["trace_start"].append(tr_len)
        if kind == S.KIND_TRACE:
            tr = parse_trace(grp.trace)
            tr_parts.append(tr)
            tr_len += len(tr.cmd)
        g_fields["trace_end"].append(tr_len)
        g_fields["replay_loop"].append(1 if grp.replay == "loop" else 0)
        g_fields["recorded"].append(1 if recorded else 0)
        g_fields["idle_timeout"].append(grp.pool.idle_timeout)
        g_fields["reap_interval"].append(grp.pool.reap_interval)
        g_fields["max_waiters"].append(grp.pool.max_waiters)
        g_fields["retry_backoff"].append(grp.pool.retry_backoff)
        g_fields["start"].append(grp.start)
        g_fields["stream"].append(1 + S.STREAMS_PER_GROUP * gi)
        g_fields["prof_pos"].append(g_fields["prof_start"][-1])
        g_fields["trace_t0"].append(grp.start)
        g_fields["trace_next"].append(0)
        g_fields["free_n"].append(n_slots if (kind == S.KIND_OPEN or recorded or memoryless)
                                  else 0)
        g_fields["memoryless"].append(1 if memoryless else 0)
        g_fields["threads"].append(grp.threads)
        g_fields["write_once"].append(grp.keyspace.write_once)
        traces.append(grp)

    C = len(conn_pool)
    R = len(slot_group)
    P = len(pool_group)

    def i64(x):
        return np.asarray(x, np.int64)

    def f64(x):
        return np.asarray(x, np.float64)

    float_fields = {"think_mean", "think_low", "think_high", "think_sigma", "vs_mean",
                    "vs_low", "vs_high", "vs_sigma", "idle_timeout", "reap_interval",
                    "retry_backoff", "start", "trace_t0", "write_once"}
    gp = S.Groups(**{f: (f64(v) if f in float_fields else i64(v))
                     for f, v in g_fields.items()})

    cn = S.Conns(
        pool=i64(conn_pool), group=i64(conn_group), is_open=np.zeros(C, np.int64),
        req=np.full(C, -1, np.int64), cmds_left=np.zeros(C, np.int64),
        partial=np.zeros(C, np.int64), next_cmd=np.full(C, -1, np.int64),
        next_bytes=np.zeros(C, np.int64), next_reply=np.zeros(C, np.int64),
        next_scale=np.ones(C), next_key=np.full(C, -1, np.int64),
        next_k=np.zeros(C, np.int64), next_n=np.zeros(C, np.int64),
        next_value=np.zeros(C, np.int64), next_ttl=np.zeros(C, np.int64),
        big_first=np.zeros(C, np.int64), big_period=np.zeros(C, np.int64),
        big_n=np.zeros(C, np.int64), big_len=np.zeros(C, np.int64),
        reply_bytes=np.zeros(C, np.int64), reply_nodes=np.zeros(C, np.int64),
        qb_alloc=np.zeros(C, np.int64), qb_peak=np.zeros(C, np.int64), t_read=np.zeros(C),
        qb_room=np.zeros(C, np.int64), qb_hdr=np.zeros(C, np.int64),
        buf_usable=np.zeros(C, np.int64), buf_peak=np.zeros(C, np.int64),
        t_buf_reset=np.zeros(C), mem=np.zeros(C, np.int64), mem_info=np.zeros(C, np.int64),
        tail_room=np.zeros(C, np.int64), in_pw=np.zeros(C, np.int64),
        new=np.zeros(C, np.int64), t_arrive=np.full(C, -1.0), t_checkout=np.zeros(C),
        t_idle=np.zeros(C),
    )
    free_slots = np.empty(C, np.int64)
    for p in range(P):
        b, m = pool_base[p], pool_max[p]
        free_slots[b:b + m] = np.arange(b + m - 1, b - 1, -1)  # pop order: lowest slot first
    pl = S.Pools(
        group=i64(pool_group), max_size=i64(pool_max), n_open=np.zeros(P, np.int64),
        lifo=i64([1 if groups[g].pool.checkout == "lifo" else 0 for g in pool_group]),
        base=i64(pool_base), idle_head=np.zeros(P, np.int64), idle_n=np.zeros(P, np.int64),
        free_n=i64(pool_max), wait_head=np.full(P, -1, np.int64),
        wait_tail=np.full(P, -1, np.int64), wait_n=np.zeros(P, np.int64),
        thinking=i64([groups[g].threads for g in pool_group]),
        idle_ring=np.zeros(C, np.int64), free_slots=free_slots,
    )
    free_stack = np.arange(R, dtype=np.int64)[::-1].copy()
    for g in range(G):  # each group's free list pops its lowest slot first
        b, n = gp.slot_base[g], gp.n_slots[g]
        free_stack[b:b + n] = np.arange(b + n - 1, b - 1, -1)
    rq = S.Reqs(
        group=i64(slot_group), pool=i64(slot_pool), t_issue=np.zeros(R),
        next=np.full(R, -1, np.int64), trace_pos=np.zeros(R, np.int64),
        active=np.ones(R, np.int64), free_stack=free_stack, pass_t0=np.full(R, -1.0),
    )
    shape, fixed, per_byte, per_elem, namelen, effect, denyoom, write = _command_table(scenario)
    if tr_parts:
        tr = {f: np.concatenate([getattr(t, f) for t in tr_parts])
              for f in ("cmd", "req_bytes", "reply_bytes", "elems", "value", "time", "big")}
    else:
        tr = {f: np.zeros(1, np.float64 if f == "time" else np.int64)
              for f in ("cmd", "req_bytes", "reply_bytes", "elems", "value", "time")}
        tr["big"] = np.zeros((1, 4), np.int64)
    tb = S.Tables(
        cmd_shape=shape, cmd_fixed=fixed, cmd_per_byte=per_byte, cmd_per_elem=per_elem,
        cmd_namelen=namelen, cmd_effect=effect, cmd_denyoom=denyoom, cmd_write=write,
        save_secs=i64([sec for sec, _ in scenario.server.save] or [0]),
        save_changes=i64([ch for _, ch in scenario.server.save] or [0]),
        mix_cmd=i64(mix_cmd),
        mix_cum=f64(mix_cum),
        mix_keys=i64(mix_keys), mix_count=i64(mix_count), mix_ttl=i64(mix_ttl),
        prof_t=f64(prof_t or [0.0]), prof_rate=f64(prof_rate or [0.0]),
        tr_cmd=tr["cmd"], tr_req_bytes=tr["req_bytes"], tr_reply_bytes=tr["reply_bytes"],
        tr_elems=tr["elems"], tr_value=tr["value"], tr_time=tr["time"],
        **{f"tr_big_{f}": tr["big"][:, j].copy()
           for j, f in enumerate(("first", "period", "n", "len"))},
        zipf_cdf=np.concatenate(zipf_parts) if zipf_parts else np.ones(1),
        **emp.arrays(),
    )
    # Key rows: every group's key ids, then rows for write-once keys.
    n_hot = max(grp.keyspace.keys for grp in groups)
    plans = preload.plan(scenario, seed)
    once_pre, once_spare, once_low = preload.write_once_rows(plans, scenario, C, max_pipeline)
    n_keys = n_hot + once_pre + once_spare
    # Every row starts absent; flatten fills the key table from these broadcasts.
    ks = S.Keys(**{f: np.broadcast_to(np.asarray(v), (n_keys,))
                   for f, v in S.KEY_ROW_ABSENT.items()},
                dense=np.zeros(n_keys, np.int64), xdense=np.zeros(n_keys, np.int64),
                free=np.zeros(max(n_keys - n_hot, 1), np.int64))
    ep = S.EvPool(key=np.full(EVPOOL_SIZE, -1, np.int64), idle=np.zeros(EVPOOL_SIZE))
    cap = R + C + 4 * G + 16
    hp = S.Heap(t=np.zeros(cap), seq=np.zeros(cap, np.int64), kind=np.zeros(cap, np.int64),
                id=np.zeros(cap, np.int64))
    wh_width, n_buckets = _wheel_size(groups, g_fields["n_slots"])
    wh = S.Wheel(head=np.full(n_buckets, -1, np.int64), t=np.zeros(cap),
                 seq=np.zeros(cap, np.int64), kind=np.zeros(cap, np.int64),
                 id=np.zeros(cap, np.int64), next=np.arange(1, cap + 1, dtype=np.int64))
    wh.next[-1] = -1  # the free list: every entry, in order
    lcap = max(C, 1)  # a connection has at most one arrival and one reply pending
    ln = S.Lines(t=np.zeros((S.N_LINES, lcap)), seq=np.zeros((S.N_LINES, lcap), np.int64),
                 id=np.zeros((S.N_LINES, lcap), np.int64), head=np.zeros(S.N_LINES, np.int64),
                 n=np.zeros(S.N_LINES, np.int64))

    # One iteration can draw a few numbers per ready connection and per command,
    # and one poll a few per source; a buffer twice that keeps refills between them.
    # (start_sources draws one think time per timed source in one go; memoryless
    # groups draw nothing per source.)
    timed = sum(int(gp.n_slots[g]) for g in range(G)
                if gp.kind[g] != S.KIND_OPEN and not gp.recorded[g] and not gp.memoryless[g])
    need = 8 * (C * max_pipeline + timed) + 4096
    size = 1 << max(16, int(math.ceil(math.log2(need))))
    streams = RandomStreams(seed, 1 + S.STREAMS_PER_GROUP * G, size)
    rg = S.Rng(buf=streams.buf, pos=streams.pos)

    dt = scenario.sample_interval
    n_win = int(math.ceil(scenario.duration / dt - 1e-9)) + 1  # + overflow window
    wf = np.zeros((S.N_WF, n_win))
    for row in (S.W_P50, S.W_P90, S.W_P99, S.W_P999):
        wf[row] = np.nan
    rc = S.Rec(wf=wf, wi=np.zeros((S.N_WI, n_win), np.int64),
               hist=np.zeros(N_BUCKETS, np.int64), whist=np.zeros(N_BUCKETS, np.int64),
               evhist=np.zeros(LOG2_BUCKETS, np.int64), tofree=np.zeros(LOG2_BUCKETS, np.int64),
               fsync=np.zeros(LOG2_BUCKETS, np.int64),
               forks=np.zeros(S.MAX_FORK_REC * S.N_FORK_FIELDS),
               passes=np.zeros((S.MAX_PASS_REC if any(g.kind == "trace" for g in groups) else 1)
                               * S.N_PASS_FIELDS),
               lm_t=np.zeros(latency.N_EVENTS * latency.LATENCY_TS_LEN),
               lm_ms=np.zeros(latency.N_EVENTS * latency.LATENCY_TS_LEN, np.int64),
               lm_n=np.zeros(latency.N_EVENTS, np.int64),
               lm_max=np.zeros(latency.N_EVENTS, np.int64))
    page_shift, pg_words = _pages(scenario, n_keys)
    pg = S.Pages(cow=np.zeros(pg_words, np.int64))

    F, I = S.new_scalars()
    server = scenario.server
    F[S.T_END] = scenario.duration
    F[S.DT] = dt
    F[S.WARMUP] = scenario.warmup
    F[S.RTT_HALF] = scenario.network.rtt / 2.0
    for idx, v in ((S.C_ITER, cpu.iteration), (S.C_WAKE, cpu.wakeup), (S.C_READ, cpu.read),
                   (S.C_READ_B, cpu.read_per_byte), (S.C_WRITE, cpu.write),
                   (S.C_WRITE_B, cpu.write_per_byte), (S.C_ACCEPT, cpu.accept),
                   (S.C_CLOSE, cpu.close), (S.C_CRON, cpu.cron),
                   (S.C_CRON_CLIENT, cpu.clients_cron_per_client),
                   (S.C_EV_CALL, cpu.eviction_call), (S.C_EV_CHECK, cpu.eviction_check),
                   (S.C_EV_SAMPLE, cpu.eviction_sample), (S.C_EV_DELETE, cpu.eviction_delete),
                   (S.C_EXP_SAMPLE, cpu.expire_sample), (S.C_EXP_DELETE, cpu.expire_delete)):
        F[idx] = v * US * cpu.scale
    hz = min(max(int(server.hz), 1), 500)
    I[S.HZ_CONF] = hz
    I[S.HZ] = hz
    I[S.DYN_HZ] = 1 if server.dynamic_hz else 0
    F[S.CRON_WHEN] = 1.0 / hz
    F[S.T_NEXT_SNAP] = dt
    I[S.BATCHING] = 1 if scenario.engine.reply_batching else 0
    I[S.REDIS_62] = 1 if scenario.redis_version == "6.2" else 0
    I[S.REDIS_72] = 1 if scenario.redis_version == "7.2" else 0
    I[S.DIST_EXP] = 1 if cpu.distribution == "exponential" else 0
    I[S.N_WIN] = n_win
    I[S.MAXCLIENTS] = server.maxclients
    I[S.PHASE] = S.PH_BEFORE_SLEEP
    I[S.N_CONNS] = C
    I[S.N_POOLS] = P
    I[S.N_GROUPS] = G
    I[S.HEAP_CAP] = cap
    I[S.RNG_SIZE] = size
    version = scenario.redis_version
    I[S.MEM_STARTUP] = STARTUP_BYTES[version]
    I[S.CLIENT_STRUCT] = CLIENT_STRUCT_BYTES[version]
    I[S.MAXMEMORY] = server.maxmemory
    I[S.Q16] = 1 if scenario.engine.allocator_quantum == 16 else 0
    # Shared integers are off when keys need their own LRU/LFU field (§2.7).
    I[S.SHARED_INTS] = 0 if (server.maxmemory > 0 and ("lru" in server.maxmemory_policy
                                                       or "lfu" in server.maxmemory_policy)) else 1
    I[S.EV_POLICY] = S.POLICIES.index(server.maxmemory_policy)
    I[S.EV_SAMPLES] = server.maxmemory_samples
    F[S.EV_TIME_LIMIT] = time_limit(server.maxmemory_eviction_tenacity)
    I[S.LAZY_EVICTION] = 1 if server.lazyfree_lazy_eviction else 0
    I[S.KS_ONCE_LO] = n_hot
    I[S.KS_FREE_LOW] = once_low
    I[S.LFU_LOG_FACTOR] = server.lfu_log_factor
    I[S.LFU_DECAY_TIME] = server.lfu_decay_time
    I[S.KS_RNG1], I[S.KS_RNG2] = server_seeds(seed)
    I[S.LRU_CLOCK] = LRU_CLOCK_START
    I[S.EXP_EFFORT] = server.active_expire_effort - 1
    F[S.EXP_LAST_FAST] = -1.0
    I[S.WH_MASK] = n_buckets - 1
    I[S.WH_FREE] = 0
    F[S.WH_INV] = 1.0 / wh_width

    I[S.PAGE_SHIFT] = page_shift
    I[S.PG_WORDS] = pg_words
    I[S.KEY_LEN] = groups[0].key_size
    _persistence(scenario, seed, F, I, fsync)

    w = S.flatten(F, I, ready=np.zeros(max(C, 1), np.int64), pw=np.zeros(max(C, 1), np.int64),
                  cn=cn, rq=rq, pl=pl, gp=gp, tb=tb, ks=ks, ep=ep, hp=hp, wh=wh, ln=ln, rg=rg,
                  pg=pg, rc=rc)
    preload.apply(w, plans, scenario, seed, n_hot)
    if scenario.server.appendonly:
        # The AOF the server started from holds the preloaded dataset (its base).
        I[S.AOF_SIZE] = I[S.AOF_BASE] = rdb_bytes(w)
    return w, streams, {"n_windows": n_win - 1, "groups": [g.name for g in groups]}
