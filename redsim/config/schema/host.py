"""The machine Redis runs on: ``host:`` (its cores and their scheduler, its
caches, what fork() and copy-on-write cost, the load generators' CPU on it),
``host.network`` (the kernel's work per packet, ``HostNetwork``) and ``disk:``
(the device under the AOF and RDB files, ``Disk``).
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from pydantic import Field, model_validator

from redsim.config import host_presets
from redsim.config.declare import NotKeyspace
from redsim.config.errors import BadValue, show
from redsim.config.host_presets import HOST_PRESETS
from redsim.config.schema.distributions import DurationDist
from redsim.config.schema.types import (
    Bytes,
    CostUs,
    NonNegInt,
    OptionalCostUs,
    PositiveSeconds,
    Seconds,
    Thp,
    ThpCow,
    _choice,
    _literal,
    _Model,
    _optional,
    _v,
)
from redsim.config.units import parse_bandwidth, parse_duration, parse_int, parse_rate
from redsim.model.presets import DISK_PRESETS, FORK_PRESETS


class Disk(_Model):
    """The disk under the AOF and RDB files (``model/disk.py``): a FIFO device."""

    preset: Annotated[str, _v(_choice(tuple(DISK_PRESETS)))] = "ssd"
    """A device from ``redsim.model.presets.DISK_PRESETS``: nvme, nvme-consumer, ssd, cloud-disk,
    hdd (each with its sources)."""
    fsync: DurationDist | None = None
    """fdatasync latency of a small append, s; None = the preset's (lognormal)."""
    write_bandwidth: Annotated[float | None, _v(_optional(parse_bandwidth))] = None
    """Sequential write bandwidth, bytes/s (`200mb/s`); None = the preset's."""


class HostNetwork(_Model):
    """The kernel's network work per packet (``redsim/host/network.py``): interrupt
    and softirq CPU charged to the host's cores, ahead of every thread."""

    per_rx: CostUs = 1.5
    """Softirq CPU per TCP segment received (NAPI poll, IP/TCP input, waking the
    reader), µs."""
    per_tx: CostUs = 0.5
    """Softirq CPU per segment sent (transmit completion, freeing the buffer), µs."""
    per_interrupt: CostUs = 2.0
    """CPU per hardware interrupt taken, µs (entry, handler, exit; on a VM guest
    also the exit to the hypervisor)."""
    coalesce: CostUs = 0.0
    """Interrupt moderation per NIC queue, µs (ethtool ``rx-usecs``): a queue fires
    at most once per this delay, so at high packet rates one interrupt serves
    many packets; 0 = an interrupt per packet."""
    queues: NonNegInt = 0
    """NIC queues the packets spread over (RSS); 0 = one per core."""


class Host(_Model):
    """The machine Redis runs on: its cores and their scheduler (``redsim/host``),
    its caches (``model/cpu_caches.py``), what fork() and copy-on-write cost
    (``model/fork.py``)."""

    @model_validator(mode="before")
    @classmethod
    def _preset_sizes(cls, data: Any) -> Any:
        return host_presets.fill(data) if isinstance(data, dict) else data

    cores: Annotated[int | None, _v(_optional(partial(parse_int, minimum=1,
                                                      maximum=4096))), NotKeyspace()] = None
    """Cores the host's threads share (``redsim/host/scheduler.py``): every
    instance's main thread, fork children and the kernel's network work. None
    (the default): every thread has a core to itself and the kernel's network
    work costs Redis nothing."""
    quantum: Annotated[Seconds, NotKeyspace()] = 0.0
    """Scheduling quantum when threads outnumber cores, s: 0 = processor sharing
    (every runnable thread progresses at its share at every instant); > 0 = round
    robin turns of this much CPU (CFS's ``sched_min_granularity`` / EEVDF's
    ``sched_base_slice`` is 0.75 ms x (1 + ilog2(min(cores, 8))): 2.25 ms on 4-7
    cores, 3 ms on 8 or more; kernel/sched/fair.c)."""
    context_switch: Annotated[Seconds, NotKeyspace()] = 3.8e-6
    """CPU lost per involuntary context switch (a preempted turn), s; with
    ``quantum`` > 0. The default is the direct cost Li, Ding and Shen measured
    ("Quantifying the cost of context switch", ExpCS 2007); refilling the caches
    after it can cost far more."""
    scheduler_window: Annotated[PositiveSeconds, NotKeyspace()] = 1e-3
    """How often the host re-divides its cores among the runnable threads, s: the
    threads' demand is measured over one window and sets their shares in the next."""
    preset: Annotated[str | None, _v(_optional(_choice(tuple(HOST_PRESETS))))] = None
    """A cloud instance family (``redsim/config/host_presets.py``: aws-c7i,
    aws-r7g, gcp-c3, azure-dv5, ...) whose processor's published cache and TLB
    sizes fill ``l2``, ``llc`` and ``tlb-reach`` where this section gives none;
    None: the reference VM's."""
    l2: Bytes = 2 << 20
    """Bytes of L2 cache a core has (``/sys/devices/system/cpu/cpu0/cache/index2/size``;
    ``redsim calibrate`` reads it). The default is the reference VM's."""
    llc: Bytes = 260 << 20
    """Bytes of last-level cache Redis's main thread can use: the L3 (``index3``)
    less what other processes on the host keep in it. The default is what the
    reference VM (a slice of a shared Xeon socket) reports."""
    tlb_reach: Bytes = 6 << 20
    """Bytes of memory the data TLB maps with 4 KB pages: its second-level
    entries × 4 KB (1,536 on Intel since Skylake, 2,048 on AMD Zen 3/4 and
    Graviton 3). Redis 7 turns transparent huge pages off for itself
    (``disable-thp``), so its heap is mapped in 4 KB pages."""
    client_cpu: OptionalCostUs = None
    """CPU a load generator on this host spends per request batch of one
    command, µs: the ``client-cpu`` of every same-host client group that does
    not give its own (None: theirs, 7.6 µs). ``redsim calibrate`` measures
    redis-benchmark's (getrusage of its process during the CPU loads) and
    writes it here, so that same-host throughput follows the calibrated host's
    client, not the reference host's."""
    client_cpu_per_command: OptionalCostUs = None
    """The same for each further command of a pipelined batch, µs: the
    ``client-cpu-per-command`` of same-host groups that do not give theirs."""
    network: Annotated[HostNetwork, NotKeyspace()] = Field(default_factory=HostNetwork)

    transparent_huge_pages: Annotated[Thp, _literal(Thp)] = "madvise"
    """/sys/kernel/mm/transparent_hugepage/enabled. Redis's heap uses 2 MB pages only
    with ``always`` and ``disable-thp no``."""
    thp_cow: Annotated[ThpCow, _literal(ThpCow)] = "split"
    """What a copy-on-write fault on a shared 2 MB page copies: ``split`` (Linux >= 5.8,
    commit 3917c80280c9: the huge mapping is split and 4 KB copied) or ``copy-huge``
    (older kernels: the whole 2 MB page, the seed S1 stall)."""
    fork: Annotated[str, _v(_choice(tuple(FORK_PRESETS))), NotKeyspace()] = "bare-metal"
    """fork() cost preset (``redsim.model.presets.FORK_PRESETS``, from the Redis latency docs)."""
    fork_per_gb: Annotated[float | None, _v(_optional(parse_duration)), NotKeyspace()] = None
    """fork() time per GB of RSS mapped with 4 KB pages, s; None = the preset's."""
    fork_fixed: Annotated[Seconds, NotKeyspace()] = 0.5e-3
    """fork() time besides the page tables (process, VMAs, file table), s."""
    cow_fault: Annotated[Seconds, NotKeyspace()] = 1e-6
    """A copy-on-write fault's fixed cost (trap, page allocation, PTE update), s."""
    cow_copy_bandwidth: Annotated[float, _v(parse_bandwidth), NotKeyspace()] = 4.5e9
    """Bytes/s the kernel copies a page at: a 2 MB page takes ~0.47 ms, a 4 KB one ~1 µs."""
    child_keys_per_sec: Annotated[float, _v(parse_rate), NotKeyspace()] = 600e3
    """Keys the fork child serialises per second (reference §5.4: 5 M keys in 8 s); > 0."""

    @model_validator(mode="after")
    def _check(self) -> Host:
        if self.child_keys_per_sec <= 0:  # the child's run time divides by it
            raise BadValue("a rate > 0 like 600k/s", show(self.child_keys_per_sec),
                           field=("child-keys-per-sec",))
        return self
