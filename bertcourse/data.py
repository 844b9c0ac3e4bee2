"""Chapters 4–7: BERT's pretraining data, from sentences to batches.

The pipeline, one function per step:

1. **Text.** :func:`generate_corpus` writes the course's own corpus about a made-up small
   world (see :mod:`bertcourse.corpus`); :func:`load_wikitext2` optionally reads WikiText-2
   instead (needs the internet and ``pip install bertcourse[wikitext]``).
2. **Sub-words** (:mod:`bertcourse.wordpiece`, re-exported here). :func:`train_wordpiece` trains a WordPiece vocabulary with Hugging Face
   ``tokenizers``; :class:`WordPieceTokenizer` turns text into tokens and ids and back, and
   :class:`Vocab` maps tokens to ids. Ids 0–4 are always ``[PAD] [UNK] [CLS] [SEP] [MASK]``.
3. **Next sentence prediction.** :func:`make_nsp_pair` picks sentence B: half the time the
   real next sentence (label ``IS_NEXT = 0``), half the time a sentence from another
   paragraph (``NOT_NEXT = 1``) — the Hugging Face convention. :func:`truncate_pair` makes
   ``[CLS] A [SEP] B [SEP]`` fit into ``max_len``.
4. **Masked language modelling.** :func:`mask_tokens` chooses 15 % of the ordinary tokens
   and replaces them 80 / 10 / 10 with ``[MASK]`` / a random token / themselves.
5. **Batches.** :class:`PretrainDataset` and :func:`load_pretrain_data` put it together;
   the two pretraining losses are in :mod:`bertcourse.pretrain`.
"""
from __future__ import annotations

import functools
import random
import re
from typing import NamedTuple, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from ._checks import check_bool, check_int_list, check_path, check_positive_int, check_tensor
from .bert import IS_NEXT, NOT_NEXT, get_tokens_and_segments   # the NSP labels live with the NSP head
from .wordpiece import DEFAULT_VOCAB_SIZE, SPECIAL_TOKENS, Vocab, WordPieceTokenizer, get_tokenizer, train_wordpiece
from .corpus import (Animal, ClozeItem, Corpus, Country, Fact, ParagraphInfo, Person, Town, World,
                     cloze_items, generate_corpus, generate_world)

__all__ = [
    # the corpus (defined in bertcourse.corpus)
    "Fact", "Country", "Town", "Animal", "Person", "World", "ParagraphInfo", "Corpus", "ClozeItem",
    "generate_world", "generate_corpus", "cloze_items",
    # tokenisation
    "SPECIAL_TOKENS", "Vocab", "WordPieceTokenizer", "train_wordpiece", "get_tokenizer",
    # MLM and NSP
    "MaskedTokens", "num_mlm_preds", "mask_tokens", "IS_NEXT", "NOT_NEXT", "make_nsp_pair",
    "sample_pair", "truncate_pair", "draw_generator", "draw_rng",
    # batches
    "PretrainDataset", "check_batch", "load_pretrain_data",
    # WikiText-2
    "parse_wikitext_lines", "read_wikitext", "load_wikitext2",
]


# ---------------------------------------------------------------------------------------
# Masked language modelling
# ---------------------------------------------------------------------------------------

class MaskedTokens(NamedTuple):
    """What :func:`mask_tokens` returns (all ``torch.long``).

    ids: (seq,) the input with the chosen positions replaced
    pred_positions: (num_preds,) the chosen positions, ascending
    labels: (num_preds,) the original ids at those positions
    """
    ids: torch.Tensor
    pred_positions: torch.Tensor
    labels: torch.Tensor


def num_mlm_preds(num_candidates: int, mask_prob: float = 0.15, max_preds: int | None = None) -> int:
    """How many positions :func:`mask_tokens` chooses among ``num_candidates`` tokens.

    ``round(mask_prob * num_candidates)`` rounded half up (``floor(x + 0.5)``: 1.5 -> 2),
    at least 1, at most ``max_preds``. E.g. 20 candidates -> 3, 10 -> 2, 3 -> 1 (0.45
    rounds to 0, but every sequence gets at least one prediction).
    """
    check_positive_int("num_candidates", num_candidates)
    _check_mask_prob(mask_prob)
    # + 1e-9: a product like 0.1 * 45 = 4.499999... should still round up to 5
    k = max(1, int(mask_prob * num_candidates + 0.5 + 1e-9))
    if max_preds is not None:
        check_positive_int("max_preds", max_preds)
        k = min(k, max_preds)
    return k


def _check_mask_prob(mask_prob) -> None:
    if isinstance(mask_prob, bool) or not isinstance(mask_prob, (int, float)):
        raise TypeError(f"mask_prob must be a float in (0, 1), got {type(mask_prob).__name__}")
    if not 0.0 < mask_prob < 1.0:
        raise ValueError(f"mask_prob must be in (0, 1), got {mask_prob}")


@functools.lru_cache(maxsize=32)
def _maskable_and_pool(vocab_size: int, special_ids: tuple):
    """A lookup table ``maskable[id]`` (True for ids that may be chosen) and the ids a
    "random token" may be (every id that is not special). Cached: built once per vocabulary."""
    maskable = torch.ones(vocab_size, dtype=torch.bool)
    maskable[list(special_ids)] = False
    return maskable, maskable.nonzero().flatten()


def mask_tokens(token_ids, vocab: Vocab, mask_prob: float = 0.15,
                generator: torch.Generator | None = None, special_ids=None,
                max_preds: int | None = None) -> MaskedTokens:
    """BERT's masking rule for one sequence.

    1. The *candidates* are the positions whose id is not special (not ``[PAD]``,
       ``[UNK]``, ``[CLS]``, ``[SEP]``, ``[MASK]``, nor one of the extra ``special_ids``).
    2. Choose ``num_mlm_preds(len(candidates), mask_prob, max_preds)`` of them uniformly
       without replacement (``round(0.15 * n)`` half up, at least one).
    3. Each chosen position, independently: with probability 0.8 becomes ``[MASK]``, 0.1 a
       uniformly random non-special token (which may by chance be the original one), 0.1
       is kept as it is. One uniform number ``u`` per position decides: ``u < 0.8``,
       ``0.8 <= u < 0.9``, ``u >= 0.9`` — so the shares are exactly 80 / 10 / 10.

    ``token_ids``: a list of ints or a 1-D integer tensor, (seq,). Pass a seeded
    ``torch.Generator`` to repeat a draw; ``None`` uses torch's global generator.
    Returns :class:`MaskedTokens` ``(ids, pred_positions, labels)``.
    """
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a Vocab, got {type(vocab).__name__}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__} "
                        f"(e.g. torch.Generator().manual_seed(0))")
    if isinstance(token_ids, torch.Tensor):
        check_tensor("token_ids", token_ids, ndim=1, expected="(seq,)", floating=False)
        ids = token_ids.detach().to("cpu", torch.long, copy=True)
    elif isinstance(token_ids, (list, tuple)):
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in token_ids):
            raise TypeError("token_ids must be a list of ints or a 1-D integer tensor (seq,)")
        ids = torch.tensor(token_ids, dtype=torch.long)
    else:
        raise TypeError(f"token_ids must be a list of ints or a 1-D integer tensor (seq,), "
                        f"got {type(token_ids).__name__}")
    if len(ids):
        lo, hi = ids.aminmax()
        if lo < 0 or hi >= len(vocab):
            raise ValueError(f"token_ids must be ids in 0..{len(vocab) - 1}, got values from "
                             f"{int(lo)} to {int(hi)}")
    if special_ids is not None:
        special_ids = check_int_list("special_ids", special_ids, low=0, high=len(vocab) - 1)
    special = vocab.special_ids if special_ids is None else tuple(sorted({*vocab.special_ids, *special_ids}))
    maskable, pool = _maskable_and_pool(len(vocab), special)

    candidates = maskable[ids].nonzero().flatten()               # positions we may choose
    if len(candidates) == 0:
        raise ValueError(f"token_ids has no maskable (non-special) tokens: {ids.tolist()}")
    k = num_mlm_preds(len(candidates), mask_prob, max_preds)
    pred_positions = candidates[torch.randperm(len(candidates), generator=generator)[:k]].sort().values
    labels = ids[pred_positions]                                 # indexing copies
    u = torch.rand(k, generator=generator)                       # one draw per chosen position
    random_ids = pool[torch.randint(len(pool), (k,), generator=generator)]
    ids[pred_positions] = torch.where(u < 0.8, vocab.mask_id,                       # 80 %
                                      torch.where(u < 0.9, random_ids, labels))     # 10 %, 10 %
    return MaskedTokens(ids, pred_positions, labels)


# ---------------------------------------------------------------------------------------
# Repeatable draws: draw number n of a seed
# ---------------------------------------------------------------------------------------

_DRAW_STRIDE = 1_000_003


def _draw_seed(seed: int, draw: int) -> int:
    for name, value in (("seed", seed), ("draw", draw)):
        check_positive_int(name, value, allow_zero=True)
    return seed * _DRAW_STRIDE + draw


def draw_generator(seed: int, draw: int) -> torch.Generator:
    """The torch generator of draw number ``draw`` (0, 1, …) of ``seed``: a widget that
    re-samples walks through draws 0, 1, 2, … so that every draw can be repeated."""
    return torch.Generator().manual_seed(_draw_seed(seed, draw))


def draw_rng(seed: int, draw: int) -> random.Random:
    """:func:`draw_generator` for Python's ``random`` (the sentence-pair draws)."""
    return random.Random(_draw_seed(seed, draw))


# ---------------------------------------------------------------------------------------
# Next sentence prediction
# ---------------------------------------------------------------------------------------

def make_nsp_pair(paragraph: Sequence, index: int, paragraphs: Sequence, rng: random.Random):
    """One NSP example: ``(sentence_a, sentence_b, label)``.

    ``sentence_a = paragraph[index]``. With probability 1/2, ``sentence_b`` is the real
    next sentence ``paragraph[index + 1]`` and ``label = IS_NEXT = 0``; otherwise it is a
    uniformly chosen sentence of a uniformly chosen *other* paragraph of ``paragraphs``
    (not the object ``paragraph`` itself) and ``label = NOT_NEXT = 1``.

    Label convention (Hugging Face's ``next_sentence_label``): **0 = B follows A,
    1 = B is random.** Sentences can be strings or token lists; they are returned as given.
    """
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__} (e.g. random.Random(0))")
    if isinstance(paragraph, str) or not isinstance(paragraph, Sequence):
        raise TypeError(f"paragraph must be a list of sentences, got {type(paragraph).__name__}")
    if isinstance(index, bool) or not isinstance(index, int):
        raise TypeError(f"index must be an int, got {type(index).__name__}")
    if not 0 <= index < len(paragraph) - 1:
        raise ValueError(f"index must be in 0..{len(paragraph) - 2} (sentence index+1 must exist "
                         f"in a paragraph of {len(paragraph)} sentences), got {index}")
    if isinstance(paragraphs, str) or not isinstance(paragraphs, Sequence):
        raise TypeError(f"paragraphs must be a list of paragraphs, got {type(paragraphs).__name__}")
    # checked before the coin flip, so a bad call fails every time, not half of the time
    # (any() stops at the first other paragraph: usually the first or the second)
    if not any(p is not paragraph and len(p) > 0 for p in paragraphs):
        raise ValueError("paragraphs must contain at least one non-empty paragraph other than "
                         "`paragraph` (a NotNext sentence comes from another paragraph)")
    sentence_a = paragraph[index]
    if rng.random() < 0.5:
        return sentence_a, paragraph[index + 1], IS_NEXT
    # draw another non-empty paragraph; give up after many tries only if there is none
    for _ in range(100):
        other = paragraphs[rng.randrange(len(paragraphs))] if len(paragraphs) else paragraph
        if other is not paragraph and len(other) > 0:
            return sentence_a, rng.choice(other), NOT_NEXT
    others = [p for p in paragraphs if p is not paragraph and len(p) > 0]
    if not others:
        raise ValueError("paragraphs must contain at least one non-empty paragraph other than "
                         "`paragraph` (a NotNext sentence comes from another paragraph)")
    return sentence_a, rng.choice(rng.choice(others)), NOT_NEXT


def sample_pair(paragraphs, seed: int, draw: int):
    """One NSP example, repeatable: draw number ``draw`` of ``seed`` picks a uniformly chosen
    paragraph with at least two sentences, a uniformly chosen sentence A in it (not the
    last), then :func:`make_nsp_pair`.

    Returns ``(sentence_a, sentence_b, label, paragraph_index)``.
    """
    if isinstance(paragraphs, str) or not hasattr(paragraphs, "__len__"):
        raise TypeError(f"paragraphs must be a list of paragraphs, got {type(paragraphs).__name__}")
    eligible = [j for j, p in enumerate(paragraphs) if len(p) >= 2]
    if len(eligible) < 2:
        raise ValueError("paragraphs must hold at least two paragraphs of two or more sentences")
    rng = draw_rng(seed, draw)
    j = eligible[rng.randrange(len(eligible))]
    i = rng.randrange(len(paragraphs[j]) - 1)
    a, b, label = make_nsp_pair(paragraphs[j], i, paragraphs, rng)
    return a, b, label, j


def truncate_pair(tokens_a: Sequence, tokens_b: Sequence, max_len: int):
    """Shorten two token lists so that ``[CLS] A [SEP] B [SEP]`` has at most ``max_len`` tokens.

    While too long, remove the *last* token of the longer list (of B when they are equally
    long), one token at a time — so a long sentence is cut before a short one is touched.
    Returns new lists ``(tokens_a, tokens_b)``; the inputs are not changed.
    """
    for name, toks in (("tokens_a", tokens_a), ("tokens_b", tokens_b)):
        if isinstance(toks, str) or not isinstance(toks, (list, tuple)):
            raise TypeError(f"{name} must be a list of tokens, got {type(toks).__name__}")
    check_positive_int("max_len", max_len)
    if max_len < 3:
        raise ValueError(f"max_len must be >= 3 ([CLS], [SEP] and [SEP] alone take 3), got {max_len}")
    a, b = list(tokens_a), list(tokens_b)
    while len(a) + len(b) + 3 > max_len:
        (a if len(a) > len(b) else b).pop()
    return a, b


# ---------------------------------------------------------------------------------------
# Dataset, DataLoader and losses
# ---------------------------------------------------------------------------------------

class PretrainDataset(Dataset):
    """BERT pretraining examples (MLM + NSP) from paragraphs of sentences.

    Every pair of consecutive sentences ``(paragraph[i], paragraph[i+1])`` gives one
    example, whose sentence B is kept or swapped for a random one by :func:`make_nsp_pair`
    (paragraphs with fewer than two sentences are skipped). The pair is truncated to
    ``max_len`` by :func:`truncate_pair` and masked by :func:`mask_tokens`.

    Randomness, all from ``seed``:

    * the NSP pairs are drawn once, when the dataset is built;
    * masking is drawn per example, the first time the example is read, from its own
      generator seeded by ``(seed, epoch, index)`` — so an example looks the same however
      the loader shuffles or batches. With ``dynamic_masking=False`` (the default; static
      masking as in d2l) the epoch is always 0: every epoch sees the same masks. (The
      original BERT wrote its data ``dupe_factor=10`` times with different masks, so each
      pair was seen under ten maskings.) With ``dynamic_masking=True`` (as in RoBERTa) call
      ``dataset.set_epoch(e)`` at the start of each epoch to get fresh masks.

    ``dataset.pairs[i]`` is example ``i`` as text: ``(sentence_a, sentence_b, nsp_label)``.

    Each item is a dict of tensors:

    ``tokens`` (max_len,) long, padded with ``[PAD]``; ``segments`` (max_len,) long,
    0 for ``[CLS] A [SEP]`` (and padding), 1 for ``B [SEP]``; ``valid_lens`` () long, the
    length before padding; ``pred_positions`` (max_preds,) long, padded with 0;
    ``mlm_weights`` (max_preds,) float, 1 for real predictions, 0 for padding slots;
    ``mlm_labels`` (max_preds,) long, padded with 0; ``nsp_labels`` () long, 0 = IsNext,
    1 = NotNext.
    """

    KEYS = ("tokens", "segments", "valid_lens", "pred_positions", "mlm_weights", "mlm_labels",
            "nsp_labels")

    def __init__(self, paragraphs: Sequence, tokenizer: WordPieceTokenizer, max_len: int = 64,
                 mask_prob: float = 0.15, max_preds: int | None = None, seed: int = 0,
                 dynamic_masking: bool = False):
        if isinstance(paragraphs, str) or not isinstance(paragraphs, Sequence):
            raise TypeError(f"paragraphs must be a list of paragraphs (lists of sentence strings), "
                            f"got {type(paragraphs).__name__}")
        for p in paragraphs:
            if isinstance(p, str) or not isinstance(p, Sequence) or not all(isinstance(s, str) for s in p):
                raise TypeError(f"paragraphs must be a list of paragraphs, each a list of sentence "
                                f"strings; found {type(p).__name__} {str(p)[:60]!r}")
        if not isinstance(tokenizer, WordPieceTokenizer):
            raise TypeError(f"tokenizer must be a WordPieceTokenizer, got {type(tokenizer).__name__}")
        check_positive_int("max_len", max_len)
        if max_len < 5:
            raise ValueError(f"max_len must be >= 5 ([CLS] A [SEP] B [SEP] with one token each), got {max_len}")
        _check_mask_prob(mask_prob)
        if max_preds is None:
            max_preds = max(1, round(max_len * mask_prob))
        check_positive_int("max_preds", max_preds)
        check_positive_int("seed", seed, allow_zero=True)
        check_bool("dynamic_masking", dynamic_masking)
        self.tokenizer, self.vocab = tokenizer, tokenizer.vocab
        self.max_len, self.mask_prob, self.max_preds = max_len, mask_prob, max_preds
        self.seed, self.dynamic_masking, self.epoch = seed, bool(dynamic_masking), 0

        paragraphs = [list(p) for p in paragraphs if len(p) >= 2]
        if len(paragraphs) < 2:
            raise ValueError("paragraphs must contain at least two paragraphs with >= 2 sentences each "
                             "(NSP needs a next sentence and another paragraph)")
        # tokenise every sentence once; keep the token strings, paragraph by paragraph
        flat = [s for p in paragraphs for s in p]
        flat_tokens = tokenizer.tokenize_batch(flat)
        tokenized, start = [], 0
        for p in paragraphs:
            tokenized.append(flat_tokens[start:start + len(p)])
            start += len(p)

        rng = random.Random(seed)
        self.pairs = []          # (sentence_a, sentence_b, nsp_label) as text, for inspection
        sentence_of = {}         # id(token list) -> sentence text
        for p, toks in zip(paragraphs, tokenized):
            for s, t in zip(p, toks):
                sentence_of[id(t)] = s
        rows, segment_rows, valid_lens, nsp_labels = [], [], [], []
        for toks in tokenized:
            for i in range(len(toks) - 1):
                a, b, label = make_nsp_pair(toks, i, tokenized, rng)
                self.pairs.append((sentence_of[id(a)], sentence_of[id(b)], label))
                a, b = truncate_pair(a, b, max_len)
                tokens, segments = get_tokens_and_segments(a, b)
                pad = max_len - len(tokens)
                rows.append(self.vocab.to_ids(tokens) + [self.vocab.pad_id] * pad)
                segment_rows.append(segments + [0] * pad)
                valid_lens.append(len(tokens))
                nsp_labels.append(label)
        n = len(rows)
        self._tokens = torch.tensor(rows, dtype=torch.long)                 # (n, max_len)
        self._segments = torch.tensor(segment_rows, dtype=torch.long)       # (n, max_len)
        self._valid_lens = torch.tensor(valid_lens, dtype=torch.long)       # (n,)
        self._nsp_labels = torch.tensor(nsp_labels, dtype=torch.long)       # (n,)
        # the masked copies, filled lazily by __getitem__ (-1: not drawn yet)
        self._masked_tokens = self._tokens.clone()
        self._pred_positions = torch.zeros((n, max_preds), dtype=torch.long)
        self._mlm_labels = torch.zeros((n, max_preds), dtype=torch.long)
        self._mlm_weights = torch.zeros((n, max_preds), dtype=torch.float32)
        self._masked_epoch = [-1] * n

    def __len__(self) -> int:
        return len(self._tokens)

    @property
    def lengths(self) -> torch.Tensor:
        """The real length of every pair, ``(len(self),)`` (e.g. to batch similar lengths)."""
        return self._valid_lens

    def set_epoch(self, epoch: int) -> None:
        """Choose the masks of epoch ``epoch`` (only matters with ``dynamic_masking=True``)."""
        check_positive_int("epoch", epoch, allow_zero=True)
        self.epoch = epoch

    def _generator(self, index: int, epoch: int) -> torch.Generator:
        # one seed per (seed, epoch, index); distinct for index < 10**7 and epoch < 10**6
        return torch.Generator().manual_seed((self.seed * 1_000_003 + epoch) * 10_000_019 + index)

    def _mask(self, index: int, epoch: int) -> None:
        """Draw the masks of example ``index`` for ``epoch`` into the row ``index`` of the
        masked tensors."""
        valid_len = int(self._valid_lens[index])
        masked = mask_tokens(self._tokens[index, :valid_len], self.vocab, self.mask_prob,
                             generator=self._generator(index, epoch), max_preds=self.max_preds)
        k = len(masked.pred_positions)
        self._masked_tokens[index, :valid_len] = masked.ids
        self._pred_positions[index].zero_()
        self._mlm_labels[index].zero_()
        self._mlm_weights[index].zero_()
        self._pred_positions[index, :k] = masked.pred_positions
        self._mlm_labels[index, :k] = masked.labels
        self._mlm_weights[index, :k] = 1.0
        self._masked_epoch[index] = epoch

    def _masked_row(self, index) -> int:
        """``index`` checked and made non-negative, its masks for this epoch drawn."""
        if isinstance(index, torch.Tensor):
            index = int(index)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be an int, got {type(index).__name__} ({index!r})")
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} examples")
        index %= len(self)
        epoch = self.epoch if self.dynamic_masking else 0
        if self._masked_epoch[index] != epoch:      # drawn once per (index, epoch), then kept
            self._mask(index, epoch)
        return index

    def _columns(self) -> tuple:
        """The tensors that hold the examples, one row each, in the order of :attr:`KEYS`."""
        return (self._masked_tokens, self._segments, self._valid_lens, self._pred_positions,
                self._mlm_weights, self._mlm_labels, self._nsp_labels)

    def __getitem__(self, index: int) -> dict:
        index = self._masked_row(index)
        # copies, so that changing an example cannot change the dataset
        return {key: column[index].clone() for key, column in zip(self.KEYS, self._columns())}

    def __getitems__(self, indices) -> list[dict]:
        """``[self[i] for i in indices]``, which is what a DataLoader (and the shared training
        loop) asks for to make one batch (PyTorch's ``Dataset`` protocol): the same examples from
        one indexing per tensor, not one small copy per key and example (chapter 7's 1,600 batches:
        6.0-7.8 s -> 2.7-3.5 s, three of each side by side, the 2-core Intel Xeon, 2026-11-27)."""
        rows = torch.tensor([self._masked_row(i) for i in indices], dtype=torch.long)
        columns = [column[rows].unbind(0) for column in self._columns()]   # indexing copies
        return [dict(zip(self.KEYS, example)) for example in zip(*columns)]

    def __repr__(self) -> str:
        return (f"PretrainDataset({len(self)} examples, max_len={self.max_len}, "
                f"max_preds={self.max_preds}, mask_prob={self.mask_prob}, "
                f"{'dynamic' if self.dynamic_masking else 'static'} masking, seed={self.seed})")


def check_batch(batch) -> None:
    """Raise unless ``batch`` is a pretraining batch: a dict with the keys of
    :attr:`PretrainDataset.KEYS` (what :func:`load_pretrain_data`'s loaders yield)."""
    keys = list(PretrainDataset.KEYS)
    if not isinstance(batch, dict):
        raise TypeError(f"batch must be a dict with the keys {keys}, got {type(batch).__name__}")
    missing = [k for k in keys if k not in batch]
    if missing:
        raise ValueError(f"batch is missing the key(s) {missing}; a pretraining batch has {keys}")


def _check_kinds(kinds) -> set:
    """``kinds`` for :func:`load_pretrain_data`: a kind or a collection of kinds -> a set."""
    known = {"country", "town", "animal", "person"}
    if isinstance(kinds, str):
        kinds = {kinds}
    if not isinstance(kinds, (set, frozenset, list, tuple)) or not all(isinstance(k, str) for k in kinds):
        raise TypeError(f"kinds must be a subset of {sorted(known)} (a set of str), got "
                        f"{type(kinds).__name__} ({kinds!r})")
    if not set(kinds) <= known:
        raise ValueError(f"kinds must be a subset of {sorted(known)}, got {sorted(kinds)}")
    return set(kinds)


def load_pretrain_data(batch_size: int = 32, max_len: int = 64, split: str = "train", seed: int = 0,
                       mask_prob: float = 0.15, max_preds: int | None = None,
                       vocab_size: int = DEFAULT_VOCAB_SIZE, num_paragraphs: int | None = None,
                       kinds=None, shuffle: bool | None = None, dynamic_masking: bool = False):
    """The course corpus as BERT pretraining batches: ``(DataLoader, tokenizer)``.

    ``split``: ``"train"`` or ``"held_out"`` of ``generate_corpus(seed)``; the tokenizer is
    always ``get_tokenizer(seed, vocab_size)`` (trained on the training split).
    ``kinds`` keeps only paragraphs about those kinds of entity (e.g. ``{"country",
    "animal"}``); ``num_paragraphs`` keeps only the first that many (the paragraphs are
    already in random order) — both make a smaller, faster dataset. ``shuffle`` defaults
    to True for ``"train"`` and False otherwise; shuffling uses a generator seeded with
    ``seed``, so the batches repeat exactly. Each batch is a dict with the keys of
    :attr:`PretrainDataset.KEYS`, tensors with a leading batch dimension.
    """
    check_positive_int("batch_size", batch_size)
    if split not in ("train", "held_out"):
        raise ValueError(f"split must be 'train' or 'held_out', got {split!r}")
    if kinds is not None:
        kinds = _check_kinds(kinds)
    if num_paragraphs is not None:
        check_positive_int("num_paragraphs", num_paragraphs)
        if num_paragraphs < 2:
            raise ValueError(f"num_paragraphs must be >= 2 (next sentence prediction draws its random "
                             f"sentences from another paragraph), got {num_paragraphs}")
    if shuffle is not None:
        check_bool("shuffle", shuffle)
    corpus = generate_corpus(seed)
    paragraphs = corpus.split(split)
    if kinds is not None:
        infos = corpus.train_info if split == "train" else corpus.held_out_info
        paragraphs = [p for p, info in zip(paragraphs, infos) if info.kind in kinds]
    if num_paragraphs is not None:
        paragraphs = paragraphs[:num_paragraphs]
    tokenizer = get_tokenizer(seed, vocab_size)
    dataset = PretrainDataset(paragraphs, tokenizer, max_len=max_len, mask_prob=mask_prob,
                              max_preds=max_preds, seed=seed, dynamic_masking=dynamic_masking)
    if shuffle is None:
        shuffle = split == "train"
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                        generator=torch.Generator().manual_seed(seed) if shuffle else None)
    return loader, tokenizer


# ---------------------------------------------------------------------------------------
# WikiText-2 (optional, needs the internet)
# ---------------------------------------------------------------------------------------

_WIKITEXT_HELP = ("Use the corpus that ships with the course instead: "
                  "bertcourse.data.generate_corpus() (offline, no download). To use WikiText-2, "
                  "install the optional extra with `pip install bertcourse[wikitext]` and run online.")


def parse_wikitext_lines(lines) -> list:
    """WikiText lines -> paragraphs (lists of sentences), following d2l's reading.

    One line is one paragraph. Headings (`` = Title = ``, `` = = Section = = ``) and blank
    lines are dropped; WikiText's escaped ``@-@``, ``@,@`` and ``@.@`` become ``-``, ``,``
    and ``.``; the line is lower-cased and split into sentences at `` . ``; every sentence
    keeps a final `` .``. Only paragraphs with at least two sentences are kept (NSP needs
    a next sentence).
    """
    if isinstance(lines, str):
        raise TypeError("lines must be a list of strings (e.g. file.readlines()), got a str")
    paragraphs = []
    for line in lines:
        if not isinstance(line, str):
            raise TypeError(f"lines must all be strings, got {type(line).__name__}")
        text = line.strip()
        if not text or re.fullmatch(r"(=\s*)+[^=]*?(\s*=)+", text):
            continue
        text = text.replace(" @-@ ", "-").replace(" @,@ ", ",").replace(" @.@ ", ".").lower()
        sentences = []
        for s in text.split(" . "):
            s = s.strip()
            if s.endswith(" ."):
                s = s[:-2].rstrip()
            if s:
                sentences.append(s + " .")
        if len(sentences) >= 2:
            paragraphs.append(sentences)
    return paragraphs


def read_wikitext(path) -> list:
    """Read a WikiText file (e.g. ``wiki.train.tokens``) -> paragraphs, with :func:`parse_wikitext_lines`."""
    path = check_path("path", path, kind="file", must_exist=True, what="WikiText file")
    with open(path, encoding="utf-8") as f:
        return parse_wikitext_lines(f.readlines())


def load_wikitext2(split: str = "train") -> list:
    """WikiText-2 (raw) through Hugging Face ``datasets`` -> paragraphs of sentences.

    Optional and online only: needs ``pip install bertcourse[wikitext]`` and a network
    connection (or a filled ``datasets`` cache). Raises RuntimeError with advice otherwise.
    """
    if split not in ("train", "validation", "test"):
        raise ValueError(f"split must be 'train', 'validation' or 'test', got {split!r}")
    try:
        import datasets      # lazy: optional (the [wikitext] extra), and heavy
    except ImportError:
        raise RuntimeError("load_wikitext2 needs the `datasets` package, which is not installed. "
                           + _WIKITEXT_HELP) from None
    try:
        ds = datasets.load_dataset("wikitext", "wikitext-2-raw-v1", split=split)
        lines = ds["text"]
    except Exception as e:       # offline, hub down, cache missing: all mean the same here
        raise RuntimeError(f"could not load WikiText-2 ({type(e).__name__}: {e}). "
                           + _WIKITEXT_HELP) from e
    return parse_wikitext_lines(lines)
