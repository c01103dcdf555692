"""`python -m symalign.cli ...`: the same as the `symalign` command."""

import sys

from symalign.cli import main

sys.exit(main())
