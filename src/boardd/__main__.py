"""Entry point for ``python -m boardd``."""

import sys

from boardd.cli import main

sys.exit(main())
