"""This machine, as the tools that record where they ran name it.

A leaf module (standard library only): the kernel's compile records its time
per machine (``kernel_compile``) and calibration records the host it measured
(``calibrate.host_description``); both sit at different layers, so the name
they share lives below both.
"""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (else what ``platform`` says)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


__all__ = ["cpu_model"]
