"""Tests for the chapter 12 exercises (bertcourse.exercises.ch12).

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them. A function ``qN_...`` whose docstring reads ``fails:
<words>`` is also run by tests/test_exercises.py (``test_a_learner_mistake_fails_with_its_diagnosis``).
q1's measurement reads the data (a second or two, once per process); the test of q2's windows
loads MiniLM's tokenizer alone (no weights)."""
import copy
import inspect
import re

import pytest
import torch
from tokenizers import Tokenizer

from bertcourse import answer_spans
from bertcourse.answer_spans import (Window, answer_positions, best_span, make_windows, read_questions,
                                     sentence_overlap_answers, squad_scores)
from bertcourse.exercises import ch12
from bertcourse.exercises.ch12 import q1, q2, q3, quiz
from bertcourse.exercises.core import Symptom, message_of
from bertcourse.pretrained_bert import minilm_folder
from test_exercises import assert_fails_with, assert_passes_with


@pytest.fixture(scope="module")
def tokenizer():
    return Tokenizer.from_file(str(minilm_folder() / "tokenizer.json"))      # offline, no model weights


# --- Q2: the answer's pieces in a window -----------------------------------------------------------

def pieces_by_hand(offsets, answer_start, answer_end):
    context = [(i, o) for i, o in enumerate(offsets) if o is not None]
    (_, (first_start, _)), (_, (_, last_end)) = context[0], context[-1]
    if not first_start <= answer_start or not answer_end <= last_end:
        return 0, 0
    start = end = None
    for i, (piece_start, piece_end) in context:
        if start is None and piece_start <= answer_start < piece_end:
            start = i
        if piece_start < answer_end <= piece_end:
            end = i
    return start, end


def test_q2_reference_and_other_right_answers_pass():
    assert_passes_with(q2, ch12._ref_answer_pieces, "correct on all 11 cases")
    assert_passes_with(q2, pieces_by_hand)
    assert_passes_with(q2, lambda offsets, s, e: list(pieces_by_hand(offsets, s, e)))          # a list
    assert_passes_with(q2, lambda offsets, s, e: torch.tensor(pieces_by_hand(offsets, s, e)))  # a 1-D tensor


def _real_window(tokenizer, source, key, max_len, stride, index):
    if source in answer_spans.DATASETS:
        question = next(q for q in read_questions(source) if q.id == key)
        windows = make_windows(tokenizer, question.question, question.context, max_len, stride)
        return windows[index], question
    return make_windows(tokenizer, source, key, max_len, stride)[index], None


def test_q2_windows_are_make_windows_with_minilm_and_the_reference_is_answer_positions(tokenizer):
    windows = {}
    for origin in ch12.Q2_WINDOWS:
        windows[origin] = _real_window(tokenizer, *origin)
    offsets_seen = {}
    for origin, (window, question) in windows.items():
        offsets_seen[window.offsets] = (window, question)
    for description, (offsets, answer_start, answer_end) in ch12.Q2_CASES:
        assert offsets in offsets_seen, description
        window, question = offsets_seen[offsets]
        if question is not None:                                  # the real answer, at its real characters
            text, char_start = question.answers[0]
            assert (char_start, char_start + len(text)) == (answer_start, answer_end), description
        else:
            text = "The tower is in Paris."[answer_start:answer_end]
        assert ch12._ref_answer_pieces(offsets, answer_start, answer_end) == \
            answer_positions(window, text, answer_start), description
    # every window of those paragraphs agrees too, not only the cases' windows
    for origin in {o[:4] for o in ch12.Q2_WINDOWS}:
        source, key, max_len, stride = origin
        if source in answer_spans.DATASETS:
            question = next(q for q in read_questions(source) if q.id == key)
            text, char_start = question.answers[0]
            for w in make_windows(tokenizer, question.question, question.context, max_len, stride):
                assert ch12._ref_answer_pieces(w.offsets, char_start, char_start + len(text)) == \
                    answer_positions(w, text, char_start)


def test_q2_cases_cover_the_edges():
    cases = [args for _, args in ch12.Q2_CASES]
    found = [ch12._ref_answer_pieces(*args) for args in cases]
    assert (0, 0) in found and any(s == e != 0 for s, e in found) and any(e - s >= 10 for s, e in found)
    inside = [(o, s, e, r) for (o, s, e), r in zip(cases, found) if r != (0, 0)]
    assert any(o[r[0]][0] < s for o, s, e, r in inside)                      # begins inside a piece
    assert any(o[r[1]][1] > e for o, s, e, r in inside)                      # ends inside a piece
    assert any(r[0] == next(i for i, x in enumerate(o) if x is not None) for o, s, e, r in inside)
    assert any(r[1] == len(o) - 2 for o, s, e, r in inside)                  # on the last context piece
    outside = [(o, s, e) for (o, s, e), r in zip(cases, found) if r == (0, 0)]
    spans = [[x for x in o if x is not None] for o, s, e in outside]
    assert any(c[-1][1] <= s or c[0][0] >= e for c, (o, s, e) in zip(spans, outside))          # not there at all
    assert any(c[0][0] <= s < c[-1][1] < e for c, (o, s, e) in zip(spans, outside))            # cut at the end
    assert any(s < c[0][0] < e <= c[-1][1] for c, (o, s, e) in zip(spans, outside))            # cut at the start


def q2_first_piece_by_its_start(offsets, answer_start, answer_end):
    """fails: the answer begins inside a piece here, and you took the piece after it"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return 0, 0
    start = next(i for i in context if offsets[i][0] >= answer_start)
    end = next(i for i in reversed(context) if offsets[i][0] < answer_end)
    return start, end


def q2_last_piece_by_its_end(offsets, answer_start, answer_end):
    """fails: the answer ends inside a piece here, and you took the piece before it"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > answer_start)
    end = max(i for i in context if offsets[i][1] <= answer_end)
    return start, end


def q2_end_exclusive(offsets, answer_start, answer_end):
    """fails: your end is one past the answer's last piece: end is inclusive"""
    start, end = pieces_by_hand(offsets, answer_start, answer_end)
    return (0, 0) if start == 0 else (start, end + 1)               # as in a Python slice


def q2_answer_end_as_its_last_character(offsets, answer_start, answer_end):
    """fails: (answer_end is exclusive: that character is answer_end - 1)"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > answer_start)
    end = max(i for i in context if offsets[i][0] <= answer_end)     # takes the piece that begins at answer_end
    return start, end


def q2_counted_among_the_context_pieces(offsets, answer_start, answer_end):
    """fails: you counted the positions among the context pieces"""
    context = [o for o in offsets if o is not None]
    if answer_start < context[0][0] or answer_end > context[-1][1]:
        return 0, 0
    start = next(i for i, o in enumerate(context) if o[1] > answer_start)
    end = max(i for i, o in enumerate(context) if o[0] < answer_end)
    return start, end


def q2_none_when_not_there(offsets, answer_start, answer_end):
    """fails: an answer that is not in this window is labelled (0, 0), the position of [CLS], not None or -1"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if answer_start < offsets[context[0]][0] or answer_end > offsets[context[-1]][1]:
        return None
    return pieces_by_hand(offsets, answer_start, answer_end)


def q2_minus_one_when_not_there(offsets, answer_start, answer_end):
    """fails: is labelled (0, 0), the position of [CLS], not None or -1: every window needs a target"""
    start, end = pieces_by_hand(offsets, answer_start, answer_end)
    return (-1, -1) if start == 0 else (start, end)


def q2_cut_at_the_window_edge(offsets, answer_start, answer_end):
    """fails: the answer is only partly in this window, and you cut it at the window's edge"""
    inside = [i for i, o in enumerate(offsets) if o is not None and o[1] > answer_start and o[0] < answer_end]
    if not inside:
        return 0, 0
    return inside[0], inside[-1]


def q2_only_the_start_checked(offsets, answer_start, answer_end):
    """fails: the answer is only partly in this window, and you cut it at the window's edge: that span is not the answer"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if not offsets[context[0]][0] <= answer_start < offsets[context[-1]][1]:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > answer_start)
    end = max(i for i in context if offsets[i][0] < answer_end)
    return start, end


def q2_strict_at_the_edges(offsets, answer_start, answer_end):
    """fails: an answer that begins on the window's first context piece, or ends on its last, is wholly inside"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    if not offsets[context[0]][0] < answer_start or not answer_end < offsets[context[-1]][1]:
        return 0, 0
    return pieces_by_hand(offsets, answer_start, answer_end)


def q2_end_then_start(offsets, answer_start, answer_end):
    """fails: start and end are swapped"""
    start, end = pieces_by_hand(offsets, answer_start, answer_end)
    return end, start


def q2_none_offsets_compared(offsets, answer_start, answer_end):
    """fails: your code used a None of offsets as a pair of numbers"""
    start = next(i for i, o in enumerate(offsets) if o[1] > answer_start)      # o is None for [CLS]
    end = max(i for i, o in enumerate(offsets) if o[0] < answer_end)
    return start, end


def q2_no_branch_for_an_answer_not_there(offsets, answer_start, answer_end):
    """fails: the answer is not wholly in this window, and the result is then (0, 0), [CLS]"""
    context = [i for i, o in enumerate(offsets) if o is not None]
    start = next(i for i in context if offsets[i][1] > answer_start)       # StopIteration: no such piece here
    end = next(i for i in reversed(context) if offsets[i][0] < answer_end)
    return start, end


def q2_a_string(offsets, answer_start, answer_end):
    """fails: expected (start, end), two positions of the window (ints), got '11-11'"""
    start, end = pieces_by_hand(offsets, answer_start, answer_end)
    return f"{start}-{end}"


def test_q2_a_learners_exception_is_a_failed_check_with_its_message():
    def buggy(offsets, answer_start, answer_end):
        found = pieces_by_hand(offsets, answer_start, answer_end)
        return found[1], found[2]                        # one index too far

    result = assert_fails_with(q2, buggy, "on 'Paris' in the window [CLS] where is the tower ? [SEP] the tower is in "
                                          "paris . [SEP], your code raised IndexError", "tuple index out of range")
    assert " — " not in result.message                   # no diagnosis claims a NameError


def test_q2_messages_name_the_answers_characters():
    result = assert_fails_with(q2, q2_end_exclusive, "(the answer: characters 16 to 21 of the paragraph): expected "
                                                     "(start, end) = (11, 11), got (11, 12)")
    assert "stuck?" in result.message


def test_q2_refuses_the_packages_answer_positions_and_puts_it_back():
    original = answer_spans.answer_positions

    def cheat(offsets, answer_start, answer_end):
        context = [i for i, o in enumerate(offsets) if o is not None]
        n, length = len(offsets), offsets[context[-1]][1] + 1
        window = Window(ids=(0,) * n, pieces=("x",) * n, segments=(0,) * context[0] + (1,) * (n - context[0]),
                        offsets=offsets, context_start=context[0], first_piece=0, context_lo=offsets[context[0]][0],
                        context_hi=offsets[context[-1]][1], context_length=length)
        return answer_positions(window, "x" * (answer_end - answer_start), answer_start)

    assert_fails_with(q2, cheat, "without the package's answer_positions, and your code called it")
    assert answer_spans.answer_positions is original and answer_positions is original


# --- Q3: the best valid span of a window ---------------------------------------------------------------

def span_by_hand(start_logits, end_logits, context_start, context_end, max_answer_len):
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start, min(start + max_answer_len, context_end)):
            score = float(start_logits[start] + end_logits[end])
            if score > best_score:
                best, best_score = (start, end), score
    return best


def span_as_a_matrix(start_logits, end_logits, context_start, context_end, max_answer_len):
    s, e = start_logits[context_start:context_end], end_logits[context_start:context_end]
    m = len(s)
    length = torch.arange(m)[None, :] - torch.arange(m)[:, None]
    scores = (s[:, None] + e[None, :]).masked_fill((length < 0) | (length >= max_answer_len), float("-inf"))
    best = scores.argmax()
    return context_start + best // m, context_start + best % m        # 0-d integer tensors


def test_q3_reference_and_other_right_answers_pass():
    assert_passes_with(q3, ch12._ref_best_valid_span, "correct on all 8 cases")
    assert_passes_with(q3, span_by_hand)
    assert_passes_with(q3, span_as_a_matrix)
    assert_passes_with(q3, lambda *args: list(span_by_hand(*args)))


def test_q3_reference_is_best_span_and_every_case_has_one_clear_best():
    for description, (start_logits, end_logits, context_start, context_end, max_answer_len) in ch12.Q3_CASES:
        n = context_end + 1                                  # the [SEP] after the context ends the window
        window = Window(ids=(0,) * n, pieces=("x",) * n, segments=(0,) * context_start + (1,) * (n - context_start),
                        offsets=(None,) * context_start + tuple((i, i + 1) for i in range(n - context_start - 1))
                        + (None,), context_start=context_start, first_piece=0, context_lo=0,
                        context_hi=n - context_start - 1, context_length=n - context_start - 1)
        start, end, score = best_span(start_logits[:n], end_logits[:n], window, max_answer_len, n_best=None)
        assert ch12._ref_best_valid_span(start_logits, end_logits, context_start, context_end,
                                         max_answer_len) == (start, end), description
        others = [float(start_logits[i] + end_logits[j]) for i in range(context_start, context_end)
                  for j in range(i, min(i + max_answer_len, context_end)) if (i, j) != (start, end)]
        assert not others or score - max(others) > 1e-3, description           # float32 sums cannot tie


def q3_each_argmax_alone(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: you took the best start and the best end each on its own"""
    start = context_start + int(start_logits[context_start:context_end].argmax())
    end = context_start + int(end_logits[context_start:context_end].argmax())
    return start, end


def q3_each_argmax_of_the_row(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: the end may then come before the start"""
    return start_logits.argmax(), end_logits.argmax()            # 0-d tensors, over the whole row


def q3_every_position(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your span starts or ends outside the paragraph: on [CLS], a question piece, a [SEP] or padding"""
    return span_by_hand(start_logits, end_logits, 0, len(start_logits), max_answer_len)


def q3_after_cls(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: Only the positions context_start to context_end - 1 may start or end the answer"""
    return span_by_hand(start_logits, end_logits, 1, context_end, max_answer_len)       # skips [CLS] only


def q3_sep_included(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your span reaches position context_end, the [SEP] after the context"""
    return span_by_hand(start_logits, end_logits, context_start, context_end + 1, max_answer_len)


def q3_to_the_row_end(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your span uses the positions after context_end: [SEP] and the padding"""
    return span_by_hand(start_logits, end_logits, context_start, len(start_logits) - 1, max_answer_len)


def q3_end_after_start(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: a one-piece answer has start == end, and your search left it out"""
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start + 1, min(start + max_answer_len, context_end)):
            if float(start_logits[start] + end_logits[end]) > best_score:
                best, best_score = (start, end), float(start_logits[start] + end_logits[end])
    return best


def q3_one_piece_short(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your spans have at most max_answer_len - 1 pieces"""
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start, context_end):
            if end - start + 1 < max_answer_len and float(start_logits[start] + end_logits[end]) > best_score:
                best, best_score = (start, end), float(start_logits[start] + end_logits[end])
    return best


def q3_one_piece_long(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your span has max_answer_len + 1 pieces"""
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start, context_end):
            if end - start <= max_answer_len and float(start_logits[start] + end_logits[end]) > best_score:
                best, best_score = (start, end), float(start_logits[start] + end_logits[end])
    return best


def q3_no_length_limit(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your span is longer than max_answer_len pieces"""
    return span_by_hand(start_logits, end_logits, context_start, context_end, 10 ** 6)


def q3_product(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: you multiplied the two logits: a span's score is their sum"""
    best, best_score = None, float("-inf")
    for start in range(context_start, context_end):
        for end in range(start, min(start + max_answer_len, context_end)):
            if float(start_logits[start] * end_logits[end]) > best_score:
                best, best_score = (start, end), float(start_logits[start] * end_logits[end])
    return best


def q3_positions_in_the_slice(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your positions count from the first context piece"""
    s, e = start_logits[context_start:context_end], end_logits[context_start:context_end]
    return span_by_hand(s, e, 0, len(s), max_answer_len)


def q3_matrix_without_the_offset(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: add context_start to an index of start_logits[context_start:context_end]"""
    s, e = start_logits[context_start:context_end], end_logits[context_start:context_end]
    m = len(s)
    length = torch.arange(m)[None, :] - torch.arange(m)[:, None]
    scores = (s[:, None] + e[None, :]).masked_fill((length < 0) | (length >= max_answer_len), float("-inf"))
    return divmod(int(scores.argmax()), m)


def q3_with_its_score(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: you returned three values"""
    start, end = span_by_hand(start_logits, end_logits, context_start, context_end, max_answer_len)
    return start, end, float(start_logits[start] + end_logits[end])


def q3_the_score(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: which holds a number with a fraction (a score or a logit?)"""
    start, end = span_by_hand(start_logits, end_logits, context_start, context_end, max_answer_len)
    return start_logits[start] + end_logits[end]


def q3_flat_index(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: It is the argmax of the flattened (m, m) matrix of scores: divmod(index, m)"""
    s, e = start_logits[context_start:context_end], end_logits[context_start:context_end]
    length = torch.arange(len(s))[None, :] - torch.arange(len(s))[:, None]
    scores = (s[:, None] + e[None, :]).masked_fill((length < 0) | (length >= max_answer_len), float("-inf"))
    return scores.argmax()


def q3_masked_in_place(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: your code changed its arguments `start_logits` and `end_logits` in place"""
    for logits in (start_logits, end_logits):
        logits[:context_start] = float("-inf")              # [CLS] and the question can no longer win
        logits[context_end:] = float("-inf")
    return span_by_hand(start_logits, end_logits, context_start, context_end, max_answer_len)


def q3_best_starts_at_zero(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: start the best score at float('-inf'), or at the first valid span's score"""
    best, out = 0, (0, 0)
    for s in range(context_start, context_end):
        for e in range(s, min(s + max_answer_len, context_end)):
            if float(start_logits[s] + end_logits[e]) > best:
                best, out = float(start_logits[s] + end_logits[e]), (s, e)
    return out


def q3_end_not_limited_to_the_paragraph(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: the end must stay within the paragraph, range(start, min(start + max_answer_len, context_end))"""
    best, best_score = None, float("-inf")
    for s in range(context_start, context_end):
        for e in range(s, s + max_answer_len):                  # IndexError past the row's last position
            if float(start_logits[s] + end_logits[e]) > best_score:
                best, best_score = (s, e), float(start_logits[s] + end_logits[e])
    return best


def q3_mask_multiplied(start_logits, end_logits, context_start, context_end, max_answer_len):
    """fails: a 0/1 mask multiplied into the scores leaves 0 on the invalid spans, still larger than a negative"""
    s, e = start_logits[context_start:context_end], end_logits[context_start:context_end]
    m = len(s)
    length = torch.arange(m)[None, :] - torch.arange(m)[:, None]
    valid = (length >= 0) & (length < max_answer_len)
    best = int(((s[:, None] + e[None, :]) * valid).argmax())           # a 0 beats every negative score
    return context_start + best // m, context_start + best % m


def test_q3_a_search_from_zero_is_not_told_it_left_the_paragraph():
    result = assert_fails_with(q3, q3_best_starts_at_zero, "whose logits are all negative", "got (0, 0)",
                               "none beat a best score that starts at 0")
    assert "outside the paragraph" not in result.message


def test_q3_a_learners_exception_is_a_failed_check_with_its_message():
    def buggy(start_logits, end_logits, context_start, context_end, max_answer_len):
        start, end = span_by_hand(start_logits, end_logits, context_start, context_end, max_answer_len)
        return start.item(), end.item()                  # they are ints already

    result = assert_fails_with(q3, buggy, "on a window of 10 (context pieces at 4 to 8) whose best end comes before "
                                          "its best start, your code raised AttributeError", "'int' object has no "
                                          "attribute 'item'")
    assert " — " not in result.message


def test_q3_messages_show_the_scores():
    assert_fails_with(q3, q3_each_argmax_alone, "expected (start, end) = (7, 7) (score 3.60), got (7, 5) (score 5.50)")
    assert_fails_with(q3, lambda *args: q3_flat_index(*args) + 1, "you returned one number")
    result = assert_fails_with(q3, lambda *args: q3_flat_index(*args) + 1, "return the pair (start, end).")
    assert "flattened" not in result.message                          # not the flat index of the best span


def test_q3_a_mutating_answer_cannot_spoil_the_cases():
    pristine = copy.deepcopy(ch12.Q3_CASES)
    assert_fails_with(q3, q3_masked_in_place, "in place")
    for (_, args), (_, kept) in zip(ch12.Q3_CASES, pristine):
        assert all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b for a, b in zip(args, kept))
    assert_passes_with(q3, span_by_hand)


def test_q3_refuses_the_packages_best_span_and_puts_it_back():
    original = answer_spans.best_span

    def cheat(start_logits, end_logits, context_start, context_end, max_answer_len):
        n = context_end + 1
        window = Window(ids=(0,) * n, pieces=("x",) * n, segments=(0,) * context_start + (1,) * (n - context_start),
                        offsets=(None,) * context_start + tuple((i, i + 1) for i in range(n - context_start - 1))
                        + (None,), context_start=context_start, first_piece=0, context_lo=0,
                        context_hi=n - context_start - 1, context_length=n - context_start - 1)
        return best_span(start_logits[:n], end_logits[:n], window, max_answer_len, n_best=None)[:2]

    assert_fails_with(q3, cheat, "without the package's best_span, and your code called it")
    assert answer_spans.best_span is original and best_span is original


# --- Starters, hints and solutions -----------------------------------------------------------------

def test_the_starters_are_not_attempted():
    def answer_pieces(offsets, answer_start, answer_end):
        ...

    def best_valid_span(start_logits, end_logits, context_start, context_end, max_answer_len):
        ...

    for exercise, stub in ((q2, answer_pieces), (q3, best_valid_span), (q1, ...)):
        assert exercise.check(stub).status == "not attempted"
    assert q1.check({"exact match": ..., "F1": ...}).status == "fail"          # a dict is an answer


@pytest.mark.parametrize("exercise, defines", [(q1, "prediction = {"), (q2, "def answer_pieces("),
                                               (q3, "def best_valid_span(")])
def test_every_question_has_hints_and_a_solution(exercise, defines, capsys, monkeypatch):
    monkeypatch.setattr(exercise, "_hints_shown", 0)
    assert len(exercise.hints) >= 2 and exercise.hint().startswith("Hint ")
    assert defines in exercise.solution()
    capsys.readouterr()


# --- Q1: the prediction -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, words_in_message", [
    ({"exact match": 0.0}, "must be a dict with the keys"),
    ({"EM": 0.0, "F1": 0.16}, "must be a dict with the keys"),
    ({"exact match": "none", "F1": 0.16}, "must be a number between 0 and 1"),
    ({"exact match": 0.0, "F1": ...}, "is still ...: write your guess"),
    ({"exact match": float("nan"), "F1": 0.16}, "expected a finite number, got nan"),
    ({"exact match": 0.0, "F1": 15.6}, "write a share between 0 and 1 (0.156), not a percentage"),
    ({"exact match": 0.0, "F1": 150}, "must be between 0 and 1, got 150"),
    ({"exact match": -0.1, "F1": 0.16}, "must be between 0 and 1, got -0.1"),
])
def test_q1_refuses_malformed_predictions(bad, words_in_message):
    assert_fails_with(q1, bad, words_in_message)


def test_q1_measurement_is_squad_scores_of_the_baseline_as_shares():
    measured = ch12.overlap_baseline_scores()
    assert list(measured) == list(ch12.Q1_KEYS)
    questions = read_questions(ch12.Q1_SET)
    assert len(questions) == 1190
    scores = squad_scores(sentence_overlap_answers(questions), questions)
    assert measured == {"exact match": scores["exact_match"] / 100, "F1": scores["f1"] / 100}
    assert measured["exact match"] == 0 and round(measured["F1"], 3) == 0.156


def test_q1_passes_close_predictions_and_explains_far_ones():
    result = assert_passes_with(q1, {"exact match": 0.0, "F1": 0.16}, "both within 0.05")
    assert "measured 0.16" in result.message and "holds the answer for 78% of the questions" in result.message
    assert_passes_with(q1, {"exact match": 0.04, "F1": 0.2})
    assert_fails_with(q1, {"exact match": 0.3, "F1": 0.16}, "a whole sentence is never exactly the answer",
                      "2.7 words on average", "Not one of the 1,190 sentences is")
    low = assert_fails_with(q1, {"exact match": 0.0, "F1": 0.0}, "F1 gives partial credit", "78%")
    assert "never exactly" not in low.message
    assert_fails_with(q1, {"exact match": 0.0, "F1": 0.78}, "holding the answer is not being it", "= 0.19")


def test_q1_reveal_is_folded_until_a_guess_even_a_wrong_one(monkeypatch, capsys):
    monkeypatch.setattr(q1, "guessed", False)
    shown = q1.reveal("exact match 0.000, F1 0.156")
    assert "0.156" not in shown._repr_mimebundle_()["text/plain"]
    q1.check(...)
    assert "0.156" not in shown._repr_mimebundle_()["text/plain"]
    q1.check({"exact match": 0.5, "F1": 0.5})                      # a try, far off, opens it
    assert shown._repr_mimebundle_()["text/plain"] == "exact match 0.000, F1 0.156"
    capsys.readouterr()


# --- The quiz ------------------------------------------------------------------------------------------

RIGHT = {1: "c", 2: "a", 3: "d", 4: "b"}


def test_the_quiz_accepts_the_right_answers():
    result = assert_passes_with(quiz, RIGHT, "4 of 4 right")
    assert "precision 3/26" in result.message and "eiffeltower" in result.message


@pytest.mark.parametrize("answers, words", [
    ({1: "a"}, "what it cannot do is cut the answer out"),
    ({1: "b"}, "Both scores compare normalised texts"),
    ({1: "d"}, "Both compare normalised words"),
    ({2: "b"}, "more windows of one paragraph are no more questions"),
    ({2: "c"}, "BERT reads up to 512 positions"),
    ({2: "d"}, "It does anyway"),
    ({3: "a"}, "span_loss trains both heads to point at position 0"),
    ({3: "b"}, "[CLS] is no text of the paragraph"),
    ({3: "c"}, "best_span considers only context pieces"),
    ({4: "a"}, "cut from the paragraph by the pieces' character offsets"),
    ({4: "c"}, "They still differ"),
    ({4: "d"}, "Only a, an and the go"),
])
def test_the_quiz_says_why_a_wrong_answer_is_wrong(answers, words):
    result = assert_fails_with(quiz, RIGHT | answers, "3 of 4 right", words)
    assert "wrong:" in result.message


def test_the_quizs_facts_are_the_packages():
    assert answer_spans.normalize_answer("Eiffel-Tower") == "eiffeltower"
    assert answer_spans.normalize_answer("the Amazon basin") == answer_spans.normalize_answer("Amazon basin.")
    assert "the" not in answer_spans.STOP_WORDS and "of" in answer_spans.STOP_WORDS
    assert inspect.signature(make_windows).parameters["max_len"].default == 192


# --- Every mistake above, named (tests/test_exercises.py runs them too, with every chapter's) ----------

LEARNER_MISTAKES = [pytest.param({"q2": q2, "q3": q3}[name[:2]], wrong, wrong.__doc__.removeprefix("fails: "), id=name)
                    for name, wrong in list(globals().items())
                    if re.fullmatch(r"q\d_\w+", name) and (getattr(wrong, "__doc__", None) or "").startswith("fails: ")]


def test_the_mistakes_are_many():
    assert len(LEARNER_MISTAKES) >= 30, [p.id for p in LEARNER_MISTAKES]


@pytest.mark.parametrize("exercise, wrong, words", LEARNER_MISTAKES)
def test_each_mistake_fails_with_its_diagnosis(exercise, wrong, words):
    assert_fails_with(exercise, wrong, words)


def _diagnosis_messages(diagnoses) -> list:
    messages = []
    for d in diagnoses:
        if inspect.isfunction(d):
            messages.append(message_of(d))
        else:
            assert isinstance(d[0], Symptom) and isinstance(d[1], str)
            messages.append(d[1])
    return messages


@pytest.mark.parametrize("question, diagnoses", [("q2", ch12.Q2_DIAGNOSES), ("q3", ch12.Q3_DIAGNOSES)])
def test_every_diagnosis_is_reached_by_a_learners_mistake(question, diagnoses):
    """No diagnosis is dead: each message is named by some mistake above (so removing it fails that test)."""
    words = [p.values[2] for p in LEARNER_MISTAKES if p.id.startswith(question)]
    for message in _diagnosis_messages(diagnoses):
        assert any(w in message for w in words), message
