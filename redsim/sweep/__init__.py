"""What-if sweeps: grids of scenarios x replications, run in parallel, resumable.

``load_sweep(file)`` reads a sweep file (``redsim.config.sweep``),
``run_sweep(spec, out)`` runs it into a folder of run files and tables,
``find_frontier(spec, out)`` bisects for where burst probability crosses a
threshold. ``redsim sweep FILE`` and ``redsim frontier FILE`` are the CLI.
"""

from redsim.config.sweep import SweepSpec, load_sweep
from redsim.sweep.grid import Point, expand, replication_seed
from redsim.sweep.runner import SweepError, SweepResult, execute, run_sweep

__all__ = ["Point", "SweepError", "SweepResult", "SweepSpec", "execute", "expand",
           "load_sweep", "replication_seed", "run_sweep"]
