"""Validation against a real ``redis-server``: the model next to the server it models.

``python -m redsim.validation`` (or ``redsim validate-model``) starts a
throw-away local server, calibrates the model on it (``redsim calibrate``),
drives the same workloads against both and prints model vs real with a
tolerance and a verdict per row (``experiments.py`` lists them; ``runner.py``
runs them). Depends on the model, never the reverse.
"""

from redsim.validation.experiments import EXPERIMENTS, Experiment
from redsim.validation.runner import Row, validate

__all__ = ["EXPERIMENTS", "Experiment", "Row", "validate"]
