"""Faster ways to compute what the model's layers compute, with the same numbers.

The layers (:mod:`~bertcourse.attention`, :mod:`~bertcourse.transformer`,
:mod:`~bertcourse.bert`) each keep their plain ``forward``, the one the chapters show, and
next to it a fast path marked ``@fast_path`` (chapter 7's pretraining runs those). The fast
paths are built from the few pieces here:

* :func:`dropout_mask` / :func:`dropout` / :func:`add_dropout`: dropout with cheaper random
  masks (the same distribution);
* :func:`linear`: ``torch.nn.functional.linear`` with oneDNN's float32 matrix products on
  x86 CPUs, which are 2-3x faster there than the default ones (:func:`use_onednn`);
* :func:`fast_path`: the marker that :func:`bertcourse.utils.show_source` reads, so that a
  chapter showing a layer shows its plain forward and one line about the fast path.

``tests/test_fast_paths.py`` proves each gives the values (and gradients) of the plain way, up to
float rounding. ``benchmarks/pretrain_step.py`` measures what they buy.
"""
from __future__ import annotations

import math
import platform

import torch
import torch.nn.functional as F

from ._checks import check_bool, check_positive_int, check_probability

__all__ = ["fast_path", "dropout_mask", "dropout", "add_dropout", "linear", "use_onednn", "onednn_enabled",
           "onednn_for", "onednn_mm_t", "onednn_shapes", "ONEDNN_MAX_SHAPES"]


def fast_path(method):
    """Mark a layer's method as its fast path: the same numbers as the plain ``forward``
    (tested), computed faster. :func:`bertcourse.utils.show_source` shows such a method as one
    comment line when it shows the whole class."""
    method.__fast_path__ = True
    return method


# ---------------------------------------------------------------------------------------
# Cheap dropout masks
# ---------------------------------------------------------------------------------------

def dropout_mask(shape, p: float, dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """A dropout mask of ``shape``: 0 with probability ``p``, else ``1 / (1 - p)``.

    ``x * dropout_mask(x.shape, p)`` is dropout. Why not ``torch.nn.functional.dropout``? On
    the CPU it draws one Bernoulli number at a time; here every 64-bit random integer gives
    two independent 31-bit numbers ``r``, and an entry is kept when ``r >= p * 2**31``
    (``p`` rounded to a multiple of ``2**-31``). The mask takes 10 ms instead of 25 for a
    (512, 64, 128) tensor on one core of the benchmark CPU, with the same distribution; the
    draws come from torch's generator (of ``device``), so seeding repeats them.
    """
    check_probability("p", p)
    n = math.prod(shape)
    bits = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_()   # 63 random bits each
    r = bits.view(torch.int32)[:n].view(shape) & 0x7FFFFFFF                          # two 31-bit numbers each
    mask = (r >= round(p * 2 ** 31)) * (1.0 / (1.0 - p))                            # float32: 0 or 1 / (1 - p)
    return mask if mask.dtype == dtype else mask.to(dtype)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``torch.nn.functional.dropout(x, p, training)`` with a :func:`dropout_mask`."""
    check_probability("p", p)
    check_bool("training", training)
    if not training or p == 0:
        return x
    return x * dropout_mask(x.shape, p, torch.promote_types(x.dtype, torch.float32), x.device)


def add_dropout(X: torch.Tensor, Y: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """``X + dropout(Y)`` in one pass (the residual connection of "add & norm")."""
    check_probability("p", p)
    check_bool("training", training)
    if not training or p == 0:
        return X + Y
    return torch.addcmul(X, Y, dropout_mask(Y.shape, p, torch.promote_types(Y.dtype, torch.float32), Y.device))


# ---------------------------------------------------------------------------------------
# oneDNN's float32 matrix products
# ---------------------------------------------------------------------------------------

# PyTorch sends float32 matrix products on x86 CPUs to MKL; on the AMD EPYC of the course's
# benchmarks MKL reaches 60-90 GFLOP/s per core where oneDNN (also inside PyTorch, used for
# bfloat16) reaches 170-210. ``torch.ops.mkldnn._linear_pointwise`` is oneDNN's linear layer;
# it is internal to PyTorch, so it is checked once and not used when missing or wrong.
# oneDNN compiles and keeps a kernel for every new shape (about 1 MB each, up to a thousand of
# them): it is used only for large products (small ones gain little), and for at most
# ONEDNN_MAX_SHAPES shapes, so that batches of ever new lengths cannot fill the memory.
ONEDNN_MAX_SHAPES = 32
_ONEDNN = {"wanted": True, "works": None, "shapes": set(), "min_product": 2 ** 27}


def use_onednn(enabled: bool, min_product: int = 2 ** 27) -> None:
    """Switch :func:`linear` (and the fused MLM loss) between oneDNN's float32 products
    (``True``, the default where available) and PyTorch's usual ones (``False``).
    ``min_product``: the smallest product (multiply-adds) that goes to oneDNN (default
    2**27; tests use 0). Forgets the shapes seen so far."""
    check_bool("enabled", enabled)
    check_positive_int("min_product", min_product, allow_zero=True)
    _ONEDNN.update(wanted=enabled, min_product=min_product, shapes=set())


def onednn_enabled() -> bool:
    """Whether float32 products on the CPU go to oneDNN: wanted (:func:`use_onednn`), an x86
    CPU, and PyTorch's oneDNN linear layer present and correct on a small test."""
    if not _ONEDNN["wanted"]:
        return False
    if _ONEDNN["works"] is None:
        _ONEDNN["works"] = _onednn_works()
    return _ONEDNN["works"]


def onednn_shapes() -> int:
    """How many product shapes oneDNN has compiled kernels for (at most :data:`ONEDNN_MAX_SHAPES`)."""
    return len(_ONEDNN["shapes"])


def _onednn_works() -> bool:
    if platform.machine().lower() not in ("x86_64", "amd64") or not torch.backends.mkldnn.is_available():
        return False
    try:
        a, w, b = torch.randn(5, 3), torch.randn(4, 3), torch.randn(4)
        return bool(torch.allclose(onednn_mm_t(a, w, b), F.linear(a, w, b), atol=1e-5))
    except Exception:            # an older or newer PyTorch without this operator
        return False


def onednn_mm_t(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b.T + bias`` with oneDNN (2-D ``a`` and ``b``; they may be transposed views).
    Call it only where :func:`onednn_for` said yes."""
    return torch.ops.mkldnn._linear_pointwise(a, b, bias, "none", [], "")


def onednn_for(x: torch.Tensor, shape: tuple) -> bool:
    """Whether the product of ``shape`` = (rows, inner, outer) on ``x`` goes to oneDNN: a
    float32 CPU tensor outside autocast, a product of at least ``min_product`` multiply-adds,
    oneDNN enabled, and a kernel shape already kept or room for one more."""
    if not (x.device.type == "cpu" and x.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
            and math.prod(shape) >= _ONEDNN["min_product"] and onednn_enabled()):
        return False
    seen = _ONEDNN["shapes"]
    if shape not in seen and len(seen) >= ONEDNN_MAX_SHAPES:
        return False
    seen.add(shape)
    return True


class _OneDNNLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` and its gradients with oneDNN's float32 products."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return onednn_mm_t(x.reshape(-1, x.shape[-1]), weight, bias).view(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        g, x2 = grad.reshape(-1, grad.shape[-1]), x.reshape(-1, x.shape[-1])
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = onednn_mm_t(g, weight.t().contiguous()).view(x.shape)
        if ctx.needs_input_grad[1]:
            # sum over the rows of g^T x; oneDNN is fastest with the narrower side first
            grad_w = onednn_mm_t(x2.t(), g.t()).t() if x2.shape[1] <= g.shape[1] else onednn_mm_t(g.t(), x2.t())
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = g.sum(0)
        return grad_x, grad_w, grad_b


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``torch.nn.functional.linear``: ``(..., in) -> (..., out)``, with oneDNN's float32
    products on the CPU when :func:`onednn_enabled` and the product is large (same numbers up
    to rounding)."""
    if (weight.dtype == torch.float32 and (bias is None or bias.dtype == torch.float32)
            and onednn_for(x, (x.numel() // max(x.shape[-1], 1), *weight.shape[::-1]))):
        return _OneDNNLinear.apply(x, weight, bias)
    return F.linear(x, weight, bias)
