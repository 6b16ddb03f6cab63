"""`python -m conformance.cli`: the same as the `leaseproof` command."""

import sys

from conformance.cli import main

sys.exit(main())
