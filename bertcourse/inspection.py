"""Using a trained BERT: fill in blanks and read its attention.

Both functions take a course :class:`~bertcourse.bert.BERTModel` and a tokenizer — the
course's :class:`~bertcourse.data.WordPieceTokenizer` (chapter 7's tiny BERT) or a Hugging
Face ``tokenizers.Tokenizer`` (chapter 8's real model, ``pretrained.tokenizer``), as long as
the vocabulary has BERT's special tokens — and run the model in ``eval()`` mode, putting
its mode back afterwards. The chapters' widgets call them.

* :func:`fill_mask` — the model's top-k guesses, with probabilities, for every ``[MASK]``;
* :func:`attention_maps` — every attention map of the model for ``[CLS] A [SEP] (B [SEP])``;
* :func:`head_statistics` and :func:`typical_heads` — what each head of a model attends to, on
  average over many sentences (chapter 8's survey of MiniLM's heads);
* :func:`sentence_vectors` — one vector per sentence, mean-pooled or through the pooler (chapter
  8's sentence embeddings, chapter 9's probe features and its measure of how far fine-tuning
  moved the encoder).
"""
from __future__ import annotations

import functools
import re
from typing import Sequence

import torch
from torch import nn

from ._checks import (check_bool, check_choice, check_int, check_keys, check_positive_int, check_str_list,
                      check_texts, check_tokenizer_fits, shape_str)
from .attention import entropy, inspect_attention
from .bert import BERTEncoder, BERTModel, get_tokens_and_segments, mean_pool
from .i18n import gettext as _
from .memory import release_memory
from .reviews import MAX_LEN, Review, SentimentDataset, collate_reviews
from .training import evaluation_batches
from .wordpiece import hf_tokenizer

__all__ = ["MASK", "check_mlm_model", "encode_words", "mask_word", "fill_mask_tokens", "fill_mask",
           "attention_maps", "PATTERNS", "head_statistics", "typical_heads", "POOLINGS",
           "sentence_vectors"]

MASK = "[MASK]"


def _special_id(tok, token: str) -> int:
    i = tok.token_to_id(token)
    if i is None:
        raise ValueError(f"the tokenizer's vocabulary has no {token} token")
    return i


def check_mlm_model(model) -> None:
    """Raise unless ``model`` is a course BERTModel with its MLM head."""
    if not isinstance(model, BERTModel):
        raise TypeError(f"model must be a bertcourse BERTModel, got {type(model).__name__}")
    if model.mlm is None:
        raise ValueError("model has no MLM head (it was built with with_heads=False or loaded without "
                         "one): fill-mask needs the masked-language-model head")


def encode_words(tokenizer, text: str) -> tuple[list, list]:
    """Split ``text`` into WordPiece tokens and group them by word.

    Returns ``(tokens, words)``: ``tokens`` the list of token strings (``[MASK]`` typed
    in any case stays one token), ``words`` a list of ``(word_text, first, last)``:
    the word as written and the token indices ``first..last`` (inclusive) of its pieces.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tok = hf_tokenizer(tokenizer)
    text = re.sub(r"\[mask\]", MASK, text, flags=re.IGNORECASE)
    first = tok.encode(text, add_special_tokens=False)
    # A tokenizer that truncates (chapter 8's, at the model's max_len) puts the rest into
    # `overflowing`: keep it, so that a [MASK] past the cut is reported, not silently lost.
    parts = [first, *first.overflowing]
    tokens = [t for e in parts for t in e.tokens]
    word_ids = [w for e in parts for w in e.word_ids]
    offsets = [o for e in parts for o in e.offsets]
    spans = []                        # [first_char, end_char, first_token, last_token]
    for i, (w, (a, b)) in enumerate(zip(word_ids, offsets)):
        same_word = (i > 0 and w is not None and w == word_ids[i - 1]
                     and MASK not in (tokens[i], tokens[i - 1]))
        if same_word:
            spans[-1][1], spans[-1][3] = b, i
        else:
            spans.append([a, b, i, i])
    return tokens, [(text[a:b], first, last) for a, b, first, last in spans]


def mask_word(tokens: list, words: list, index: int) -> list:
    """``tokens`` with every piece of word ``index`` replaced by ``[MASK]`` (a word that
    WordPiece splits into 3 pieces becomes 3 blanks)."""
    check_int("index", index)
    if not 0 <= index < len(words):
        raise ValueError(f"index must be in 0..{len(words) - 1} (the text has {len(words)} words), got {index}")
    first, last = words[index][1:]
    return [MASK if first <= i <= last else t for i, t in enumerate(tokens)]


@torch.no_grad()
def fill_mask_tokens(model: BERTModel, tokenizer, tokens: list, top_k: int = 5) -> list:
    """:func:`fill_mask` for a list of token strings (without ``[CLS]``/``[SEP]``)."""
    check_mlm_model(model)
    check_int("top_k", top_k, low=1)
    check_str_list("tokens", tokens, what="token strings")
    tok = hf_tokenizer(tokenizer)
    ids = [tok.token_to_id(t) for t in tokens]
    unk = _special_id(tok, "[UNK]")
    ids = [unk if i is None else i for i in ids]
    ids = [_special_id(tok, "[CLS]"), *ids, _special_id(tok, "[SEP]")]
    mask_id = _special_id(tok, MASK)
    positions = [i for i, t in enumerate(ids) if t == mask_id]
    if not positions:
        raise ValueError("text must contain at least one [MASK] (or mask a word) to fill in")
    check_tokenizer_fits(tok, model)
    vocab, max_len = model.config.vocab_size, model.config.max_len
    if top_k > vocab:      # refused rather than clamped: a silent change would hide the mistake
        raise ValueError(f"top_k must be at most the vocabulary size {vocab} (there are only {vocab} "
                         f"tokens to rank), got {top_k}")
    if positions[-1] > max_len - 2:         # [CLS] at 0, and [SEP] needs the last position
        raise ValueError(f"text has a [MASK] at position {positions[-1]} (counting [CLS] as 0), but the model "
                         f"reads at most max_len={max_len} positions, [CLS] and [SEP] included: truncated to "
                         f"fit, the text would lose that [MASK]; shorten the text before it")
    if len(ids) > model.config.max_len:
        raise ValueError(f"text has {len(ids)} tokens with [CLS] and [SEP], but the model takes at most "
                         f"max_len={model.config.max_len}: shorten it")
    with inspect_attention(model, keep_weights=False):     # eval mode: no dropout, same answer every time
        device = next(model.parameters()).device      # a model on a GPU gets its input there
        x = torch.tensor([ids], device=device)
        logits = model(x, torch.zeros_like(x), torch.tensor([len(ids)], device=device),
                       torch.tensor([positions], device=device))[1]            # (encoded, mlm, nsp)
    probs = torch.softmax(logits[0].float(), dim=-1)               # (num_masks, vocab)
    top_p, top_i = probs.topk(top_k, dim=-1)
    out = []
    for pos, p_row, i_row in zip(positions, top_p.tolist(), top_i.tolist()):
        out.append((pos, [(tok.id_to_token(i) or "[UNK]", p) for i, p in zip(i_row, p_row)]))
    return out


def fill_mask(model: BERTModel, tokenizer, text: str, top_k: int = 5) -> list:
    """The model's ``top_k`` guesses for every ``[MASK]`` in ``text``.

    Returns a list with one entry per ``[MASK]``, left to right: ``(position, [(token,
    probability), ...])``, where ``position`` is the index in the model's input
    ``[CLS] tokens [SEP]`` (so ``[CLS]`` is 0) and the guesses are sorted by
    probability (softmax over the whole vocabulary, so they sum to at most 1). The model
    runs in ``eval()`` mode (its mode is restored afterwards).
    """
    tokens = encode_words(tokenizer, text)[0]
    return fill_mask_tokens(model, tokenizer, tokens, top_k)


@torch.no_grad()
def attention_maps(model: BERTModel, tokenizer, text_a: str, text_b: str | None = None):
    """Every attention map of ``model`` for ``[CLS] A [SEP] (B [SEP])``.

    Returns ``(pieces, segments, weights)``: the tokens, their segment ids and a
    ``(layers, heads, seq, seq)`` tensor; ``weights[l, h, i, j]`` is how much token ``i``
    attends to token ``j`` in head ``h`` of block ``l`` (0-based). Runs in ``eval()``
    mode with the weights kept, and puts both settings back afterwards.
    """
    if not isinstance(model, BERTModel):
        raise TypeError(f"model must be a bertcourse BERTModel, got {type(model).__name__}")
    tok = hf_tokenizer(tokenizer)
    for name, text in (("text_a", text_a), ("text_b", text_b)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    check_tokenizer_fits(tok, model)
    a = tok.encode(text_a, add_special_tokens=False).tokens
    b = None if text_b is None else tok.encode(text_b, add_special_tokens=False).tokens
    pieces, segments = get_tokens_and_segments(a, b)
    if len(pieces) > model.config.max_len:
        raise ValueError(f"the pair has {len(pieces)} tokens, more than max_len={model.config.max_len}")
    device = next(model.parameters()).device
    ids = torch.tensor([[tok.token_to_id(p) if tok.token_to_id(p) is not None else _special_id(tok, "[UNK]")
                         for p in pieces]], device=device)
    with inspect_attention(model):          # eval mode, weights kept; both restored after
        model.encoder(ids, torch.tensor([segments], device=device))
        weights = torch.stack([blk.attention.attention_weights[0].cpu() for blk in model.encoder.blks])
    return pieces, segments, weights


PATTERNS = ("[CLS]", "[SEP]", "previous token", "next token", "entropy")


def head_statistics(maps) -> dict[str, torch.Tensor]:
    """Per-head averages over every query of every sequence in ``maps``.

    ``maps`` is a list of ``(pieces, segments, weights)`` from
    :func:`attention_maps`.
    Returns ``{pattern: (layers, heads) tensor}`` for the patterns in :data:`PATTERNS`:
    the share of a query's attention on ``[CLS]``, on the ``[SEP]`` tokens, on the previous
    and on the next token, and the entropy (nats) of its weights (low = sharp, high = broad).
    Queries are pooled: a long sentence counts more than a short one.
    """
    if not maps:
        raise ValueError("maps must hold at least one (pieces, segments, weights) triple")
    if isinstance(maps, str) or not all(isinstance(m, (tuple, list)) and len(m) == 3 for m in maps):
        raise TypeError(f"maps must be a list of (pieces, segments, weights) triples, got {str(maps)[:60]!r}")
    sums = {p: 0.0 for p in PATTERNS}
    counts = {p: 0 for p in PATTERNS}
    for pieces, _words, w in maps:
        n = w.shape[-1]
        if len(pieces) != n or w.dim() != 4 or w.shape[-2] != n:
            raise ValueError(f"weights must have shape (layers, heads, {len(pieces)}, {len(pieces)}) "
                             f"for {len(pieces)} pieces, got shape {shape_str(w)}")
        sep = [j for j, t in enumerate(pieces) if t == "[SEP]"]
        per_query = {
            "[CLS]": w[..., :, 0],                                        # (L, H, n)
            "[SEP]": w[..., :, sep].sum(-1),
            "previous token": w.diagonal(offset=-1, dim1=-2, dim2=-1),    # w[i+1, i]: (L, H, n-1)
            "next token": w.diagonal(offset=1, dim1=-2, dim2=-1),         # w[i, i+1]
            "entropy": entropy(w),                                        # 0 log 0 = 0
        }
        for p, v in per_query.items():
            sums[p] = sums[p] + v.sum(-1)
            counts[p] += v.shape[-1]
    return {p: sums[p] / counts[p] for p in PATTERNS}


def typical_heads(stats: dict[str, torch.Tensor]):
    """A table naming, for each pattern, the head that shows it most (``L3.H5``: block 3,
    head 5, both counted from 1), its value and the average over all heads; the patterns are
    named in the language of :func:`bertcourse.i18n.set_language`."""
    import pandas as pd          # lazy: a heavy import (CONTRIBUTING.md, "Imports")
    check_keys("stats", stats, PATTERNS, "head_statistics")
    rows = []
    for pattern, pick in [("[CLS]", "max"), ("[SEP]", "max"), ("previous token", "max"),
                          ("next token", "max"), ("entropy", "max"), ("entropy", "min")]:
        s = stats[pattern]
        flat = int(s.argmax() if pick == "max" else s.argmin())
        layer, head = divmod(flat, s.shape[1])
        label = {"[CLS]": _("attends to [CLS]"), "[SEP]": _("attends to [SEP]"),
                 "previous token": _("attends to previous token"), "next token": _("attends to next token"),
                 "entropy": _("broad (highest entropy)") if pick == "max" else _("sharp (lowest entropy)")}
        rows.append({"pattern": label[pattern],
                     "head": f"L{layer + 1}.H{head + 1}", "layer": layer + 1, "head_index": head + 1,
                     "value": float(s.flatten()[flat]), "mean over heads": float(s.mean())})
    return pd.DataFrame(rows)


POOLINGS = ("mean", "cls")
"""How a sentence becomes one vector (:func:`sentence_vectors`, chapter 9's classifier)."""


@torch.no_grad()
def sentence_vectors(model, tokenizer, texts: Sequence[str], pooling: str = "mean", normalize: bool = False,
                     batch_size: int = 64, amp: bool = False, max_len: int = MAX_LEN):
    """One vector per sentence from a BERT encoder: ``(len(texts), num_hiddens)``, in the order of ``texts``.

    ``pooling``: ``"mean"``, the mean of the last hidden states over the real tokens (what
    all-MiniLM-L6-v2 was trained to produce: chapter 8's sentence embeddings, chapter 9's probe
    features); ``"cls"``, the ``[CLS]`` state through the pooler; ``"both"``, the pair
    ``(mean, cls)`` from one pass. ``normalize``: unit length (for cosines). ``model`` is
    anything with an ``encoder`` (a :class:`~bertcourse.bert.BERTModel`, a ``BERTClassifier``)
    or a :class:`~bertcourse.bert.BERTEncoder`; it runs through the one evaluation loop
    (:func:`~bertcourse.training.evaluation_batches`: eval mode, no gradients, ``amp``), on its
    device, and keeps no attention weights. Sentences of similar length are batched together
    (less padding), each text cut at ``max_len`` pieces."""
    check_texts("texts", texts)
    check_positive_int("batch_size", batch_size)
    check_bool("amp", amp)
    check_bool("normalize", normalize)
    check_choice("pooling", pooling, POOLINGS + ("both",))
    encoder = model if isinstance(model, BERTEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, BERTEncoder):
        raise TypeError(f"model must be a BERTModel, a BERTClassifier or a BERTEncoder, got {type(model).__name__}")
    check_tokenizer_fits(tokenizer, encoder)
    pooler = getattr(model, "pooler", None)
    if pooling in ("cls", "both") and pooler is None:
        raise ValueError(f"pooling={pooling!r} needs a model with a pooler (model.pooler is None)")
    dataset = SentimentDataset([Review(t, 0, "") for t in texts], tokenizer, max_len)
    order = torch.argsort(dataset.lengths, stable=True)        # similar lengths together: less padding
    collate = functools.partial(collate_reviews, pad_id=dataset.pad_id, pad_to_multiple=16)
    batches = ({**collate([dataset[int(i)] for i in idx]), "index": idx} for idx in order.split(batch_size))
    means = torch.empty(len(texts), encoder.config.num_hiddens)
    clss = torch.empty(len(texts), encoder.config.num_hiddens)
    try:
        with inspect_attention(encoder, keep_weights=False):
            for batch in evaluation_batches(model, batches, amp=amp):
                idx = batch["index"].cpu()
                hidden = encoder(batch["tokens"], None, batch["mask"])
                if pooling in ("mean", "both"):
                    means[idx] = mean_pool(hidden, batch["mask"]).float().cpu()
                if pooling in ("cls", "both"):
                    clss[idx] = pooler(hidden).float().cpu()
                del hidden
    finally:
        release_memory()        # the forward's buffers back to the system: chapter 9 runs in Binder's 1 GB
    if normalize:
        means, clss = nn.functional.normalize(means, dim=-1), nn.functional.normalize(clss, dim=-1)
    return {"mean": means, "cls": clss, "both": (means, clss)}[pooling]
