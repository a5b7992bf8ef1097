"""Scripts: ``EVAL``, ``EVALSHA`` and ``FCALL`` that run for a while, and the
``-BUSY`` replies other clients get once one runs past ``busy-reply-threshold``.

Follows ``src/script_lua.c:luaCallFunction`` (a count hook every 100,000 Lua
VM instructions, ``luaMaskCountHook``), ``src/script.c:scriptInterrupt`` (past
the threshold: ``SCRIPT_TIMEDOUT``, the caller protected, then
``processEventsWhileBlocked`` at every later hook),
``src/networking.c:processEventsWhileBlocked`` (up to 4 ``aeProcessEvents``
iterations without waiting, stopping at the first that processed nothing; no
time events: no ``serverCron``, no active expire, no eviction timer) and
``src/server.c:processCommand`` (while the script is timed out, every command
but the ``ALLOW_BUSY`` ones is answered ``-BUSY`` and counted as a rejected
call; eviction is skipped). Research notes: docs/research/issue-21-collections.md §5.

A script's run time is the mix entry's ``duration`` (drawn when the command is
parsed, on the group's stream), on top of the command's fixed cost; nothing
else is served while it runs up to the threshold. Past it, the main thread
alternates: ``engine.cpu.lua-hook`` of the script (the wall time of 100,000 Lua
instructions), then the blocked event passes (``event_loop.blocked_iteration``),
until the script's time is spent; then its reply is queued and the event-loop
iteration it interrupted goes on with its time events.

Measured on the 2-vCPU AMD EPYC VM (Debian's Redis 7.0.15,
results/calibration/amd-epyc-2vcpu/collections/reads-keys-eval.md): with
``busy-reply-threshold 100`` a 300 ms script held a PING sent at 13-18 ms
until 100.3-100.6 ms, then answered it ``-BUSY``; later PINGs were answered
within 0.2-0.5 ms; ``cmdstat_ping`` counted them as ``rejected_calls``. A
client sending PING back to back while a bare Lua loop ran past the threshold
was answered every 0.24-0.28 ms (``engine.cpu.lua-hook`` 260 µs plus the
pass); two such clients were answered in the same pass (99.8 % of the time);
with ``redis.call('PING')`` in the loop, every 4.5 ms
(results/calibration/amd-epyc-2vcpu/collections/scripts.md).

Deviations: a script touches no key (its ``redis.call`` work is in its
duration), and its run time is not scaled by ``engine.cpu.scale`` (it is a
time, not a table cost). The hook comes every ``lua-hook`` seconds of the
script whatever it does; a script spending its time inside one slow
``redis.call`` (a KEYS, a DEL of a big key) is never interrupted in Redis,
which a longer ``lua-hook`` stands for. ``SCRIPT KILL`` / ``FUNCTION KILL``
and the ``ALLOW_BUSY`` commands (AUTH, MULTI, HELLO, ...) are not in the
command table, so every command read meanwhile gets ``-BUSY``. ``whileBlockedCron``
(active defrag at hz pace) does not run. With ``io-threads-do-reads`` the
commands the I/O threads parsed in the script's batch are answered ``-BUSY``
at the threshold (Redis runs them after the script). A ``-BUSY`` command counts
in ``total_commands_processed`` as an ``-OOM`` one does (Redis counts neither;
``cmdstat_*`` has them as ``rejected_calls``).
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import (
    BUSY_THRESHOLD,
    SCRIPT_CONN,
    SCRIPT_LEFT,
    SCRIPT_REPLY,
    STAT_BUSY,
    WI_BUSY,
    T,
)
from redsim.observe import groups
from redsim.observe import metrics as M
from redsim.observe.bins import count

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("F", "BUSY_THRESHOLD", "f8", "s", "config",
     "busy-reply-threshold (lua-time-limit): a script past it lets others in with -BUSY, s; "
     "0 = never"),
    ("F", "LUA_HOOK", "f8", "s", "config",
     "main-thread time between two busy checks of a script (100,000 Lua instructions), s "
     "(engine.cpu.lua-hook)"),
    ("I", "SCRIPT_CONN", "i8", "-", "state",
     "the connection whose script is past the threshold (SCRIPT_TIMEDOUT), or -1"),
    ("F", "SCRIPT_LEFT", "f8", "s", "state", "that script's run time still to come, s"),
    ("I", "SCRIPT_REPLY", "i8", "B", "state", "that script's reply, held until it ends"),
    ("I", "SCRIPT_STEP", "i8", "-", "state",
     "where a blocked pass resumes: 0 = the script's next slice, 2i + 1 = event iteration "
     "i's beforeSleep, 2i + 2 = its poll"),
    ("I", "STAT_BUSY", "i8", "-", "counter",
     "commands answered -BUSY since start (rejected_calls while a script was timed out)"),
    ("gp", "busy", "i8", "-", "counter", "the group's commands answered -BUSY"),
    ("wi", "WI_BUSY", "i8", "-", "count", "commands answered -BUSY in the window"),
    ("tb", "cmd_script", "i8", "-", "config", "1 for a command that runs a script"),
    ("tb", "mix_script_kind", "i8", "-", "config",
     "each mix row's script duration distribution (rng DIST_*)"),
    ("tb", "mix_script_mean", "f8", "s", "config", "... its mean, s"),
    ("tb", "mix_script_low", "f8", "s", "config", "... its low (or first mixture row)"),
    ("tb", "mix_script_high", "f8", "s", "config", "... its high (or last mixture row)"),
    ("tb", "mix_script_sigma", "f8", "-", "config", "... its log-space sigma"),
    ("cn", "next_script", "f8", "s", "state",
     "the generated command's script run time, s; 0 = not a script"),
)


RESULTS = (
    M.Metric("busy_rejected", "-", M.SUM, "commands refused with -BUSY",
             value=M.counter("STAT_BUSY")),
    M.Column(470, "busy_rejected_per_sec", "1/s", "commands refused with -BUSY per second",
             M.rate("WI_BUSY")),
)
"""The summary keys and time-series columns this module's figures make
(``observe/metrics.py``)."""

# The -BUSY error (src/server.c: shared.slowevalerr; FCALL's says FUNCTION KILL,
# one byte longer, not distinguished).
BUSY_REPLY_BYTES = len("-BUSY Redis is busy running a script. You can only call "
                       "SCRIPT KILL or SHUTDOWN NOSAVE.\r\n")


@leaf
def times_out(w, c):
    """Whether connection c's script, just parsed, runs past busy-reply-threshold."""
    th = w.F[BUSY_THRESHOLD]
    return th > 0.0 and w.cn_next_script[c] > th


@leaf
def time_out(w, c):
    """``scriptInterrupt`` at the threshold: connection c's script becomes the
    timed-out one; its reply is held until it ends. Returns the run time left
    past the threshold, s (the caller charged all of it; this much is not yet)."""
    F = w.F
    I = w.I
    left = w.cn_next_script[c] - F[BUSY_THRESHOLD]
    I[SCRIPT_CONN] = c
    F[SCRIPT_LEFT] = left
    I[SCRIPT_REPLY] = w.cn_next_reply[c]
    w.cn_next_reply[c] = 0
    return left


@leaf
def refuse(w, c):
    """``processCommand`` while a script is timed out: connection c's command is
    answered -BUSY (a rejected call, no ``call()``)."""
    I = w.I
    w.cn_next_reply[c] = BUSY_REPLY_BYTES
    I[STAT_BUSY] += 1
    g = w.rq_group[w.cn_req[c]]
    w.gp_busy[g] += 1
    groups.failed(w, g, w.F[T])
    count(w, WI_BUSY, w.F[T], 1)


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """``busy-reply-threshold``, the hook interval, the script commands and each mix
    row's duration distribution (the rows in ``clients.configure``'s order)."""
    import numpy as np

    from redsim.model import state as S
    from redsim.model.commands import _TABLE
    from redsim.model.rng import DIST_FIXED

    sc = b.scenario
    b.F[S.BUSY_THRESHOLD] = sc.server.busy_reply_threshold / 1000.0
    b.F[S.LUA_HOOK] = sc.engine.cpu.lua_hook * 1e-6
    b.I[S.SCRIPT_CONN] = -1
    rows: list[tuple] = []
    for grp in sc.clients:
        for m in grp.mix:
            rows.append((DIST_FIXED, 0.0, 0.0, 0.0, 0.0) if m.duration is None
                        else b.dist(m.duration))
    kind, mean, low, high, sigma = (list(col) for col in zip(*rows, strict=True))
    b.fill("tb", cmd_script=np.array([1 if c.script else 0 for c in _TABLE], np.int64),
           mix_script_kind=np.array(kind, np.int64), mix_script_mean=np.array(mean),
           mix_script_low=np.array(low), mix_script_high=np.array(high),
           mix_script_sigma=np.array(sigma))
    b.fill("cn", next_script=np.zeros(b.size.conns))
    b.fill("gp", busy=np.zeros(len(sc.clients), np.int64))
