"""bertcourse: self-attention, the Transformer and BERT, built from scratch.

One module per concept; the notebooks in ``notebooks/`` import from here.
"""
__version__ = "0.1.0"

# The one language switch (English by default; "zh" for the Chinese edition). bertcourse.i18n
# imports no torch, so `import bertcourse` stays light.
from .i18n import get_language, set_language  # noqa: E402,F401
