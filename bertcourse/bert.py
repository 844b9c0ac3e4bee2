"""Chapters 4–6: BERT's input representation, encoder, pretraining heads and the MLM loss.

Each layer has its plain ``forward`` (what the chapters show) and, where chapter 7's
pretraining needs speed, a method marked ``@fast_path`` beside it that computes the same
numbers faster (:mod:`bertcourse.fast_paths`; tested equal in ``tests/test_fast_paths.py``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ._checks import (
    check_bool,
    check_choice,
    check_dim,
    check_finite_number,
    check_hidden,
    check_instance,
    check_labels,
    check_nonempty,
    check_positive_int,
    check_probability,
    check_str_list,
    check_tensor,
    shape_str,
)
from .attention import MultiHeadAttention, additive_mask
from .fast_paths import dropout, fast_path, onednn_for, onednn_mm_t
from .positional import LearnedPositionalEmbedding
from .transformer import ACTIVATIONS, EncoderBlock, get_activation

__all__ = ["get_tokens_and_segments", "BERTConfig", "CONFIGS", "get_config", "BERTEncoder",
           "MaskLM", "mlm_loss", "mlm_accuracy", "accuracy", "confusion_matrix", "Pooler", "mean_pool", "IS_NEXT",
           "NOT_NEXT", "NextSentencePred", "nsp_loss", "BERTModel", "num_parameters"]

REDUCTIONS = ("mean", "sum")


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

    def supports_fast_path(self) -> bool:
        """Whether :meth:`fast_forward` knows every block: post-norm
        :class:`~bertcourse.transformer.EncoderBlock` with plain multi-head attention (a
        subclass may compute something else, so it takes the plain path)."""
        return all(type(b) is EncoderBlock and not b.norm_first and type(b.attention) is MultiHeadAttention
                   for b in self.blks)

    @fast_path
    def fast_forward(self, tokens, segments, valid_lens, rows=None) -> torch.Tensor:
        """``forward(tokens, segments, valid_lens)`` by the blocks' fast paths (same numbers up
        to rounding; dropout masks are other draws from the same distribution).

        ``valid_lens``: ``(batch,)`` lengths of at least 1. ``rows`` ``(batch, r)``: the last
        block computes its output only at these positions, ``(batch, r, num_hiddens)`` (the
        earlier blocks, and its keys and values, use every position); ``None``: everywhere.
        Needs :meth:`supports_fast_path`.
        """
        self.check_inputs(tokens, segments)
        if not self.supports_fast_path():
            raise TypeError("fast_forward needs post-norm EncoderBlocks with MultiHeadAttention "
                            "(see supports_fast_path); use forward for this encoder")
        check_tensor("valid_lens", valid_lens, ndim=1, expected=f"(batch={tokens.shape[0]},) lengths >= 1",
                     floating=False)
        if valid_lens.shape[0] != tokens.shape[0] or int(valid_lens.min()) < 1:
            raise ValueError(f"valid_lens must be (batch={tokens.shape[0]},) lengths of at least 1 for "
                             f"fast_forward, got shape {shape_str(valid_lens)}, smallest {int(valid_lens.min())}")
        bias = additive_mask(valid_lens, tokens.shape[1])          # (batch, 1, 1, seq): 0 or -inf-like
        X = self.token_embedding(tokens)
        X = X + (self.segment_embedding(segments) if segments is not None else self.segment_embedding.weight[0])
        X = dropout(self.embedding_norm(self.pos_embedding(X)), self.embedding_dropout.p, self.training)
        for i, blk in enumerate(self.blks):
            X = blk.fast_forward(X, bias, rows if i == len(self.blks) - 1 else None)
        return X


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
        _check_positions(pred_positions, X.shape[0], X.shape[1])
        index = pred_positions.unsqueeze(-1).expand(-1, -1, X.shape[-1])
        return torch.gather(X, 1, index)

    def features(self, X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        """The transformed states the decoder reads: ``(batch, num_preds, num_hiddens)``.
        (Pretraining feeds them to a fused loss instead of materialising the logits.)"""
        check_hidden("X", X, self.dense.in_features)
        return self.ln(self._act(self.dense(self.gather(X, pred_positions))))

    def forward(self, X: torch.Tensor, pred_positions: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.features(X, pred_positions))

    def loss(self, features: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
             fused: bool = False) -> torch.Tensor:
        """The MLM loss (:func:`mlm_loss`) of the logits ``decoder(features)``; ``features``
        as :meth:`features` returns them. ``fused=True``: the same value and gradients from
        :meth:`fused_loss`, which never builds the ``(predictions, vocab)`` logits."""
        check_bool("fused", fused)
        if fused:
            return self.fused_loss(features, mlm_labels, mlm_weights)
        return mlm_loss(self.decoder(features).float(), mlm_labels, mlm_weights)

    @fast_path
    def fused_loss(self, features: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
                   chunk: int = 128, block: int = 1024) -> torch.Tensor:
        """``loss(features, mlm_labels, mlm_weights)`` without the full logits.

        ``features`` ``(batch, num_preds, num_hiddens)``, ``mlm_labels`` ``(batch, num_preds)``
        ids, ``mlm_weights`` ``(batch, num_preds)``, 1 for real predictions and 0 for padding
        slots (dropped before any work). Same value and gradients as the plain loss (float32:
        up to rounding; bfloat16 features: the logits are rounded to bfloat16 as autocast
        would, softmax and loss are float32). ``chunk`` rows of logits at a time (128 was
        fastest on the benchmark CPU; 32 and 256 were 10-30 % slower), gradients turned into
        matrix products every ``block`` rows. Runs outside autocast (it picks its own dtypes).
        """
        d, vocab = self.decoder.in_features, self.decoder.out_features
        check_tensor("features", features, ndim=3, expected=f"(batch, num_preds, num_hiddens={d})", floating=True)
        check_dim("features", features, -1, d, f"(batch, num_preds, num_hiddens={d})")
        _check_mlm_targets(mlm_labels, mlm_weights, features.shape[0], features.shape[1], vocab)
        check_positive_int("chunk", chunk)
        check_positive_int("block", block)
        weight, bias = self.decoder.weight, self.decoder.bias
        w = mlm_weights.reshape(-1).float()
        real = (w != 0).nonzero().squeeze(1)
        if real.numel() == 0:           # no prediction in the batch: loss 0, still differentiable
            return (features.sum() + weight.sum() + bias.sum()) * 0.0
        with torch.autocast(features.device.type, enabled=False):
            H = features.reshape(-1, d).index_select(0, real)
            coef = w[real] / w.sum().clamp(min=1e-8)
            return _FusedLinearCrossEntropy.apply(H, weight.to(H.dtype),
                                                  bias.float() if H.dtype == torch.float32 else bias,
                                                  mlm_labels.reshape(-1)[real], coef, chunk, max(block, chunk))


def _check_positions(pred_positions, batch: int, seq: int) -> None:
    """``pred_positions``: ``(batch, num_preds)`` integer positions in ``[0, seq)``."""
    check_tensor("pred_positions", pred_positions, ndim=2, expected=f"(batch={batch}, num_preds)", floating=False)
    if pred_positions.shape[0] != batch:
        raise ValueError(f"pred_positions must have shape (batch={batch}, num_preds), got "
                         f"shape {shape_str(pred_positions)}")
    if pred_positions.numel() and (pred_positions.min() < 0 or pred_positions.max() >= seq):
        raise ValueError(f"pred_positions must lie in [0, seq={seq}), got values from "
                         f"{int(pred_positions.min())} to {int(pred_positions.max())}")


def _check_mlm_targets(mlm_labels, mlm_weights, batch: int, max_preds: int, vocab: int) -> None:
    """Labels ``(batch, max_preds)`` ids in ``[0, vocab)``; weights of that shape, finite, >= 0."""
    exp = f"(batch={batch}, max_preds={max_preds})"
    check_tensor("mlm_labels", mlm_labels, ndim=2, expected=exp, floating=False)
    check_tensor("mlm_weights", mlm_weights, ndim=2, expected=exp, floating=True)
    for name, x in (("mlm_labels", mlm_labels), ("mlm_weights", mlm_weights)):
        if tuple(x.shape) != (batch, max_preds):
            raise ValueError(f"{name} must have shape {exp} like the predictions' first two dimensions, "
                             f"got shape {shape_str(x)}")
    if mlm_labels.numel() and (mlm_labels.min() < 0 or mlm_labels.max() >= vocab):
        raise ValueError(f"mlm_labels must be ids in 0..{vocab - 1} (vocab={vocab}), "
                         f"got values from {int(mlm_labels.min())} to {int(mlm_labels.max())}")
    if mlm_weights.numel() and not bool(((mlm_weights >= 0) & torch.isfinite(mlm_weights)).all()):
        raise ValueError("mlm_weights must be finite and >= 0 (1 for a real prediction, 0 for padding), got "
                         f"values from {float(mlm_weights.min())} to {float(mlm_weights.max())}")


def mlm_loss(mlm_logits: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
             reduction: str = "mean") -> torch.Tensor:
    """Masked-LM loss: the mean cross-entropy over the *real* predictions only.

    ``mlm_logits`` (batch, max_preds, vocab), ``mlm_labels`` (batch, max_preds) integer,
    ``mlm_weights`` (batch, max_preds) float, 1 for a real prediction and 0 for a padding
    slot. The per-slot losses (``reduction='none'``) are multiplied by the weights, summed
    and divided by the sum of the weights (at least 1e-8, so a batch without predictions
    gives 0, not NaN). Pitfall: ``reduction='mean'`` first and *then* multiplying by the
    weights does nothing useful — the padding slots have already been averaged in.
    ``reduction="sum"``: the weighted sum, not divided (an evaluation adds it up over batches).
    """
    check_choice("reduction", reduction, REDUCTIONS)
    check_tensor("mlm_logits", mlm_logits, ndim=3, expected="(batch, max_preds, vocab)", floating=True)
    batch, max_preds, vocab = mlm_logits.shape
    _check_mlm_targets(mlm_labels, mlm_weights, batch, max_preds, vocab)
    per_slot = F.cross_entropy(mlm_logits.reshape(-1, vocab), mlm_labels.reshape(-1), reduction="none")
    weights = mlm_weights.reshape(-1).to(per_slot.dtype)
    if reduction == "sum":
        return (per_slot * weights).sum()
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def mlm_accuracy(mlm_logits: torch.Tensor, mlm_labels: torch.Tensor, mlm_weights: torch.Tensor,
                 reduction: str = "mean") -> torch.Tensor:
    """Top-1 MLM accuracy over the *real* predictions: the fraction of slots with
    ``mlm_weights > 0`` whose highest logit is the label (a 0-d float tensor; 0 when there
    is no real prediction); ``reduction="sum"``: their number. Shapes as :func:`mlm_loss`.
    Padding slots must not count: their label 0 is ``[PAD]``, which the model learns never
    to predict, so they would look like errors."""
    check_choice("reduction", reduction, REDUCTIONS)
    check_tensor("mlm_logits", mlm_logits, ndim=3, expected="(batch, max_preds, vocab)", floating=True)
    batch, max_preds, vocab = mlm_logits.shape
    _check_mlm_targets(mlm_labels, mlm_weights, batch, max_preds, vocab)
    real = mlm_weights > 0
    correct = ((mlm_logits.argmax(dim=-1) == mlm_labels) & real).sum()
    if reduction == "sum":
        return correct.float()
    return correct.float() / real.sum().clamp(min=1)


def accuracy(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The share of rows of ``logits`` ``(n, num_classes)`` whose highest logit is the class in
    ``labels`` ``(n,)``, a 0-d float tensor (``reduction="sum"``: their number): every classification
    accuracy of the course. MLM's, over real predictions only, is :func:`mlm_accuracy`."""
    check_choice("reduction", reduction, REDUCTIONS)
    check_tensor("logits", logits, ndim=2, expected="(n, num_classes)", floating=True)
    check_tensor("labels", labels, ndim=1, expected=f"(n={logits.shape[0]},)", floating=False)
    check_dim("labels", labels, 0, logits.shape[0], f"(n={logits.shape[0]},)")
    correct = (logits.argmax(-1) == labels).float()
    return correct.sum() if reduction == "sum" else correct.mean()


def confusion_matrix(labels: torch.Tensor, predictions: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Counts ``(num_classes, num_classes)`` long: entry ``[i, j]`` is the number of examples of true
    class ``i`` predicted as ``j`` (rows: the truth, as in scikit-learn). ``labels`` and
    ``predictions`` are ``(n,)`` class indices; the diagonal's sum over ``n`` is :func:`accuracy`."""
    check_positive_int("num_classes", num_classes)
    check_labels("labels", labels, num_classes)
    check_labels("predictions", predictions, num_classes, n=labels.shape[0])
    # one bincount over the flat index true * C + predicted
    flat = labels.long() * num_classes + predictions.long()
    return torch.bincount(flat, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


class _FusedLinearCrossEntropy(torch.autograd.Function):
    """Cross-entropy of ``H @ W.T + b`` against ``labels``, weighted by ``coef``, without
    keeping the ``(N, vocab)`` logits (:meth:`MaskLM.fused_loss`).

    Forward works on ``chunk`` rows at a time: logits (float32; from bfloat16 inputs they are
    rounded to bfloat16 first, as autocast would), softmax, the loss, and already the gradient
    of the loss with respect to the logits, ``coef * (softmax - one_hot)``. Those gradients are
    collected for ``block`` rows (in the input dtype) and turned into the gradients of ``H``,
    ``W`` and ``b`` with two matrix products and a sum per block. Backward only scales them.
    Memory: ``chunk x vocab`` + ``block x vocab`` values instead of several ``N x vocab``
    tensors; time: every pass over the logits happens while they are still in the cache.
    """

    @staticmethod
    def forward(ctx, H, W, b, labels, coef, chunk: int, block: int):
        N, d, V = H.shape[0], H.shape[1], W.shape[0]
        dev = H.device
        need_grad = any(ctx.needs_input_grad[:3])
        loss = torch.zeros((), dtype=torch.float32, device=dev)
        if need_grad:
            grad_H = torch.empty_like(H)
            grad_W = torch.zeros(W.shape, dtype=torch.float32, device=dev)
            grad_b = torch.zeros(V, dtype=torch.float32, device=dev)
            P = torch.empty(min(block, N), V, dtype=H.dtype, device=dev)       # d loss / d logits, one block
            Wt = None                                                          # W transposed, for oneDNN
        for b0 in range(0, N, block):
            b1 = min(b0 + block, N)
            for s in range(b0, b1, chunk):
                e = min(s + chunk, b1)
                if onednn_for(H, (e - s, d, V)):
                    z = onednn_mm_t(H[s:e], W, b)
                elif H.dtype == torch.float32:
                    z = torch.addmm(b, H[s:e], W.t())
                else:                           # a bfloat16 product (bias included), then float32
                    z = torch.addmm(b.to(H.dtype), H[s:e], W.t()).float()
                lab, c = labels[s:e], coef[s:e]
                zmax = z.amax(dim=1)
                picked = z.gather(1, lab[:, None]).squeeze(1)
                p = torch.softmax(z, dim=1)
                # log-sum-exp from the softmax: its largest entry is 1 / sum(exp(z - zmax)), never tiny
                lse = zmax - p.amax(dim=1).log()
                loss += ((lse - picked) * c).sum()                       # -log softmax[label], weighted
                if need_grad:
                    p.mul_(c[:, None])                                   # c * softmax
                    grad_b += p.sum(dim=0)
                    grad_b.index_add_(0, lab, -c)                        # minus c * one_hot
                    Pc = P[s - b0:e - b0]
                    Pc.copy_(p)
                    Pc[torch.arange(e - s, device=dev), lab] -= c.to(Pc.dtype)
            if need_grad:
                Pb, Hb = P[:b1 - b0], H[b0:b1]
                if onednn_for(H, (b1 - b0, V, d)):
                    Wt = W.t().contiguous() if Wt is None else Wt
                    grad_H[b0:b1] = onednn_mm_t(Pb, Wt)
                else:
                    torch.mm(Pb, W, out=grad_H[b0:b1])
                if onednn_for(H, (d, b1 - b0, V)):
                    grad_W += onednn_mm_t(Hb.t(), Pb.t()).t()                  # oneDNN is fastest as (d, V) = H^T P
                elif H.dtype == torch.float32:
                    grad_W.addmm_(Pb.t(), Hb)
                else:
                    grad_W += torch.mm(Pb.t(), Hb)
        if need_grad:
            ctx.save_for_backward(grad_H, grad_W.to(W.dtype), grad_b.to(b.dtype))
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grad_H, grad_W, grad_b = ctx.saved_tensors
        return (grad_H * grad_loss.to(grad_H.dtype), grad_W * grad_loss.to(grad_W.dtype),
                grad_b * grad_loss.to(grad_b.dtype), None, None, None, None)


class Pooler(nn.Module):
    """BERT's pooler: the ``[CLS]`` hidden state through dense + tanh.

    ``(batch, seq, num_hiddens) -> (batch, num_hiddens)``. Only position 0 is read:
    flattening the whole sequence into the classifier is a pitfall (chapter 6).
    """

    def __init__(self, num_hiddens: int):
        super().__init__()
        check_positive_int("num_hiddens", num_hiddens)
        self.dense = nn.Linear(num_hiddens, num_hiddens)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_hidden("X", X, self.dense.in_features)
        return torch.tanh(self.dense(X[:, 0]))


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of ``hidden`` ``(batch, seq, d)`` over the positions where ``mask``
    ``(batch, seq)`` is true (or 1): padding does not count. Returns ``(batch, d)``."""
    check_tensor("hidden", hidden, ndim=3, expected="(batch, seq, num_hiddens)", floating=True)
    check_tensor("mask", mask, ndim=2, expected=f"(batch={hidden.shape[0]}, seq={hidden.shape[1]})")
    if tuple(mask.shape) != tuple(hidden.shape[:2]):
        raise ValueError(f"mask must have shape (batch={hidden.shape[0]}, seq={hidden.shape[1]}), got "
                         f"shape {shape_str(mask)}")
    m = mask.to(hidden.dtype).unsqueeze(-1)                      # (batch, seq, 1)
    return (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)


IS_NEXT = 0
"""NSP label: sentence B really follows sentence A (Hugging Face's convention)."""
NOT_NEXT = 1
"""NSP label: sentence B is a random sentence from another paragraph."""


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


def nsp_loss(nsp_logits: torch.Tensor, nsp_labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Next-sentence loss: mean cross-entropy of ``nsp_logits`` (batch, 2) against
    ``nsp_labels`` (batch,) with 0 = IsNext, 1 = NotNext (``reduction="sum"``: the sum)."""
    check_choice("reduction", reduction, REDUCTIONS)
    check_tensor("nsp_logits", nsp_logits, ndim=2, expected="(batch, 2)", floating=True)
    if nsp_logits.shape[1] != 2:
        raise ValueError(f"nsp_logits must have shape (batch, 2), got shape {shape_str(nsp_logits)}")
    batch = nsp_logits.shape[0]
    if batch == 0:
        raise ValueError("nsp_logits must hold at least one pair: got an empty batch, shape (0, 2)")
    check_tensor("nsp_labels", nsp_labels, ndim=1, expected=f"(batch={batch},)", floating=False)
    if nsp_labels.shape[0] != batch:
        raise ValueError(f"nsp_labels must have shape (batch={batch},), got shape {shape_str(nsp_labels)}")
    if not bool(((nsp_labels == IS_NEXT) | (nsp_labels == NOT_NEXT)).all()):
        raise ValueError(f"nsp_labels must be 0 (IsNext) or 1 (NotNext), got {sorted(set(nsp_labels.tolist()))}")
    return F.cross_entropy(nsp_logits, nsp_labels, reduction=reduction)


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

    def pretraining_features(self, tokens, segments, valid_lens, pred_positions, fast: bool = True):
        """What the two pretraining losses read: ``(mlm_features, nsp_logits)``,
        ``(batch, num_preds, num_hiddens)`` (what :class:`MaskLM` feeds its decoder; its
        :meth:`MaskLM.loss` turns them into the MLM loss) and ``(batch, 2)``.

        ``fast=False``: :meth:`forward`'s computation. ``fast=True`` (where
        :meth:`BERTEncoder.supports_fast_path`): the same numbers up to rounding, faster —
        the losses read the last block only at ``[CLS]`` and at the predicted positions (11
        of 64 positions in the d2l setting), so the last block computes nothing else, and
        every block runs its fast path (:meth:`BERTEncoder.fast_forward`). ``valid_lens``
        must then be ``(batch,)`` lengths of at least 1.
        """
        check_bool("fast", fast)
        if self.mlm is None or self.nsp is None:
            raise TypeError("pretraining_features needs the pretraining heads: build BERTModel(config, "
                            "with_heads=True)")
        if not (fast and self.encoder.supports_fast_path()):
            encoded = self.encoder(tokens, segments, valid_lens)
            return self.mlm.features(encoded, pred_positions), self.nsp(self.pooler(encoded))
        self.encoder.check_inputs(tokens, segments)
        _check_positions(pred_positions, *tokens.shape)
        B, P = pred_positions.shape
        rows = torch.cat([torch.zeros_like(pred_positions[:, :1]), pred_positions], dim=1)  # [CLS], predictions
        X = self.encoder.fast_forward(tokens, segments, valid_lens, rows)     # (batch, 1 + P, d)
        features = self.mlm.features(X, torch.arange(1, P + 1, device=X.device).expand(B, P))
        return features, self.nsp(self.pooler(X))


def num_parameters(model: nn.Module) -> int:
    """Number of distinct parameters (a tied weight counts once)."""
    check_instance("model", model, nn.Module)
    return sum(p.numel() for p in model.parameters())
