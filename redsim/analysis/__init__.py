"""Analysis helpers: closed-form queueing theory the simulator is validated against,
and the eviction-cycle (phase) analysis of a run."""

from redsim.analysis.phases import burst_summary, format_table, phases
from redsim.analysis.theory import (
    MvaResult,
    md1_mean_sojourn,
    md1_mean_wait,
    mean_ci,
    mg1_mean_sojourn,
    mg1_mean_wait,
    mm1_mean_number,
    mm1_mean_sojourn,
    mm1_sojourn_quantile,
    mva,
    t_cdf,
    t_quantile,
)

__all__ = [
    "burst_summary",
    "format_table",
    "phases",
    "MvaResult",
    "md1_mean_sojourn",
    "md1_mean_wait",
    "mean_ci",
    "mg1_mean_sojourn",
    "mg1_mean_wait",
    "mm1_mean_number",
    "mm1_mean_sojourn",
    "mm1_sojourn_quantile",
    "mva",
    "t_cdf",
    "t_quantile",
]
