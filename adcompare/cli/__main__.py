"""``python -m adcompare.cli``: the ``adcompare`` command."""

import sys

from adcompare.cli import main

sys.exit(main())
