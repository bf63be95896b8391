"""Entry point for ``python -m boardd``."""

import sys

from boardd.cli import main

# Guarded: the daemon's answer workers (api/workers.py) are started by multiprocessing's
# "spawn", which imports the main module in each of them; it must not run the command again.
if __name__ == "__main__":
    sys.exit(main())
