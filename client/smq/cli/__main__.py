"""`python -m smq.cli`, the same as the `smq` console script."""

from __future__ import annotations

import sys

from smq.cli.main import main

sys.exit(main())
