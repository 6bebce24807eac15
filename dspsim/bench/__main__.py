"""``python -m dspsim.bench``: the same as ``dspsim bench``."""
import sys

from .run import main

sys.exit(main())
