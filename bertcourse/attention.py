"""Chapter 1: scaled dot-product attention, masking and multi-head attention.

Shapes follow the course convention:

* inputs are ``(batch, seq, num_hiddens)``;
* scores and attention weights are ``(batch, queries, keys)`` for a single head and
  ``(batch, heads, queries, keys)`` for multi-head attention.

The names (``masked_softmax``, ``valid_lens``, ``DotProductAttention``,
``MultiHeadAttention``) are the ones learners know from *Dive into Deep Learning*.

Masking convention (decided once, used everywhere):

* ``valid_lens`` (integer tensor) of shape ``(batch,)`` or ``(batch, queries)``: key ``j``
  is visible to a query when ``j < valid_len``.
* a boolean *key mask* of shape ``(batch, keys)``, ``(batch, queries, keys)`` or anything
  that broadcasts to the scores: ``True`` means **attend**. (This is the meaning of a
  boolean ``attn_mask`` in ``scaled_dot_product_attention``, and the *opposite* of
  ``key_padding_mask`` in ``nn.MultiheadAttention``, where ``True`` means *ignore*.)
* masked keys get weight exactly 0.
* a query row whose keys are **all** masked (e.g. ``valid_len == 0``) gets all-zero
  weights, so its output is the zero vector. It never produces NaN.
"""
from __future__ import annotations

import contextlib
import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_bool,
    check_dim,
    check_finite_number,
    check_instance,
    check_nonempty,
    check_positive_int,
    check_probability,
    check_tensor,
    shape_str,
)
from .fast_paths import dropout, fast_path, linear
from .utils import evaluation_mode

__all__ = [
    "causal_mask",
    "key_mask",
    "additive_mask",
    "masked_softmax",
    "dot_product_attention",
    "DotProductAttention",
    "MultiHeadAttention",
    "store_attention_weights",
    "inspect_attention",
    "entropy",
]


def causal_mask(num_queries: int, num_keys: int | None = None, device=None) -> torch.Tensor:
    """Boolean mask of shape ``(num_queries, num_keys)``; ``True`` where a query may attend.

    Query ``i`` sees keys ``0 .. i`` (itself and the past). When there are more keys than
    queries (decoding with a cache of past keys), the queries are the *last*
    ``num_queries`` positions, so query ``i`` sees keys ``0 .. num_keys - num_queries + i``.
    """
    num_keys = num_queries if num_keys is None else num_keys
    check_positive_int("num_queries", num_queries)
    check_positive_int("num_keys", num_keys)
    if num_keys < num_queries:
        raise ValueError(f"num_keys must be >= num_queries for a causal mask, "
                         f"got num_queries={num_queries}, num_keys={num_keys}")
    offset = num_keys - num_queries
    q = torch.arange(num_queries, device=device).unsqueeze(1)
    k = torch.arange(num_keys, device=device).unsqueeze(0)
    return k <= q + offset


def _check_valid_lens(valid_lens: torch.Tensor, batch: int, num_queries: int,
                      num_keys: int) -> None:
    expected = f"(batch={batch},) or (batch={batch}, queries={num_queries})"
    check_tensor("valid_lens", valid_lens, ndim=(1, 2), expected=expected)
    if valid_lens.is_floating_point() or valid_lens.is_complex():
        raise TypeError(f"valid_lens must hold integer lengths (dtype torch.long), got dtype "
                        f"{valid_lens.dtype}; use valid_lens.long() if the values are whole numbers")
    if valid_lens.shape[0] != batch or (valid_lens.dim() == 2 and valid_lens.shape[1] != num_queries):
        raise ValueError(f"valid_lens must have shape {expected}, got shape {shape_str(valid_lens)}")
    if valid_lens.numel() and (valid_lens.min() < 0 or valid_lens.max() > num_keys):
        raise ValueError(f"valid_lens must lie in [0, num_keys={num_keys}], got values from "
                         f"{int(valid_lens.min())} to {int(valid_lens.max())}")


def key_mask(valid_lens: torch.Tensor | None, scores_shape: torch.Size,
             causal: bool = False, device=None) -> torch.Tensor | None:
    """Turn ``valid_lens`` (and/or causality) into a boolean mask that broadcasts to scores.

    ``scores_shape`` is ``(batch, queries, keys)`` or ``(batch, heads, queries, keys)``.
    Returns ``None`` when nothing is masked, otherwise a boolean tensor (``True`` = attend)
    of shape ``(batch, queries, keys)`` or ``(batch, 1, queries, keys)``, on ``valid_lens``'
    device, or on ``device`` (the scores') when only the causal mask is made.
    """
    check_bool("causal", causal)
    batch, num_queries, num_keys = scores_shape[0], scores_shape[-2], scores_shape[-1]
    multi_head = len(scores_shape) == 4
    mask = None
    if valid_lens is not None:
        # isinstance first: a list must get check_tensor's TypeError, not an AttributeError
        if isinstance(valid_lens, torch.Tensor) and valid_lens.dtype == torch.bool:
            mask = _bool_mask(valid_lens, batch, num_queries, num_keys)
        else:
            _check_valid_lens(valid_lens, batch, num_queries, num_keys)
            lens = valid_lens if valid_lens.dim() == 2 else valid_lens.unsqueeze(1)
            # (batch, queries or 1, 1) vs (keys,) -> (batch, queries or 1, keys)
            positions = torch.arange(num_keys, device=valid_lens.device)
            mask = positions < lens.unsqueeze(-1)
    if causal:
        c = causal_mask(num_queries, num_keys, device=device if mask is None else mask.device)
        mask = c if mask is None else mask & c
    if mask is None:
        return None
    mask = mask.expand(batch, num_queries, num_keys) if mask.dim() == 2 else mask
    return mask.unsqueeze(1) if multi_head else mask


def additive_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """``(batch, 1, 1, num_keys)`` float32: 0 for the keys ``j < valid_lens[b]``, the most
    negative float32 for the rest. Added to the scores before the softmax, it masks padding
    as :func:`masked_softmax` does (for rows with at least one visible key)."""
    check_positive_int("num_keys", num_keys)
    check_tensor("valid_lens", valid_lens, ndim=1, expected="(batch,) integer lengths", floating=False)
    mask = key_mask(valid_lens, (valid_lens.shape[0], 1, 1, num_keys))     # True = a real key
    return torch.zeros(mask.shape, device=mask.device).masked_fill_(~mask, torch.finfo(torch.float32).min)


def _bool_mask(mask: torch.Tensor, batch: int, num_queries: int, num_keys: int) -> torch.Tensor:
    """Accept a boolean key mask (True = attend) of shape (batch, keys) or (batch, queries, keys)."""
    expected = f"(batch={batch}, keys={num_keys}) or (batch={batch}, queries={num_queries}, keys={num_keys})"
    ok = ((mask.dim() == 2 and tuple(mask.shape) == (batch, num_keys)) or
          (mask.dim() == 3 and tuple(mask.shape) == (batch, num_queries, num_keys)))
    if not ok:
        raise ValueError(f"valid_lens given as a boolean key mask (True = attend) must have shape "
                         f"{expected}, got shape {shape_str(mask)}")
    return mask.unsqueeze(1) if mask.dim() == 2 else mask


def masked_softmax(scores: torch.Tensor, valid_lens: torch.Tensor | None = None,
                   causal: bool = False) -> torch.Tensor:
    """Softmax over the last axis (keys) that gives masked keys weight exactly 0.

    Args:
        scores: ``(batch, queries, keys)`` or ``(batch, heads, queries, keys)``.
        valid_lens: ``None``; integer lengths ``(batch,)`` or ``(batch, queries)``; or a
            boolean key mask, ``True`` = attend (see the module docstring).
        causal: also hide keys that lie in a query's future.

    Returns:
        weights of the same shape as ``scores``; each row sums to 1, except rows whose
        keys are all masked, which are all 0.
    """
    check_tensor("scores", scores, ndim=(3, 4),
                 expected="(batch, queries, keys) or (batch, heads, queries, keys)", floating=True)
    return _softmax_with_mask(scores, key_mask(valid_lens, scores.shape, causal, scores.device))


def _softmax_with_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over keys; ``mask`` (True = attend) broadcasts to ``scores`` or is None."""
    if mask is None:
        return F.softmax(scores, dim=-1)
    # Why not -inf? A row with every key masked would become softmax([-inf, ...]) = NaN.
    # The most negative finite number underflows to exactly 0 after exp() whenever at
    # least one key is visible; the final masked_fill zeroes fully masked rows too.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def _check_qkv(queries, keys, values, width_name: str = "d") -> None:
    check_tensor("queries", queries, ndim=(3, 4), floating=True,
                 expected="(batch, queries, d) or (batch, heads, queries, d)")
    rank = queries.dim()
    b = queries.shape[:-2]
    d = queries.shape[-1]
    # "(batch=2, " or "(batch=2, heads=4, ": the leading sizes keys and values must share
    lead = "(" + "".join(f"{n}={s}, " for n, s in zip(("batch", "heads"), b))
    check_tensor("keys", keys, ndim=rank, floating=True, expected=f"{lead}keys, d={d})")
    if keys.shape[:-2] != b or keys.shape[-1] != d:
        raise ValueError(f"keys must have shape {lead}keys, d={d}), got shape "
                         f"{shape_str(keys)} (queries has shape {shape_str(queries)})")
    nk = keys.shape[-2]
    check_tensor("values", values, ndim=rank, floating=True, expected=f"{lead}keys={nk}, d_v)")
    if values.shape[:-2] != b or values.shape[-2] != nk:
        raise ValueError(f"values must have shape {lead}keys={nk}, d_v) matching keys "
                         f"{shape_str(keys)}, got shape {shape_str(values)}")
    check_nonempty("queries", queries, "(batch, [heads,] queries, d)")
    check_nonempty("keys", keys, "(batch, [heads,] keys, d)")


def _check_options(scale, dropout_p, need_weights) -> None:
    if scale is not None:
        check_finite_number("scale", scale, low=0, low_open=True)
    check_probability("dropout_p", dropout_p)
    check_bool("need_weights", need_weights)


def dot_product_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                          valid_lens: torch.Tensor | None = None, causal: bool = False,
                          scale: float | None = None, dropout_p: float = 0.0,
                          need_weights: bool = True):
    """Scaled dot-product attention, ``softmax(Q K^T / sqrt(d)) V``, as a function.

    Shapes: queries ``(batch, [heads,] queries, d)``, keys ``(batch, [heads,] keys, d)``,
    values ``(batch, [heads,] keys, d_v)``. Returns ``(output, weights)`` where output is
    ``(batch, [heads,] queries, d_v)`` and weights ``(batch, [heads,] queries, keys)``,
    or ``None`` when ``need_weights=False``; then the computation goes through PyTorch's
    fused ``scaled_dot_product_attention``, which gives the same numbers faster.
    ``scale`` defaults to ``1 / sqrt(d)``.
    """
    _check_qkv(queries, keys, values)
    _check_options(scale, dropout_p, need_weights)
    d = queries.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    scores_shape = queries.shape[:-1] + keys.shape[-2:-1]
    mask = key_mask(valid_lens, scores_shape, causal, queries.device)
    if not need_weights:
        out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask,
                                             dropout_p=dropout_p, scale=scale)
        if mask is not None:
            # Older PyTorch versions return NaN for a query with no visible key; the
            # course's convention is a zero output (see the module docstring). Only
            # fill when such a row exists: masked_fill copies the output into a new
            # layout, which also makes the caller's merge of the heads copy again.
            empty = ~mask.any(-1, keepdim=True)
            if empty.any():
                out = out.masked_fill(empty, 0.0)
        return out, None
    # (batch, [heads,] queries, d) @ (batch, [heads,] d, keys) -> (batch, [heads,] queries, keys)
    scores = queries @ keys.transpose(-2, -1) * scale
    weights = _softmax_with_mask(scores, mask)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ values, weights


class DotProductAttention(nn.Module):
    """Scaled dot-product attention with dropout on the weights.

    ``forward(queries, keys, values, valid_lens=None, causal=False)`` takes
    ``(batch, [heads,] seq, d)`` tensors (see :func:`dot_product_attention`). When
    ``store_weights`` is True (the default, for visualisation) the last weights are kept
    in ``self.attention_weights``; set it to False to use the fused fast path.
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = dropout
        self.store_weights = True
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False):
        p = self.dropout if self.training else 0.0
        out, weights = dot_product_attention(queries, keys, values, valid_lens, causal,
                                             dropout_p=p, need_weights=self.store_weights)
        # detach: the stored copy is for looking at, and must not keep the graph alive
        self.attention_weights = None if weights is None else weights.detach()
        return out


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend, concatenate, project.

    Args:
        num_hiddens: model width ``d``; queries, keys and values are ``(batch, seq, d)``.
        num_heads: number of heads; each head works in ``d / num_heads`` dimensions, so
            the parameter count ``4 d^2 (+ 4 d biases)`` does not depend on it.
        dropout: dropout on the attention weights.
        bias: whether the four projections have biases (BERT: yes; d2l: no).

    ``forward(queries, keys, values, valid_lens=None, causal=False)`` returns
    ``(batch, queries, d)``; ``self.attention_weights`` is ``(batch, heads, queries, keys)``.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0, bias: bool = False):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_positive_int("num_heads", num_heads)
        check_bool("bias", bias)
        if num_hiddens % num_heads:
            raise ValueError(f"num_hiddens must be divisible by num_heads, got num_hiddens="
                             f"{num_hiddens}, num_heads={num_heads} (remainder {num_hiddens % num_heads})")
        self.num_hiddens, self.num_heads = num_hiddens, num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    @property
    def attention_weights(self) -> torch.Tensor | None:
        return self.attention.attention_weights

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, d)`` -> ``(batch, heads, seq, d / heads)``."""
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, -1).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, heads, seq, d / heads)`` -> ``(batch, seq, d)``."""
        b, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(b, n, self.num_hiddens)

    def _check_inputs(self, queries, keys, values) -> None:
        d = self.num_hiddens
        for name, x in (("queries", queries), ("keys", keys), ("values", values)):
            check_tensor(name, x, ndim=3, expected=f"(batch, seq, num_hiddens={d})", floating=True)
            check_dim(name, x, -1, d, f"(batch, seq, num_hiddens={d})")
            check_nonempty(name, x, f"(batch, seq, num_hiddens={d})")
        if not queries.shape[0] == keys.shape[0] == values.shape[0]:
            raise ValueError(f"queries, keys and values must have the same batch size, got shapes "
                             f"{shape_str(queries)}, {shape_str(keys)}, {shape_str(values)}")
        if keys.shape[1] != values.shape[1]:
            raise ValueError(f"keys and values must have the same length, got shapes "
                             f"{shape_str(keys)} and {shape_str(values)}")

    def forward(self, queries, keys, values, valid_lens=None, causal: bool = False):
        self._check_inputs(queries, keys, values)
        q = self.split_heads(self.W_q(queries))
        k = self.split_heads(self.W_k(keys))
        v = self.split_heads(self.W_v(values))
        out = self.attention(q, k, v, valid_lens, causal)  # (batch, heads, queries, d/heads)
        return self.W_o(self.merge_heads(out))

    @fast_path
    def cached(self, queries: torch.Tensor, keys_values: torch.Tensor, cache: dict, name: str,
               valid_lens=None, causal: bool = False, append: bool = True) -> torch.Tensor:
        """``forward(queries, K_all, V_all, valid_lens, causal)`` for step-by-step decoding,
        keeping the projected keys and values in ``cache[name]``:

        * ``append=True`` (decoder self-attention): project only the new positions
          ``keys_values`` and append them to the keys/values of the earlier steps;
        * ``append=False`` (cross-attention): the encoder output never changes while
          decoding, so it is projected once and reused at every step.

        Same numbers; the stored attention weights are ``(batch, heads, new queries, all keys)``.
        """
        if name in cache and not append:
            k, v = cache[name]
        else:
            k = self.split_heads(self.W_k(keys_values))     # (batch, heads, new, d/heads)
            v = self.split_heads(self.W_v(keys_values))
            if name in cache:                               # append to the past along the seq axis
                k_past, v_past = cache[name]
                k, v = torch.cat([k_past, k], dim=2), torch.cat([v_past, v], dim=2)
            cache[name] = (k, v)
        q = self.split_heads(self.W_q(queries))
        # with more keys than queries, causal=True aligns the queries with the *last* keys
        out = self.attention(q, k, v, valid_lens, causal)
        return self.W_o(self.merge_heads(out))

    @fast_path
    def fast_self_attention(self, X: torch.Tensor, bias: torch.Tensor,
                            queries: torch.Tensor | None = None) -> torch.Tensor:
        """Self-attention over ``X`` ``(batch, seq, d)``, as ``forward(Xq, X, X, mask)``, faster.

        ``bias`` ``(batch, 1, 1, seq)`` is added to the scores: 0 for a real key, very negative
        for padding (:func:`additive_mask`). ``queries`` ``(batch, r, d)``: compute the output
        only for these rows (a subset of ``X``'s positions; the keys and values still come
        from every position); ``None``: for every position. Returns ``(batch, r or seq, d)``.

        What makes it faster: Q, K and V (or K and V) come from one matrix product; on the
        CPU, attention is written out with cheap dropout masks (PyTorch's fused kernel falls
        back to a slow path when dropout is on), and float32 products go to oneDNN
        (:mod:`bertcourse.fast_paths`). No attention weights are kept.
        """
        B, n, d = X.shape
        h = self.num_heads
        proj = (self.W_q, self.W_k, self.W_v) if queries is None else (self.W_k, self.W_v)
        W = torch.cat([m.weight for m in proj])             # one product instead of two or three
        b = None if self.W_k.bias is None else torch.cat([m.bias for m in proj])
        heads = linear(X, W, b).view(B, n, len(proj), h, d // h).permute(2, 0, 3, 1, 4)   # (k, B, h, n, d/h)
        if queries is None:
            q, k, v = heads
        else:
            q = linear(queries, self.W_q.weight, self.W_q.bias).view(B, -1, h, d // h).transpose(1, 2)
            k, v = heads
        p = self.attention.dropout if self.training else 0.0
        if X.device.type == "cuda":           # the fused GPU kernels do dropout themselves
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype), dropout_p=p)
        else:                                 # on the CPU, the fused kernel has no fast dropout: written out
            scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h)) + bias
            weights = dropout(torch.softmax(scores, dim=-1), p, self.training)
            out = torch.matmul(weights.to(v.dtype), v)
        return linear(out.transpose(1, 2).reshape(B, -1, d), self.W_o.weight, self.W_o.bias)


def store_attention_weights(model: nn.Module, on: bool = True) -> nn.Module:
    """Switch every attention layer in ``model`` between keeping its weights for
    visualisation (``on=True``) and the fused fast path (``on=False``). Returns ``model``."""
    check_instance("model", model, nn.Module)
    check_bool("on", on)
    for m in model.modules():
        if isinstance(m, DotProductAttention):
            m.store_weights = on
    return model


@contextlib.contextmanager
def inspect_attention(model: nn.Module, keep_weights: bool = True, eval_mode: bool = True):
    """Run ``model`` to look at it: every attention layer keeps its weights (or, with
    ``keep_weights=False``, takes the fused path) and, with ``eval_mode``, dropout is off.
    Both settings are put back when the block ends, even after an error::

        with inspect_attention(model):
            model(tokens)                     # then read blk.attention.attention_weights
    """
    check_instance("model", model, nn.Module)
    check_bool("keep_weights", keep_weights)
    check_bool("eval_mode", eval_mode)
    layers = [m for m in model.modules() if isinstance(m, DotProductAttention)]
    model_was_training = model.training
    kept = [m.store_weights for m in layers]
    try:
        for m in layers:
            m.store_weights = keep_weights
        # the model's mode is restored afterwards in both cases (a caller may switch it inside)
        with evaluation_mode(model):
            if not eval_mode:
                model.train(model_was_training)
            yield model
    finally:
        for m, on in zip(layers, kept):
            m.store_weights = on


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy (in nats) of each row of ``weights`` (rows are distributions over keys),
    with 0 log 0 = 0: ``(..., keys)`` -> ``(...)``. Low = a sharp head, high = a broad one."""
    check_tensor("weights", weights, expected="(..., keys)", floating=True)
    if weights.dim() == 0:
        raise ValueError("weights must have shape (..., keys) with at least one axis (the keys), "
                         "got a 0-D tensor")
    w = weights.clamp_min(1e-30)
    return -(weights * w.log()).sum(-1)
