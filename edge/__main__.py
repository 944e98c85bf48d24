"""``python -m edge`` runs the ``adamm`` command line."""

import sys

from edge.cli import main

sys.exit(main())
