"""``python -m bertcourse.finetune``: the command line itself lives in :mod:`bertcourse.cli`, with
every command of the course (one style: one-line errors, exit codes 0 / 2 / 130)."""
import sys

from ..cli import finetune_main

sys.exit(finetune_main())
