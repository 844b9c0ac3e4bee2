"""Chapter 3: the Transformer.

An encoder block is self-attention then a position-wise feed-forward network, each
wrapped in "add & norm" (residual connection, then layer normalisation: the original
*post-norm* arrangement, which BERT also uses; ``norm_first=True`` gives the *pre-norm*
order of GPT-2 and most later models, ``X + Sublayer(LayerNorm(X))``). A decoder block has
three sub-layers:
causal (masked) self-attention, encoder–decoder ("cross") attention whose queries come
from the decoder and whose keys and values come from the encoder, and the FFN.

:class:`TransformerEncoder` and :class:`TransformerDecoder` stack the blocks on top of
token embeddings (scaled by ``sqrt(d)``) plus sinusoidal positions;
:class:`EncoderDecoder` joins them, and :func:`greedy_decode` generates an output one
token at a time, feeding each prediction back in (with a cache of past keys and values,
so step ``t`` costs one position, not ``t``).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import (
    check_bool,
    check_choice,
    check_finite_number,
    check_hidden,
    check_ids,
    check_instance,
    check_int,
    check_positive_int,
    check_probability,
    check_tensor,
    shape_str,
)
from .attention import MultiHeadAttention
from .fast_paths import add_dropout, fast_path, linear
from .positional import PositionalEncoding
from .utils import evaluation_mode

__all__ = ["ACTIVATIONS", "get_activation", "PositionWiseFFN", "AddNorm", "EncoderBlock", "DecoderBlock",
           "TransformerEmbedding", "TransformerEncoder", "TransformerDecoder", "DecoderCache",
           "EncoderDecoder", "greedy_decode"]

# The activations the course uses. "gelu" is the exact (erf) GELU, Hugging Face's "gelu";
# "gelu_tanh" is the tanh approximation, which Google's reference BERT code computes and
# Hugging Face calls "gelu_new" (a small but real difference: chapter 8 measures it).
ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


def get_activation(name: str):
    """The activation function called ``name`` (a key of :data:`ACTIVATIONS`)."""
    check_choice("activation", name, ACTIVATIONS)
    return ACTIVATIONS[name]


def _check_norm_eps(name: str, eps) -> None:
    """Layer norm divides by ``sqrt(var + eps)``: ``eps`` must be a small positive number
    (0 divides by 0 on a constant row, a negative one takes the root of a negative number)."""
    check_finite_number(name, eps, low=0, low_open=True)


class PositionWiseFFN(nn.Module):
    """Two linear layers applied to every position separately (a kernel-size-1 conv).

    ``(batch, seq, num_hiddens) -> (batch, seq, ffn_num_hiddens) -> (batch, seq, num_hiddens)``.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, activation: str = "relu"):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_positive_int("ffn_num_hiddens", ffn_num_hiddens)
        self.num_hiddens, self.activation = num_hiddens, activation
        self._act = get_activation(activation)
        self.dense1 = nn.Linear(num_hiddens, ffn_num_hiddens)
        self.dense2 = nn.Linear(ffn_num_hiddens, num_hiddens)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_hidden("X", X, self.num_hiddens)
        return self.dense2(self._act(self.dense1(X)))

    @fast_path
    def fast_forward(self, X: torch.Tensor) -> torch.Tensor:
        """``forward(X)`` with oneDNN's float32 products (:func:`bertcourse.fast_paths.linear`)."""
        return linear(self._act(linear(X, self.dense1.weight, self.dense1.bias)), self.dense2.weight, self.dense2.bias)


class AddNorm(nn.Module):
    """Residual connection followed by layer norm: ``LayerNorm(X + dropout(Y))``.

    Layer norm normalises each position over its features, so it does not care how many
    positions (or how much padding) the batch has; batch norm would mix statistics of
    real tokens and padding across the batch.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, eps: float = 1e-5):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        check_probability("dropout", dropout)
        _check_norm_eps("eps", eps)
        self.num_hiddens = num_hiddens
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(num_hiddens, eps=eps)

    def forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        _check_residual(X, Y, self.num_hiddens)
        return self.ln(X + self.dropout(Y))

    def pre_norm(self, X: torch.Tensor, sublayer) -> torch.Tensor:
        """The *pre-norm* order with the same parameters: ``X + dropout(sublayer(LayerNorm(X)))``.

        The residual path ``X -> X + ...`` then passes no layer norm at all (the stack
        needs one final layer norm instead: ``TransformerEncoder(..., norm_first=True)``)."""
        check_hidden("X", X, self.num_hiddens)
        return X + self.dropout(sublayer(self.ln(X)))

    @fast_path
    def fast_forward(self, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
        """``forward(X, Y)`` with the residual and a cheap dropout mask in one pass
        (:func:`bertcourse.fast_paths.add_dropout`)."""
        ln = self.ln
        return F.layer_norm(add_dropout(X, Y, self.dropout.p, self.training), ln.normalized_shape, ln.weight,
                            ln.bias, ln.eps)


def _check_residual(X, Y, num_hiddens: int) -> None:
    """X and Y must be ``(batch, seq, num_hiddens)`` tensors of the same shape."""
    check_hidden("X", X, num_hiddens)
    check_tensor("Y", Y, expected=f"{shape_str(X)} like X", floating=True)
    if X.shape != Y.shape:
        raise ValueError(f"AddNorm needs X and Y of the same shape (batch, seq, num_hiddens), "
                         f"got X {shape_str(X)} and Y {shape_str(Y)}")


class EncoderBlock(nn.Module):
    """Transformer encoder block (post-norm): self-attention, add & norm, FFN, add & norm.

    ``norm_first=True``: pre-norm instead, ``X + Sublayer(LayerNorm(X))`` for each sub-layer
    (same parameters, other order).

    ``forward(X, valid_lens=None)``: ``X`` is ``(batch, seq, num_hiddens)``; ``valid_lens``
    as in :func:`bertcourse.attention.masked_softmax` (lengths or a boolean key mask,
    ``True`` = attend). Returns ``(batch, seq, num_hiddens)``. The attention weights
    stay in ``self.attention.attention_weights``.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False, activation: str = "relu",
                 norm_eps: float = 1e-5, norm_first: bool = False):
        super().__init__()
        _check_norm_eps("norm_eps", norm_eps)
        check_bool("norm_first", norm_first)
        self.num_hiddens, self.norm_first = num_hiddens, norm_first
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_eps)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, activation)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_eps)

    def forward(self, X: torch.Tensor, valid_lens=None) -> torch.Tensor:
        check_hidden("X", X, self.num_hiddens)
        if self.norm_first:          # pre-norm: X + Sublayer(LayerNorm(X))
            Y = self.addnorm1.pre_norm(X, lambda H: self.attention(H, H, H, valid_lens))
            return self.addnorm2.pre_norm(Y, self.ffn)
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))     # post-norm: LayerNorm(X + Sublayer(X))
        return self.addnorm2(Y, self.ffn(Y))

    @fast_path
    def fast_forward(self, X: torch.Tensor, bias: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """``forward(X, valid_lens)`` of a post-norm block by its sub-layers' fast paths.

        ``bias`` ``(batch, 1, 1, seq)``: :func:`bertcourse.attention.additive_mask` of the
        lengths. ``rows`` ``(batch, r)``: compute the output only at these positions (the keys
        and values still come from every position), ``(batch, r, num_hiddens)``; ``None``:
        everywhere. Chapter 7's pretraining reads the last block only at ``[CLS]`` and at the
        predicted positions, so its last block computes nothing else.
        """
        if self.norm_first:
            raise TypeError("fast_forward computes a post-norm block; this one has norm_first=True")
        Xq = X if rows is None else torch.gather(X, 1, rows[:, :, None].expand(-1, -1, X.shape[-1]))
        Y = self.addnorm1.fast_forward(Xq, self.attention.fast_self_attention(X, bias, None if rows is None else Xq))
        return self.addnorm2.fast_forward(Y, self.ffn.fast_forward(Y))


def _check_memory(enc_outputs, X, num_hiddens: int) -> None:
    """The encoder's output must be as wide as the decoder and hold one sequence per example."""
    expected = f"(batch={X.shape[0]}, src_len, num_hiddens={num_hiddens})"
    check_tensor("enc_outputs", enc_outputs, ndim=3, expected=expected, floating=True)
    if enc_outputs.shape[-1] != num_hiddens:
        raise ValueError(f"enc_outputs must have shape {expected}, got shape {shape_str(enc_outputs)}: "
                         f"the encoder's width ({enc_outputs.shape[-1]}) does not match the "
                         f"decoder's num_hiddens ({num_hiddens})")
    if enc_outputs.shape[0] != X.shape[0]:
        raise ValueError(f"enc_outputs must have shape {expected} (the batch size of X), got "
                         f"shape {shape_str(enc_outputs)}")


class DecoderBlock(nn.Module):
    """Transformer decoder block (post-norm), three sub-layers each with add & norm:

    1. ``attention1``: causal self-attention (position ``t`` sees positions ``0..t``);
    2. ``attention2``: cross-attention, queries from the decoder, keys and values from the
       encoder output (padding hidden by ``enc_valid_lens``);
    3. ``ffn``: the position-wise feed-forward network.

    ``forward(X, enc_outputs, enc_valid_lens=None, cache=None)``:

    * ``X``: ``(batch, steps, num_hiddens)``: all target positions (training), or only the
      new ones when decoding with a cache;
    * ``enc_outputs``: ``(batch, src_len, num_hiddens)``;
    * ``enc_valid_lens``: ``(batch,)`` source lengths or a boolean ``(batch, src_len)`` mask
      (``True`` = real token), or ``None``;
    * ``cache``: ``None``, or a dict owned by this block (``{}`` before the first step). The
      block appends the keys and values of ``X``'s positions to it and keeps the encoder's
      projected keys and values, so later calls pass only the new positions.

    Returns ``(batch, steps, num_hiddens)``. ``attention1.attention_weights`` is
    ``(batch, heads, steps, keys so far)``, ``attention2.attention_weights`` is
    ``(batch, heads, steps, src_len)``. ``causal=False`` removes the causal mask: a bug,
    kept only so that the course can show what goes wrong. ``norm_first=True``: pre-norm,
    as in :class:`EncoderBlock`.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, bias: bool = False, activation: str = "relu",
                 norm_eps: float = 1e-5, causal: bool = True, norm_first: bool = False):
        super().__init__()
        _check_norm_eps("norm_eps", norm_eps)
        check_bool("causal", causal)
        check_bool("norm_first", norm_first)
        self.num_hiddens, self.causal, self.norm_first = num_hiddens, causal, norm_first
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout, bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_eps)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout, bias)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_eps)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, activation)
        self.addnorm3 = AddNorm(num_hiddens, dropout, norm_eps)

    def forward(self, X: torch.Tensor, enc_outputs: torch.Tensor, enc_valid_lens=None,
                cache: dict | None = None) -> torch.Tensor:
        check_hidden("X", X, self.num_hiddens)
        _check_memory(enc_outputs, X, self.num_hiddens)
        if cache is not None and not isinstance(cache, dict):
            raise TypeError(f"cache must be a dict (empty before the first step), got "
                            f"{type(cache).__name__}")

        def self_attention(H):       # causal; with a cache, H holds only the new positions
            if cache is None:
                return self.attention1(H, H, H, causal=self.causal)
            return self.attention1.cached(H, H, cache, "self", causal=self.causal)

        def cross_attention(H):      # queries from the decoder, keys and values from the encoder
            if cache is None:
                return self.attention2(H, enc_outputs, enc_outputs, enc_valid_lens)
            return self.attention2.cached(H, enc_outputs, cache, "cross", valid_lens=enc_valid_lens,
                                          append=False)

        if self.norm_first:          # pre-norm: X + Sublayer(LayerNorm(X))
            Y = self.addnorm1.pre_norm(X, self_attention)
            Z = self.addnorm2.pre_norm(Y, cross_attention)
            return self.addnorm3.pre_norm(Z, self.ffn)
        Y = self.addnorm1(X, self_attention(X))                        # post-norm
        Z = self.addnorm2(Y, cross_attention(Y))
        return self.addnorm3(Z, self.ffn(Z))


def _check_tokens(name: str, tokens, vocab_size: int) -> None:
    check_ids(name, tokens, vocab_size, expected="(batch, seq)")


class TransformerEmbedding(nn.Module):
    """Token embedding times ``sqrt(d)``, plus sinusoidal positions (then dropout):
    ``(batch, seq)`` ids -> ``(batch, seq, num_hiddens)``; ``offset`` as in
    :class:`~bertcourse.positional.PositionalEncoding`.

    The table is initialised with standard deviation ``1/sqrt(d)``, so after the scaling
    the token part has entries of size about 1, like the sinusoids: neither drowns the
    other. Scale the *tokens*, never the sum (that would scale the positions too).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_hiddens", num_hiddens)
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.token = nn.Embedding(vocab_size, num_hiddens)
        nn.init.normal_(self.token.weight, std=num_hiddens ** -0.5)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_tokens("tokens", tokens, self.vocab_size)
        return self.pos_encoding(self.token(tokens) * math.sqrt(self.num_hiddens), offset)


class TransformerEncoder(nn.Module):
    """Embedding (scaled by ``sqrt(d)``) + sinusoidal positions, then ``num_blks`` encoder blocks.

    ``forward(tokens, valid_lens=None)``: ``tokens`` ``(batch, src_len)`` ids, ``valid_lens``
    ``(batch,)`` lengths (or a boolean ``(batch, src_len)`` mask, ``True`` = real token).
    Returns ``(batch, src_len, num_hiddens)``. ``attention_weights`` lists every block's
    last self-attention weights, ``(batch, heads, src_len, src_len)`` each.

    ``norm_first=True`` builds pre-norm blocks and adds one final layer norm after the last
    block (``final_norm``; as GPT-2 does): in pre-norm the residual path is never normalised.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, max_len: int = 1000, bias: bool = False,
                 activation: str = "relu", norm_eps: float = 1e-5, norm_first: bool = False):
        super().__init__()
        check_positive_int("num_blks", num_blks)
        check_bool("norm_first", norm_first)
        self.num_hiddens = num_hiddens
        self.embedding = TransformerEmbedding(vocab_size, num_hiddens, dropout, max_len)
        self.blks = nn.ModuleList(
            EncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, bias, activation, norm_eps,
                         norm_first)
            for _ in range(num_blks))
        self.final_norm = nn.LayerNorm(num_hiddens, eps=norm_eps) if norm_first else None

    @property
    def attention_weights(self) -> list:
        return [blk.attention.attention_weights for blk in self.blks]

    def forward(self, tokens: torch.Tensor, valid_lens=None) -> torch.Tensor:
        _check_tokens("tokens", tokens, self.embedding.vocab_size)
        X = self.embedding(tokens)
        for blk in self.blks:
            X = blk(X, valid_lens)
        return X if self.final_norm is None else self.final_norm(X)


class DecoderCache:
    """What incremental decoding remembers: one dict of keys and values per decoder block.

    ``len(cache)`` is the number of positions decoded so far; the next position fed to
    the decoder gets that position's sinusoid.
    """

    def __init__(self, num_blks: int):
        check_positive_int("num_blks", num_blks)
        self.blocks: list[dict] = [{} for _ in range(num_blks)]

    def __len__(self) -> int:
        first = self.blocks[0] if self.blocks else {}
        return first["self"][0].shape[2] if "self" in first else 0


class TransformerDecoder(nn.Module):
    """Embedding + positions, ``num_blks`` decoder blocks, and a linear layer to vocabulary logits.

    ``forward(tokens, enc_outputs, enc_valid_lens=None, cache=None)``:

    * training (``cache=None``): ``tokens`` ``(batch, tgt_len)`` is the whole shifted target
      (``<bos>`` + target without its last token, "teacher forcing"); the causal mask
      keeps position ``t`` from seeing the answer at ``t+1..``;
    * decoding: pass ``cache=decoder.init_cache()`` and then only the new token(s) each
      step, ``(batch, 1)``; positions continue from ``len(cache)``.

    Returns logits ``(batch, tgt_len, vocab_size)``. ``self_attention_weights`` and
    ``cross_attention_weights`` list every block's last weights. ``norm_first=True``:
    pre-norm blocks and a final layer norm before the output layer, as in
    :class:`TransformerEncoder`.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, max_len: int = 1000, bias: bool = False,
                 activation: str = "relu", norm_eps: float = 1e-5, causal: bool = True,
                 norm_first: bool = False):
        super().__init__()
        check_positive_int("num_blks", num_blks)
        check_bool("norm_first", norm_first)
        self.num_hiddens, self.vocab_size = num_hiddens, vocab_size
        self.embedding = TransformerEmbedding(vocab_size, num_hiddens, dropout, max_len)
        self.blks = nn.ModuleList(
            DecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, bias, activation,
                         norm_eps, causal, norm_first)
            for _ in range(num_blks))
        self.final_norm = nn.LayerNorm(num_hiddens, eps=norm_eps) if norm_first else None
        self.dense = nn.Linear(num_hiddens, vocab_size)

    @property
    def self_attention_weights(self) -> list:
        return [blk.attention1.attention_weights for blk in self.blks]

    @property
    def cross_attention_weights(self) -> list:
        return [blk.attention2.attention_weights for blk in self.blks]

    def init_cache(self) -> DecoderCache:
        """An empty cache for :meth:`forward` (one per decoded batch)."""
        return DecoderCache(len(self.blks))

    def forward(self, tokens: torch.Tensor, enc_outputs: torch.Tensor, enc_valid_lens=None,
                cache: DecoderCache | None = None) -> torch.Tensor:
        _check_tokens("tokens", tokens, self.vocab_size)
        if cache is not None and (not isinstance(cache, DecoderCache)
                                  or len(cache.blocks) != len(self.blks)):
            raise TypeError(f"cache must come from this decoder's init_cache() (a DecoderCache with "
                            f"{len(self.blks)} blocks), got {type(cache).__name__}")
        offset = 0 if cache is None else len(cache)
        X = self.embedding(tokens, offset)
        for i, blk in enumerate(self.blks):
            X = blk(X, enc_outputs, enc_valid_lens, None if cache is None else cache.blocks[i])
        return self.dense(X if self.final_norm is None else self.final_norm(X))


class EncoderDecoder(nn.Module):
    """The whole Transformer: ``forward(src, dec_inputs, src_valid_lens=None)`` encodes the
    source ``(batch, src_len)`` and returns the decoder's logits
    ``(batch, tgt_len, vocab_size)`` for the (shifted) target ``dec_inputs``."""

    def __init__(self, encoder: TransformerEncoder, decoder: TransformerDecoder):
        super().__init__()
        enc_d = getattr(encoder, "num_hiddens", None)
        dec_d = getattr(decoder, "num_hiddens", None)
        if enc_d is None or dec_d is None:
            raise TypeError(f"encoder and decoder must be modules with a num_hiddens attribute "
                            f"(TransformerEncoder, TransformerDecoder), got "
                            f"{type(encoder).__name__} and {type(decoder).__name__}")
        if enc_d != dec_d:
            raise ValueError(f"encoder and decoder widths differ: encoder num_hiddens={enc_d}, "
                             f"decoder num_hiddens={dec_d}; cross-attention needs the encoder "
                             f"output (batch, src_len, {enc_d}) to be as wide as the decoder's "
                             f"queries (batch, tgt_len, {dec_d})")
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src: torch.Tensor, dec_inputs: torch.Tensor, src_valid_lens=None) -> torch.Tensor:
        enc_outputs = self.encoder(src, src_valid_lens)
        return self.decoder(dec_inputs, enc_outputs, src_valid_lens)


@torch.no_grad()
def greedy_decode(model: EncoderDecoder, src: torch.Tensor, src_valid_lens=None, *, bos_id: int,
                  eos_id: int, max_len: int, pad_id: int = 0, use_cache: bool = True) -> torch.Tensor:
    """Generate outputs one token at a time, always taking the most likely next token.

    Step ``t`` (counting from 0) feeds the tokens at positions ``0..t`` (``<bos>``, y_1 .. y_t)
    and picks ``y_{t+1} = argmax``; with ``use_cache`` only the newest token (position ``t``)
    is fed and the blocks reuse the keys and values of positions ``0..t-1`` (same tokens,
    less work).

    Args:
        src: ``(batch, src_len)`` source ids; ``src_valid_lens`` their lengths ``(batch,)``.
        bos_id, eos_id: the start and end tokens; a sequence stops at its first ``<eos>``.
        max_len: the most tokens to generate (``<eos>`` included).
        pad_id: fills the positions after a sequence's ``<eos>``.

    Returns ``(batch, steps)`` token ids, ``steps <= max_len`` (the loop stops once every
    sequence has produced ``<eos>``). The model is put in eval mode for the call and
    restored afterwards.
    """
    check_bool("use_cache", use_cache)
    _check_decode_args(model, src, bos_id, eos_id, pad_id, max_len)
    with evaluation_mode(model):
        enc_outputs = model.encoder(src, src_valid_lens)
        batch = src.shape[0]
        out = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
        cache = model.decoder.init_cache() if use_cache else None
        for _ in range(max_len):
            # with a cache: only the newest token; without: the whole prefix again
            dec_in = out[:, -1:] if use_cache else out
            logits = model.decoder(dec_in, enc_outputs, src_valid_lens, cache)
            next_token = logits[:, -1].argmax(dim=-1).masked_fill(finished, pad_id)
            finished |= next_token == eos_id
            out = torch.cat([out, next_token.unsqueeze(1)], dim=1)
            if bool(finished.all()):
                break
        return out[:, 1:]


def _check_decode_args(model, src, bos_id, eos_id, pad_id, max_len) -> None:
    """Named errors for :func:`greedy_decode`'s arguments."""
    check_instance("model", model, EncoderDecoder)
    check_positive_int("max_len", max_len)
    # the vocabulary sizes of the course's encoder and decoder (a custom module may lack them)
    src_vocab = getattr(getattr(model.encoder, "embedding", None), "vocab_size", None)
    tgt_vocab = getattr(model.decoder, "vocab_size", None)
    if src_vocab is None:
        check_tensor("src", src, ndim=2, expected="(batch, src_len) of integer token ids", floating=False)
    else:
        _check_tokens("src", src, src_vocab)
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id), ("pad_id", pad_id)):
        check_int(name, value, low=0, high=None if tgt_vocab is None else tgt_vocab - 1)
