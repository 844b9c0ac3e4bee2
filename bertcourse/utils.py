"""Small helpers every notebook uses: seeding and showing the package's own source."""
from __future__ import annotations

import functools
import inspect
import random
import textwrap

import numpy as np
import torch

from ._checks import check_int

__all__ = ["set_seed", "show_source", "SourceCode", "cached"]


def set_seed(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's generators, so a notebook repeats exactly."""
    check_int("seed", seed, low=0, high=2**32 - 1)      # NumPy's range
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class SourceCode:
    """Source text that renders with syntax highlighting in Jupyter and as plain text
    elsewhere (on GitHub, in a terminal, in nbval's comparison)."""

    def __init__(self, source: str, name: str = ""):
        self.source, self.name = source, name

    def __repr__(self) -> str:
        return self.source.rstrip("\n")

    def _repr_html_(self) -> str:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
        formatter = HtmlFormatter(noclasses=True, style="default")
        return highlight(self.source, PythonLexer(), formatter)


def show_source(obj) -> SourceCode:
    """Show the source of a bertcourse function, class or method, highlighted.

    The notebooks call this instead of pasting a second copy of the code, so what the
    reader sees is exactly what runs (and what the tests check).
    """
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(f"show_source needs a function, class or method defined in Python, "
                        f"got obj of type {type(obj).__name__}: {e}") from None
    return SourceCode(textwrap.dedent(source), getattr(obj, "__qualname__", ""))


def cached(fn):
    """``functools.lru_cache`` that treats ``f(0)``, ``f(seed=0)`` and ``f(0, size=<default>)``
    as one call (plain lru_cache would compute and keep three copies). ``f.__wrapped__`` is
    the uncached function."""
    if not callable(fn):
        raise TypeError(f"cached decorates a function: fn must be callable, got {type(fn).__name__}")
    signature = inspect.signature(fn)
    cached = functools.lru_cache(maxsize=8, typed=True)(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return cached(*bound.args, **bound.kwargs)

    wrapper.cache_clear = cached.cache_clear
    wrapper.cache_info = cached.cache_info
    return wrapper
