"""bertcourse: self-attention, the Transformer and BERT, built from scratch.

One module per concept; the notebooks in ``notebooks/`` import from here.
"""
__version__ = "0.1.0"

# The one language switch (English by default; "zh" for the Chinese edition).
from .i18n import get_language, set_language  # noqa: E402,F401
# Where the learner stands: progress() lists every chapter's exercises; nothing is recorded until
# track_progress() (once per kernel).
from .learner_progress import (export_progress, import_progress, progress, reset_progress,  # noqa: E402,F401
                               track_progress)
