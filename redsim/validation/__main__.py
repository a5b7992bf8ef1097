"""``python -m redsim.validation``: the same as ``redsim validate-model``."""

import sys

from redsim.cli import main

sys.exit(main(["validate-model", *sys.argv[1:]]))
