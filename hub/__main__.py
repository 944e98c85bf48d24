"""``python -m hub``: the same as ``adamm-hub``."""

import sys

from hub.cli import main

sys.exit(main())
