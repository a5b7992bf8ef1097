"""The notebooks run top to bottom (quick mode: shorter simulations, same code),
the committed copies show their outputs, and what a quick run prints agrees
with what is known without the notebook: the seeds' published figures, the
scenarios' own settings, queueing laws."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from tests.engine_helpers import MISS_COSTS_OF_ANOTHER_HOST

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

MIB = 2**20


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_shows_its_outputs(path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), "commit it executed"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def _printed(nb) -> str:
    """Everything the executed notebook printed or displayed as text, in order."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                out.append(o.text)
            elif "data" in o and "text/plain" in o.data:
                out.append(o.data["text/plain"] + "\n")
    return "".join(out)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _check_01(text: str) -> None:
    # S0 shortened to 300 s, seed 1.
    bursts, minutes = re.search(r"(\d+) bursts in (\d+) simulated minutes", text).groups()
    assert int(minutes) == 5  # the quick duration, 300 s
    # One burst: the scenario reaches maxmemory ~2 min in (its comment; the
    # testing API's test pins seed 1 at 300 s to one burst), and the seed's
    # cycle repeats only after 7-15 min (tests/test_gitlab_s0.py).
    assert int(bursts) == 1
    start, end = map(float, re.search(r"Phase 2 from (\d+) s to (\d+) s", text).groups())
    assert 60 <= start < end <= 300
    # Before the burst ~13 connections are busy; in it, at most every one of the
    # scenario's 1,200 processes x 10 pooled connections, and at least ten
    # times as many as before (the backlog wakes the idle ones).
    before, during = map(_number, re.search(
        r"busy connections: ([\d,]+) before, ([\d,]+) at most during", text).groups())
    assert 10 * before < during <= 1200 * 10
    # The seed: 25K calls/s falling to 5K, under 30 %, in Phase 2. The offered
    # load is 25K/s, so before the burst the server serves it (within 10 %).
    served, bottom = map(_number, re.search(
        r"requests answered: ([\d,]+)/s before, ([\d,]+)/s at the bottom", text).groups())
    assert abs(served / 25_000 - 1) < 0.10 and bottom < 0.30 * served
    # The seed's graphs: memory drops 300-500 MB (10^6 B) in Phase 3; printed in MiB.
    [drop] = re.findall(r"memory given back in Phase 3: ([\d,]+) MiB", text)
    assert 300e6 / MIB <= _number(drop) <= 500e6 / MIB


def _check_02(text: str) -> None:
    # The sweep run from Python: utilisation of one main thread serving GETs of
    # 25/50/100 µs at 2,000-15,000 req/s (Poisson, 2 s). Utilisation is at least
    # the command work, rate x cost (5 % below it for the Poisson count over 2 s,
    # ~2 sd at 2,000/s; 0.01 for the printed rounding), at most 1, and grows with
    # the rate.
    table = text[text.index("rate "):].splitlines()
    rates = [float(r) for r in table[0].split()[1:]]
    assert rates == [2000, 5000, 10000, 15000]
    rows = {}
    for line in table[2:]:
        words = line.split()
        if not words or not words[0].endswith("us"):
            break
        rows[words[0]] = [float(w) for w in words[1:]]
    assert sorted(rows) == ["100us", "25us", "50us"]
    for label, values in rows.items():
        cost = float(label.removesuffix("us")) * 1e-6
        for rate, u in zip(rates, values, strict=True):
            assert min(1.0, 0.95 * rate * cost) - 0.01 <= u <= 1.0, (label, rate, u)
        assert values == sorted(values), label


def _check_03(text: str) -> None:
    found = {name: (float(t), _number(n), int(share)) for name, t, n, share in re.findall(
        r"(\S+) +endpoint +([\d.]+) s, ([\d,]+) fdatasyncs, main thread in fsync (\d+)%", text)}
    # The seed S2's published call times: 10.5 s under always, 0.94 s under
    # everysec; within 25 % as tests/test_s2_aof_fsync.py allows.
    assert math.isclose(found["aof-fsync-always"][0], 10.5, rel_tol=0.25)
    assert math.isclose(found["aof-fsync-everysec"][0], 0.94, rel_tol=0.25)
    # everysec: one fdatasync per second of the 40 s run at most, and the writes
    # never stop long enough to skip many; reads only: nothing to append.
    assert 35 <= found["aof-fsync-everysec"][1] <= 41
    assert found["get-cache-data"][1] == 0
    assert found["aof-fsync-always"][2] > found["aof-fsync-everysec"][2]
    forks = {name: (float(f), float(w)) for name, f, w in re.findall(
        r"(\S+) +fork +([\d.]+) ms, worst latency +([\d.]+) ms", text)}
    # The seed S1 (bare metal): worst latency 339 ms with huge pages (a 2 MB copy
    # per fault), 21 ms without: within a factor of 2 here, and fork() itself is
    # faster with huge pages (512 times fewer page-table entries to copy).
    thp, off = forks["fork-thp-bare-metal"], forks["fork-thp-off-bare-metal"]
    assert 339 / 2 <= thp[1] <= 339 * 2 and off[1] <= 21 * 2
    assert thp[0] < off[0]


def _check_04(text: str) -> None:
    # 200 processes x 8 threads = 1,600 closed-loop sources thinking 40 ms: by
    # Little's law the throughput is 1,600 / (0.040 s + response time), so at
    # most 40,000/s, and with a response time under the printed p99 of ~1 ms,
    # at least 1,600 / 0.041 = 39,024/s (1 % for the 20 s sample).
    rps, busy, p99 = re.search(r"([\d,]+) req/s, main thread (\d+)% busy, p99 ([\d.]+) ms",
                               text).groups()
    assert float(p99) < 1.0
    assert 1600 / (0.040 + float(p99) / 1e3) * 0.99 <= _number(rps) <= 40_000 * 1.01
    assert 0 < int(busy) < 100
    assert "no burst today" in text
    # headroom's bracket lies between today's value and the one asked about.
    m = re.search(r"clients\[0\]\.processes: safe up to (\d+), failing at (\d+)", text)
    if m:
        assert 200 <= int(m[1]) < int(m[2]) <= 1000
    else:
        assert "clients[0].processes: no failure up to 1000" in text


def _check_05(text: str) -> None:
    # Seed S4: ~500K req/s at 6 instances on 6 cores (±20 %, issue #19's tolerance),
    # the 1 ms QoS met; the host's cores all accounted for (Redis + network + idle = 6).
    rps, p99, qos = re.search(r"6 instances: ([\d,]+) req/s, p99 ([\d.]+) ms, QoS p99 < 1 ms: "
                              r"(\w+)", text).groups()
    assert 400e3 <= _number(rps) <= 600e3
    assert float(p99) < 1.0 and qos == "yes"
    cpu = [float(v) for v in re.search(r"redis ([\d.]+), softirq ([\d.]+), irq ([\d.]+), "
                                       r"idle ([\d.]+)", text).groups()]
    assert sum(cpu) == pytest.approx(6.0, abs=0.05)
    # The BGSAVE on 2 cores: the main thread had a core before and gets the
    # processor-sharing share (2 - L) / 2 while the child lives; the throughput
    # follows it, and the child's 2 s of CPU take 2 s / share.
    before, during, share = map(float, re.search(
        r"before / during the child: ([\d.]+) / ([\d.]+) cores \(processor sharing: .* = "
        r"([\d.]+)\)", text).groups())
    assert before == pytest.approx(1.0, abs=0.02)
    assert during == pytest.approx(share, abs=0.03)
    ratio, ran = map(float, re.search(r"child lives: ([\d.]+) of before; the child ran "
                                      r"([\d.]+) s", text).groups())
    assert ratio == pytest.approx(during / before, abs=0.03) and ratio < 0.9
    assert ran == pytest.approx(2.0 / share, rel=0.05)
    # redis.conf: "if you have a 8 cores, try to use 6 threads"; past the cores
    # the spinning threads cost more than they split.
    peak, gain, last = re.search(r"io-threads peak: (\d+) threads, ([\d.]+)x of one; at 16 "
                                 r"threads ([\d.]+)x", text).groups()
    assert 4 <= int(peak) <= 8 and float(gain) > 1.5 and float(last) < float(gain)
    # Redis 8's async threads (results/io-threads-async/): on 64 cores a plateau
    # where the main thread is saturated, within +-20 % of PR #13665's 1,157,714
    # at io-threads 10; on 8 cores fewer at 16 threads than at the peak.
    plateau, at10 = re.search(r"64 cores: plateau ([\d,]+) req/s .* at io-threads 10 ([\d,]+)",
                              text).groups()
    speak, s16 = re.search(r"8 cores: peak ([\d,]+) req/s at \d+ threads, ([\d,]+) at 16",
                           text).groups()
    assert _number(s16) < _number(speak) < _number(plateau)
    # The noisy neighbour: the cache serves less while the job store's child
    # lives (its cores are shared), for seconds.
    ratio, lived = re.search(r"while its child lives \(([\d.]+) of before, ([\d.]+) s\)",
                             text).groups()
    assert float(ratio) < 0.85 and float(lived) >= 2.0
    # Last, as it stops the check when it misses (an expected failure, named).
    if _number(at10) != pytest.approx(1_157_714, rel=0.20):
        pytest.xfail(MISS_COSTS_OF_ANOTHER_HOST)


CHECKS = {"01-three-phase-cycle": _check_01, "02-what-if-sweeps": _check_02,
          "03-persistence-stalls": _check_03, "04-capacity-planning": _check_04,
          "05-host": _check_05}


def test_every_notebook_has_its_checks() -> None:
    assert sorted(CHECKS) == [p.stem for p in NOTEBOOKS]


@pytest.mark.slow  # ~1 min of simulations and four kernels
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path, monkeypatch) -> None:
    monkeypatch.setenv("REDSIM_NOTEBOOK_QUICK", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError naming the cell on any failure
    CHECKS[path.stem](_printed(nb))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_checks_hold_for_the_committed_full_runs(path) -> None:
    # The committed copies ran without quick mode (longer runs, the same
    # figures); the checks above must hold there too, where they do not depend
    # on the quick duration.
    if path.stem == "01-three-phase-cycle":
        pytest.skip("30 minutes hold three bursts; the checks are for the 5-minute run")
    CHECKS[path.stem](_printed(nbformat.read(path, as_version=4)))
