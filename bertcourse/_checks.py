"""Input checks shared by every module.

Learners *will* pass tensors of the wrong shape. The error message is part of the
teaching, so every check names the argument, the shape it expected and the shape it got.
"""
from __future__ import annotations

from typing import Sequence

import torch


def shape_str(x) -> str:
    """`(2, 5, 16)` for a tensor (or anything with a `.shape`); `(10,)` for 1-D, like a tuple."""
    return str(tuple(int(s) for s in x.shape))


def check_tensor(name: str, x, *, ndim: int | Sequence[int] | None = None,
                 expected: str = "", floating: bool | None = None) -> None:
    """Raise TypeError unless `x` is a tensor, ValueError unless its rank is `ndim`.

    `expected` describes the wanted shape in words, e.g. "(batch, seq, num_hiddens=16)".
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {expected}, "
                        f"got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            raise ValueError(f"{name} must have shape {expected} ({' or '.join(map(str, allowed))}-D), "
                             f"got shape {shape_str(x)}")
    if floating is True and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of shape {expected}, "
                        f"got dtype {x.dtype}")
    if floating is False and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer tensor of shape {expected}, got dtype {x.dtype}")


def check_dim(name: str, x: torch.Tensor, dim: int, size: int, expected: str) -> None:
    """Raise ValueError unless `x.shape[dim] == size`."""
    if x.shape[dim] != size:
        raise ValueError(f"{name} must have shape {expected}, got shape {shape_str(x)}")


def check_positive_int(name: str, value, *, allow_zero: bool = False) -> None:
    """Raise TypeError/ValueError unless `value` is a (positive) Python int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")


def check_probability(name: str, value) -> None:
    """Raise unless `value` is a float in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(value).__name__}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")


def check_hidden(name: str, X, num_hiddens: int) -> None:
    """``X`` must be a floating-point ``(batch, seq, num_hiddens)`` tensor."""
    expected = f"(batch, seq, num_hiddens={num_hiddens})"
    check_tensor(name, X, ndim=3, expected=expected, floating=True)
    if X.shape[-1] != num_hiddens:
        raise ValueError(f"{name} must have shape {expected}, got shape {shape_str(X)}")
