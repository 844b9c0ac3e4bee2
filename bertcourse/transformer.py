"""Chapter 3: the Transformer's building blocks.

An encoder block is self-attention then a position-wise feed-forward network, each
wrapped in "add & norm" (residual connection, then layer normalisation: the original
*post-norm* arrangement, which BERT also uses).
"""
from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

from ._checks import check_positive_int, check_probability, check_tensor, shape_str
from .attention import MultiHeadAttention

__all__ = ["ACTIVATIONS", "PositionWiseFFN", "AddNorm", "EncoderBlock"]

# The activations the course uses. BERT uses the exact (erf) GELU; "gelu_tanh" is the
# tanh approximation some implementations use instead (a small but real difference).
ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


def _activation(name: str):
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


def _check_hidden(name: str, X, num_hiddens: int) -> None:
    expected = f"(batch, seq, num_hiddens={num_hiddens})"
    check_tensor(name, X, ndim=3, expected=expected, floating=True)
    if X.shape[-1] != num_hiddens:
        raise ValueError(f"{name} must have shape {expected}, got shape {shape_str(X)}")


class PositionWiseFFN(nn.Module):
    """Two linear layers applied to every position separately (a kernel-size-1 conv).

    ``(batch, seq, num_hiddens) -> (batch, seq, ffn_num_hiddens) -> (batch, seq, num_hiddens)``.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, activation: str = "relu"):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_positive_int("ffn_num_hiddens", ffn_num_hiddens)
        self.activation = activation
        self._act = _activation(activation)
        self.dense1 = nn.Linear(num_hiddens, ffn_num_hiddens)
        self.dense2 = nn.Linear(ffn_num_hiddens, num_hiddens)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.dense2(self._act(self.dense1(X)))


class AddNorm(nn.Module):
    """Residual connection followed by layer norm: ``LayerNorm(X + dropout(Y))``.

    Layer norm normalises each position over its features, so it does not care how many
    positions (or how much padding) the batch has; batch norm would mix statistics of
    real tokens and padding across the batch.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, eps: float = 1e-5):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(num_hiddens, eps=eps)

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        if X.shape != Y.shape:
            raise ValueError(f"AddNorm needs X and Y of the same shape (batch, seq, num_hiddens), "
                             f"got X {shape_str(X)} and Y {shape_str(Y)}")
        return self.ln(X + self.dropout(Y))


class EncoderBlock(nn.Module):
    """Transformer encoder block (post-norm): self-attention, add & norm, FFN, add & norm.

    ``forward(X, valid_lens=None)``: ``X`` is ``(batch, seq, num_hiddens)``; ``valid_lens``
    as in :func:`bertcourse.attention.masked_softmax` (lengths or a boolean key mask,
    ``True`` = attend). Returns ``(batch, seq, num_hiddens)``. The attention weights
    stay in ``self.attention.attention_weights``.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False, activation: str = "relu",
                 norm_eps: float = 1e-5):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_eps)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, activation)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_eps)

    def forward(self, X: torch.Tensor, valid_lens=None) -> torch.Tensor:
        _check_hidden("X", X, self.num_hiddens)
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))
