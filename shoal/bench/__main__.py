"""``python -m shoal.bench``."""

import sys

from shoal.bench import main

sys.exit(main())
