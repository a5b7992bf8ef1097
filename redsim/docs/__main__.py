"""``python -m redsim.docs``."""

import sys

from redsim.docs import main

sys.exit(main())
