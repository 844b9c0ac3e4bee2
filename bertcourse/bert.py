"""Chapters 4–6: BERT's input representation, encoder, and pretraining heads."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from ._checks import (check_bool, check_choice, check_dim, check_finite_number, check_hidden, check_instance,
                      check_nonempty, check_positive_int, check_probability, check_str_list, check_tensor,
                      shape_str)
from .positional import LearnedPositionalEmbedding
from .transformer import ACTIVATIONS, EncoderBlock, get_activation

__all__ = ["get_tokens_and_segments", "BERTConfig", "CONFIGS", "get_config", "BERTEncoder",
           "MaskLM", "Pooler", "NextSentencePred", "BERTModel", "num_parameters"]


def get_tokens_and_segments(tokens_a: list[str], tokens_b: list[str] | None = None):
    """BERT input for one text or a text pair.

    ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``; the segment ids are 0 for ``[CLS]``,
    A and the first ``[SEP]``, and 1 for B and the last ``[SEP]``.

    Returns ``(tokens, segments)``, two lists of the same length.
    """
    check_str_list("tokens_a", tokens_a, what="token strings")
    if tokens_b is not None:
        check_str_list("tokens_b", tokens_b, what="token strings")
    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segments = [0] * len(tokens)
    if tokens_b is not None:
        tokens += [*tokens_b, "[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokens, segments


# ----------------------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------------------

@dataclass
class BERTConfig:
    """The sizes of a BERT. ``CONFIGS`` holds the standard ones; see :func:`get_config`."""
    vocab_size: int
    num_hiddens: int
    ffn_num_hiddens: int
    num_heads: int
    num_blks: int
    max_len: int = 512
    dropout: float = 0.1
    activation: str = "gelu"      # BERT: exact GELU; d2l: ReLU
    norm_eps: float = 1e-12       # BERT: 1e-12; torch's LayerNorm default: 1e-5
    num_segments: int = 2

    def __post_init__(self):
        for name in ("vocab_size", "num_hiddens", "ffn_num_hiddens", "num_heads", "num_blks",
                     "max_len", "num_segments"):
            check_positive_int(name, getattr(self, name))
        if self.num_hiddens % self.num_heads:
            raise ValueError(f"num_hiddens must be divisible by num_heads, got num_hiddens="
                             f"{self.num_hiddens}, num_heads={self.num_heads}")
        check_probability("dropout", self.dropout)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_finite_number("norm_eps", self.norm_eps, low=0, low_open=True)

    def to_dict(self) -> dict:
        return asdict(self)


CONFIGS = {
    # small enough to pretrain on a laptop CPU in about a minute (chapter 7)
    "tiny": dict(vocab_size=4000, num_hiddens=64, ffn_num_hiddens=128, num_heads=2, num_blks=2,
                 max_len=64, dropout=0.1),
    # the widely used d2l / WikiText-2 setting
    "d2l-small": dict(vocab_size=20256, num_hiddens=128, ffn_num_hiddens=256, num_heads=2,
                      num_blks=2, max_len=64, dropout=0.2, activation="relu", norm_eps=1e-5),
    "base": dict(vocab_size=30522, num_hiddens=768, ffn_num_hiddens=3072, num_heads=12,
                 num_blks=12, max_len=512),
    "large": dict(vocab_size=30522, num_hiddens=1024, ffn_num_hiddens=4096, num_heads=16,
                  num_blks=24, max_len=512),
}


def get_config(name: str, **overrides) -> BERTConfig:
    """A standard configuration by name (``tiny``, ``d2l-small``, ``base``, ``large``),
    with any field overridden, e.g. ``get_config("tiny", vocab_size=len(vocab))``."""
    check_choice("config", name, CONFIGS)
    unknown = set(overrides) - set(BERTConfig.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown BERTConfig field(s): {sorted(unknown)}")
    return BERTConfig(**{**CONFIGS[name], **overrides})


# ----------------------------------------------------------------------------------------
# Encoder
# ----------------------------------------------------------------------------------------

class BERTEncoder(nn.Module):
    """Token + segment + learned position embeddings, layer norm, then a stack of
    Transformer encoder blocks.

    ``forward(tokens, segments=None, valid_lens=None)``:

    * ``tokens``: ``(batch, seq)`` integer ids, ``seq <= max_len``;
    * ``segments``: ``(batch, seq)`` of 0 (``[CLS]``, A, first ``[SEP]``) and 1 (B, last
      ``[SEP]``); ``None`` means all 0;
    * ``valid_lens``: ``(batch,)`` lengths, or a boolean ``(batch, seq)`` mask with
      ``True`` on real tokens (Hugging Face's ``attention_mask.bool()``); ``None`` = no padding.

    Returns ``(batch, seq, num_hiddens)``; with ``return_hidden_states=True`` also the
    list of the embedding output and every block's output (``num_blks + 1`` tensors).

    ``checkpointing`` (off by default): while training, keep only each block's input for
    the backward pass and recompute the block's activations there (activation, or
    gradient, checkpointing). One more forward pass per step buys the memory of all but one
    block's activations; the gradients are the same (the dropout masks are replayed).
    """

    def __init__(self, config: BERTConfig):
        super().__init__()
        check_instance("config", config, BERTConfig, hint="e.g. bertcourse.bert.get_config('tiny')")
        c = self.config = config
        self.token_embedding = nn.Embedding(c.vocab_size, c.num_hiddens)
        self.segment_embedding = nn.Embedding(c.num_segments, c.num_hiddens)
        self.pos_embedding = LearnedPositionalEmbedding(c.max_len, c.num_hiddens)
        # BERT normalises the summed embeddings (d2l's simplified version does not)
        self.embedding_norm = nn.LayerNorm(c.num_hiddens, eps=c.norm_eps)
        self.embedding_dropout = nn.Dropout(c.dropout)
        self.blks = nn.ModuleList(
            EncoderBlock(c.num_hiddens, c.ffn_num_hiddens, c.num_heads, c.dropout, bias=True,
                         activation=c.activation, norm_eps=c.norm_eps)
            for _ in range(c.num_blks))
        self.checkpointing = False

    def check_inputs(self, tokens, segments=None, valid_lens=None, return_hidden_states: bool = False) -> None:
        """Named errors for the mistakes learners make with BERT inputs. (``valid_lens`` is
        checked by the attention layers, which know the sequence length.)"""
        c = self.config
        expected = f"(batch, seq <= max_len={c.max_len})"
        check_tensor("tokens", tokens, ndim=2, expected=expected, floating=False)
        check_nonempty("tokens", tokens, expected)
        check_bool("return_hidden_states", return_hidden_states)
        if tokens.shape[1] > c.max_len:
            raise ValueError(f"tokens has {tokens.shape[1]} positions but max_len={c.max_len}: "
                             f"truncate the input (got shape {shape_str(tokens)})")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= c.vocab_size):
            raise ValueError(f"tokens must be ids in [0, vocab_size={c.vocab_size}), got values "
                             f"from {int(tokens.min())} to {int(tokens.max())}")
        if segments is not None:
            check_tensor("segments", segments, ndim=2, expected=f"{shape_str(tokens)} like tokens",
                         floating=False)
            if segments.shape != tokens.shape:
                raise ValueError(f"segments must have the shape of tokens {shape_str(tokens)}, "
                                 f"got shape {shape_str(segments)}")
            if segments.numel() and (segments.min() < 0 or segments.max() >= c.num_segments):
                raise ValueError(f"segments must be 0 (sentence A) or 1 (sentence B), got values "
                                 f"from {int(segments.min())} to {int(segments.max())}")

    def embed(self, tokens, segments=None) -> torch.Tensor:
        """The input representation: token + segment + position embeddings, normalised."""
        self.check_inputs(tokens, segments)
        X = self.token_embedding(tokens)
        if segments is not None:
            X = X + self.segment_embedding(segments)
        else:   # all segment 0, without allocating a tensor of zeros
            X = X + self.segment_embedding.weight[0]
        return self.embedding_dropout(self.embedding_norm(self.pos_embedding(X)))

    def forward(self, tokens, segments=None, valid_lens=None, return_hidden_states: bool = False):
        self.check_inputs(tokens, segments, valid_lens, return_hidden_states)
        X = self.embed(tokens, segments)
        hidden_states = [X]
        recompute = self.checkpointing and self.training and torch.is_grad_enabled()
        for blk in self.blks:
            # recompute: the backward pass runs blk's forward again (same dropout masks: the
            # random state is saved) instead of keeping its activations
            X = checkpoint(blk, X, valid_lens, use_reentrant=False) if recompute else blk(X, valid_lens)
            hidden_states.append(X)
        return (X, hidden_states) if return_hidden_states else X


# ----------------------------------------------------------------------------------------
# Pretraining heads
# ----------------------------------------------------------------------------------------

class MaskLM(nn.Module):
    """The masked-language-model head.

    Gathers the hidden states at the prediction positions, transforms them (dense,
    activation, layer norm) and maps them to vocabulary logits. The decoder's weight is
    tied to the token embedding by :class:`BERTModel` (as in BERT).

    ``forward(X, pred_positions)``: ``X`` ``(batch, seq, num_hiddens)``, ``pred_positions``
    ``(batch, num_preds)`` -> logits ``(batch, num_preds, vocab_size)``.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, activation: str = "gelu",
                 norm_eps: float = 1e-12):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_hiddens", num_hiddens)
        check_finite_number("norm_eps", norm_eps, low=0, low_open=True)
        self.dense = nn.Linear(num_hiddens, num_hiddens)
        self._act = get_activation(activation)
        self.ln = nn.LayerNorm(num_hiddens, eps=norm_eps)
        self.decoder = nn.Linear(num_hiddens, vocab_size)

    @staticmethod
    def gather(X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        """``X[b, pred_positions[b, i]]`` for every b, i: ``(batch, num_preds, num_hiddens)``."""
        check_tensor("pred_positions", pred_positions, ndim=2, expected=f"(batch={X.shape[0]}, num_preds)",
                     floating=False)
        if pred_positions.shape[0] != X.shape[0]:
            raise ValueError(f"pred_positions must have shape (batch={X.shape[0]}, num_preds), got "
                             f"shape {shape_str(pred_positions)}")
        if pred_positions.numel() and (pred_positions.min() < 0 or pred_positions.max() >= X.shape[1]):
            raise ValueError(f"pred_positions must lie in [0, seq={X.shape[1]}), got values from "
                             f"{int(pred_positions.min())} to {int(pred_positions.max())}")
        index = pred_positions.unsqueeze(-1).expand(-1, -1, X.shape[-1])
        return torch.gather(X, 1, index)

    def features(self, X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        """The transformed states the decoder reads: ``(batch, num_preds, num_hiddens)``.
        (Pretraining feeds them to a fused loss instead of materialising the logits.)"""
        check_hidden("X", X, self.dense.in_features)
        return self.ln(self._act(self.dense(self.gather(X, pred_positions))))

    def forward(self, X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.features(X, pred_positions))


class Pooler(nn.Module):
    """BERT's pooler: the ``[CLS]`` hidden state through dense + tanh.

    ``(batch, seq, num_hiddens) -> (batch, num_hiddens)``. Only position 0 is read:
    flattening the whole sequence into the classifier is pitfall 3 of the course.
    """

    def __init__(self, num_hiddens: int):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        self.dense = nn.Linear(num_hiddens, num_hiddens)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_hidden("X", X, self.dense.in_features)
        return torch.tanh(self.dense(X[:, 0]))


class NextSentencePred(nn.Module):
    """The next-sentence-prediction classifier on the pooled ``[CLS]`` state.

    ``(batch, num_hiddens) -> (batch, 2)`` logits. Labels follow Hugging Face:
    **0 = B follows A (IsNext), 1 = B is a random sentence (NotNext)**.
    """

    def __init__(self, num_hiddens: int):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        self.output = nn.Linear(num_hiddens, 2)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        _check_pooled(pooled, self.output.in_features)
        return self.output(pooled)


def _check_pooled(pooled, num_hiddens: int) -> None:
    expected = f"(batch, num_hiddens={num_hiddens})"
    check_tensor("pooled", pooled, ndim=2, expected=expected, floating=True)
    check_dim("pooled", pooled, -1, num_hiddens, expected)
    check_nonempty("pooled", pooled, expected)


class BERTModel(nn.Module):
    """BERT: the encoder, the pooler and (optionally) the two pretraining heads.

    ``forward(tokens, segments=None, valid_lens=None, pred_positions=None)`` returns
    ``(encoded, mlm_logits, nsp_logits)``: ``(batch, seq, num_hiddens)``,
    ``(batch, num_preds, vocab_size)`` (``None`` without ``pred_positions`` or heads) and
    ``(batch, 2)`` (``None`` without heads).

    With ``with_heads=False`` the model is what Hugging Face calls ``BertModel``
    (encoder + pooler): 109,482,240 parameters for BERT-base.
    """

    def __init__(self, config: BERTConfig, with_heads: bool = True):
        super().__init__()
        check_instance("config", config, BERTConfig, hint="e.g. bertcourse.bert.get_config('tiny')")
        check_bool("with_heads", with_heads)
        self.config = config
        self.encoder = BERTEncoder(config)
        self.pooler = Pooler(config.num_hiddens)
        self.mlm = self.nsp = None
        if with_heads:
            self.mlm = MaskLM(config.vocab_size, config.num_hiddens, config.activation, config.norm_eps)
            self.nsp = NextSentencePred(config.num_hiddens)
            # Tie the output embedding to the input embedding, as BERT does.
            self.mlm.decoder.weight = self.encoder.token_embedding.weight

    def forward(self, tokens, segments=None, valid_lens=None, pred_positions=None):
        encoded = self.encoder(tokens, segments, valid_lens)
        mlm_logits = nsp_logits = None
        if self.mlm is not None:
            if pred_positions is not None:
                mlm_logits = self.mlm(encoded, pred_positions)
            if self.nsp is not None:   # None: an MLM-only checkpoint (chapter 8)
                nsp_logits = self.nsp(self.pooler(encoded))
        return encoded, mlm_logits, nsp_logits


def num_parameters(model: nn.Module) -> int:
    """Number of distinct parameters (a tied weight counts once)."""
    check_instance("model", model, nn.Module)
    return sum(p.numel() for p in model.parameters())
