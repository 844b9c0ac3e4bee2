"""bertcourse: self-attention, the Transformer and BERT, built from scratch.

One module per concept; the notebooks in ``notebooks/`` import from here.
"""
__version__ = "0.1.0"
