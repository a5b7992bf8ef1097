import sys

from redsim.cli import main

sys.exit(main())
