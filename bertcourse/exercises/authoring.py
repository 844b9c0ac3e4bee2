"""Helpers for the course's authors writing exercises: argument checks that name what a
wrong call expected, and seeded inputs for the cases (which neither depend on nor move the
notebook's global random state)."""
from __future__ import annotations

import math
import numbers

import torch

__all__ = ["need", "need_where", "need_args", "need_tolerance", "seeded", "randn"]


def need(ok: bool, function: str, argument: str, expected: str, got) -> None:
    if not ok:
        raise TypeError(f"{function}: {argument} must be {expected}, got {type(got).__name__} {got!r:.80}")


def need_where(function: str, where) -> None:
    need(isinstance(where, str), function, "where", "a str (the case, for messages)", where)


def need_args(function: str, args) -> tuple:
    need(isinstance(args, (tuple, list)), function, "args", "a tuple (or list) of the answer's arguments", args)
    return tuple(args)


def need_tolerance(function: str, name: str, value) -> None:
    need(isinstance(value, numbers.Real) and not isinstance(value, bool), function, name, "a number", value)
    if not 0 <= value < math.inf:           # NaN, negative, or infinite (which would pass anything)
        raise ValueError(f"{function}: {name} must be {'finite' if value == math.inf else '>= 0'}, got {value!r}")


def seeded(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with ``seed``: the cases' draws do not depend on,
    and do not move, the notebook's global random state."""
    need(isinstance(seed, int) and not isinstance(seed, bool), "seeded", "seed", "an int", seed)
    if seed < 0:
        raise ValueError(f"seeded: seed must be >= 0, got {seed}")
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int | torch.Generator, scale: float = 1.0) -> torch.Tensor:
    """``torch.randn(*shape) * scale`` drawn from :func:`seeded` ``(seed)`` (or from the
    generator ``seed``, to draw several tensors from one stream)."""
    for i, n in enumerate(shape):
        need(isinstance(n, int) and not isinstance(n, bool), "randn", f"shape[{i}]", "an int", n)
        if n < 0:
            raise ValueError(f"randn: shape[{i}] must be >= 0, got {n}")
    need(isinstance(scale, numbers.Real) and not isinstance(scale, bool) and math.isfinite(scale), "randn",
          "scale", "a finite number", scale)
    generator = seed if isinstance(seed, torch.Generator) else seeded(seed)
    return torch.randn(*shape, generator=generator) * scale
