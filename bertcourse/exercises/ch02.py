"""Chapter 2 exercises: sinusoidal positional encoding.

In the notebook::

    from bertcourse.exercises.ch02 import q1, q2, q3, q4, q5, quiz

* ``q1`` — ``position_encoding(i, d)``: the row ``P[i, :]`` of the sinusoid table, from
  the closed form.
* ``q2`` — ``rotation_block(k, j, d)``: the 2×2 matrix ``M`` that moves column pair ``j``
  forward by ``k`` positions, ``[P[i+k, 2j], P[i+k, 2j+1]] = [P[i, 2j], P[i, 2j+1]] @ M``.
* ``q3`` — ``wavelengths(d)``: after how many positions each column pair repeats (which
  dimension changes fastest?).
* ``q4`` — ``embed_with_positions(E, P)``: scale the token embeddings by ``sqrt(d)``, add
  the positions, and refuse sequences longer than the table.
* ``q5`` — ``prediction``: *before* running the experiment, predict how many different
  outputs a self-attention layer *without positions* gives for the 6 orderings of three words,
  read at the first position and as the mean over the positions. The check runs the
  experiment itself (:func:`distinct_outputs`).
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

Every reference answer calls :mod:`bertcourse.positional`.
"""
from __future__ import annotations

import functools
import itertools
import math
import re

import torch

from ..attention import MultiHeadAttention
from .. import positional
from ..positional import frequencies, relative_rotation, sinusoidal_encoding
from ..i18n import gettext as _, gettext_noop as N_
from .core import (CheckFailed, Exercise, Symptom, check_bool, check_choice, check_finite_number,
                   check_positive_int, describe_error, error_note, expect_raises, is_shape_error, randn, run_cases)
from .guesses import predicted_dict
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "distinct_outputs", "Q5_WORDS", "Q5_READOUTS"]


# ---------------------------------------------------------------------------------------
# Q1: one row of the table
# ---------------------------------------------------------------------------------------

def _ref_row(i: int, d: int) -> torch.Tensor:
    return sinusoidal_encoding(i + 1, d, dtype=torch.float64)[i]


def _row_from(i, d, angle_of_column, sin_on_even=True, all_sin=False):
    out = torch.zeros(d, dtype=torch.float64)
    for col in range(d):
        a = angle_of_column(i, col, d)
        use_sin = all_sin or ((col % 2 == 0) == sin_on_even)
        out[col] = math.sin(a) if use_sin else math.cos(a)
    return out


def _angle(i, col, d):
    return i / 10000 ** ((col - col % 2) / d)


# An odd width d: ceil(d/2) column pairs, the last of them a lone sine in column d - 1. The
# diagnoses below recognise the code that breaks on it (by its error) or the row it gives.

def _angles(i, d, pairs):
    return i / 10000 ** (2 * torch.arange(pairs, dtype=torch.float64) / d)


def _columns(first: int, d: int) -> str:
    """The columns first, first + 2, ... below d, listed (shortened when there are many)."""
    columns = list(range(first, d, 2))
    return ", ".join(map(str, columns)) if len(columns) <= 4 else f"{columns[0]}, {columns[1]}, ..., {columns[-1]}"


def _into_places(error: BaseException) -> tuple[int, int] | None:
    """(places, values) of torch's "The expanded size of the tensor (places) must match the existing size
    (values)", raised when a slice assignment gets more or fewer values than it has places."""
    found = re.search(r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\)", str(error))
    return (int(found[1]), int(found[2])) if found else None


def _too_many_values(error, i, d) -> bool:
    # p[1::2] = cos(angle) with ceil(d/2) angles (or a (d // 2, 2) grid of pairs): d // 2 places, ceil(d/2) values
    return d % 2 == 1 and _into_places(error) == (d // 2, (d + 1) // 2)


def _too_few_values(error, i, d) -> bool:
    # d // 2 angles for the ceil(d/2) sine columns
    return d % 2 == 1 and _into_places(error) == ((d + 1) // 2, d // 2)


def _row_loop_past_the_end(i, d):
    # a loop over ceil(d/2) pairs that writes column 2j + 1 of the last one too
    p = torch.zeros(d, dtype=torch.float64)
    for j in range((d + 1) // 2):
        a = i / 10000 ** (2 * j / d)
        p[2 * j], p[2 * j + 1] = math.sin(a), math.cos(a)
    return p


def _row_last_column_zero(i, d):
    # a loop over d // 2 pairs: an odd d's last column (the lone sine) stays 0
    p = _ref_row(i, d)
    if d % 2:
        p[-1] = 0.0
    return p


def _too_many_message(error, i, d) -> str:
    return _("an odd d = {d} has {sines} sine columns ({sine_columns}) but only {cosines} cosine columns "
             "({cosine_columns}): the last column is a lone sine. Your code put {sines} values, one per pair, into "
             "{cosines} places; cut the cosines: p[1::2] = torch.cos(angle)[: d // 2].").format(
        d=d, sines=(d + 1) // 2, cosines=d // 2, sine_columns=_columns(0, d), cosine_columns=_columns(1, d))


def _too_few_message(error, i, d) -> str:
    return _("your code made d // 2 = {pairs} values for the {sines} sine columns ({sine_columns}) of an odd d = "
             "{d}: the last column is a lone sine, with no cosine after it. torch.arange(0, d, 2) gives one angle per "
             "even column; keep d // 2 = {pairs} of their cosines.").format(
        d=d, pairs=d // 2, sines=(d + 1) // 2, sine_columns=_columns(0, d))


def _past_the_end_message(i, d) -> str:
    return _("an odd d = {d} has no column {d}: the last pair, j = {j}, is a lone sine in column {last}, with no "
             "cosine after it. Write the cosine only when 2j + 1 < d.").format(d=d, j=(d - 1) // 2, last=d - 1)


def _last_zero_message(i, d) -> str:
    return _("the last column of an odd d = {d} stayed 0: column {last} holds the sine of pair j = {j}, which has no "
             "cosine partner. Loop over ceil(d/2) pairs (torch.arange(0, d, 2)), not d // 2.").format(
        d=d, last=d - 1, j=(d - 1) // 2)


def _one_column_too_many(got, i, d) -> bool:
    return d % 2 == 1 and isinstance(got, torch.Tensor) and tuple(got.shape) == (d + 1,)


def _one_too_many_message(got, i, d) -> str:
    return _("you returned {n} numbers for d = {d}: an odd width has one sine more than cosines, so the row ends "
             "with a lone sine. Cut the row to d entries (p[:d]), dropping the last cosine.").format(n=d + 1, d=d)


def _refuses_odd_width(error, i, d) -> bool:
    return d % 2 == 1 and isinstance(error, (ValueError, AssertionError))


def _refuses_message(error, i, d) -> str:
    return _("an odd width is allowed: d = {d} has a row like any other, the columns {sine_columns} hold sines and "
             "{cosine_columns} cosines, and the last column is a lone sine with no cosine partner. Compute it "
             "instead of refusing d = {d}.").format(d=d, sine_columns=_columns(0, d), cosine_columns=_columns(1, d))


def _row_sines_then_cosines(i, d):
    # all the sines first, then all the cosines (concatenated, not interleaved)
    angle = _angles(i, d, (d + 1) // 2)
    return torch.cat([torch.sin(angle), torch.cos(angle)])[:d]


Q1_CASES = [
    (N_("i=1, d=8"), (1, 8)),
    (N_("i=0 (sines 0, cosines 1), d=6"), (0, 6)),
    (N_("i=7, d=16"), (7, 16)),
    (N_("i=100, d=64"), (100, 64)),
    (N_("odd width: i=3, d=5 (the last column is a lone sine)"), (3, 5)),
]

Q1_DIAGNOSES = [
    (lambda i, d: _row_from(i, d, _angle, sin_on_even=False),
     N_("sine and cosine are swapped: even columns 2j hold the sine, odd columns 2j+1 the cosine.")),
    (lambda i, d: _row_from(i, d, lambda i, c, d: i / 10000 ** (c / d)),
     N_("the exponent uses the column index itself; both columns of a pair (2j and 2j+1) share "
        "the exponent 2j/d, so the cosine column must use the same frequency as the sine before it.")),
    (lambda i, d: _row_from(i, d, lambda i, c, d: i / 10000 ** ((c // 2) / d)),
     N_("the exponent is j/d; it must be 2j/d (j numbers the pairs, 2j is the even column).")),
    (lambda i, d: _row_from(i, d, lambda i, c, d: i * 10000 ** ((c - c % 2) / d)),
     N_("you multiplied by 10000^(2j/d); the position is *divided* by it (higher pairs turn slower).")),
    (lambda i, d: _row_from(i, d, _angle, all_sin=True),
     N_("every column is a sine; odd columns hold the cosine of the same angle.")),
    (_row_sines_then_cosines,
     N_("you put all the sines first and then all the cosines; the table interleaves them: column 2j holds the "
        "sine of pair j and column 2j+1 its cosine (p[0::2] = sines, p[1::2] = cosines).")),
    # an odd width
    (_row_last_column_zero, _last_zero_message),
    (Symptom(_one_column_too_many), _one_too_many_message),
    (Symptom(_too_many_values, raised=True), _too_many_message),
    (Symptom(_too_few_values, raised=True), _too_few_message),
    (_row_loop_past_the_end, _past_the_end_message),
    (Symptom(_refuses_odd_width, raised=True), _refuses_message),
]


def _check_q1(answer) -> str:
    return run_cases(answer, _ref_row, Q1_CASES, Q1_DIAGNOSES, atol=1e-4)


q1 = Exercise(
    name=N_("Q1 (one row of the sinusoid table)"),
    var="position_encoding",
    forbidden=[(positional, "sinusoidal_encoding", "sinusoidal_encoding")],
    checker=_check_q1,
    hints=[
        N_("Return a tensor of shape (d,). Column pair j covers columns 2j (sine) and 2j+1 (cosine)."),
        N_("The angle of pair j is i / 10000 ** (2 * j / d); the even column gets its sine, the odd "
           "column its cosine."),
        N_("With tensors: two_j = torch.arange(0, d, 2); angle = i / 10000 ** (two_j / d); "
           "p[0::2] = sin(angle); p[1::2] = cos(angle)[: d // 2] (an odd d has one cosine fewer)."),
    ],
    solution=N_('''
def position_encoding(i, d):
    two_j = torch.arange(0, d, 2, dtype=torch.float64)     # 0, 2, 4, ...
    angle = i / 10000 ** (two_j / d)                       # one angle per column pair
    p = torch.zeros(d, dtype=torch.float64)
    p[0::2] = torch.sin(angle)
    p[1::2] = torch.cos(angle)[: d // 2]                   # an odd d has no last cosine
    return p
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: the rotation for one frequency pair
# ---------------------------------------------------------------------------------------

def _ref_block(k: int, j: int, d: int) -> torch.Tensor:
    return relative_rotation(k, d, dtype=torch.float64)[2 * j: 2 * j + 2, 2 * j: 2 * j + 2]


def _block(a, transpose=False):
    c, s = math.cos(a), math.sin(a)
    M = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    return M.T if transpose else M


def _w(j, d):
    return float(frequencies(d)[j])


Q2_CASES = [
    (N_("k=1, pair j=0, d=8"), (1, 0, 8)),
    (N_("k=3, pair j=1, d=8"), (3, 1, 8)),
    (N_("k=5, pair j=2, d=16"), (5, 2, 16)),
    (N_("k=-2 (backwards), pair j=0, d=4"), (-2, 0, 4)),
    (N_("k=10, pair j=31 (the slowest), d=64"), (10, 31, 64)),
]

Q2_DIAGNOSES = [
    (lambda k, j, d: _block(k * _w(j, d), transpose=True),
     N_("this is the transpose: it is right for column vectors (M @ p), but here p is a row "
        "vector multiplied on the right (p @ M). Check: [sin a, cos a] @ M must give sin(a + b) first.")),
    (lambda k, j, d: _block(float(k)),
     N_("the angle is k * w_j, not k: pair j turns by w_j = 1 / 10000^(2j/d) radians per position.")),
    (lambda k, j, d: _block(_w(j, d)),
     N_("that rotates by one position only; k positions turn pair j by k * w_j.")),
    (lambda k, j, d: torch.eye(2, dtype=torch.float64),
     N_("the identity keeps P[i]; moving k positions rotates each pair by the angle k * w_j.")),
]


def _check_q2(answer) -> str:
    message = run_cases(answer, _ref_block, Q2_CASES, Q2_DIAGNOSES, atol=1e-6)
    return message + _("; it works for every i, which is the relative-position property")


q2 = Exercise(
    name=N_("Q2 (the rotation matrix of one frequency pair)"),
    var="rotation_block",
    checker=_check_q2,
    hints=[
        N_("Write a = i * w and b = k * w with w = 1 / 10000 ** (2 * j / d). You need M with "
           "[sin(a + b), cos(a + b)] = [sin a, cos a] @ M for every a."),
        N_("Addition theorems: sin(a + b) = sin a cos b + cos a sin b; "
           "cos(a + b) = cos a cos b - sin a sin b. Read the coefficients of sin a and cos a off."),
        N_("Row vector times M: the first column of M gives the first output, so "
           "M = [[cos b, -sin b], [sin b, cos b]]."),
    ],
    solution=N_('''
def rotation_block(k, j, d):
    b = k / 10000 ** (2 * j / d)                 # how far pair j turns in k positions
    c, s = math.cos(b), math.sin(b)
    return torch.tensor([[c, -s],
                         [s,  c]], dtype=torch.float64)
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: wavelengths
# ---------------------------------------------------------------------------------------

def _ref_wavelengths(d: int) -> torch.Tensor:
    return 2 * math.pi / frequencies(d)


Q3_CASES = [(N_("d=8"), (8,)), (N_("d=2 (a single pair)"), (2,)), (N_("d=64"), (64,)), (N_("odd width d=5"), (5,))]

Q3_DIAGNOSES = [
    (lambda d: 1 / frequencies(d), N_("you returned 10000^(2j/d), the number of positions per *radian*; "
                                      "a full turn is 2 pi radians.")),
    (lambda d: frequencies(d), N_("you returned the frequencies w_j; the wavelength is 2 pi / w_j.")),
    (lambda d: 2 * math.pi * 10000 ** (torch.arange(d // 2, dtype=torch.float64) / d),
     N_("the exponent is 2j/d, not j/d.")),
    (lambda d: 2 * math.pi * 10000 ** (torch.arange(0, d, dtype=torch.float64) / d),
     N_("return one wavelength per column *pair* (ceil(d/2) numbers), not per column.")),
]


def _check_q3(answer) -> str:
    message = run_cases(answer, _ref_wavelengths, Q3_CASES, Q3_DIAGNOSES, atol=1e-6)
    return message + _(" (pair 0 repeats every 2 pi ≈ 6.3 positions: the fastest, like the lowest binary digit)")


q3 = Exercise(
    name=N_("Q3 (which dimension changes fastest?)"),
    var="wavelengths",
    checker=_check_q3,
    hints=[
        N_("Pair j turns by w_j = 1 / 10000^(2j/d) radians per position. After how many positions "
           "has it turned a full circle?"),
        N_("A full turn is 2 pi radians: the wavelength is 2 pi / w_j = 2 pi * 10000^(2j/d). "
           "Return a tensor with one entry per pair, j = 0 .. ceil(d/2) - 1."),
    ],
    solution=N_('''
def wavelengths(d):
    two_j = torch.arange(0, d, 2, dtype=torch.float64)
    return 2 * math.pi * 10000 ** (two_j / d)      # pair 0: 2 pi positions; the last: ~ 2 pi * 10000
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: scale, add, and check the length
# ---------------------------------------------------------------------------------------

def _ref_embed(E: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


Q4_CASES = [
    (N_("batch=2, seq=5, d=8, max_len=10"),
     (randn(2, 5, 8, seed=1) / math.sqrt(8), sinusoidal_encoding(10, 8))),
    (N_("seq = max_len = 4, d=16"),
     (randn(1, 4, 16, seed=2) / 4, sinusoidal_encoding(4, 16))),
    (N_("a single token, d=2"),
     (randn(3, 1, 2, seed=3), sinusoidal_encoding(6, 2))),
]

# a sequence longer than the table: the answer must refuse it with a ValueError
Q4_TOO_LONG = (N_("a sequence of 7 positions with a table of max_len=5"),
               (randn(2, 7, 8, seed=4), sinusoidal_encoding(5, 8)))

Q4_DIAGNOSES = [
    (lambda E, P: (E + P[: E.shape[1]]) * math.sqrt(E.shape[-1]),
     N_("you scaled the sum: that multiplies the positions by sqrt(d) too, so they drown the tokens. "
        "Scale only E, then add P.")),
    (lambda E, P: E + P[: E.shape[1]] * math.sqrt(E.shape[-1]),
     N_("you scaled the positions; scale the token embeddings E instead.")),
    (lambda E, P: E + P[: E.shape[1]], N_("you forgot to multiply the token embeddings by sqrt(d).")),
    (lambda E, P: E / math.sqrt(E.shape[-1]) + P[: E.shape[1]],
     N_("you divided by sqrt(d); the embeddings are *multiplied* by sqrt(d).")),
    # the rows of P: positions 0 .. seq - 1, that is P[:seq]
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P[1: E.shape[1] + 1],
     N_("off by one: P[1:seq + 1] starts at position 1, but the first token stands at position 0. The positions "
        "of a sequence of seq tokens are the rows 0 .. seq - 1: P[:seq].")),
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P, lambda E, P: _slice_message(E, P, N_(
        "you added the whole table P, {rows} rows (max_len), to a sequence of {seq} positions. Slice it to the "
        "sequence: P[:seq] = P[:{seq}], shape ({seq}, {d}), broadcasts over the batch."))),
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P[: E.shape[1] + 1], lambda E, P: _slice_message(E, P, N_(
        "off by one: P[:seq + 1] has {plus} rows for {seq} positions. The positions 0 .. seq - 1 are P[:seq] = "
        "P[:{seq}]."))),
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P[: E.shape[1] - 1], lambda E, P: _slice_message(E, P, N_(
        "off by one: P[:seq - 1] has {minus} rows for {seq} positions. The positions 0 .. seq - 1 are P[:seq] = "
        "P[:{seq}]."))),
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P[: E.shape[0]], lambda E, P: _slice_message(E, P, N_(
        "you sliced P to E.shape[0] = len(E) = {batch}, the batch size; the sequence length is E.shape[1] = {seq}: "
        "P[:E.shape[1]]."))),
    (lambda E, P: E * math.sqrt(E.shape[-1]) + P[:, : E.shape[1]], lambda E, P: _slice_message(E, P, N_(
        "P[:, :seq] slices the columns of P, its width d. P here is 2-D, (max_len, d) = ({rows}, {d}), so its "
        "positions are its rows: P[:seq]. (A table of shape (1, max_len, d), as in the pitfall \"running past "
        "max_len without noticing\", is the one sliced P[:, :seq].)"))),
    # a check that refuses what fits the table
    (Symptom(lambda error, E, P: E.shape[1] <= P.shape[0] and isinstance(error, (ValueError, AssertionError)),
             raised=True),
     lambda error, E, P: _slice_message(E, P, N_(
         "a sequence of {seq} positions fits a table of max_len = {rows} rows: refuse only seq > max_len (off by "
         "one? `seq >= max_len` refuses a sequence that exactly fills the table)."))),
]


def _slice_message(E, P, template: str) -> str:
    batch, seq, d = E.shape
    return _(template).format(batch=batch, seq=seq, d=d, rows=P.shape[0], plus=min(seq + 1, P.shape[0]),
                              minus=seq - 1)


def _q4_other_error(e: BaseException) -> str:
    where = _(Q4_TOO_LONG[0])
    if isinstance(e, AssertionError):         # the learner's own assert: error_note quotes its line
        return _("{where}: your code raised {error}{note} Refusing the sequence is right, but the exercise asks for "
                 "a ValueError naming max_len: `if seq > P.shape[0]: raise ValueError(...)`. An AssertionError says "
                 "'a bug in this code', not 'bad input' (and python -O drops asserts).").format(
            where=where, error=describe_error(e), note=error_note(e) or ".")
    if is_shape_error(e):
        return _("{where} made your code raise {error}: {e}. That is an accident of broadcasting, not a message "
                 "for the user: check E.shape[1] <= P.shape[0] first and raise a ValueError naming max_len.").format(
            where=where, error=type(e).__name__, e=e)
    return _("{where}: your code raised {error}; the exercise asks for a ValueError naming max_len (check "
             "E.shape[1] <= P.shape[0] and raise ValueError(...)).").format(where=where, error=describe_error(e))


def _names_max_len(e: BaseException, max_len: int) -> bool:
    text = str(e)
    return bool(re.search(r"max[_ ]?len|maximum length", text, re.IGNORECASE) or re.search(rf"\b{max_len}\b", text))


def _q4_returned(out) -> str:
    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
    return _("{where} was accepted silently (your result: {shape}); raise a ValueError naming max_len "
             "instead.").format(where=_(Q4_TOO_LONG[0]), shape=shape)


def _check_q4(answer) -> str:
    message = run_cases(answer, _ref_embed, Q4_CASES, Q4_DIAGNOSES)
    where, args = Q4_TOO_LONG
    error = expect_raises(answer, args, _(where), ValueError, returned=_q4_returned, other=_q4_other_error)
    max_len = args[1].shape[0]
    if not _names_max_len(error, max_len):
        raise CheckFailed(_("{where}: your code refuses it with a ValueError, good, but its message ({error}) does not "
                            "name the limit. Say what the table allows, max_len = {max_len}, e.g. "
                            "f'... max_len={{P.shape[0]}}', so that the user knows what to change.").format(
            where=_(where), error=describe_error(error), max_len=max_len))
    return message + _(", and a sequence longer than the table is refused with a ValueError")


q4 = Exercise(
    name=N_("Q4 (scale the tokens, add the positions, check the length)"),
    var="embed_with_positions",
    checker=_check_q4,
    hints=[
        N_("E is (batch, seq, d), P is (max_len, d). The result is E * sqrt(d) + P[:seq], shape "
           "(batch, seq, d); P[:seq] broadcasts over the batch."),
        N_("Scale only E: (E + P) * sqrt(d) would scale the positions too."),
        N_("Before adding: if seq > P.shape[0], raise ValueError(f'... max_len={P.shape[0]} ...'). "
           "Slicing P[:seq] never fails by itself: it silently returns fewer rows."),
    ],
    solution=N_('''
def embed_with_positions(E, P):
    batch, seq, d = E.shape
    if seq > P.shape[0]:
        raise ValueError(f"sequence of {seq} positions, but the table has max_len={P.shape[0]}")
    return E * math.sqrt(d) + P[:seq]       # scale the tokens, not the positions
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — shuffled words, no positions
# ---------------------------------------------------------------------------------------

Q5_WORDS = ("dog", "bites", "man")
"""The three words whose 6 orderings q5's experiment feeds to a self-attention layer."""
Q5_READOUTS = ("first", "mean")
"""The two readouts of q5: the output at position 0, and the mean over the positions."""


@functools.lru_cache(maxsize=None)
def _q5_layers(d: int, seed: int):
    with torch.random.fork_rng(devices=[]):      # leave the notebook's random numbers alone
        torch.manual_seed(seed)
        embedding = torch.nn.Embedding(len(Q5_WORDS), d)
        attention = MultiHeadAttention(d, num_heads=4).eval()
    return embedding, attention


def distinct_outputs(readout: str, positions: bool = False, d: int = 16, seed: int = 0,
                     atol: float = 1e-5) -> int:
    """The experiment of q5. A seeded self-attention layer (``MultiHeadAttention(d, 4)``)
    reads each of the 6 orderings of :data:`Q5_WORDS` (random word vectors), with or without
    sinusoidal positions added. ``readout="first"`` keeps the output at position 0,
    ``"mean"`` the mean over the 3 positions. Returns how many *different* vectors the 6
    orderings give (vectors within ``atol`` of each other count as the same)."""
    check_choice("readout", readout, Q5_READOUTS)
    check_bool("positions", positions)
    check_positive_int("d", d)
    check_positive_int("seed", seed, allow_zero=True)
    check_finite_number("atol", atol, low=0)
    embedding, attention = _q5_layers(d, seed)
    P = sinusoidal_encoding(len(Q5_WORDS), d)
    found: list[torch.Tensor] = []
    with torch.no_grad():
        for order in itertools.permutations(range(len(Q5_WORDS))):
            X = embedding(torch.tensor([order])) + (P if positions else 0.0)    # (1, 3, d)
            out = attention(X, X, X)[0]                                        # (3, d)
            vector = out[0] if readout == "first" else out.mean(0)
            if not any((vector - v).abs().max() <= atol for v in found):
                found.append(vector)
    return len(found)


_Q5_WHY = {
    ("first", "fewer"): N_("the output at the first position is built from the query of the word standing "
                           "there: orderings that start with different words give different outputs."),
    ("first", "more"): N_("without positions, attention sees the other words as a set. The output at position 0 "
                          "depends on the word standing there and on *which* words are around it, not on their "
                          "order: the weighted average over the keys is the same sum in another order."),
    ("mean", "more"): N_("shuffling the words shuffles the three outputs the same way (permutation "
                         "equivariance, section 1): the same three vectors in another order, and the mean "
                         "of three vectors does not depend on their order."),
    ("mean", "fewer"): N_("there is at least one vector."),
}


def _check_q5(answer) -> str:
    guess = predicted_dict(answer, Q5_READOUTS, "prediction",
                           _("a count from 1 to 6 each ({'first': <count>, 'mean': <count>})"),
                           low=1, high=6, must=_("a whole number from 1 to 6"), whole=True,
                           in_range=_("a count from 1 to 6 (there are 6 orderings)"), blank=_("a count from 1 to 6"))
    measured = {key: distinct_outputs(key) for key in Q5_READOUTS}
    wrong = [key for key in Q5_READOUTS if guess[key] != measured[key]]
    if wrong:
        reasons = [(_("{key!r}: {guess} is too many: {why}") if guess[key] > measured[key] else
                    _("{key!r}: {guess} is too few: {why}")).format(
            key=key, guess=guess[key], why=_(_Q5_WHY[key, "more" if guess[key] > measured[key] else "fewer"]))
            for key in wrong]
        raise CheckFailed(_(" And ").join(reasons))
    return _("first position: {first} different outputs (one per word that can stand first), mean: {mean} "
             "(the same for every ordering). Without positions, a model that pools its outputs cannot tell "
             "'dog bites man' from 'man bites dog'.").format(first=measured["first"], mean=measured["mean"])


q5 = Exercise(
    name=N_("Q5 (predict: shuffled words without positions)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Section 1: shuffle the input rows and the output rows are shuffled the same way. So each "
           "ordering gives the *same three vectors*, one per word, only in another order."),
        N_("The first position shows the output of whichever word stands first. How many different words "
           "can stand first? And does the order of the three outputs change their mean?"),
    ],
    solution=N_('''
# Without positions each word's output depends only on the word and on the set of words
# around it, so every ordering gives the same three output vectors, in its own order.
# The first position shows the output of whichever word stands first: 3 different vectors
# (one per word). Their mean ignores the order: 1 vector for all 6 orderings.
prediction = {"first": 3, "mean": 1}
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 2)"), [
    Question(
        N_("Section 1 fed 'dog bites man' and 'man bites dog' to a self-attention layer without positions. How did "
           "the output vector of 'dog' compare between the two sentences?"),
        options=(
            Option(N_("Different: as the subject 'dog' attends to other words than as the object."),
                   why=N_("Both sentences hold the same words and no position is attached: each query meets the same "
                          "keys, so it gets the same weights and the same output, only in another row.")),
            Option(N_("Different, because the projections mix the positions."),
                   why=N_("The projections act on each token's vector alone, with the same weights for every row; "
                          "they never see a position.")),
            Option(N_("Identical: permuting the input rows permutes the output rows the same way."),
                   why=N_("Nothing in softmax(QKᵀ/√d)V refers to where a token stands, so subject and object get the "
                          "same vector. With the sinusoids added, the two vectors of 'dog' differed by 0.110 "
                          "(relative)."), correct=True),
            Option(N_("Identical, but only by chance for these random word vectors."),
                   why=N_("Section 1 also checked ten random permutations of a random input: "
                          "attention(X[:, perm]) == attention(X)[:, perm] every time. It is a property of the layer, "
                          "not luck.")),
        )),
    Question(
        N_("In the pitfall \"scaling the wrong tensor\" (d = 64, token table with standard deviation 1/√d), the sum "
           "was scaled, (E + P)·√d, instead of the tokens, E·√d + P. What mean cosine similarity did two different "
           "tokens at position 3 get then?"),
        options=(
            Option(N_("About 0.33, the same as scaling the tokens: the order of the operations does not matter."),
                   why=N_("0.33 is the right order, E·√d + P. Scaling the sum multiplies the positions too, so P "
                          "stays √d times larger than the tokens.")),
            Option(N_("About 0.97, the same as no scaling at all: every token at position 3 looks almost alike."),
                   why=N_("A cosine similarity does not change when both vectors are multiplied by √d, so "
                          "(E + P)·√d is as similar as E + P. The position, with entries of size about 1, drowns the "
                          "tokens, with entries of size about 1/√d."), correct=True),
            Option(N_("About 0: two different random tokens are unrelated."),
                   why=N_("The tokens are unrelated, but both carry the same position vector P₃, which dominates "
                          "unless the tokens alone are scaled up: 0.97.")),
        )),
    Question(
        N_("The pitfall \"running past max_len without noticing\": a table with rows for positions 0..7 is sliced "
           "at decoding step t = 8, x_t + table[:, t:t+1]. What happened?"),
        options=(
            Option(N_("An IndexError."),
                   why=N_("Python slicing never fails: past the end it returns an empty slice. Indexing "
                          "table[:, 8] would raise; slicing does not.")),
            Option(N_("The result had shape (1, 0, 16): empty, and no error."),
                   why=N_("table[:, 8:9] is empty, and broadcasting a length-1 axis against a length-0 axis gives an "
                          "empty result. Downstream that becomes NaN losses or outputs that silently stop; "
                          "PositionalEncoding checks the length against max_len instead."), correct=True),
            Option(N_("The slice wrapped around and added the row of position 0."),
                   why=N_("Slices do not wrap around (only negative indices count from the end): table[:, 8:9] is "
                          "empty.")),
            Option(N_("It added the last row, position 7, again."),
                   why=N_("A slice is clipped to the end of the table, and 8:9 starts past the end: it is empty, "
                          "not the last row.")),
        )),
    Question(
        N_("The pitfall \".data on a learned table\": d2l-zh's BERTEncoder adds self.pos_embedding.data[...] to its "
           "input. What gradient did the position table get?"),
        options=(
            Option(N_("None: .data detaches the table, so the 'learned' positions stay at their random start."),
                   why=N_("The forward pass computes the right numbers and the loss falls, since the rest of the "
                          "model learns, but no gradient reaches the table. Indexing the parameter itself gave its "
                          "rows a gradient."), correct=True),
            Option(N_("The same as without .data: .data only avoids a copy."),
                   why=N_(".data returns a tensor outside autograd: the printed gradient was None.")),
            Option(N_("A gradient only in the rows of the positions the batch used, as for any learned table."),
                   why=N_("That is what the parameter itself gets (section 6: rows 0-5 nonzero, the unused rows 6-9 "
                          "exactly 0). Through .data nothing arrives at all: None.")),
            Option(N_("An error at backward()."),
                   why=N_("backward() runs without an error, which is what makes the bug dangerous: the table "
                          "silently stays as it was initialised.")),
        )),
    Question(
        N_("Section 4 (d = 64): the dot product P[i]·P[i] of a row with itself was the same for every position i. "
           "What was it?"),
        answer=32, tolerance=0.5,
        why=N_("Each column pair contributes sin² + cos² = 1, and there are d/2 = 32 pairs: every row has the same "
               "length, so the encoding tells positions apart by direction, not by size."),
        why_low=N_("Too low: a row's squared length is the sum of sin² + cos² = 1 over its d/2 = 32 pairs. The "
                   "smaller values, 30.92, 23.26 and 17.07, are P[i]·P[i+k] for k = 1, 7 and 30."),
        why_high=N_("Too high: 64 would need each of the d entries to be ±1, but a sine and a cosine of the same "
                    "angle share sin² + cos² = 1: d/2 = 32.")),
])
