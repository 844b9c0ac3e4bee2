"""Answer spans: the data, windows, labels, decoding and scoring of extractive question answering.

BERT's SQuAD task: given a question and a paragraph, point at the answer, a span of the
paragraph, with one score per word piece for "the answer starts here" and one for "it ends
here". The data ship inside the package in ``bertcourse/datasets/questions`` (with their
licences and an ``ATTRIBUTION.md``) and are read with ``importlib.resources``.

* :func:`read_questions` reads ``"squadshifts_new_wiki"`` (training: 7,938 questions on 1,581
  paragraphs, 1-5 reference answers each) or ``"xquad_en"`` (test: 1,190 questions of SQuAD
  v1.1's development set on 240 paragraphs, one answer each) as :class:`Question` records,
  and checks that every answer's text is the context at its ``char_start``;
  :func:`load_questions` makes the course's splits (:class:`QuestionSplits`).
* SQuAD v1.1's official scoring: :func:`normalize_answer`, :func:`exact_match`, :func:`f1`
  (each the best over the references), :func:`squad_scores` (percent, and per question, for
  :func:`bootstrap_se`).
* :func:`make_windows` cuts ``[CLS] question [SEP] context part [SEP]`` windows over a long
  paragraph (:class:`Window`: ids, segments, and each piece's character offsets into the
  context); :func:`answer_positions` labels an answer with its (start, end) pieces in a window,
  ``(0, 0)`` (``[CLS]``) where it is not wholly inside; :class:`WindowDataset`,
  :func:`collate_windows` and :func:`window_loader` make the batches a span head trains on.
* Decoding: :func:`best_span` (the best valid span of one window; :func:`best_spans` the runners-up
  too), :func:`span_text` (its
  characters), :func:`best_answer` (the best over all windows of a question: a :class:`Prediction`).
* A baseline without learning: :func:`sentence_overlap_baseline` answers with the sentence
  (:func:`split_sentences`) sharing the most content words with the question.
"""
from __future__ import annotations

import collections
import functools
import importlib.resources
import json
import re
import string
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from ._checks import (check_bool, check_choice, check_dim, check_finite_number, check_instance, check_int,
                      check_int_list, check_length, check_list_of, check_positive_int, check_str_list, check_tensor,
                      check_text)
from .batching import length_loader
from .reviews import Splits, special_ids
from .utils import hash_sample, stable_order_key
from .wordpiece import hf_tokenizer

__all__ = ["DATASETS", "Question", "read_questions", "QuestionSplits", "load_questions", "normalize_answer",
           "exact_match", "f1", "squad_scores", "bootstrap_se", "Window", "make_windows", "answer_positions",
           "WindowDataset", "collate_windows", "window_loader", "best_span", "best_spans", "span_text", "Prediction",
           "best_answer", "STOP_WORDS", "split_sentences", "sentence_overlap_baseline",
           "sentence_overlap_answers"]

# ----------------------------------------------------------------------------------------
# 1. Data
# ----------------------------------------------------------------------------------------

DATASETS = {"squadshifts_new_wiki": "new_wiki_v1.0.json", "xquad_en": "xquad.en.json"}
"""The two sets and their files in ``bertcourse/datasets/questions`` (SQuAD's JSON format)."""


@dataclass(frozen=True)
class Question:
    """One question on one paragraph: ``id``, ``question``, ``context`` (the paragraph),
    ``answers`` (a tuple of ``(text, char_start)`` pairs, each with
    ``context[char_start:char_start + len(text)] == text``; SQuAD keeps the annotators'
    repeats, so a pair may occur twice) and the Wikipedia article's ``title``."""
    id: str
    question: str
    context: str
    answers: tuple
    title: str = ""

    def __post_init__(self):
        for name in ("id", "question", "context"):
            check_text(name, getattr(self, name))
        check_instance("title", self.title, str)
        check_list_of("answers", self.answers, (tuple, list), "(text, char_start) pairs")
        pairs = []
        for i, pair in enumerate(self.answers):
            check_length(f"answers[{i}]", pair, 2, "(text, char_start)")
            text, start = pair
            check_text(f"answers[{i}] text", text)
            check_int(f"answers[{i}] char_start", start, low=0, high=len(self.context) - len(text))
            if self.context[start:start + len(text)] != text:
                raise ValueError(f"answers[{i}] {text!r} is not the context at char_start={start} (the context "
                                 f"has {self.context[start:start + len(text)]!r} there)")
            pairs.append((text, start))
        object.__setattr__(self, "answers", tuple(pairs))

    @property
    def texts(self) -> list[str]:
        """The reference answers' texts (what :func:`exact_match` and :func:`f1` take)."""
        return [text for text, _ in self.answers]


def _data_folder():
    return importlib.resources.files("bertcourse").joinpath("datasets", "questions")


def _get(record, key: str, kind: type, where: str, file: str):
    value = record.get(key) if isinstance(record, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{file} {where}: expected a {kind.__name__} under {key!r}, got "
                         f"{type(value).__name__ if value is not None else 'nothing'}")
    return value


def read_questions(name: str) -> list[Question]:
    """All questions of the set ``name`` (a key of :data:`DATASETS`), in file order.

    Each answer is checked against its context (``context[start:start + len(text)] == text``):
    in both shipped files all 22,794 + 1,190 answers match. Raises ``FileNotFoundError`` if the
    file is missing (a broken install) and ``ValueError`` naming the file and the position
    (``data[i].paragraphs[j].qas[k]``) of a malformed record or a mismatched answer."""
    check_choice("name", name, DATASETS)
    file = DATASETS[name]
    path = _data_folder().joinpath(file)
    if not path.is_file():
        raise FileNotFoundError(f"the question data file {file} is missing from the bertcourse package "
                                f"(reinstall it: pip install --force-reinstall bertcourse)")
    try:
        root = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{file} is not valid JSON ({e}); the file is damaged") from None
    questions = []
    for i, article in enumerate(_get(root, "data", list, "top level", file)):
        title = _get(article, "title", str, f"data[{i}]", file)
        for j, paragraph in enumerate(_get(article, "paragraphs", list, f"data[{i}]", file)):
            context = _get(paragraph, "context", str, f"data[{i}].paragraphs[{j}]", file)
            for k, qa in enumerate(_get(paragraph, "qas", list, f"data[{i}].paragraphs[{j}]", file)):
                where = f"data[{i}].paragraphs[{j}].qas[{k}]"
                answers = [(_get(a, "text", str, f"{where}.answers[{m}]", file),
                            _get(a, "answer_start", int, f"{where}.answers[{m}]", file))
                           for m, a in enumerate(_get(qa, "answers", list, where, file))]
                try:
                    questions.append(Question(_get(qa, "id", str, where, file), _get(qa, "question", str, where, file),
                                              context, tuple(answers), title))
                except (TypeError, ValueError) as e:
                    raise ValueError(f"{file} {where}: {e}") from None
    return questions


@dataclass
class QuestionSplits(Splits):
    """The three splits (lists of :class:`Question`) and the seed that made them."""
    ITEM: ClassVar[type] = Question
    ITEM_HINT: ClassVar[str] = "Question (see load_questions())"


def load_questions(train_size: int | None = 1000, validation_size: int = 300, test_size: int | None = 300,
                   seed: int = 0, validation_articles: int = 5) -> QuestionSplits:
    """The course's splits: train and validate on SQuADShifts' new Wikipedia paragraphs, test on
    XQuAD's English questions (SQuAD v1.1's development set; the two files share no article).

    ``validation``: ``validation_size`` questions of ``validation_articles`` whole articles of
    SQuADShifts (of its 48), the first in a hash order of ``seed`` and the title; no article is on
    both sides (a paragraph's neighbours name the same people and places). ``train``: ``train_size``
    questions (all with ``None``) of the other articles, ``test``: ``test_size`` of XQuAD's 1,190
    (all with ``None``). Questions are chosen in a hash order of ``seed`` and their id and kept in
    file order, so the choices depend on seed and ids only."""
    check_positive_int("train_size", train_size, allow_none=True)
    check_positive_int("validation_size", validation_size)
    check_positive_int("test_size", test_size, allow_none=True)
    check_positive_int("seed", seed, allow_zero=True)
    pool, test = read_questions("squadshifts_new_wiki"), read_questions("xquad_en")
    titles = sorted({q.title for q in pool}, key=lambda t: stable_order_key(seed, t))
    check_int("validation_articles", validation_articles, low=1, high=len(titles) - 1)
    held_out = set(titles[:validation_articles])

    def sample(questions, n, name):
        if n is not None and n > len(questions):
            raise ValueError(f"{name} must be at most {len(questions)}, got {n}")
        return hash_sample(questions, n, seed, lambda q: q.id)

    rest = [q for q in pool if q.title not in held_out]
    return QuestionSplits(sample(rest, train_size, "train_size"),
                          sample([q for q in pool if q.title in held_out], validation_size, "validation_size"),
                          sample(test, test_size, "test_size"), seed)


# ----------------------------------------------------------------------------------------
# 2. SQuAD v1.1's scoring
# ----------------------------------------------------------------------------------------

_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation, in the order of its ``evaluate-v1.1.py``: lower case, remove
    ASCII punctuation (``string.punctuation``; a dash inside a word joins its halves), remove
    the words ``a``, ``an``, ``the``, then make every run of white space one space (and none at
    the ends). ``"The Eiffel-Tower!"`` -> ``"eiffeltower"``."""
    check_instance("text", text, str)
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _references(references) -> list[str]:
    check_str_list("references", references, what="reference answers", allow_empty=False)
    return list(references)


def exact_match(prediction: str, references: list[str]) -> float:
    """1.0 if ``prediction`` equals one of ``references`` after :func:`normalize_answer`, else
    0.0. (Two texts that normalise to ``""``, such as ``"the"`` and ``"."``, are equal.)"""
    check_instance("prediction", prediction, str)
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(r) for r in _references(references)))


def _f1_one(pred: list[str], ref: list[str]) -> float:
    common = sum((collections.Counter(pred) & collections.Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, references: list[str]) -> float:
    """Token-level F1 between the normalised words of ``prediction`` and of a reference (a
    word counted as often as it occurs in both), the best over ``references``; 0.0 without a
    common word.

    Edge case, as ``evaluate-v1.1.py``: when both normalise to no words (``"the"`` against
    ``"a"``) there is no common word, so F1 is 0 although :func:`exact_match` is 1 (SQuAD
    v2.0's script gives 1). It happens: 3 references of ``squadshifts_new_wiki`` (``"A"``,
    ``"The A"``, ``'"The A,"'``) normalise to nothing; their questions have other references."""
    check_instance("prediction", prediction, str)
    pred = normalize_answer(prediction).split()
    return max(_f1_one(pred, normalize_answer(r).split()) for r in _references(references))


def squad_scores(predictions: dict[str, str], questions: list) -> dict:
    """Score ``predictions`` (question id -> answer text) against ``questions`` as
    ``evaluate-v1.1.py`` does: ``{"exact_match", "f1"}`` in percent over *all* questions, a
    question without a prediction scoring 0 (``"missing"`` counts them; predictions for
    other ids are ignored), and per question (in ``questions``' order, each in [0, 1])
    ``"em_per_question"`` and ``"f1_per_question"`` for :func:`bootstrap_se`. ``"total"``:
    the number of questions. ValueError if no prediction's id is one of the questions' ids."""
    check_instance("predictions", predictions, dict)
    check_str_list("predictions' keys", list(predictions), what="question ids")
    check_str_list("predictions' values", list(predictions.values()), what="answer texts")
    check_list_of("questions", questions, Question, "Question (see read_questions())")
    if not any(q.id in predictions for q in questions):
        raise ValueError(f"predictions has no answer for any of the {len(questions)} questions: its keys must "
                         f"be the questions' ids (such as {questions[0].id!r}), got keys like "
                         f"{list(predictions)[:2]}")
    em, f = [], []
    for q in questions:
        text = predictions.get(q.id)
        em.append(0.0 if text is None else exact_match(text, q.texts))
        f.append(0.0 if text is None else f1(text, q.texts))
    n = len(questions)
    return {"exact_match": 100.0 * sum(em) / n, "f1": 100.0 * sum(f) / n, "total": n,
            "missing": sum(q.id not in predictions for q in questions),
            "em_per_question": em, "f1_per_question": f}


def bootstrap_se(values: list, num_resamples: int = 1000, seed: int = 0) -> float:
    """The bootstrap standard error of the mean of ``values`` (in their units: multiply by
    100 for a score in percent): the standard deviation of the means of ``num_resamples``
    resamples of ``len(values)`` values drawn with replacement. Deterministic: a numpy
    generator seeded with ``seed``, nothing global."""
    check_list_of("values", values, (int, float), "numbers (such as squad_scores()['f1_per_question'])")
    for i, v in enumerate(values):
        check_finite_number(f"values[{i}]", v)
    check_int("num_resamples", num_resamples, low=2)
    check_positive_int("seed", seed, allow_zero=True)
    x = np.asarray(values, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(x), size=(num_resamples, len(x)))
    return float(x[draws].mean(axis=1).std(ddof=1))


# ----------------------------------------------------------------------------------------
# 3. Windows over long paragraphs
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """One model input ``[CLS] question [SEP] context part [SEP]`` (made by :func:`make_windows`).

    ``ids``, ``pieces``, ``segments`` (0 up to the first ``[SEP]``, 1 from the context on,
    the last ``[SEP]`` included) and ``offsets`` (for a context piece ``(start, end)``: its
    characters ``context[start:end]``; None for the question and the special tokens) have one
    entry per position. Positions ``context_start`` to ``len(window) - 2`` are context pieces,
    ``first_piece`` is the first one's index in the whole context's encoding. ``context_lo`` /
    ``context_hi``: where the neighbouring pieces outside the window end / start (0 and
    ``context_length`` at the context's ends): an answer lies wholly in the window exactly
    when its characters (white space at its ends aside) lie in ``[context_lo, context_hi)``."""
    ids: tuple
    pieces: tuple
    segments: tuple
    offsets: tuple
    context_start: int
    first_piece: int
    context_lo: int
    context_hi: int
    context_length: int

    def __post_init__(self):
        n = len(check_int_list("ids", self.ids, low=0))
        check_str_list("pieces", self.pieces, what="word pieces")
        check_int_list("segments", self.segments, low=0, high=1)
        check_list_of("offsets", self.offsets, (tuple, type(None)), "(start, end) pairs or None")
        check_int("context_length", self.context_length, low=1)
        check_int("context_start", self.context_start, low=2, high=n - 2)
        check_int("first_piece", self.first_piece, low=0)
        check_int("context_lo", self.context_lo, low=0, high=self.context_length)
        check_int("context_hi", self.context_hi, low=self.context_lo, high=self.context_length)
        for name in ("pieces", "segments", "offsets"):
            check_length(name, getattr(self, name), n, "one per id")

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def context_positions(self) -> range:
        """The positions of the context pieces: ``range(context_start, len(window) - 1)``."""
        return range(self.context_start, len(self.ids) - 1)


def _encode(tok, text: str):
    """``text``'s pieces without special tokens, truncation or padding (a tokenizer loaded
    with ``truncation`` set, as all-MiniLM-L6-v2's is at 512, would cut a long paragraph
    silently); the tokenizer's own settings are restored afterwards."""
    truncation, padding = tok.truncation, tok.padding
    try:
        tok.no_truncation()
        tok.no_padding()
        return tok.encode(text, add_special_tokens=False)
    finally:
        if truncation:
            tok.enable_truncation(**truncation)
        if padding:
            tok.enable_padding(**padding)


def make_windows(tokenizer, question: str, context: str, max_len: int = 192, stride: int = 64,
                 max_question_len: int = 64) -> list[Window]:
    """Cut ``context`` into windows ``[CLS] question [SEP] context part [SEP]`` of at most
    ``max_len`` pieces (:class:`Window`), enough to hold every context piece at least once.

    The question is cut to ``max_question_len`` pieces (BERT's ``max_query_length``, 64);
    each window then holds up to ``room = max_len - question pieces - 3`` context pieces.
    ``stride`` means what it means in Hugging Face's tokenizers (``stride`` with
    ``return_overflowing_tokens``): the *overlap*, the number of context pieces that two
    consecutive windows share. (Google's ``run_squad.py`` calls the step between window starts
    ``doc_stride``: its 128 at ``max_seq_length=384`` is an overlap of 384 - 3 - question - 128.)
    So the next window starts ``room - stride`` pieces later; the last one ends at the
    context's end. Any ``stride + 1`` consecutive pieces lie together in some window, so an
    answer of at most ``stride + 1`` pieces is wholly inside one (the overlap is why).

    The context is tokenised once, whole, with ``tokenizer`` (a ``tokenizers.Tokenizer`` such
    as ``load_pretrained("minilm").tokenizer``, or a course ``WordPieceTokenizer``); offsets
    are characters of the original ``context`` even where the normaliser lower-cases or
    strips accents (``"Café"`` -> piece ``cafe``, offsets (0, 4))."""
    tok = hf_tokenizer(tokenizer)
    check_text("question", question)
    check_text("context", context)
    check_positive_int("max_len", max_len)
    check_positive_int("stride", stride, allow_zero=True)
    check_positive_int("max_question_len", max_question_len)
    sp = special_ids(tokenizer)
    q = _encode(tok, question)
    q_ids, q_pieces = list(q.ids)[:max_question_len], list(q.tokens)[:max_question_len]
    c = _encode(tok, context)
    n = len(c.ids)
    if n == 0:
        raise ValueError(f"context has no word pieces (the tokenizer drops all of it): {context[:40]!r}")
    room = max_len - len(q_ids) - 3
    if room <= stride:
        raise ValueError(f"max_len={max_len} leaves room for {room} context pieces per window (after the "
                         f"question's {len(q_ids)} pieces, [CLS] and two [SEP]); it must be more than "
                         f"stride={stride}: raise max_len or lower stride or max_question_len")
    head_ids = [sp["[CLS]"], *q_ids, sp["[SEP]"]]
    head_pieces = ["[CLS]", *q_pieces, "[SEP]"]
    windows, start = [], 0
    while True:
        end = min(start + room, n)
        windows.append(Window(
            ids=tuple(head_ids + list(c.ids[start:end]) + [sp["[SEP]"]]),
            pieces=tuple(head_pieces + list(c.tokens[start:end]) + ["[SEP]"]),
            segments=tuple([0] * len(head_ids) + [1] * (end - start + 1)),
            offsets=tuple([None] * len(head_ids) + [tuple(o) for o in c.offsets[start:end]] + [None]),
            context_start=len(head_ids), first_piece=start,
            context_lo=c.offsets[start - 1][1] if start > 0 else 0,
            context_hi=c.offsets[end][0] if end < n else len(context), context_length=len(context)))
        if end == n:
            return windows
        start = end - stride


# ----------------------------------------------------------------------------------------
# 4. Labels
# ----------------------------------------------------------------------------------------

def answer_positions(window: Window, answer_text: str, answer_start: int) -> tuple[int, int]:
    """The positions ``(start, end)`` in ``window`` of the first and the last piece of the
    answer ``answer_text`` at character ``answer_start`` of the context: the targets of the
    start and end heads.

    An answer that begins or ends inside a piece (``"Paris"`` in ``"Parisian"``) gets the
    piece that holds its first / last character; white space at the answer's ends is ignored.
    ``(0, 0)``, the position of ``[CLS]``, means "not in this window", as in BERT's SQuAD
    code: also for an answer that is only partly in it (it crosses the window's edge). Such
    an answer is wholly inside a neighbouring window when it has at most ``stride + 1``
    pieces (see :func:`make_windows`). ValueError for an answer that covers no piece at all
    (only characters the tokenizer drops)."""
    check_instance("window", window, Window, "see make_windows()")
    check_text("answer_text", answer_text)
    check_int("answer_start", answer_start, low=0, high=window.context_length - len(answer_text))
    s = answer_start + len(answer_text) - len(answer_text.lstrip())
    e = answer_start + len(answer_text.rstrip())
    if s < window.context_lo or e > window.context_hi:
        return 0, 0
    positions = window.context_positions
    first = [i for i in positions if window.offsets[i][1] > s]
    last = [i for i in positions if window.offsets[i][0] < e]
    if not first or not last or first[0] > last[-1]:
        raise ValueError(f"answer_text {answer_text!r} at answer_start={answer_start} covers no word piece of "
                         f"the context (only characters the tokenizer drops)")
    return first[0], last[-1]


class WindowDataset(Dataset):
    """Every window of every question (:func:`make_windows`), labelled for training with its
    first reference answer (:func:`answer_positions`; ``(0, 0)`` where the window does not hold
    it wholly): ``dataset[i] = (ids, segments, start, end)`` (1-D long tensors and two ints).
    ``questions``, ``windows``, ``question_of`` (the index in ``questions`` of each window's
    question), ``lengths`` and ``pad_id`` are attributes.

    ``only_with_answer=True`` keeps only the windows that hold the answer (for training: a window
    without it teaches only "point at ``[CLS]``"; chapter 12 measures what leaving them out
    costs). Decoding needs every window of a question: keep the default there."""

    def __init__(self, questions: list, tokenizer, max_len: int = 192, stride: int = 64,
                 only_with_answer: bool = False):
        check_list_of("questions", questions, Question, "Question (see read_questions())")
        check_bool("only_with_answer", only_with_answer)
        self.questions, self.windows, self.question_of, self.targets = list(questions), [], [], []
        for q_index, q in enumerate(self.questions):
            text, char_start = q.answers[0]
            for w in make_windows(tokenizer, q.question, q.context, max_len, stride):
                target = answer_positions(w, text, char_start)
                if only_with_answer and target == (0, 0):
                    continue
                self.windows.append(w)
                self.question_of.append(q_index)
                self.targets.append(target)
        if not self.windows:
            raise ValueError("questions gave no window that holds its answer (only_with_answer=True)")
        self.lengths = torch.tensor([len(w) for w in self.windows])
        self.pad_id = special_ids(tokenizer)["[PAD]"]

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int):
        w = self.windows[i]
        return torch.tensor(w.ids), torch.tensor(w.segments), *self.targets[i]


def collate_windows(examples, pad_id: int = 0) -> dict:
    """Pad a list of ``(ids, segments, start, end)`` to the longest: ``{"tokens", "segments" (0 on
    padding), "mask" (True on real pieces): (batch, seq); "starts", "ends": (batch,) long}``."""
    check_positive_int("pad_id", pad_id, allow_zero=True)
    check_list_of("examples", examples, (tuple, list), "(ids, segments, start, end) (see WindowDataset)")
    n = max(len(ids) for ids, *_ in examples)
    tokens = torch.full((len(examples), n), pad_id, dtype=torch.long)
    segments = torch.zeros(len(examples), n, dtype=torch.long)
    mask = torch.zeros(len(examples), n, dtype=torch.bool)
    for r, (ids, segs, *_) in enumerate(examples):
        tokens[r, :len(ids)], segments[r, :len(ids)], mask[r, :len(ids)] = ids, segs, True
    return {"tokens": tokens, "segments": segments, "mask": mask,
            "starts": torch.tensor([e[2] for e in examples]), "ends": torch.tensor([e[3] for e in examples])}


def window_loader(questions, tokenizer, batch_size: int = 32, shuffle: bool = False, seed: int = 0,
                  max_len: int = 192, stride: int = 64, by_length: bool = False) -> DataLoader:
    """Padded batches (:func:`collate_windows`) of the windows of ``questions`` (or of a
    :class:`WindowDataset`), as the other fine-tuning chapters make them
    (:func:`~bertcourse.batching.length_loader`)."""
    dataset = questions if isinstance(questions, WindowDataset) else \
        WindowDataset(questions, tokenizer, max_len, stride)
    collate = functools.partial(collate_windows, pad_id=dataset.pad_id)
    return length_loader(dataset, collate, batch_size, shuffle=shuffle, seed=seed, by_length=by_length)


# ----------------------------------------------------------------------------------------
# 5. Decoding
# ----------------------------------------------------------------------------------------

def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, window: Window, max_answer_len: int = 30,
              n_best: int | None = 20) -> tuple[int, int, float]:
    """The span ``(start, end, score)`` of ``window`` with the highest ``score =
    start_logits[start] + end_logits[end]`` (BERT's), among the valid ones: both context
    pieces (never the question, ``[CLS]`` or ``[SEP]``), ``start <= end`` and at most
    ``max_answer_len`` pieces.

    ``n_best`` (BERT's ``n_best_size``): only the ``n_best`` highest start and end logits of
    the context are candidates, as in ``run_squad.py``; when no valid span is left among
    them, or with ``n_best=None``, every valid span is (an exact search: cheap as one
    masked ``(m, m)`` matrix of scores over the window's ``m`` context pieces). A tie goes to
    the earlier start, then the earlier end. :func:`best_spans` gives the runners-up too."""
    return best_spans(start_logits, end_logits, window, max_answer_len, n_best, top=1)[0]


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, window: Window, max_answer_len: int = 30,
               n_best: int | None = 20, top: int = 5) -> list[tuple[int, int, float]]:
    """The ``top`` best valid spans ``(start, end, score)`` of ``window``, best first, by
    :func:`best_span`'s rule (its first is the span ``best_span`` picks): what a decoder weighs
    before it answers."""
    check_instance("window", window, Window, "see make_windows()")
    n = len(window)
    for name, x in (("start_logits", start_logits), ("end_logits", end_logits)):
        check_tensor(name, x, ndim=1, expected=f"({n},): one logit per window position", floating=True,
                     finite=True)
        check_dim(name, x, 0, n, f"({n},): one logit per window position")
    check_positive_int("max_answer_len", max_answer_len)
    check_positive_int("n_best", n_best, allow_none=True)
    check_positive_int("top", top)
    lo, hi = window.context_start, n - 1
    s, e = start_logits.detach()[lo:hi].double().cpu(), end_logits.detach()[lo:hi].double().cpu()
    m = hi - lo
    idx = torch.arange(m)
    length = idx[None, :] - idx[:, None]
    valid = (length >= 0) & (length < max_answer_len)
    if n_best is not None and n_best < m:
        cand_s = torch.zeros(m, dtype=torch.bool)
        cand_e = torch.zeros(m, dtype=torch.bool)
        cand_s[s.topk(n_best).indices] = True
        cand_e[e.topk(n_best).indices] = True
        pruned = valid & cand_s[:, None] & cand_e[None, :]
        if bool(pruned.any()):
            valid = pruned
    scores = (s[:, None] + e[None, :]).masked_fill(~valid, float("-inf")).flatten()
    # a stable sort of the row-major scores: ties keep the earlier start, then the earlier end
    order = torch.sort(scores, descending=True, stable=True).indices[:min(top, int(valid.sum()))]
    return [(lo + int(k) // m, lo + int(k) % m, float(scores[k])) for k in order]


def span_text(window: Window, context: str, start: int, end: int) -> str:
    """The characters of ``context`` from piece ``start`` to piece ``end`` of ``window``
    (positions of context pieces, ``start <= end``): ``context[offsets[start][0]:offsets[end][1]]``,
    with the original case, accents and spacing. ``(0, 0)`` ("not in this window") has no
    text: ValueError."""
    check_instance("window", window, Window, "see make_windows()")
    check_instance("context", context, str)
    if len(context) != window.context_length:
        raise ValueError(f"context must be the paragraph the window was made from ({window.context_length} "
                         f"characters), got one of {len(context)} characters")
    if (start, end) == (0, 0):
        raise ValueError("start, end = (0, 0) is [CLS], the label 'not in this window' (answer_positions()): "
                         "it has no text; take the window that holds the answer")
    last = len(window) - 2
    check_int("start", start, low=window.context_start, high=last)
    check_int("end", end, low=start, high=last)
    return context[window.offsets[start][0]:window.offsets[end][1]]


@dataclass(frozen=True)
class Prediction:
    """The answer :func:`best_answer` picks: its ``text``, where it begins and ends in the
    context (``char_start``, ``char_end``), its ``score`` (start + end logit), and the
    ``window`` (index) and piece positions ``start``, ``end`` in that window it came from."""
    text: str
    char_start: int
    char_end: int
    score: float
    window: int
    start: int
    end: int

    def __post_init__(self):
        check_instance("text", self.text, str)
        check_finite_number("score", self.score)
        for name in ("char_start", "char_end", "window", "start", "end"):
            check_int(name, getattr(self, name), low=0)


def best_answer(windows: list, start_logits_list: list, end_logits_list: list, context: str,
                max_answer_len: int = 30, n_best: int | None = 20) -> Prediction:
    """The best answer over all ``windows`` of one question (from :func:`make_windows`), with
    one row of start and end logits for each: :func:`best_span` in every window, and the
    highest score wins (BERT compares raw start + end logits across windows). The text is
    cut from ``context`` by the offsets (:func:`span_text`)."""
    check_list_of("windows", windows, Window, "Window (see make_windows())")
    check_text("context", context)
    for name, rows in (("start_logits_list", start_logits_list), ("end_logits_list", end_logits_list)):
        check_list_of(name, rows, torch.Tensor, "1-D tensors, one per window")
        check_length(name, rows, len(windows), "one per window")
    best = None
    for w, (window, s, e) in enumerate(zip(windows, start_logits_list, end_logits_list)):
        i, j, score = best_span(s, e, window, max_answer_len, n_best)
        if best is None or score > best[3]:
            best = (w, i, j, score)
    w, i, j, score = best
    text = span_text(windows[w], context, i, j)
    return Prediction(text, windows[w].offsets[i][0], windows[w].offsets[j][1], score, w, i, j)


# ----------------------------------------------------------------------------------------
# 6. A baseline without learning
# ----------------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    "what which who whom whose when where why how is are was were be been being do does did has have had "
    "of in on at to for from by with as about into than that this these those it its and or not no "
    "name named called many much one".split())
"""Words of :func:`normalize_answer`'s output that :func:`sentence_overlap_baseline` does not
count: question words, forms of *be*, *do*, *have*, prepositions and conjunctions (the
articles are gone already), and *name*, *called*, *many*, *much*, *one* ("what is one...")."""

_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9])")


def split_sentences(context: str) -> list[tuple[int, str]]:
    """``context`` cut into sentences: ``(char_start, sentence)`` pairs, each sentence without
    white space at its ends. A sentence ends at ``.``, ``!`` or ``?`` (and closing quotes or
    brackets) followed by white space and a capital letter or digit: a rule of thumb that
    also cuts after abbreviations such as ``U.S. Army``."""
    check_text("context", context)
    cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(context)] + [len(context)]
    out = []
    for a, b in zip(cuts, cuts[1:]):
        part = context[a:b]
        if part.strip():
            out.append((a + len(part) - len(part.lstrip()), part.strip()))
    return out


def sentence_overlap_baseline(question: str, context: str) -> str:
    """The sentence of ``context`` (:func:`split_sentences`) that holds the most distinct
    words of ``question``, both normalised (:func:`normalize_answer`), the
    :data:`STOP_WORDS` not counted; the first such sentence on a tie. Where the question
    has only stop words, every word counts. A baseline that reads no answer out of the
    sentence: on ``xquad_en`` exact match 0.0, F1 15.6 (bootstrap SE 0.4), though the sentence
    it picks holds the answer for 77.6% of the questions; F1 says how far "the right
    sentence" is from the answer."""
    check_text("question", question)
    words = set(normalize_answer(question).split())
    words = (words - STOP_WORDS) or words
    best, best_count = None, -1
    for _, sentence in split_sentences(context):
        count = len(words & set(normalize_answer(sentence).split()))
        if count > best_count:
            best, best_count = sentence, count
    return best


def sentence_overlap_answers(questions: list) -> dict[str, str]:
    """The sentence baseline's answer to each of ``questions``: ``{question id:
    sentence_overlap_baseline(question, context)}``, what :func:`squad_scores` reads."""
    check_list_of("questions", questions, Question, "Question (see read_questions())")
    return {q.id: sentence_overlap_baseline(q.question, q.context) for q in questions}
