"""Sentence pairs: natural language inference on SNLI (Bowman et al., EMNLP 2015; CC BY-SA 4.0), dev and
test sets as e-SNLI (Camburu et al., NeurIPS 2018; MIT) has them, in ``bertcourse/datasets/sentence_pairs``.

:func:`read_pairs` reads a split; :func:`load_snli` trains on dev, validates on premises held out of it,
tests on test. :func:`encode_pairs` makes ``[CLS] premise [SEP] hypothesis [SEP]``, segments 0 then 1;
:class:`PairDataset`, :func:`collate_pairs`, :func:`pair_loader` batch them as :mod:`~bertcourse.reviews`
does. :func:`majority_class_accuracy` is the floor; :func:`word_cue` a hypothesis-only cue.
"""
from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch
from torch.utils.data import DataLoader, Dataset

from ._checks import (check_bool, check_choice, check_dim, check_instance, check_int, check_list_of,
                      check_nonempty, check_positive_int, check_str_list, check_tensor)
from .batching import length_loader
from .bert import get_tokens_and_segments
from .data import truncate_pair
from .reviews import Splits, special_ids, text_key
from .utils import stable_order_key
from .wordpiece import hf_tokenizer

__all__ = ["LABELS", "SPLIT_FILES", "Pair", "read_pairs", "PairSplits", "load_snli", "stratified_pairs",
           "label_counts", "majority_class_accuracy", "NEGATION_WORDS", "word_cue", "MAX_LEN", "EncodedPairs",
           "encode_pairs", "PairDataset", "collate_pairs", "pair_loader"]

# 1. Data ---------------------------------------------------------------------------------

LABELS = ("entailment", "neutral", "contradiction")
"""Label ``i`` is ``LABELS[i]``: 0 = entailment, 1 = neutral, 2 = contradiction (the files hold the
names; the ids are those of the Hugging Face ``snli`` and GLUE MNLI data sets)."""

SPLIT_FILES = {"dev": ("s1.dev", "s2.dev", "labels.dev"), "test": ("s1.test", "s2.test", "labels.test")}


@dataclass(frozen=True)
class Pair:
    """A ``premise`` (a photo's caption), the ``hypothesis`` an annotator wrote, a ``label`` (0, 1, 2)."""
    premise: str
    hypothesis: str
    label: int

    def __post_init__(self):
        check_instance("premise", self.premise, str)
        check_instance("hypothesis", self.hypothesis, str)
        check_int("label", self.label, low=0, high=len(LABELS) - 1)


def _data_folder():       # tests replace it
    return importlib.resources.files("bertcourse").joinpath("datasets", "sentence_pairs")


def read_pairs(split: str) -> list[Pair]:
    """All pairs of ``split`` (``"dev"``: 9,842; ``"test"``: 9,824) in file order, the text as SNLI
    has it (pre-tokenized: a space before punctuation), stripped. ``FileNotFoundError`` for a
    missing file (a broken install); ``ValueError`` naming the file and line of an unknown label or
    an empty line, or the files if their numbers of lines differ."""
    check_choice("split", split, SPLIT_FILES)
    columns = []
    for name in SPLIT_FILES[split]:
        path = _data_folder().joinpath(name)
        if not path.is_file():
            raise FileNotFoundError(f"the SNLI data file {name} is missing from the bertcourse package "
                                    f"(reinstall it: pip install --force-reinstall bertcourse)")
        columns.append([line.strip() for line in path.read_text(encoding="utf-8").splitlines()])
    if len({len(c) for c in columns}) != 1:
        raise ValueError(f"the SNLI files of split {split!r} must have one line per pair, got different numbers "
                         f"of lines ({', '.join(f'{n}: {len(c)}' for n, c in zip(SPLIT_FILES[split], columns))})")
    for name, column, allowed in zip(SPLIT_FILES[split], columns, (None, None, LABELS)):
        bad = next((i for i, line in enumerate(column) if not line or (allowed and line not in allowed)), None)
        if bad is not None:
            expected = f"one of {list(allowed)}" if allowed else "a sentence"
            raise ValueError(f"{name} line {bad + 1}: expected {expected}, got {column[bad][:40]!r}")
    return [Pair(a, b, LABELS.index(y)) for a, b, y in zip(*columns)]


@dataclass
class PairSplits(Splits):
    """The three splits (lists of :class:`Pair`) and the seed that made them."""
    ITEM: ClassVar[type] = Pair
    ITEM_HINT: ClassVar[str] = "Pair (see load_snli())"


def stratified_pairs(pairs: Sequence[Pair], n: int, seed: int = 0) -> list[Pair]:
    """``n`` of ``pairs`` in their order, as evenly as possible over the labels (round robin, each
    label in a hash order of its pairs); subsets of one seed are nested (300 inside 900)."""
    check_positive_int("seed", seed, allow_zero=True)
    check_positive_int("n", n)
    check_list_of("pairs", pairs, Pair, "Pair (see read_pairs())")
    if n > len(pairs):
        raise ValueError(f"n must be at most len(pairs)={len(pairs)}, got {n}")
    turn = {}                     # pair index -> (its rank within its label, label): round robin
    for y in range(len(LABELS)):
        group = sorted((i for i, p in enumerate(pairs) if p.label == y),
                       key=lambda i: stable_order_key(seed, text_key(pairs[i].premise),
                                                      text_key(pairs[i].hypothesis)))
        turn.update({i: (k, y) for k, i in enumerate(group)})
    return [pairs[i] for i in sorted(sorted(turn, key=turn.get)[:n])]


@functools.lru_cache(maxsize=8)
def _cached_splits(train_size, validation_size: int, test_size, seed: int) -> PairSplits:
    dev, test = read_pairs("dev"), read_pairs("test")
    shared = {text_key(p.premise) for p in test}            # 2 captions are in dev and test
    dev = [p for p in dev if text_key(p.premise) not in shared]
    labels: dict[str, list[int]] = {}
    for p in dev:
        labels.setdefault(text_key(p.premise), []).append(p.label)
    triples = sorted((k for k, ys in labels.items() if sorted(ys) == [0, 1, 2]),
                     key=lambda k: stable_order_key(seed, k))
    if validation_size // 3 > len(triples):
        raise ValueError(f"validation_size must be at most {3 * len(triples)} (3 for each dev premise with a "
                         f"hypothesis of each label), got {validation_size}")
    held = set(triples[:validation_size // 3])
    validation = [p for p in dev if text_key(p.premise) in held]
    train = [p for p in dev if text_key(p.premise) not in held]
    parts = {}
    for name, size, pool in (("train_size", train_size, train), ("test_size", test_size, test)):
        if size is not None and size > len(pool):
            raise ValueError(f"{name} must be at most {len(pool)}, got {size}")
        parts[name] = pool if size is None else stratified_pairs(pool, size, seed)
    return PairSplits(parts["train_size"], validation, parts["test_size"], seed)


def load_snli(train_size: int | None = None, validation_size: int = 900, test_size: int | None = None,
              seed: int = 0) -> PairSplits:
    """The course's splits: train on SNLI's dev set (its 550,000 training pairs are not shipped), test
    on its test set; no premise is in two splits. ``validation``: ``validation_size / 3`` premises of
    dev with their three hypotheses (one per label), chosen by a hash of ``seed`` and the premise.
    ``train``: the rest of dev (8,936 pairs by default), or a label-balanced subset of ``train_size``
    (:func:`stratified_pairs`). ``test``: 9,824 pairs, or a balanced subset of ``test_size``. Two
    short captions ("Two men play basketball .", "A dog catching a frisbee .") describe photos of
    both dev and test: their 6 dev pairs are left out. Choices depend on seed and texts only."""
    check_positive_int("train_size", train_size, allow_none=True)
    check_positive_int("validation_size", validation_size)
    check_positive_int("test_size", test_size, allow_none=True)
    check_positive_int("seed", seed, allow_zero=True)
    if validation_size % 3:
        raise ValueError(f"validation_size must be a multiple of 3 (whole premises with one hypothesis of "
                         f"each label), got {validation_size}")
    s = _cached_splits(train_size, validation_size, test_size, seed)
    return PairSplits(list(s.train), list(s.validation), list(s.test), seed)


def label_counts(pairs: Sequence[Pair]) -> dict[str, int]:
    """``{label name: number of pairs}``, in the order of :data:`LABELS`."""
    check_list_of("pairs", pairs, Pair, "Pair (see read_pairs())", allow_empty=True)
    return {name: sum(p.label == y for p in pairs) for y, name in enumerate(LABELS)}


def majority_class_accuracy(train: Sequence[Pair], evaluation: Sequence[Pair]) -> float:
    """The accuracy on ``evaluation`` of always answering ``train``'s most frequent label (the lowest
    id of a tie): the floor a model must clear."""
    check_list_of("train", train, Pair, "Pair (see load_snli())")
    check_list_of("evaluation", evaluation, Pair, "Pair (see load_snli())")
    counts = list(label_counts(train).values())
    majority = counts.index(max(counts))
    return sum(p.label == majority for p in evaluation) / len(evaluation)


NEGATION_WORDS = ("not", "no", "never", "nobody", "nothing")
"""Words that announce a contradiction in SNLI's hypotheses, whatever the premise (Gururangan et al. 2018)."""


def word_cue(pairs: Sequence[Pair], words: Sequence[str] = NEGATION_WORDS) -> dict[str, int]:
    """``{label name: number of pairs}`` among the pairs whose *hypothesis* holds one of ``words``
    (as a whole word, case ignored): a cue that needs no premise at all."""
    check_list_of("pairs", pairs, Pair, "Pair (see read_pairs())", allow_empty=True)
    check_str_list("words", words, what="words", allow_empty=False)
    wanted = {text_key(w) for w in words}
    return label_counts([p for p in pairs if wanted & set(text_key(p.hypothesis).split())])


# 2. Tokens, segments and batches ---------------------------------------------------------

MAX_LEN = 64
"""Word pieces per pair, ``[CLS]`` and both ``[SEP]`` included. With MiniLM's tokenizer a pair of dev
or test has 26 (median), 38 (90th percentile), at most 113; 40 of the 19,666 have more than 64."""


@dataclass(frozen=True)
class EncodedPairs:
    """Per pair ``ids``, ``segments``, ``pieces`` (equal lengths) and ``lengths`` (pieces untruncated);
    ``truncated``: how many pairs lost pieces (:func:`encode_pairs`)."""
    ids: list
    segments: list
    pieces: list
    lengths: list
    truncated: int = 0


def _encodings(tokenizer, texts: list, max_len: int) -> list:
    tok = hf_tokenizer(tokenizer)
    if tok.padding is not None or (tok.truncation or {}).get("max_length", max_len) < max_len:
        tok = type(tok).from_str(tok.to_str())     # a copy without its own padding and truncation
        tok.no_padding()
        tok.no_truncation()
    return tok.encode_batch(texts, add_special_tokens=False)


def encode_pairs(tokenizer, pairs: Sequence[Pair], max_len: int = MAX_LEN, *, hypothesis_only: bool = False,
                 swap: bool = False) -> EncodedPairs:
    """``[CLS] premise [SEP] hypothesis [SEP]`` for every pair, segment ids 0 for ``[CLS] premise
    [SEP]`` and 1 for ``hypothesis [SEP]`` (:func:`~bertcourse.bert.get_tokens_and_segments`).

    ``swap``: the hypothesis first. ``hypothesis_only``: ``[CLS] hypothesis [SEP]``, one segment
    (a model that still beats the majority class reads a cue, not the pair). Too long a pair loses
    the last piece of its longer text, one at a time (BERT's ``run_classifier``:
    :func:`~bertcourse.data.truncate_pair`); a single text loses its end. Special tokens are looked
    up by name (:func:`~bertcourse.reviews.special_ids`); the tokenizer's padding and truncation are not used."""
    check_positive_int("max_len", max_len)
    check_bool("hypothesis_only", hypothesis_only)
    check_bool("swap", swap)
    check_list_of("pairs", pairs, Pair, "Pair (see read_pairs())")
    if hypothesis_only and swap:
        raise ValueError("swap=True orders the two texts of a pair; with hypothesis_only=True there is one")
    if max_len < (3 if hypothesis_only else 5):
        raise ValueError(f"max_len must be >= {3 if hypothesis_only else 5} ([CLS], a piece of each text, a "
                         f"[SEP] after each), got {max_len}")
    sp = special_ids(tokenizer)
    enc_a = _encodings(tokenizer, [p.hypothesis if swap or hypothesis_only else p.premise for p in pairs], max_len)
    enc_b = [None] * len(pairs) if hypothesis_only else \
        _encodings(tokenizer, [p.premise if swap else p.hypothesis for p in pairs], max_len)
    ids, segments, pieces, lengths = [], [], [], []
    for a, b in zip(enc_a, enc_b):
        a, b = list(zip(a.ids, a.tokens)), None if b is None else list(zip(b.ids, b.tokens))  # (id, piece)
        lengths.append(len(a) + 2 if b is None else len(a) + len(b) + 3)
        a, b = (a[:max_len - 2], None) if b is None else truncate_pair(a, b, max_len)
        p, s = get_tokens_and_segments([t for _, t in a], None if b is None else [t for _, t in b])
        second = [] if b is None else [*(i for i, _ in b), sp["[SEP]"]]
        ids.append([sp["[CLS]"], *(i for i, _ in a), sp["[SEP]"], *second])
        pieces.append(p)
        segments.append(s)
    return EncodedPairs(ids, segments, pieces, lengths, sum(n > max_len for n in lengths))


class PairDataset(Dataset):
    """Pairs as token ids: ``dataset[i] = (ids, segments, label)`` (1-D, 1-D, 0-d long tensors, no
    padding); ``lengths``, ``labels``, ``pad_id``, ``truncated`` and the options are attributes."""

    def __init__(self, pairs: Sequence[Pair], tokenizer, max_len: int = MAX_LEN, *, hypothesis_only: bool = False,
                 swap: bool = False):
        check_list_of("pairs", pairs, Pair, "Pair (see load_snli())")
        self.pairs = list(pairs)
        enc = encode_pairs(tokenizer, self.pairs, max_len, hypothesis_only=hypothesis_only, swap=swap)
        self.ids = [torch.tensor(x, dtype=torch.long) for x in enc.ids]
        self.segments = [torch.tensor(x, dtype=torch.long) for x in enc.segments]
        self.labels = torch.tensor([p.label for p in self.pairs], dtype=torch.long)
        self.lengths = torch.tensor([len(x) for x in enc.ids])
        self.pad_id = special_ids(tokenizer)["[PAD]"]
        self.truncated, self.hypothesis_only, self.swap = enc.truncated, hypothesis_only, swap

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return self.ids[i], self.segments[i], self.labels[i]


def collate_pairs(examples, pad_id: int = 0, pad_to_multiple: int = 1) -> dict:
    """Pad a list of ``(ids, segments, label)`` to the longest: ``{"tokens": (batch, seq) long,
    "segments": (batch, seq) long, 0 on padding, "mask": (batch, seq) bool, True on real tokens,
    "labels": (batch,) long}``; ``seq`` rounded up to a multiple of ``pad_to_multiple`` (as
    :func:`~bertcourse.reviews.collate_reviews`)."""
    check_positive_int("pad_id", pad_id, allow_zero=True)
    check_positive_int("pad_to_multiple", pad_to_multiple)
    _check_examples(examples)
    n = -(-max(len(ids) for ids, _, _ in examples) // pad_to_multiple) * pad_to_multiple
    tokens = torch.full((len(examples), n), pad_id, dtype=torch.long)
    segments = torch.zeros(len(examples), n, dtype=torch.long)
    mask = torch.zeros(len(examples), n, dtype=torch.bool)
    for r, (ids, segs, _) in enumerate(examples):
        tokens[r, :len(ids)] = ids
        segments[r, :len(ids)] = segs
        mask[r, :len(ids)] = True
    labels = torch.stack([torch.as_tensor(y, dtype=torch.long) for _, _, y in examples])
    return {"tokens": tokens, "segments": segments, "mask": mask, "labels": labels}


def _check_examples(examples) -> None:
    """A non-empty list of ``(ids, segments, label)``: 1-D integer tensors of one length, an int label."""
    check_list_of("examples", examples, (tuple, list), "(ids, segments, label) triples (see PairDataset)")
    for i, example in enumerate(examples):
        if len(example) != 3:
            raise ValueError(f"examples[{i}] must be a triple (ids, segments, label), got {len(example)} items")
        ids, segments, label = example
        check_tensor(f"examples[{i}] ids", ids, ndim=1, expected="(seq,) of token ids", floating=False)
        check_nonempty(f"examples[{i}] ids", ids, "(seq,)")
        check_tensor(f"examples[{i}] segments", segments, ndim=1, expected=f"(seq={len(ids)},)", floating=False)
        check_dim(f"examples[{i}] segments", segments, 0, len(ids), f"(seq={len(ids)},) like its ids")
        if isinstance(label, torch.Tensor):
            check_tensor(f"examples[{i}] label", label, ndim=0, expected="() (one class label)", floating=False)
        else:
            check_int(f"examples[{i}] label", label, low=0)


def pair_loader(pairs, tokenizer, batch_size: int = 32, shuffle: bool = False, seed: int = 0,
                max_len: int = MAX_LEN, pad_to_multiple: int = 1, by_length: bool = False, *,
                hypothesis_only: bool | None = None, swap: bool | None = None) -> DataLoader:
    """Padded batches (:func:`collate_pairs`) as :func:`~bertcourse.reviews.review_loader` makes them:
    ``shuffle=True`` (training): pairs of similar length (:class:`~bertcourse.batching.LengthBucketSampler`,
    seeded by ``seed``); else the order of ``pairs``, or shortest first with ``by_length=True``.
    ``pairs`` may be a :class:`PairDataset`, whose ``max_len``, ``hypothesis_only`` and ``swap`` hold
    (``None``, the default, means the dataset's; for a list of pairs, ``False``)."""
    for name, flag in (("shuffle", shuffle), ("by_length", by_length)):
        check_bool(name, flag)
    for name, flag in (("hypothesis_only", hypothesis_only), ("swap", swap)):
        check_bool(name, flag, allow_none=True)
    for name, value in (("pad_to_multiple", pad_to_multiple), ("batch_size", batch_size), ("max_len", max_len)):
        check_positive_int(name, value)
    if isinstance(pairs, PairDataset):
        for name, asked in (("hypothesis_only", hypothesis_only), ("swap", swap)):
            if asked is not None and asked != getattr(pairs, name):
                raise ValueError(f"pairs is a PairDataset made with {name}={getattr(pairs, name)}; got "
                                 f"{name}={asked} (leave it out to use the dataset's)")
        dataset = pairs
    else:
        dataset = PairDataset(pairs, tokenizer, max_len, hypothesis_only=bool(hypothesis_only), swap=bool(swap))
    collate = functools.partial(collate_pairs, pad_id=dataset.pad_id, pad_to_multiple=pad_to_multiple)
    return length_loader(dataset, collate, batch_size, shuffle=shuffle, seed=seed, by_length=by_length)
