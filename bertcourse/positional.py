"""Chapter 2: positional encoding.

Self-attention treats its input as a *set*: shuffle the tokens and the outputs shuffle
the same way. Positions have to be added to the token vectors. Two ways:

* the Transformer's fixed sinusoids (:class:`PositionalEncoding`)::

      P[i, 2j]   = sin(i / 10000^(2j/d))
      P[i, 2j+1] = cos(i / 10000^(2j/d))

* BERT's learned table, one trainable vector per position
  (:class:`LearnedPositionalEmbedding`).
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_probability, check_tensor, shape_str

__all__ = ["sinusoidal_encoding", "PositionalEncoding", "LearnedPositionalEmbedding"]


def sinusoidal_encoding(max_len: int, num_hiddens: int) -> torch.Tensor:
    """The sinusoid table ``P`` of shape ``(max_len, num_hiddens)``.

    Column pair ``(2j, 2j+1)`` is a sine/cosine of frequency ``1 / 10000^(2j/d)``: the
    low columns turn fast with the position, the high columns slowly, like the digits of
    a binary counter. (An odd ``num_hiddens`` simply drops the last cosine column.)
    """
    check_positive_int("max_len", max_len)
    check_positive_int("num_hiddens", num_hiddens)
    positions = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)          # (max_len, 1)
    two_j = torch.arange(0, num_hiddens, 2, dtype=torch.float64)                  # (ceil(d/2),)
    angles = positions / torch.pow(10000.0, two_j / num_hiddens)                  # (max_len, ceil(d/2))
    P = torch.zeros(max_len, num_hiddens, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])
    return P.float()   # computed in float64 so large positions stay accurate


def _check_input(x, num_hiddens: int, max_len: int) -> None:
    expected = f"(batch, seq <= max_len={max_len}, num_hiddens={num_hiddens})"
    check_tensor("X", x, ndim=3, expected=expected, floating=True)
    if x.shape[-1] != num_hiddens:
        raise ValueError(f"X must have shape {expected}, got shape {shape_str(x)}")
    if x.shape[1] > max_len:
        raise ValueError(f"X has {x.shape[1]} positions but max_len={max_len}: the table has no "
                         f"row for positions >= {max_len}; build the layer with a larger max_len "
                         f"(got shape {shape_str(x)})")


class PositionalEncoding(nn.Module):
    """Add the fixed sinusoid table to ``X`` of shape ``(batch, seq, num_hiddens)``, then dropout.

    The table is a buffer (saved with the model, moved by ``.to(device)``, never trained).
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        check_probability("dropout", dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", sinusoidal_encoding(max_len, num_hiddens).unsqueeze(0),
                             persistent=False)   # (1, max_len, num_hiddens)

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``offset`` shifts the positions (decoding one step at a time starts at step t)."""
        _check_input(X, self.num_hiddens, self.max_len - offset)
        return self.dropout(X + self.P[:, offset: offset + X.shape[1]].to(X.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """BERT's learned positions: a trainable ``(max_len, num_hiddens)`` table added to ``X``.

    Indexing the parameter itself (never ``.data``) keeps it in the autograd graph, so
    the table is trained (pitfall 1 of the course).
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
