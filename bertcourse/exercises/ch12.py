"""Chapter 12 exercises: extractive question answering (SQuADShifts for training, XQuAD for test).

In the notebook::

    from bertcourse.exercises.ch12 import q1, q2, q3, quiz

* ``q1`` — ``prediction``: *before* the measurement, predict the exact match and the F1 (as shares
  between 0 and 1) of the sentence-overlap baseline on the 1,190 English XQuAD questions (the check
  runs :func:`overlap_baseline_scores`; ``q1.reveal(text)`` shows the measurement once there is a guess).
* ``q2`` — ``answer_pieces(offsets, answer_start, answer_end)``: the positions ``(start, end)`` of the
  first and last piece holding the answer's characters (end inclusive), or ``(0, 0)`` (``[CLS]``) when
  the answer is not wholly in the window (:func:`bertcourse.answer_spans.answer_positions`).
* ``q3`` — ``best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len)``:
  the valid span with the highest start + end logit (:func:`bertcourse.answer_spans.best_span` with
  ``n_best=None``). Both return a pair of ints (a tuple, a list or a 1-D integer tensor of two).
* ``quiz`` — four questions on what the chapter measured, and why.

Every check gives the learner's code fresh copies of its inputs (the core's rule).
"""
from __future__ import annotations

import functools
import numbers

import torch

from .. import answer_spans
from ..answer_spans import normalize_answer, read_questions, sentence_overlap_answers, squad_scores
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, Symptom, equal_values, randn, run_cases
from .guesses import judge_guesses, predicted_shares
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "quiz", "overlap_baseline_scores", "Q1_KEYS", "Q1_SET", "Q1_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: predict, then measure
# ---------------------------------------------------------------------------------------

Q1_SET = "xquad_en"
"""The questions of q1's measurement: ``read_questions(Q1_SET)``, all 1,190 (the chapter's test set)."""
Q1_KEYS = ("exact match", "F1")
"""q1's two measures of the sentence-overlap baseline, as shares (``squad_scores`` gives percentages)."""
Q1_TOLERANCE = 0.05


@functools.lru_cache(maxsize=1)
def _baseline_measured() -> dict:
    questions = read_questions(Q1_SET)
    predictions = sentence_overlap_answers(questions)
    scores = squad_scores(predictions, questions)
    n = len(questions)
    return {"exact match": scores["exact_match"] / 100, "F1": scores["f1"] / 100, "n": n,
            "holds": sum(any(t in predictions[q.id] for t in q.texts) for q in questions) / n,
            "answer words": sum(len(normalize_answer(q.texts[0]).split()) for q in questions) / n,
            "sentence words": sum(len(normalize_answer(predictions[q.id]).split()) for q in questions) / n}


def overlap_baseline_scores() -> dict:
    """The measurement of q1: ``{"exact match": ..., "F1": ...}`` of
    :func:`~bertcourse.answer_spans.sentence_overlap_baseline` on the questions of ``Q1_SET`` (1,190),
    as shares: :func:`~bertcourse.answer_spans.squad_scores` divided by 100, 0.0 and 0.156. Computed
    once per process (a second or two: it reads the data); no randomness."""
    measured = _baseline_measured()
    return {key: measured[key] for key in Q1_KEYS}


def _one_held_sentence_f1(measured: dict) -> float:
    # F1 of a sentence that holds an answer of the mean length: recall 1, precision answer / sentence
    precision = measured["answer words"] / measured["sentence words"]
    return 2 * precision / (precision + 1)


def _q1_reasons(guess: dict, measured: dict, off: list) -> list:
    # why each key that is off is off (judge_guesses puts these after the report)
    facts = _baseline_measured()
    shown = dict(answer=facts["answer words"], sentence=facts["sentence words"], holds=facts["holds"],
                    n=facts["n"], example=_one_held_sentence_f1(facts))
    why = []
    em, f1 = "exact match", "F1"
    if em in off:
        why.append(_("a whole sentence is never exactly the answer: the answers have {answer:.1f} words on average, "
                     "the sentences the baseline picks {sentence:.1f}, and exact match counts a prediction only when "
                     "its words are the answer's words (after lower-casing and removing punctuation and a, an, "
                     "the). Not one of the {n:,} sentences is").format(**shown))
    if f1 in off and guess[f1] < measured[f1]:
        why.append(_("F1 gives partial credit: it counts the words the sentence shares with the answer. The sentence "
                     "holds the answer for {holds:.0%} of the questions, so its recall is often 1, and its precision, "
                     "the share of its words that are the answer's (about {answer:.1f} of {sentence:.1f}), is small "
                     "but not 0").format(**shown))
    if f1 in off and guess[f1] > measured[f1]:
        why.append(_("holding the answer is not being it: the sentence holds the answer for {holds:.0%} of the "
                     "questions, but F1 counts its other words against it. Recall 1 with precision {answer:.1f} / "
                     "{sentence:.1f} gives F1 = 2PR / (P + R) = {example:.2f}, and a sentence that misses the answer "
                     "scores about 0").format(**shown))
    return why


def _check_q1(answer) -> str:
    guess = predicted_shares(answer, Q1_KEYS, _("scores between 0 and 1"), _("a number between 0 and 1"))
    measured = overlap_baseline_scores()
    report = judge_guesses(guess, measured, Q1_TOLERANCE, _q1_reasons)
    facts = _baseline_measured()
    return _("{report}: both within {tolerance:.2f}. The sentence holds the answer for {holds:.0%} of the "
             "questions, yet exact match is 0: a sentence of about {sentence:.1f} words is never exactly an answer "
             "of about {answer:.1f}. F1 gives partial credit for the words they share: {f1:.2f} on average.").format(
        report=report, tolerance=Q1_TOLERANCE, holds=facts["holds"], sentence=facts["sentence words"],
        answer=facts["answer words"], f1=measured["F1"])


q1 = Exercise(
    name=N_("Q1 (predict: answering with the best-matching sentence)"),
    var="prediction",
    checker=_check_q1,
    hints=[
        N_("The baseline answers with a whole sentence of the paragraph. How many words has a SQuAD answer, and how "
           "many a sentence of Wikipedia? What does exact match give a prediction that holds the answer's words "
           "and twenty more?"),
        N_("Exact match is 1 only when the normalised words are exactly the answer's: for a whole sentence, never. "
           "F1 counts the shared words: recall is 1 when the sentence holds the answer (about three times in four), "
           "and precision is the answer's share of the sentence's words."),
        N_("Exact match 0. F1: a 3-word answer in a 26-word sentence gives precision about 0.1 and recall 1, F1 "
           "about 0.2; with the questions whose sentence misses the answer, about 0.16 on average."),
    ],
    solution=N_('''
# a prediction, not a computation; the check then measures (overlap_baseline_scores())
prediction = {"exact match": 0.0, "F1": 0.16}
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: the answer's pieces in a window
# ---------------------------------------------------------------------------------------

def _context_positions(offsets) -> list:
    # the positions of the context pieces: those with offsets (None for [CLS], the question, [SEP])
    return [i for i, o in enumerate(offsets) if o is not None]


def _ref_answer_pieces(offsets, answer_start, answer_end):
    """q2's reference: :func:`~bertcourse.answer_spans.answer_positions` on a window's offsets (the
    tests check that the two agree on every real window of the cases)."""
    context = _context_positions(offsets)
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > answer_start)
    end = next(i for i in reversed(context) if offsets[i][0] < answer_end)
    return start, end


def _first_piece_from_its_start(offsets, answer_start, answer_end):
    """the answer begins inside a piece here, and you took the piece after it: the start is the piece
    that holds the answer's first character, the first context piece that ends after answer_start
    (offsets[i][1] > answer_start), not the first that begins at or after it."""
    start, end = _ref_answer_pieces(offsets, answer_start, answer_end)
    if (start, end) == (0, 0):
        return 0, 0
    return next(i for i in _context_positions(offsets) if offsets[i][0] >= answer_start), end


def _last_piece_to_its_end(offsets, answer_start, answer_end):
    """the answer ends inside a piece here, and you took the piece before it: the end is the piece that
    holds the answer's last character, the last context piece that begins before answer_end
    (offsets[i][0] < answer_end), not the last that ends at or before it."""
    start, end = _ref_answer_pieces(offsets, answer_start, answer_end)
    if (start, end) == (0, 0):
        return 0, 0
    return start, next(i for i in reversed(_context_positions(offsets)) if offsets[i][1] <= answer_end)


def _end_one_past(offsets, answer_start, answer_end):
    """your end is one past the answer's last piece: end is inclusive, the position of the piece that holds
    the answer's last character (answer_end is exclusive: that character is answer_end - 1), as the end
    head points at it."""
    start, end = _ref_answer_pieces(offsets, answer_start, answer_end)
    return (0, 0) if (start, end) == (0, 0) else (start, end + 1)


def _among_the_context_pieces(offsets, answer_start, answer_end):
    """you counted the positions among the context pieces: a position is an index of the window, where
    [CLS], the question's pieces and a [SEP] come first (offsets[i] is None there). Enumerate offsets
    itself, or add the position of the first context piece."""
    start, end = _ref_answer_pieces(offsets, answer_start, answer_end)
    first = _context_positions(offsets)[0]
    return (0, 0) if (start, end) == (0, 0) else (start - first, end - first)


def _clipped_to_the_window(offsets, answer_start, answer_end):
    """the answer is only partly in this window, and you cut it at the window's edge: that span is not the
    answer. An answer that is not wholly inside gets (0, 0); the windows overlap, so a neighbouring one
    holds it whole."""
    context = _context_positions(offsets)
    inside = [i for i in context if offsets[i][1] > answer_start and offsets[i][0] < answer_end]
    return (inside[0], inside[-1]) if inside else (0, 0)


def _at_the_edge_left_out(offsets, answer_start, answer_end):
    """an answer that begins on the window's first context piece, or ends on its last, is wholly inside the
    window: compare with <= and >= (answer_start >= the first piece's start, answer_end <= the last piece's
    end), not with < and >."""
    context = _context_positions(offsets)
    if answer_start <= offsets[context[0]][0] or answer_end >= offsets[context[-1]][1]:
        return 0, 0
    return _ref_answer_pieces(offsets, answer_start, answer_end)


def _swapped(offsets, answer_start, answer_end):
    """start and end are swapped: the result is (start, end), the first piece of the answer, then the
    last (start <= end)."""
    start, end = _ref_answer_pieces(offsets, answer_start, answer_end)
    return end, start


def _not_found_marker(got, offsets, answer_start, answer_end) -> bool:
    # -1, (-1, -1), (None, None) ... for an answer that is not in the window
    if _ref_answer_pieces(offsets, answer_start, answer_end) != (0, 0):
        return False
    values = got if isinstance(got, tuple) else (got,)
    return any(v is None or (isinstance(v, int) and v < 0) for v in values)


def _absent(offsets, answer_start, answer_end) -> bool:
    # the answer is not wholly in the window (where the learner's None, or a search that found nothing, is named)
    return _ref_answer_pieces(offsets, answer_start, answer_end) == (0, 0)


def _none_compared(error, offsets, answer_start, answer_end) -> bool:
    # offsets[i][1] (or o[0], or a comparison) on the None of [CLS], a question piece or [SEP]
    return isinstance(error, TypeError) and "NoneType" in str(error)


_NOT_IN_THE_WINDOW = N_("an answer that is not in this window is labelled (0, 0), the position of [CLS], not None "
                        "or -1: every window needs a target for the start and end heads, and [CLS] is how they say "
                        "'not here'.")

Q2_DIAGNOSES = [
    _swapped, _end_one_past, _among_the_context_pieces, _first_piece_from_its_start, _last_piece_to_its_end,
    _clipped_to_the_window, _at_the_edge_left_out,
    (Symptom(_not_found_marker), _NOT_IN_THE_WINDOW),
    (Symptom(lambda error, *args: error is None and _absent(*args), raised=True), _NOT_IN_THE_WINDOW),   # returned None
    (Symptom(_none_compared, raised=True),
     N_("your code used a None of offsets as a pair of numbers: None marks [CLS], the question's pieces and [SEP], "
        "which hold no character of the paragraph. Skip them (if offsets[i] is None: continue) before you compare "
        "their ends.")),
    (Symptom(lambda error, *args: isinstance(error, StopIteration) and _absent(*args), raised=True),
     N_("your next(...) found no piece: no piece of this window holds the answer's first (or last) character, so "
        "the answer is not wholly in this window, and the result is then (0, 0), [CLS]. Check that first.")),
]


def _window(question_pieces: int, context: tuple) -> tuple:
    # offsets of [CLS] question [SEP] context [SEP]: None, then each context piece's (start, end), then None
    return (None,) * (question_pieces + 2) + context + (None,)


_TOWER = ((0, 3), (4, 9), (10, 12), (13, 15), (16, 21), (21, 22))      # The tower is in Paris.
_AMAZON_PIECES = ((243, 248), (248, 252), (253, 259), (260, 264), (265, 271), (272, 276), (277, 279), (280, 283),
                  (284, 290), (291, 296), (297, 299), (300, 305), (306, 313), (313, 314), (315, 319), (320, 325),
                  (326, 337), (338, 339), (339, 340), (340, 343), (343, 344), (344, 347), (348, 354), (355, 365),
                  (366, 367), (367, 368), (368, 369), (369, 372), (372, 373), (373, 376), (377, 379), (380, 382),
                  (382, 383), (383, 384), (385, 387), (388, 393), (394, 395), (395, 396), (396, 399), (399, 400),
                  (400, 403), (404, 410), (411, 421), (422, 423))
_AMAZON_BEFORE, _AMAZON, _AMAZON_AFTER = _AMAZON_PIECES[:20], _AMAZON_PIECES[12:32], _AMAZON_PIECES[24:]
_ENGLISH_PIECES = ((141, 142), (142, 143), (144, 146), (147, 150), (151, 161), (162, 166), (167, 170), (171, 174),
                   (175, 177), (178, 180), (181, 185), (186, 187), (188, 196), (196, 197), (197, 198), (199, 205),
                   (206, 208), (209, 215), (215, 216), (217, 230), (231, 233), (233, 234), (234, 235), (235, 236),
                   (237, 239), (240, 243), (244, 254), (255, 257), (258, 265), (265, 266), (266, 270), (270, 271),
                   (272, 275), (276, 278), (278, 279), (279, 280), (280, 281), (282, 284), (285, 288), (289, 299),
                   (300, 304), (305, 308), (309, 312), (313, 315), (316, 317), (318, 323), (324, 328), (329, 336),
                   (337, 339), (340, 344), (344, 345), (346, 352), (353, 355), (356, 361), (362, 370), (371, 375),
                   (376, 378), (379, 380), (380, 381), (381, 382), (382, 383), (384, 386), (387, 390), (391, 401),
                   (401, 402), (403, 408), (409, 416), (417, 426))
_ENGLISH_BEFORE, _ENGLISH = _ENGLISH_PIECES[:38], _ENGLISH_PIECES[30:]

Q2_WINDOWS = (("Where is the tower?", "The tower is in Paris.", 192, 64, 0),
              *(("Where is the tower?", "The tower is in Paris.", 11, 1, w) for w in (1, 0, 2)),
              *(("xquad_en", "5729e2316aef0514001550c5", 32, 8, w) for w in (6, 5, 7)),
              *(("squadshifts_new_wiki", "5d6763342b22cd4dfcfbf981", 48, 8, w) for w in (2, 1)))
"""Where the windows of ``Q2_CASES`` come from, in the order of their first use: ``(question, context, max_len,
stride, window)`` for the hand-made paragraph, ``(data set, question id, max_len, stride, window)`` for a real one;
``make_windows`` with MiniLM's tokenizer cuts them (tests/test_exercises_ch12.py checks the offsets against it)."""

Q2_CASES = [
    (N_("'Paris' in the window [CLS] where is the tower ? [SEP] the tower is in paris . [SEP]"),
     (_window(5, _TOWER), 16, 21)),
    (N_("'in Paris', two pieces of the same window"), (_window(5, _TOWER), 13, 21)),
    (N_("'The tower', from the window's first context piece"), (_window(5, _TOWER), 0, 9)),
    (N_("'in Paris' in the window [CLS] where is the tower ? [SEP] is in paris [SEP], up to its last piece"),
     (_window(5, _TOWER[2:5]), 13, 21)),
    (N_("'in Paris' in the window [CLS] where is the tower ? [SEP] the tower is [SEP], which does not hold it"),
     (_window(5, _TOWER[:3]), 13, 21)),
    (N_("'in Paris' in the window [CLS] where is the tower ? [SEP] paris . [SEP], which holds only 'Paris'"),
     (_window(5, _TOWER[4:]), 13, 21)),
    (N_("XQuAD's '7,000,000 square kilometres (2,70', which ends inside the piece '700'"),
     (_window(9, _AMAZON), 338, 371)),
    (N_("the same answer in the window before, which ends with '7 , 000'"), (_window(9, _AMAZON_BEFORE), 338, 371)),
    (N_("the same answer in the window after, which begins with '( 2 , 700'"), (_window(9, _AMAZON_AFTER), 338, 371)),
    (N_("SQuADShifts' '1.7% of the population ... at home', which begins inside the piece '61'"),
     (_window(7, _ENGLISH), 277, 344)),
    (N_("the same answer in the window before, which ends with '61 . 7 % of'"), (_window(7, _ENGLISH_BEFORE), 277, 344)),
]


def _whole(x):
    # x as a Python int when it is one whole number: an int (not a bool) or a one-element integer tensor
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    if (isinstance(x, torch.Tensor) and x.numel() == 1 and not x.dtype.is_floating_point
            and not x.dtype.is_complex and x.dtype != torch.bool):
        return int(x.item())
    return None


def _whole_pair(got):
    # got as a tuple of two ints, or None
    if isinstance(got, torch.Tensor) and got.dim() == 1 and len(got) == 2:
        got = list(got)
    if type(got) not in (tuple, list) or len(got) != 2:
        return None
    pair = tuple(_whole(v) for v in got)
    return None if None in pair else pair


def _q2_pair(got, where, offsets, answer_start, answer_end):
    """The learner's positions as a tuple of two ints; -1 or a pair holding None is let through for the
    diagnosis of an answer that is not in the window."""
    pair = _whole_pair(got)
    if pair is not None:
        return pair
    if _whole(got) is not None:
        return _whole(got)
    if type(got) in (tuple, list) and len(got) == 2 and all(v is None or _whole(v) is not None for v in got):
        return tuple(v if v is None else _whole(v) for v in got)
    raise CheckFailed(_("on {where}: expected (start, end), two positions of the window (ints), got {got!r:.80}").format(
        where=where, got=got))


def _q2_message(got, expected, where) -> str:
    start, end = next((args[1], args[2]) for description, args in Q2_CASES if _(description) == where)
    return _("on {where} (the answer: characters {start} to {end} of the paragraph): expected (start, end) = "
             "{expected}, got {got}").format(where=where, start=start, end=end, expected=expected, got=got)


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_answer_pieces, Q2_CASES, Q2_DIAGNOSES, prepare=_q2_pair,
                     compare=equal_values(_q2_message))


q2 = Exercise(
    name=N_("Q2 (the answer's pieces in a window)"),
    var="answer_pieces",
    checker=_check_q2,
    forbidden=[(answer_spans, "answer_positions", N_("the package's answer_positions"))],
    hints=[
        N_("The context pieces are the positions i where offsets[i] is not None. The answer is in the window only "
           "if it lies wholly among them: answer_start at or after the first context piece's start, answer_end at "
           "or before the last one's end. Otherwise return (0, 0)."),
        N_("The start is the first context position whose piece ends after answer_start (offsets[i][1] > "
           "answer_start): the piece that holds the answer's first character, even when the answer begins inside "
           "it. The end is the last context position whose piece begins before answer_end (offsets[i][0] < "
           "answer_end)."),
        N_("Positions are indices of offsets itself (enumerate(offsets)), so [CLS] and the question come before "
           "the context; end is inclusive, the position of the last piece, not one past it."),
    ],
    solution=N_('''
def answer_pieces(offsets, answer_start, answer_end):
    context = [i for i, o in enumerate(offsets) if o is not None]      # the context pieces' positions
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return 0, 0                                  # not wholly in this window: [CLS]
    start = next(i for i in context if offsets[i][1] > answer_start)          # holds the first character
    end = next(i for i in reversed(context) if offsets[i][0] < answer_end)    # holds the last character
    return start, end
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the best valid span of a window
# ---------------------------------------------------------------------------------------

def _best_pair(start_logits, end_logits, lo, hi, allowed, combine=torch.add):
    # the (start, end) with lo <= start, end < hi and allowed(number of pieces) whose combined logits are highest
    s = start_logits.detach().double()[lo:hi]
    e = end_logits.detach().double()[lo:hi]
    m = hi - lo
    idx = torch.arange(m)
    pieces = idx[None, :] - idx[:, None] + 1          # end - start + 1; < 1 where the end comes first
    scores = combine(s[:, None], e[None, :]).masked_fill(~allowed(pieces), float("-inf"))
    i, j = divmod(int(scores.argmax()), m)
    return lo + i, lo + j


def _ref_best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len):
    """q3's reference: the exact search of :func:`~bertcourse.answer_spans.best_span` (``n_best=None``)
    over the positions ``context_start .. context_end - 1``."""
    return _best_pair(start_logits, end_logits, context_start, context_end,
                      lambda pieces: (pieces >= 1) & (pieces <= max_answer_len))


def _relative_positions(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your positions count from the first context piece: return positions of the window, as start_logits
    is indexed; add context_start to an index of start_logits[context_start:context_end]."""
    start, end = _ref_best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len)
    return start - context_start, end - context_start


def _each_argmax_alone(start_logits, end_logits, context_start, context_end, max_answer_len):
    """you took the best start and the best end each on its own: the end may then come before the start, or
    the span run past max_answer_len. Search the pairs with start <= end and at most max_answer_len pieces for
    the highest start_logits[start] + end_logits[end]."""
    start = context_start + int(start_logits[context_start:context_end].argmax())
    end = context_start + int(end_logits[context_start:context_end].argmax())
    return start, end


def _sep_included(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your span reaches position context_end, the [SEP] after the context: context_end is exclusive, the
    context pieces are range(context_start, context_end)."""
    return _best_pair(start_logits, end_logits, context_start, context_end + 1,
                      lambda pieces: (pieces >= 1) & (pieces <= max_answer_len))


def _to_the_row_end(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your span uses the positions after context_end: [SEP] and the padding of a batch's shorter rows. The
    context ends at context_end (exclusive), not at len(start_logits) - 1."""
    return _best_pair(start_logits, end_logits, context_start, len(start_logits) - 1,
                      lambda pieces: (pieces >= 1) & (pieces <= max_answer_len))


def _one_piece_left_out(start_logits, end_logits, context_start, context_end, max_answer_len):
    """a one-piece answer has start == end, and your search left it out: allow start <= end, not only
    start < end."""
    return _best_pair(start_logits, end_logits, context_start, context_end,
                      lambda pieces: (pieces >= 2) & (pieces <= max_answer_len))


def _one_piece_short(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your spans have at most max_answer_len - 1 pieces: a span of exactly max_answer_len pieces (end - start
    + 1 == max_answer_len, start and end both counted) is allowed."""
    return _best_pair(start_logits, end_logits, context_start, context_end,
                      lambda pieces: (pieces >= 1) & (pieces < max_answer_len))


def _one_piece_long(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your span has max_answer_len + 1 pieces: a span from start to end has end - start + 1 pieces (both
    counted), and that may be at most max_answer_len; end - start <= max_answer_len allows one too many."""
    return _best_pair(start_logits, end_logits, context_start, context_end,
                      lambda pieces: (pieces >= 1) & (pieces <= max_answer_len + 1))


def _no_length_limit(start_logits, end_logits, context_start, context_end, max_answer_len):
    """your span is longer than max_answer_len pieces: keep end - start + 1 <= max_answer_len (BERT's
    max_answer_length; SQuAD's answers are short, and a long span is a wrong one)."""
    return _best_pair(start_logits, end_logits, context_start, context_end, lambda pieces: pieces >= 1)


def _product(start_logits, end_logits, context_start, context_end, max_answer_len):
    """you multiplied the two logits: a span's score is their sum, start_logits[start] + end_logits[end] (the
    log of the product of the start and end probabilities, up to a constant). A product makes two negative
    logits a large positive score."""
    return _best_pair(start_logits, end_logits, context_start, context_end,
                      lambda pieces: (pieces >= 1) & (pieces <= max_answer_len), combine=torch.mul)


def _a_zero_won(got, start_logits, end_logits, lo, hi, max_answer_len) -> bool:
    # an invalid span where every valid span scores below 0: a 0 left in the search (best = 0, a 0/1 mask) won
    start, end = _ref_best_valid_span(start_logits, end_logits, lo, hi, max_answer_len)
    valid = lo <= got[0] <= got[1] < min(got[0] + max_answer_len, hi)
    return float(start_logits[start] + end_logits[end]) < 0 and not valid


Q3_DIAGNOSES = [
    _relative_positions, _each_argmax_alone, _sep_included, _to_the_row_end,
    (Symptom(lambda got, *args: got == (0, 0) and _a_zero_won(got, *args)),
     N_("every valid span here scores below 0, so none beat a best score that starts at 0, and the (0, 0) it started "
        "with came back: start the best score at float('-inf'), or at the first valid span's score (a 0/1 mask "
        "multiplied into the scores fails alike: give the invalid spans -inf).")),
    (Symptom(_a_zero_won),
     N_("your span is not a valid one, and every valid span here scores below 0: a 0/1 mask multiplied into the "
        "scores leaves 0 on the invalid spans, still larger than a negative score. Give them -inf, or skip them.")),
    (Symptom(lambda error, s, *args: isinstance(error, IndexError) and f"size {len(s)}" in str(error), raised=True),
     N_("your end ran past the window's last position: the end must stay within the paragraph, range(start, "
        "min(start + max_answer_len, context_end)), not range(start, start + max_answer_len).")),
    (Symptom(lambda got, s, e, lo, hi, m: isinstance(got, tuple) and any(p not in range(lo, hi) for p in got)),
     N_("your span starts or ends outside the paragraph: on [CLS], a question piece, a [SEP] or padding. Only the "
        "positions context_start to context_end - 1 may start or end the answer.")),
    _one_piece_left_out, _one_piece_short, _one_piece_long, _no_length_limit, _product,
]


def _q3_logits(n: int, context_start: int, context_end: int, context_starts, context_ends, other=-2.0):
    # start and end logits of a hand-made window: `other` outside the context, the given values inside
    start, end = torch.full((n,), other), torch.full((n,), other)
    start[context_start:context_end] = torch.tensor(context_starts)
    end[context_start:context_end] = torch.tensor(context_ends)
    return start, end


def _q3_case_outside() -> tuple:
    # the hand-made window of the first case, with the highest logits on [CLS] and a question piece
    start, end = _q3_logits(10, 4, 9, [0.5, 1.0, 0.2, 3.0, 0.1], [0.3, 2.5, 0.4, 0.6, 0.2])
    start[0], end[0], start[1], end[2] = 5.0, 5.0, 4.0, 4.5
    return start, end, 4, 9, 30


def _q3_case_padded() -> tuple:
    # the same context in a row padded to 14: [SEP] at 9, [PAD] at 10 to 13, all with high logits
    start, end = _q3_logits(14, 4, 9, [0.5, 1.0, 0.2, 3.0, 0.1], [0.3, 2.5, 0.4, 0.6, 0.2])
    start[9], end[9] = -3.0, 6.0
    start[10:], end[10:] = 7.0, 7.0
    return start, end, 4, 9, 30


def _q3_case_random(n: int, context_start: int, context_end: int, max_answer_len: int, seed: int,
                    peaks: dict = None, scale: float = 0.5) -> tuple:
    # seeded logits with a few peaks {("start" or "end", position): value}
    start, end = randn(n, seed=seed, scale=scale), randn(n, seed=seed + 100, scale=scale)
    for (which, position), value in (peaks or {}).items():
        (start if which == "start" else end)[position] = value
    return start, end, context_start, context_end, max_answer_len


Q3_CASES = [
    (N_("a window of 10 (context pieces at 4 to 8) whose best end comes before its best start"),
     (*_q3_logits(10, 4, 9, [0.5, 1.0, 0.2, 3.0, 0.1], [0.3, 2.5, 0.4, 0.6, 0.2], other=-1.0), 4, 9, 30)),
    (N_("the same window with the highest logits on [CLS] and a question piece"), _q3_case_outside()),
    (N_("the same context in a row padded to 14, high logits on [SEP] and [PAD]"), _q3_case_padded()),
    (N_("a window of 27, max_answer_len=4, whose best span has exactly 4 pieces"),
     _q3_case_random(27, 6, 26, 4, seed=3, peaks={("start", 10): 4.0, ("end", 13): 4.0})),
    (N_("a window of 27, max_answer_len=4, where spans of 5 and 7 pieces score higher"),
     _q3_case_random(27, 6, 26, 4, seed=4, peaks={("start", 8): 4.0, ("end", 7): 4.6, ("end", 12): 4.2, ("end", 14): 4.5})),
    (N_("a window of 12 whose logits are all negative"),
     (*_q3_logits(12, 4, 11, [-2.0, -0.5, -3.0, -4.0, -1.0, -2.5, -6.0], [-3.0, -1.5, -0.4, -5.0, -2.0, -1.0, -7.0],
                  other=-8.0), 4, 11, 30)),
    (N_("a window of 7 with a single context piece"), _q3_case_random(7, 5, 6, 30, seed=5)),
    (N_("a window of 48 (context pieces at 12 to 46), random logits, max_answer_len=30"),
     _q3_case_random(48, 12, 47, 30, seed=6, scale=2.0)),
]


def _q3_pair(got, where, start_logits, end_logits, context_start, context_end, max_answer_len):
    """The learner's span as a tuple of two ints, or a failed check that says what it was instead."""
    pair = _whole_pair(got)
    if pair is not None:
        return pair
    if type(got) in (tuple, list) and len(got) == 3:
        raise CheckFailed(_("on {where}: you returned three values, {got!r:.80}: return (start, end) only, the two "
                            "positions (best_span's score is not asked for here).").format(where=where, got=got))
    number = _whole(got)
    if number is not None:
        start, end = _ref_best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len)
        m = context_end - context_start
        flat = number == (start - context_start) * m + (end - context_start)
        raise CheckFailed(_("on {where}: you returned one number, {got}: return the pair (start, end).").format(
            where=where, got=number) + (_(" It is the argmax of the flattened (m, m) matrix of scores: divmod(index, "
                                          "m) gives its (row, column), and context_start + each is the position.")
                                        if flat else ""))
    if isinstance(got, (float, torch.Tensor)) or (type(got) in (tuple, list) and any(
            isinstance(v, float) or (isinstance(v, torch.Tensor) and v.dtype.is_floating_point) for v in got)):
        raise CheckFailed(_("on {where}: you returned {got!r:.80}, which holds a number with a fraction (a score or "
                            "a logit?) or a tensor of scores: return (start, end), two whole positions of the window "
                            "(int(...) of a tensor index).").format(where=where, got=got))
    raise CheckFailed(_("on {where}: expected (start, end), two positions of the window (ints), got {got!r:.80}").format(
        where=where, got=got))


def _q3_message(got, expected, where) -> str:
    start_logits, end_logits = next(args[:2] for description, args in Q3_CASES if _(description) == where)

    def shown(pair) -> str:
        start, end = pair
        if not (0 <= start < len(start_logits) and 0 <= end < len(end_logits)):
            return str(pair)
        return _("{pair} (score {score:.2f})").format(pair=pair, score=float(start_logits[start] + end_logits[end]))

    return _("on {where}: expected (start, end) = {expected}, got {got}").format(
        where=where, expected=shown(expected), got=shown(got) if isinstance(got, tuple) else got)


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_best_valid_span, Q3_CASES, Q3_DIAGNOSES, prepare=_q3_pair,
                     compare=equal_values(_q3_message), no_grad=True)


q3 = Exercise(
    name=N_("Q3 (the best valid span of a window)"),
    var="best_valid_span",
    checker=_check_q3,
    forbidden=[(answer_spans, "best_span", N_("the package's best_span"))],
    hints=[
        N_("Only context positions may start or end the answer: start and end in range(context_start, "
           "context_end). A span is valid when start <= end and it has end - start + 1 <= max_answer_len pieces."),
        N_("Try every valid pair: for start in range(context_start, context_end), for end in range(start, "
           "min(start + max_answer_len, context_end)), keep the pair with the highest start_logits[start] + "
           "end_logits[end]."),
        N_("The best start and the best end taken each on its own need not fit together (the end may come first): "
           "compare the sums of pairs. Return two ints, the loop's variables, not the score."),
    ],
    solution=N_('''
def best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len):
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start, min(start + max_answer_len, context_end)):    # at most max_answer_len pieces
            score = float(start_logits[start] + end_logits[end])
            if score > best_score:
                best, best_score = (start, end), score
    return best
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 12)"), [
    Question(
        N_("On XQuAD, the sentence-overlap baseline scores exact match 0.0 and F1 15.6, and the sentence it picks "
           "holds the answer for 77.6% of the questions. Why is exact match 0 while F1 is not?"),
        options=(
            Option(N_("Because the baseline picks a wrong sentence almost every time."),
                   why=N_("It picks a sentence that holds the answer for 77.6% of the questions; what it cannot do "
                          "is cut the answer out of that sentence.")),
            Option(N_("Because exact match compares the texts as written, and the sentences keep their capitals "
                      "and punctuation."),
                   why=N_("Both scores compare normalised texts (lower case, no punctuation, no a, an, the); what "
                          "differs is the sentence's extra words, not its spelling.")),
            Option(N_("Exact match credits only exactly the answer's words, and a sentence of about 26 words is "
                      "never an answer of about 3; F1 counts the words the two share, so a sentence that holds the "
                      "answer gets recall 1 and a small precision."),
                   why=N_("Right: with recall 1 and precision 3/26, F1 is about 0.2 on such a question, and 15.6 on "
                          "average, counting the questions whose sentence misses the answer. F1 measures how far "
                          "'the right sentence' is from the answer."), correct=True),
            Option(N_("Because F1 compares characters and exact match compares words."),
                   why=N_("Both compare normalised words: exact match asks whether the two word sequences are "
                          "equal, F1 counts the words they share.")),
        )),
    Question(
        N_("make_windows cuts a long paragraph into windows whose context parts overlap by stride pieces. Why "
           "overlap?"),
        options=(
            Option(N_("An answer that crosses one window's edge would otherwise be whole in no window; with the "
                      "overlap, any stride + 1 consecutive pieces lie together in some window, so an answer of at "
                      "most stride + 1 pieces is wholly inside one."),
                   why=N_("Right: a window that holds an answer only in part labels it (0, 0), so without the "
                          "overlap an answer cut by an edge would never be a target in training, nor a span the "
                          "model could point at."), correct=True),
            Option(N_("So that every piece is seen twice, which doubles the training data."),
                   why=N_("Only the stride pieces at each edge are in two windows, and more windows of one paragraph "
                          "are no more questions: the overlap is there for the answers an edge would cut.")),
            Option(N_("Because BERT cannot read more than stride pieces at a time."),
                   why=N_("BERT reads up to 512 positions (its position table); max_len, the windows' length, is a "
                          "choice that keeps batches small, and stride is only how much neighbouring windows "
                          "share.")),
            Option(N_("So that the question appears in every window."),
                   why=N_("It does anyway: every window is [CLS] question [SEP] context part [SEP]. The overlap is "
                          "among the context's pieces.")),
        )),
    Question(
        N_("In training, a window that does not hold the answer wholly gets the targets start = end = 0, the "
           "position of [CLS]. Why?"),
        options=(
            Option(N_("Because cross_entropy leaves position 0 out of the loss, as it leaves out -100."),
                   why=N_("Nothing is left out: span_loss trains both heads to point at position 0 in such a "
                          "window. The window still teaches something: 'not here'.")),
            Option(N_("Because in SQuAD an answer may begin with [CLS]."),
                   why=N_("[CLS] is no text of the paragraph; every SQuAD v1.1 answer is a span of the paragraph.")),
            Option(N_("So that the model answers (0, 0), an empty answer, when it is unsure."),
                   why=N_("At test time best_span considers only context pieces, so [CLS] is never the answer; "
                          "every XQuAD question has one, and the best span over all the windows wins.")),
            Option(N_("Every window needs a target for the two heads, and [CLS] is in every window and never part "
                      "of an answer, so pointing at it means 'not in this window'; an answer only partly inside "
                      "gets it too, since any span of this window would be wrong."),
                   why=N_("Right, as in BERT's SQuAD code: the heads learn to put their weight on [CLS], not on the "
                          "context, where the answer is not; decoding never picks [CLS]."), correct=True),
        )),
    Question(
        N_("SQuAD's scoring normalises both texts before comparing them: lower case, no punctuation, no a, an, "
           "the, single spaces. Why?"),
        options=(
            Option(N_("Because MiniLM's tokenizer lower-cases the text, so the model's answers come out in lower "
                      "case."),
                   why=N_("The predicted text is cut from the paragraph by the pieces' character offsets "
                          "(span_text), with its capitals; normalising is as much about the annotators' answers as "
                          "about the model's.")),
            Option(N_("Two answers that differ only in case, punctuation or an article ('the Amazon basin' and "
                      "'Amazon basin.') name the same thing: annotators themselves disagree on such details, and "
                      "they should not count as errors."),
                   why=N_("Right: evaluate-v1.1.py normalises so, and no further: 'two' and '2' still differ, and "
                          "'Eiffel-Tower' becomes 'eiffeltower', which is not 'eiffel tower'."), correct=True),
            Option(N_("So that exact match and F1 always agree."),
                   why=N_("They still differ: exact match asks for the same normalised words, F1 counts the shared "
                          "ones (the baseline: 0.0 against 15.6).")),
            Option(N_("To remove the stop words, as the sentence-overlap baseline does."),
                   why=N_("Only a, an and the go; the baseline's longer STOP_WORDS (question words, be, of, in ...) "
                          "are its own, for choosing a sentence, not part of SQuAD's scoring.")),
        )),
])
