"""``python -m benches.e2e``: see run_e2e.py."""

import sys

from .run_e2e import main

sys.exit(main())
