"""Token tags: named entities, BERT's token-classification task (CoNLL-style BIO tags).

The sentences are Universal NER's English Web Treebank (Mayhew et al., NAACL 2024; CC BY-SA
4.0): its dev and test files, 4,078 sentences of web text tagged with PER, LOC and ORG,
shipped in ``bertcourse/datasets/named_entities`` (with the licence, the source's README and
an ``ATTRIBUTION.md``) and read with ``importlib.resources``.

* :class:`TaggedSentence` is one sentence; :func:`read_named_entities` reads all of them and
  :func:`split_by_document` splits them into training and test without a document in both.
  :data:`TAGS` numbers the tags and :func:`tag_ids` turns tags into those numbers.
* :func:`align_labels` gives the words' labels to WordPiece pieces (the first piece of a word
  carries its label); :func:`encode_tagged` encodes a batch with a ``tokenizers.Tokenizer``
  and :func:`word_tags` turns the pieces' predictions back into one tag per word.
* :class:`TaggedDataset`, :func:`collate_tagged` and :func:`tagged_loader` make the padded,
  length-bucketed batches a tagger trains on.
* :func:`bio_entities` reads the entities out of a tag sequence; :func:`entity_scores` (entity
  precision, recall and F1) and :func:`token_accuracy` score predictions; :func:`all_o_tagger`
  and :func:`most_frequent_tag` are the baselines a model must beat.
"""
from __future__ import annotations

import functools
import importlib.resources
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ._checks import (check_bool, check_choice, check_finite_number, check_instance, check_int, check_int_list,
                      check_list_of, check_positive_int, check_str_list, check_texts)
from .batching import length_loader
from .reviews import special_ids
from .utils import stable_order_key
from .wordpiece import hf_tokenizer

__all__ = ["ENTITY_TYPES", "TAGS", "FILES", "MAX_LEN", "TaggedSentence", "read_named_entities", "split_by_document",
           "tag_ids", "align_labels", "encode_tagged", "word_tags", "TaggedDataset", "collate_tagged",
           "tagged_loader", "bio_entities", "entity_scores", "entity_f1_se",
           "token_accuracy", "all_o_tagger", "most_frequent_tag"]

# ----------------------------------------------------------------------------------------
# 1. Data
# ----------------------------------------------------------------------------------------

ENTITY_TYPES = ("PER", "LOC", "ORG")
"""The three kinds of entity the annotators tagged: people, locations, organisations
(Universal NER has no MISC; none of the 50,246 tokens carries another tag)."""

TAGS = ("O", *(f"{prefix}-{kind}" for kind in ENTITY_TYPES for prefix in ("B", "I")))
"""Tag ``i`` is ``TAGS[i]``: ``"O"`` (outside any entity) first, then ``B-`` (the first word
of an entity) and ``I-`` (a later word of it) of PER, LOC and ORG."""

_TAG_ID = {tag: i for i, tag in enumerate(TAGS)}
# The id of the I- tag that continues each tag: B-X -> I-X, every other tag stays itself.
_INSIDE = [_TAG_ID.get(tag.replace("B-", "I-", 1), i) for i, tag in enumerate(TAGS)]

FILES = ("en_ewt-ud-dev.iob2", "en_ewt-ud-test.iob2")
"""The two data files in ``bertcourse/datasets/named_entities``, read in this order."""


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its ``words`` and one tag of :data:`TAGS` per word (tuples; lists are
    turned into tuples), the ``doc_id`` of the document it belongs to and its ``sent_id``."""
    words: tuple
    tags: tuple
    doc_id: str
    sent_id: str

    def __post_init__(self):
        check_texts("words", self.words)
        _check_tags("tags", self.tags)
        check_instance("doc_id", self.doc_id, str)
        check_instance("sent_id", self.sent_id, str)
        if len(self.tags) != len(self.words):
            raise ValueError(f"tags must hold one tag per word: expected {len(self.words)} tags "
                             f"(len(words)), got {len(self.tags)}")
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "tags", tuple(self.tags))


def _check_tags(name: str, tags) -> None:
    """``tags`` must be a list (or tuple) of tags of :data:`TAGS`; the error names the index."""
    check_str_list(name, tags, what="tags such as 'B-PER' (see TAGS)")
    for i, tag in enumerate(tags):
        if tag not in _TAG_ID:
            check_choice(f"{name}[{i}]", tag, TAGS)


def _data_folder():
    return importlib.resources.files("bertcourse").joinpath("datasets", "named_entities")


def read_named_entities() -> list[TaggedSentence]:
    """All 4,078 sentences in file order: the 2,001 of the dev file, then the 2,077 of the
    test file (:data:`FILES`), each with the id of its document (``# newdoc id``).

    The files' 5 columns are ``index word tag - annotator``; the index, the tag and the word
    are read, the rest is ignored. Raises ``FileNotFoundError`` if a file is missing (a broken
    install) and ``ValueError`` naming the file and line of a malformed line."""
    folder = _data_folder()
    sentences = []
    for name in FILES:
        path = folder.joinpath(name)
        if not path.is_file():
            raise FileNotFoundError(f"the named-entity data file {name} is missing from the bertcourse package "
                                    f"(reinstall it: pip install --force-reinstall bertcourse)")
        sentences += _parse_iob2(path.read_text(encoding="utf-8"), name)
    return sentences


def _parse_iob2(text: str, name: str) -> list[TaggedSentence]:
    sentences, words, tags = [], [], []
    doc_id = sent_id = None
    # A blank line ends a sentence; the extra "" ends a last sentence without one.
    for number, line in enumerate(text.splitlines() + [""], 1):
        if line.startswith("# newdoc id = "):
            doc_id = line.removeprefix("# newdoc id = ").strip()
        elif line.startswith("# sent_id = "):
            sent_id = line.removeprefix("# sent_id = ").strip()
        elif line.startswith("#"):
            continue                                    # "# text = ...": the words say it again
        elif not line.strip():
            if words:
                sentences.append(TaggedSentence(words, tags, doc_id, sent_id))
            words, tags, sent_id = [], [], None
        else:
            fields = line.split("\t")
            if len(fields) != 5 or fields[0] != str(len(words) + 1) or fields[2] not in _TAG_ID \
                    or not fields[1].strip():
                raise ValueError(f"{name} line {number}: expected 'index<TAB>word<TAB>tag<TAB>-<TAB>annotator' "
                                 f"with index {len(words) + 1} and a tag of {list(TAGS)}, got {line[:60]!r}")
            if doc_id is None or sent_id is None:
                raise ValueError(f"{name} line {number}: a word before the '# newdoc id = ' and '# sent_id = ' "
                                 f"lines of its document and sentence")
            words.append(fields[1])
            tags.append(fields[2])
    return sentences


def split_by_document(sentences: Sequence[TaggedSentence], test_share: float = 0.25,
                      seed: int = 0) -> tuple[list, list]:
    """``(train, test)``: whole documents go to one side, so no document is in both.

    The documents are ordered by a SHA-256 hash of ``seed`` and their ``doc_id`` (the same
    order on every machine); they go to test in that order until test holds at least
    ``test_share`` of the sentences, the rest to training. The test share is therefore a
    little above the one asked (by less than one document; the last document of the order
    always stays in training). Both lists keep the order of ``sentences``. With the 4,078
    sentences, ``test_share=0.25``, ``seed=0``: train 3,058 sentences (476 documents, 38,452
    words), test 1,020 sentences (158 documents, 11,794 words)."""
    check_list_of("sentences", sentences, TaggedSentence, "TaggedSentence (see read_named_entities())")
    check_finite_number("test_share", test_share, low=0, high=1, low_open=True, high_open=True)
    check_positive_int("seed", seed, allow_zero=True)
    sizes = Counter(s.doc_id for s in sentences)
    if len(sizes) < 2:
        raise ValueError(f"sentences must come from at least 2 documents to split by document, got {len(sizes)}")
    order = sorted(sizes, key=lambda doc: stable_order_key(seed, doc))
    test_docs, count = set(), 0
    for doc in order[:-1]:
        if count >= test_share * len(sentences):
            break
        test_docs.add(doc)
        count += sizes[doc]
    train = [s for s in sentences if s.doc_id not in test_docs]
    test = [s for s in sentences if s.doc_id in test_docs]
    return train, test


def tag_ids(tags: Sequence[str]) -> list[int]:
    """The number of each tag in :data:`TAGS`: ``tag_ids(["B-PER", "O"]) == [1, 0]``."""
    _check_tags("tags", tags)
    return [_TAG_ID[t] for t in tags]


# ----------------------------------------------------------------------------------------
# 2. Words and word pieces
# ----------------------------------------------------------------------------------------

MAX_LEN = 128
"""Word pieces per sentence, ``[CLS]`` and ``[SEP]`` included. With MiniLM's tokenizer no word
of the 4,078 sentences is cut off at 128: the only longer sentence (337 pieces) is a single
URL, which keeps its first 126 pieces and so its label; the next longest has 120 pieces.
(At 64, 201 of the 50,246 words, in 23 sentences, would be cut off.)"""


def align_labels(word_ids, word_labels, *, label_all_pieces: bool = False, ignore_index: int = -100) -> list[int]:
    """One label per piece, from one label (a tag id) per word.

    ``word_ids`` has one entry per piece: the index of its word, or None for ``[CLS]``,
    ``[SEP]`` and padding (what a ``tokenizers`` Encoding's ``.word_ids`` gives for
    ``is_pretokenized=True`` input). The first piece of each word (a piece whose word differs
    from the previous piece's) carries the word's label; the other pieces and the special
    tokens get ``ignore_index``, which ``cross_entropy`` leaves out of the loss, so every word
    counts once however many pieces it has. ``label_all_pieces=True``: every piece of a word
    gets a label, and the later pieces of a ``B-X`` word get ``I-X`` (the usual convention: a
    word's pieces after the first are inside the entity it begins). Words without a piece
    (cut off by truncation) get no label. Returns a list as long as ``word_ids``."""
    check_list_of("word_ids", word_ids, (int, type(None)), "word indices or None (an Encoding's .word_ids)",
                  allow_empty=True)
    labels = check_int_list("word_labels", word_labels, low=0, high=len(TAGS) - 1)
    check_int_list("word_ids", [w for w in word_ids if w is not None], low=0, high=len(labels) - 1)
    check_bool("label_all_pieces", label_all_pieces)
    check_int("ignore_index", ignore_index)
    out, previous = [], None
    for w in word_ids:
        if w is None:
            out.append(ignore_index)
        elif w != previous:
            out.append(labels[w])
        else:
            out.append(_INSIDE[labels[w]] if label_all_pieces else ignore_index)
        previous = w
    return out


def encode_tagged(tokenizer, sentences: Sequence[TaggedSentence], max_len: int = MAX_LEN, *,
                  label_all_pieces: bool = False, ignore_index: int = -100) -> dict:
    """A padded batch of ``[CLS] pieces [SEP]`` with a label per piece.

    The words go to ``tokenizer.encode_batch(words, is_pretokenized=True)`` as they are (the
    tokenizer splits them into pieces; MiniLM's also lower-cases). ``[CLS]`` and ``[SEP]`` are
    looked up by name and added here (:func:`~bertcourse.reviews.special_ids`), after cutting a
    sentence to ``max_len - 2`` pieces: the words beyond are **cut off**: they have no piece
    and no label, and :func:`word_tags` gives them ``"O"``, so their entities count as missed
    when predictions are scored (never silently dropped from the gold tags). ``cut_words``
    counts them per sentence. A word cut in its middle keeps its first piece and its label. A
    tokenizer that truncates by itself (MiniLM's: at 512 pieces) cuts first; ``cut_words``
    counts those words too. The tokenizer is not changed. Labels: :func:`align_labels`.

    Returns ``{"tokens": (batch, seq) long, "mask": (batch, seq) bool (True on real pieces),
    "labels": (batch, seq) long (ignore_index on special tokens, padding and non-first
    pieces), "word_ids": batch lists of seq word indices or None, "cut_words": batch ints}``,
    padded to the longest sentence with ``[PAD]``."""
    check_list_of("sentences", sentences, TaggedSentence, "TaggedSentence (see read_named_entities())")
    check_int("max_len", max_len, low=3)
    check_bool("label_all_pieces", label_all_pieces)
    check_int("ignore_index", ignore_index)
    tok, sp = hf_tokenizer(tokenizer), special_ids(tokenizer)
    encodings = tok.encode_batch([list(s.words) for s in sentences], is_pretokenized=True,
                                 add_special_tokens=False)
    rows = []
    for s, e in zip(sentences, encodings):
        ids = [sp["[CLS]"], *e.ids[:max_len - 2], sp["[SEP]"]]
        wids = [None, *e.word_ids[:max_len - 2], None]
        labels = align_labels(wids, tag_ids(s.tags), label_all_pieces=label_all_pieces, ignore_index=ignore_index)
        rows.append((ids, wids, labels, len(s.words) - len({w for w in wids if w is not None})))
    seq = max(len(ids) for ids, *_ in rows)
    tokens = torch.full((len(rows), seq), sp["[PAD]"], dtype=torch.long)
    labels = torch.full((len(rows), seq), ignore_index, dtype=torch.long)
    mask = torch.zeros(len(rows), seq, dtype=torch.bool)
    for i, (ids, _, row_labels, _) in enumerate(rows):
        tokens[i, :len(ids)] = torch.tensor(ids)
        labels[i, :len(ids)] = torch.tensor(row_labels)
        mask[i, :len(ids)] = True
    word_ids = [wids + [None] * (seq - len(wids)) for _, wids, _, _ in rows]
    return {"tokens": tokens, "mask": mask, "labels": labels, "word_ids": word_ids,
            "cut_words": [cut for *_, cut in rows]}


def word_tags(word_ids, piece_tags, num_words: int) -> list[str]:
    """Back from pieces to words: each word takes the tag predicted at its first piece.

    ``word_ids``: as for :func:`align_labels`; ``piece_tags``: one predicted tag id per piece
    (a list or a 1-D tensor, e.g. a row of ``logits.argmax(-1)``); ``num_words``: the number
    of words of the sentence. A word without a piece (cut off by truncation) gets ``"O"``."""
    check_list_of("word_ids", word_ids, (int, type(None)), "word indices or None (an Encoding's .word_ids)",
                  allow_empty=True)
    predicted = check_int_list("piece_tags", piece_tags, low=0, high=len(TAGS) - 1)
    check_positive_int("num_words", num_words)
    check_int_list("word_ids", [w for w in word_ids if w is not None], low=0, high=num_words - 1)
    if len(predicted) != len(word_ids):
        raise ValueError(f"piece_tags must hold one tag per piece: expected {len(word_ids)} (len(word_ids)), "
                         f"got {len(predicted)}")
    tags = [None] * num_words
    for w, t in zip(word_ids, predicted):
        if w is not None and tags[w] is None:
            tags[w] = TAGS[t]
    return [t or "O" for t in tags]


class TaggedDataset(Dataset):
    """Sentences as word pieces, for training and evaluation: ``dataset[i] = (ids, labels)``
    (1-D long tensors, ``[CLS]`` and ``[SEP]`` included, no padding; labels as
    :func:`encode_tagged` gives them). ``sentences``, ``word_ids`` (per sentence, for
    :func:`word_tags`), ``lengths``, ``cut_words`` and ``pad_id`` are attributes."""

    def __init__(self, sentences: Sequence[TaggedSentence], tokenizer, max_len: int = MAX_LEN, *,
                 label_all_pieces: bool = False):
        check_list_of("sentences", sentences, TaggedSentence, "TaggedSentence (see read_named_entities())")
        self.sentences = list(sentences)
        enc = encode_tagged(tokenizer, self.sentences, max_len, label_all_pieces=label_all_pieces)
        self.lengths = enc["mask"].sum(1)
        n = self.lengths.tolist()
        self.ids = [enc["tokens"][i, :k].clone() for i, k in enumerate(n)]
        self.labels = [enc["labels"][i, :k].clone() for i, k in enumerate(n)]
        self.word_ids = [enc["word_ids"][i][:k] for i, k in enumerate(n)]
        self.cut_words, self.pad_id = enc["cut_words"], special_ids(tokenizer)["[PAD]"]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int):
        return self.ids[i], self.labels[i]


def collate_tagged(examples, pad_id: int = 0, ignore_index: int = -100) -> dict:
    """Pad a list of ``(ids, labels)`` to the longest: ``{"tokens": (batch, seq) long, "mask":
    (batch, seq) bool (True on real pieces), "labels": (batch, seq) long, ignore_index on
    padding}``."""
    check_positive_int("pad_id", pad_id, allow_zero=True)
    check_int("ignore_index", ignore_index)
    check_list_of("examples", examples, (tuple, list), "(ids, labels) pairs (see TaggedDataset)")
    n = max(len(ids) for ids, _ in examples)
    tokens = torch.full((len(examples), n), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), n), ignore_index, dtype=torch.long)
    mask = torch.zeros(len(examples), n, dtype=torch.bool)
    for r, (ids, y) in enumerate(examples):
        if len(y) != len(ids):
            raise ValueError(f"examples[{r}] must have one label per piece: {len(ids)} ids, {len(y)} labels")
        tokens[r, :len(ids)], labels[r, :len(ids)], mask[r, :len(ids)] = ids, y, True
    return {"tokens": tokens, "mask": mask, "labels": labels}


def tagged_loader(sentences, tokenizer, batch_size: int = 32, shuffle: bool = False, seed: int = 0,
                  max_len: int = MAX_LEN, by_length: bool = False, *, label_all_pieces: bool = False) -> DataLoader:
    """Padded batches (:func:`collate_tagged`) of ``sentences`` (or a :class:`TaggedDataset`),
    as the other fine-tuning chapters make them (:func:`~bertcourse.batching.length_loader`):
    ``shuffle=True`` for training, sentences of similar length together; else in order, or
    shortest first with ``by_length=True``."""
    check_bool("label_all_pieces", label_all_pieces)
    dataset = sentences if isinstance(sentences, TaggedDataset) else \
        TaggedDataset(sentences, tokenizer, max_len, label_all_pieces=label_all_pieces)
    collate = functools.partial(collate_tagged, pad_id=dataset.pad_id)
    return length_loader(dataset, collate, batch_size, shuffle=shuffle, seed=seed, by_length=by_length)


# ----------------------------------------------------------------------------------------
# 3. Entities and scores
# ----------------------------------------------------------------------------------------

def _spans(tags) -> list[tuple[str, int, int]]:
    spans, start, kind = [], None, None
    for i, tag in enumerate([*tags, "O"]):        # the "O" closes an entity at the end
        prefix, _, tag_kind = tag.partition("-")
        continues = prefix == "I" and tag_kind == kind
        if start is not None and not continues:
            spans.append((kind, start, i))
            start, kind = None, None
        if prefix in ("B", "I") and not continues:
            start, kind = i, tag_kind
    return spans


def bio_entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """The entities of one sentence's tags: ``(type, start, end)`` with ``end`` exclusive, in
    order. ``["B-PER", "I-PER", "O", "B-LOC"]`` -> ``[("PER", 0, 2), ("LOC", 3, 4)]``.

    An entity begins at ``B-X`` and goes on over the ``I-X`` right after it. An ``I-X`` that
    follows ``O`` or a tag of another type *begins* a new entity: conlleval's rule (CoNLL
    2000-2003's scorer), also seqeval's default mode. Strict IOB2 (seqeval's ``mode="strict"``)
    calls such an ``I-X`` invalid and counts no entity there. The rule matters for predictions:
    a tagger that says ``O I-PER`` still finds the person here. Two ``B-X`` in a row are two
    entities."""
    _check_tags("tags", tags)
    return _spans(tags)


def _check_corpus(name: str, value) -> None:
    """A list of sentences' tags: a list (or tuple) of lists (or tuples) of tags of TAGS."""
    check_list_of(name, value, (list, tuple), "lists of tags, one list per sentence")
    for i, tags in enumerate(value):
        _check_tags(f"{name}[{i}]", tags)


def _check_pair(gold, predicted, name: str = "predicted") -> None:
    _check_corpus("gold", gold)
    _check_corpus(name, predicted)
    if len(predicted) != len(gold):
        raise ValueError(f"{name} must hold one list of tags per sentence: expected {len(gold)} (len(gold)), "
                         f"got {len(predicted)}")
    i = next((i for i, (g, p) in enumerate(zip(gold, predicted)) if len(g) != len(p)), None)
    if i is not None:
        raise ValueError(f"{name}[{i}] must hold one tag per word: expected {len(gold[i])} (len(gold[{i}])), "
                         f"got {len(predicted[i])}")


def _prf(tp: int, predicted: int, gold: int) -> dict:
    # No prediction or no gold entity: precision, recall and F1 are 0/0; they are reported as 0.
    return {"precision": tp / predicted if predicted else 0.0, "recall": tp / gold if gold else 0.0,
            "f1": 2 * tp / (predicted + gold) if predicted and gold else 0.0,
            "true_positives": tp, "predicted": predicted, "gold": gold}


def entity_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Entity-level precision, recall and F1, the CoNLL measure, micro-averaged over the corpus.

    ``gold`` and ``predicted`` hold one list of tags per sentence. A predicted entity counts
    (a true positive) only if the same sentence has a gold entity with exactly its type,
    start and end (:func:`bio_entities`); a half-found name scores nothing. precision = TP /
    predicted entities, recall = TP / gold entities, F1 = their harmonic mean = 2 TP /
    (predicted + gold). Where there are no predicted or no gold entities, F1 is defined as 0
    (and so is the precision, or the recall, that would be 0/0).

    Returns ``{"precision", "recall", "f1", "true_positives", "predicted", "gold",
    "per_type": {type: the same six keys}}`` with every type of :data:`ENTITY_TYPES`."""
    _check_pair(gold, predicted)
    gold_set = {(i, *span) for i, tags in enumerate(gold) for span in _spans(tags)}
    pred_set = {(i, *span) for i, tags in enumerate(predicted) for span in _spans(tags)}
    hits = gold_set & pred_set
    scores = _prf(len(hits), len(pred_set), len(gold_set))

    def count(entities, kind):
        return sum(e[1] == kind for e in entities)
    scores["per_type"] = {kind: _prf(count(hits, kind), count(pred_set, kind), count(gold_set, kind))
                          for kind in ENTITY_TYPES}
    return scores


def entity_f1_se(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], baseline=None, *,
                 num_resamples: int = 1000, seed: int = 0) -> float:
    """The bootstrap standard error of :func:`entity_scores`' F1 of ``predicted``, or, with a
    ``baseline`` (another tagger's tags for the same sentences), of the difference F1(predicted)
    - F1(baseline), paired: both scored on the same resampled sentences.

    Sentences are the units drawn (their entities are not independent of each other):
    ``num_resamples`` resamples of ``len(gold)`` sentences with replacement, F1 recomputed on
    each, the standard deviation of those F1s. Deterministic: a numpy generator seeded with
    ``seed``, nothing global."""
    _check_pair(gold, predicted)
    if baseline is not None:
        _check_pair(gold, baseline, "baseline")
    check_int("num_resamples", num_resamples, low=2)
    check_positive_int("seed", seed, allow_zero=True)

    gold_spans = [set(_spans(g)) for g in gold]

    def counts(tags):        # per sentence: true positives, predicted entities, gold entities
        rows = [(len(g & p), len(p), len(g)) for g, p in zip(gold_spans, (set(_spans(t)) for t in tags))]
        return np.array(rows, dtype=np.float64).reshape(-1, 3)
    draws = np.random.default_rng(seed).integers(0, len(gold), size=(num_resamples, len(gold)))

    def f1s(tags):
        tp, pred, true = counts(tags)[draws].sum(axis=1).T
        return np.divide(2 * tp, pred + true, out=np.zeros_like(tp), where=(pred > 0) & (true > 0))
    return float((f1s(predicted) - (0 if baseline is None else f1s(baseline))).std(ddof=1))


def token_accuracy(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """The share of words whose predicted tag is the gold tag, over all words of the corpus.
    A weak measure for entities: most words are ``"O"``, so tagging nothing scores about 0.94
    on this data."""
    _check_pair(gold, predicted)
    total = sum(len(tags) for tags in gold)
    if total == 0:
        raise ValueError("gold must hold at least one tag, got only empty sentences")
    return sum(g == p for tags_g, tags_p in zip(gold, predicted) for g, p in zip(tags_g, tags_p)) / total


# ----------------------------------------------------------------------------------------
# 4. Baselines
# ----------------------------------------------------------------------------------------

def _check_word_lists(name: str, value) -> None:
    check_list_of(name, value, (list, tuple), "lists of words, one list per sentence (e.g. [s.words for s in test])")
    for i, words in enumerate(value):
        check_str_list(f"{name}[{i}]", words, what="words")


def all_o_tagger(word_lists: Sequence[Sequence[str]]) -> list[list[str]]:
    """``"O"`` for every word: the tagger that finds no entity. Its entity F1 is 0, its token
    accuracy the share of ``"O"`` in the data (about 0.94 here): why token accuracy misleads."""
    _check_word_lists("word_lists", word_lists)
    return [["O"] * len(words) for words in word_lists]


def most_frequent_tag(train: Sequence[TaggedSentence], word_lists: Sequence[Sequence[str]], *,
                      lowercase: bool = False) -> list[list[str]]:
    """Tag each word with its most frequent tag in ``train``; a word not seen there gets ``"O"``.

    Words are compared as written (``lowercase=False``, the default): in this web text ``US``
    is a place and ``us`` is not, and a capital is the cheapest cue to a name. Measured on the
    test splits of :func:`split_by_document` with seeds 0-5, the two choices give about the same
    entity F1 (mean 0.354 as written, 0.349 lower-cased; seed 0: 0.351 and 0.359), and words as
    written give the higher token accuracy for every seed (seed 0: 0.953 and 0.951). Ties go to
    the tag first in :data:`TAGS`. Each
    word is tagged alone, so ``Tampa Bay`` may come out as ``B-LOC B-LOC`` (two entities) or
    ``O I-LOC`` (one, by :func:`bio_entities`' rule)."""
    check_list_of("train", train, TaggedSentence, "TaggedSentence (see split_by_document())")
    _check_word_lists("word_lists", word_lists)
    check_bool("lowercase", lowercase)

    def key(word):
        return word.lower() if lowercase else word
    counts: dict[str, Counter] = {}
    for s in train:
        for word, tag in zip(s.words, s.tags):
            counts.setdefault(key(word), Counter())[tag] += 1
    best = {w: min(c, key=lambda t: (-c[t], _TAG_ID[t])) for w, c in counts.items()}
    return [[best.get(key(w), "O") for w in words] for words in word_lists]
