"""``python -m infermatrix.client …`` = ``infermatrix bench …`` (standalone use)."""

import sys

from .cli import main

sys.exit(main())
