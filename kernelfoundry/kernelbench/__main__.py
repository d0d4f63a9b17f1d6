"""``python -m kernelfoundry.kernelbench import PROBLEM.py [--out TASK.yaml]``: the ``kernelfoundry task`` command."""

import sys

from .cli import main

sys.exit(main())
