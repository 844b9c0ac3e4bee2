"""Chapter 2: positional encoding.

Self-attention treats its input as a *set*: shuffle the tokens and the outputs shuffle
the same way. Positions have to be added to the token vectors. Two ways:

* the Transformer's fixed sinusoids (:class:`PositionalEncoding`)::

      P[i, 2j]   = sin(i / 10000^(2j/d))
      P[i, 2j+1] = cos(i / 10000^(2j/d))

* BERT's learned table, one trainable vector per position
  (:class:`LearnedPositionalEmbedding`).

For a fixed offset ``k`` the sinusoid table has the *relative-position property*:
``P[i + k] = P[i] @ M_k`` for every ``i``, where ``M_k`` (:func:`relative_rotation`) is
block-diagonal with one 2×2 rotation per (sin, cos) column pair.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import check_floating_dtype, check_positive_int, check_probability, check_tensor, shape_str

__all__ = ["sinusoidal_encoding", "frequencies", "relative_rotation", "PositionalEncoding",
           "LearnedPositionalEmbedding"]


def frequencies(num_hiddens: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The angular frequency of every column pair: ``w_j = 1 / 10000^(2j/d)``, shape ``(ceil(d/2),)``.

    Pair ``j`` turns by ``w_j`` radians per position, so it repeats every
    ``2 pi / w_j`` positions: from ``2 pi`` (about 6 positions) for ``j = 0`` up to
    almost ``2 pi * 10000`` for the last pair.
    """
    check_positive_int("num_hiddens", num_hiddens)
    check_floating_dtype("dtype", dtype)
    two_j = torch.arange(0, num_hiddens, 2, dtype=torch.float64)
    return (1.0 / torch.pow(10000.0, two_j / num_hiddens)).to(dtype)


def sinusoidal_encoding(max_len: int, num_hiddens: int,
                        dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The sinusoid table ``P`` of shape ``(max_len, num_hiddens)``.

    Column pair ``(2j, 2j+1)`` is a sine/cosine of frequency ``1 / 10000^(2j/d)``: the
    low columns turn fast with the position, the high columns slowly, like the digits of
    a binary counter. (An odd ``num_hiddens`` simply drops the last cosine column.)
    """
    check_positive_int("max_len", max_len)
    check_positive_int("num_hiddens", num_hiddens)
    check_floating_dtype("dtype", dtype)
    positions = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)          # (max_len, 1)
    angles = positions * frequencies(num_hiddens)                                 # (max_len, ceil(d/2))
    P = torch.zeros(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])
    return P.to(dtype)   # computed in float64 so large positions stay accurate


def relative_rotation(offset: int, num_hiddens: int,
                      dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ``(num_hiddens, num_hiddens)`` matrix ``M_k`` with ``P[i + k] = P[i] @ M_k`` for all ``i``.

    Row vectors times ``M_k``: for column pair ``j`` with angle ``a = k w_j``,
    ``[sin((i+k) w), cos((i+k) w)] = [sin(i w), cos(i w)] @ [[cos a, -sin a], [sin a, cos a]]``
    (the addition theorems). ``M_k`` depends on ``k`` only, never on ``i``: moving ``k``
    positions is the same linear map everywhere, which makes relative positions easy
    for attention to pick up. ``offset`` may be negative. ``num_hiddens`` must be even
    (an odd width has a lone sine column with no cosine partner to rotate with).
    """
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int, got {type(offset).__name__} ({offset!r})")
    check_positive_int("num_hiddens", num_hiddens)
    check_floating_dtype("dtype", dtype)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even for the rotation (one 2x2 block per sin/cos "
                         f"pair), got num_hiddens={num_hiddens}")
    angles = offset * frequencies(num_hiddens)                 # (d/2,), float64
    c, s = torch.cos(angles), torch.sin(angles)
    M = torch.zeros(num_hiddens, num_hiddens, dtype=torch.float64)
    idx = torch.arange(0, num_hiddens, 2)
    M[idx, idx], M[idx, idx + 1] = c, -s
    M[idx + 1, idx], M[idx + 1, idx + 1] = s, c
    return M.to(dtype)


def _check_input(x, num_hiddens: int, max_len: int, offset: int = 0) -> None:
    expected = f"(batch, seq, num_hiddens={num_hiddens}) with seq <= max_len={max_len}"
    if offset:
        expected = f"(batch, seq, num_hiddens={num_hiddens}) with offset + seq <= max_len={max_len}"
    check_tensor("X", x, ndim=3, expected=expected, floating=True)
    if x.shape[-1] != num_hiddens:
        raise ValueError(f"X must have shape {expected}, got shape {shape_str(x)}")
    if offset + x.shape[1] > max_len:
        where = f"positions {offset}..{offset + x.shape[1] - 1}" if offset else f"{x.shape[1]} positions"
        raise ValueError(f"X needs {where} but max_len={max_len}: the table has no row for "
                         f"positions >= {max_len}; build the layer with a larger max_len "
                         f"(got shape {shape_str(x)}" + (f", offset={offset})" if offset else ")"))


class PositionalEncoding(nn.Module):
    """Add the fixed sinusoid table to ``X`` of shape ``(batch, seq, num_hiddens)``, then dropout.

    The table is a buffer (moved by ``.to(device)``, never trained, not saved in the
    state dict because it is a pure function of the sizes).
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        check_probability("dropout", dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", sinusoidal_encoding(max_len, num_hiddens).unsqueeze(0),
                             persistent=False)   # (1, max_len, num_hiddens)

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``offset`` shifts the positions: decoding one step at a time, step ``t`` is
        fed alone and must get row ``t`` of the table, not row 0."""
        check_positive_int("offset", offset, allow_zero=True)
        _check_input(X, self.num_hiddens, self.max_len, offset)
        return self.dropout(X + self.P[:, offset: offset + X.shape[1]].to(X.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """BERT's learned positions: a trainable ``(max_len, num_hiddens)`` table added to ``X``.

    Indexing the parameter itself (never ``.data``) keeps it in the autograd graph, so
    the table is trained (``.data`` would detach it and the table would never learn).
    """

    def __init__(self, max_len: int, num_hiddens: int):
        super().__init__()
        check_positive_int("max_len", max_len)
        check_positive_int("num_hiddens", num_hiddens)
        self.max_len, self.num_hiddens = max_len, num_hiddens
        self.weight = nn.Parameter(torch.randn(max_len, num_hiddens) * 0.02)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        _check_input(X, self.num_hiddens, self.max_len)
        return X + self.weight[: X.shape[1]]   # (seq, d) broadcasts over the batch
