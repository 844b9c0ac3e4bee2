"""PyTorch's own layers holding exactly our weights: the oracles of the attention and
Transformer tests."""
import torch
from torch import nn

from bertcourse.attention import MultiHeadAttention


def copy_mha(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Our four projections -> torch's packed ``in_proj`` (q, k, v stacked) and ``out_proj``.

    Where ours has no biases and torch's layer has them, torch's are set to zero (torch's
    ``bias=False`` in its Transformer layers would also drop the FFN's and layer norms'
    biases, which our blocks always have)."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        theirs.out_proj.weight.copy_(ours.W_o.weight)
        if ours.W_q.bias is not None:
            theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
            theirs.out_proj.bias.copy_(ours.W_o.bias)
        elif theirs.in_proj_bias is not None:
            theirs.in_proj_bias.zero_()
            theirs.out_proj.bias.zero_()
