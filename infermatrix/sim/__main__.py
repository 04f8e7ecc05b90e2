"""python -m infermatrix.sim serve ... (the same as `infermatrix sim serve ...`)."""

import sys

from .cli import main

sys.exit(main())
