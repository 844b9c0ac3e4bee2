"""Tests for the chapter 2 exercises (bertcourse.exercises.ch02).

The wrong answers are written the way a learner would write them (not imported from the
module), so the tests check that real mistakes get a message naming them."""
import math

import pytest
import torch

from bertcourse.exercises import ch02
from bertcourse.exercises.ch02 import q1, q2, q3, q4, q5
from bertcourse.positional import relative_rotation, sinusoidal_encoding
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with


def test_references_pass_and_agree_with_closed_form():
    assert q1.check(ch02._ref_row) and q2.check(ch02._ref_block) and q3.check(ch02._ref_wavelengths)
    row = ch02._ref_row(7, 16)
    assert row[2].item() == pytest.approx(math.sin(7 / 10000 ** (2 / 16)))
    assert row[3].item() == pytest.approx(math.cos(7 / 10000 ** (2 / 16)))
    assert ch02._ref_wavelengths(8)[0].item() == pytest.approx(2 * math.pi)
    # the 2x2 block moves pair j of every row k positions forward
    P = sinusoidal_encoding(50, 8, dtype=torch.float64)
    B = ch02._ref_block(3, 1, 8)
    torch.testing.assert_close(P[:47, 2:4] @ B, P[3:, 2:4])


def q4_without_length_check(E, P):
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


def test_q4_reference_alone_is_not_enough():
    """The plain formula gets the numbers right but crashes by accident on a too-long input."""
    assert_fails_with(q4, q4_without_length_check, "accident of broadcasting")


def test_q4_silent_truncation_fails():
    def silent(E, P):
        n = min(E.shape[1], P.shape[0])
        return E[:, :n] * math.sqrt(E.shape[-1]) + P[:n]

    result = q4.check(silent)
    assert result.status == "fail" and "accepted silently" in result.message


# --- typical wrong answers name the mistake ------------------------------------------------

def _row(i, d, angle, even=math.sin, odd=math.cos):
    return torch.tensor([even(angle(c)) if c % 2 == 0 else odd(angle(c)) for c in range(d)])


def q1_swapped(i, d):
    """fails: sine and cosine are swapped"""
    return _row(i, d, lambda c: i / 10000 ** ((c - c % 2) / d), even=math.cos, odd=math.sin)


def q1_column_exponent(i, d):
    """fails: share the exponent 2j/d"""
    return _row(i, d, lambda c: i / 10000 ** (c / d))


def q1_j_over_d(i, d):
    """fails: the exponent is j/d"""
    return _row(i, d, lambda c: i / 10000 ** ((c // 2) / d))


def q1_multiplied(i, d):
    """fails: *divided* by it"""
    return _row(i, d, lambda c: i * 10000 ** ((c - c % 2) / d))


def q1_all_sin(i, d):
    """fails: every column is a sine"""
    return _row(i, d, lambda c: i / 10000 ** ((c - c % 2) / d), odd=math.sin)


def q2_transposed(k, j, d):
    """fails: this is the transpose"""
    b = k / 10000 ** (2 * j / d)
    return torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]])


def q2_angle_k(k, j, d):
    """fails: the angle is k * w_j, not k"""
    return torch.tensor([[math.cos(k), -math.sin(k)], [math.sin(k), math.cos(k)]])


def q2_one_step(k, j, d):
    """fails: rotates by one position only"""
    b = 1 / 10000 ** (2 * j / d)
    return torch.tensor([[math.cos(b), -math.sin(b)], [math.sin(b), math.cos(b)]])


def q2_identity(k, j, d):
    """fails: the identity keeps P[i]"""
    return torch.eye(2)


def test_q2_float32_answer_is_accepted():
    def float32(k, j, d):
        return relative_rotation(k, d)[2 * j: 2 * j + 2, 2 * j: 2 * j + 2]
    assert q2.check(float32).status == "pass"


def q3_no_two_pi(d):
    """fails: a full turn is 2 pi"""
    return 10000 ** (torch.arange(0, d, 2) / d)


def q3_frequencies(d):
    """fails: you returned the frequencies"""
    return 1 / 10000 ** (torch.arange(0, d, 2) / d)


def q3_j_over_d(d):
    """fails: not j/d"""
    return 2 * math.pi * 10000 ** (torch.arange((d + 1) // 2) / d)


def q3_per_column(d):
    """fails: per column *pair*"""
    return 2 * math.pi * 10000 ** (torch.arange(d) / d)


def _guarded(f):
    def g(E, P):
        if E.shape[1] > P.shape[0]:
            raise ValueError("too long")
        return f(E, P)
    return g


@pytest.mark.parametrize("wrong, phrase", [
    (_guarded(lambda E, P: (E + P[: E.shape[1]]) * math.sqrt(E.shape[-1])), "you scaled the sum"),
    (_guarded(lambda E, P: E + P[: E.shape[1]] * math.sqrt(E.shape[-1])), "you scaled the positions"),
    (_guarded(lambda E, P: E + P[: E.shape[1]]), "you forgot to multiply"),
    (_guarded(lambda E, P: E / math.sqrt(E.shape[-1]) + P[: E.shape[1]]), "you divided by sqrt(d)"),
])
def test_q4_mistakes(wrong, phrase):
    assert_fails_with(q4, wrong, phrase)


# --- Q5: predict what shuffling does without positions, then run the experiment -----------

def test_q5_experiment_without_and_with_positions():
    assert [ch02.distinct_outputs(r) for r in ch02.Q5_READOUTS] == [3, 1]
    assert [ch02.distinct_outputs(r, positions=True) for r in ch02.Q5_READOUTS] == [6, 6]
    with pytest.raises(ValueError, match="readout must be one of"):
        ch02.distinct_outputs("last")


def test_q5_experiment_leaves_the_global_rng_alone():
    assert assert_leaves_global_rng_alone(lambda: ch02.distinct_outputs("first"), ch02._q5_layers) == 3


def test_q5_right_prediction_passes_in_any_number_type():
    for answer in ({"first": 3, "mean": 1}, {"mean": 1.0, "first": torch.tensor(3)}):
        assert_passes_with(q5, answer, "cannot tell")


@pytest.mark.parametrize("answer, phrases", [
    ({"first": 6, "mean": 6}, ["'first': 6 is too many", "as a set", "'mean': 6 is too many", "equivariance"]),
    ({"first": 1, "mean": 1}, ["'first': 1 is too few", "word standing"]),
    ({"first": 3, "mean": 3}, ["'mean': 3 is too many"]),
])
def test_q5_wrong_predictions_explain(answer, phrases):
    result = assert_fails_with(q5, answer, *phrases)
    if answer["first"] == 3:
        assert "'first'" not in result.message                  # only the wrong part is named


@pytest.mark.parametrize("bad, phrase", [
    (3, "must be a dict with the keys ['first', 'mean']"),
    ({"first": 3}, "must be a dict"), ({"first": 3, "mean": 1, "last": 3}, "must be a dict"),
    ({"first": ..., "mean": 1}, "is still ...: write a count"),
    ({"first": "3", "mean": 1}, "must be a whole number"),
    ({"first": 2.5, "mean": 1}, "expected a whole number"),
    ({"first": 7, "mean": 1}, "from 1 to 6"), ({"first": 3, "mean": 0}, "from 1 to 6"),
])
def test_q5_refuses_malformed_predictions(bad, phrase):
    assert_fails_with(q5, bad, phrase)


def test_q1_refuses_the_packages_sinusoidal_encoding():
    from bertcourse.positional import sinusoidal_encoding
    result = q1.check(lambda pos, d: sinusoidal_encoding(pos + 1, d)[pos])
    assert result.status == "fail" and "without sinusoidal_encoding" in result.message


# --- an odd width in Q1: the failure says what went wrong (issue 43) -------------------------

Q1_ODD = "on odd width: i=3, d=5"


def q1_cosines_uncut(i, d):
    """fails: Your code put 3 values, one per pair, into 2 places"""
    angle = i / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    p = torch.zeros(d, dtype=torch.float64)
    p[0::2] = torch.sin(angle)
    p[1::2] = torch.cos(angle)
    return p


def q1_pairs_grid(i, d):
    angle = i / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    p = torch.zeros(d // 2, 2, dtype=torch.float64)
    p[:, 0] = torch.sin(angle)
    p[:, 1] = torch.cos(angle)
    return p.reshape(d)


def q1_half_the_angles(i, d):
    j = torch.arange(d // 2, dtype=torch.float64)
    angle = i / 10000 ** (2 * j / d)
    p = torch.zeros(d, dtype=torch.float64)
    p[0::2] = torch.sin(angle)
    p[1::2] = torch.cos(angle)
    return p


def q1_loop_over_d_halves(i, d):
    p = torch.zeros(d)
    for j in range(d // 2):
        angle = i / 10000 ** (2 * j / d)
        p[2 * j], p[2 * j + 1] = math.sin(angle), math.cos(angle)
    return p


def q1_loop_past_the_end(i, d):
    p = torch.zeros(d)
    for j in range((d + 1) // 2):
        angle = i / 10000 ** (2 * j / d)
        p[2 * j], p[2 * j + 1] = math.sin(angle), math.cos(angle)
    return p


def q1_stacked_pairs(i, d):
    angle = i / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).flatten()


def q1_refuses_odd(i, d):
    if d % 2:
        raise ValueError("d must be even")
    return q1_cosines_uncut(i, d)


def q1_asserts_even(i, d):
    assert d % 2 == 0, "d must be even"
    return q1_cosines_uncut(i, d)


def q1_sines_then_cosines(i, d):
    """fails: you put all the sines first and then all the cosines"""
    angle = i / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.cat([torch.sin(angle), torch.cos(angle)])[:d]


ODD_GOT = "Your function got i = 3; d = 5. It must return a tensor of shape (5,), float64."


@pytest.mark.parametrize("wrong, phrases", [
    (q1_cosines_uncut, [ODD_GOT, "an odd d = 5 has 3 sine columns (0, 2, 4) but only 2 cosine columns (1, 3)",
                        "put 3 values, one per pair, into 2 places", "torch.cos(angle)[: d // 2]"]),
    (q1_pairs_grid, [ODD_GOT, "3 sine columns (0, 2, 4) but only 2 cosine columns", "into 2 places"]),
    (q1_half_the_angles, [ODD_GOT, "your code made d // 2 = 2 values for the 3 sine columns (0, 2, 4) of an odd "
                          "d = 5", "the last column is a lone sine", "torch.arange(0, d, 2)"]),
    (q1_loop_past_the_end, [ODD_GOT, "index 5 is out of bounds", "an odd d = 5 has no column 5",
                            "Write the cosine only when 2j + 1 < d"]),
    (q1_loop_over_d_halves, ["first difference at index (4,)", "the last column of an odd d = 5 stayed 0",
                             "column 4 holds the sine of pair j = 2", "ceil(d/2) pairs"]),
    (q1_stacked_pairs, ["expected shape (5,), got (6,)", "you returned 6 numbers for d = 5", "p[:d]"]),
    (q1_refuses_odd, ["ValueError: d must be even", "an odd width is allowed",
                      "the columns 0, 2, 4 hold sines and 1, 3 cosines"]),
    (q1_asserts_even, ["AssertionError: d must be even", "your own assert failed, on line",
                       '`assert d % 2 == 0, "d must be even"`', "an odd width is allowed"]),
])
def test_q1_an_odd_width_names_what_went_wrong(wrong, phrases):
    result = assert_fails_with(q1, wrong, Q1_ODD, *phrases)
    assert result.message.count(" — ") == 1 + ("your own assert" in result.message), result.message


# --- Q4: the table unsliced or sliced off by one, and the learner's own assert ---------------

Q4_GOT = ("on batch=2, seq=5, d=8, max_len=10, the shapes or dtypes in your code do not fit together. Your function "
          "got E: shape (2, 5, 8), float32; P: shape (10, 8), float32. It must return a tensor of shape (2, 5, 8), "
          "float32.")


def q4_whole_table(E, P):
    if E.shape[1] > P.shape[0]:
        raise ValueError(f"max_len={P.shape[0]}")
    return E * math.sqrt(E.shape[-1]) + P          # the table not sliced to the sequence


def _sliced(rows):
    def embed_with_positions(E, P):
        if E.shape[1] > P.shape[0]:
            raise ValueError(f"sequence longer than max_len={P.shape[0]}")
        return E * math.sqrt(E.shape[-1]) + rows(E, P)
    return embed_with_positions


@pytest.mark.parametrize("wrong, phrases", [
    (q4_whole_table, [Q4_GOT, "The size of tensor a (5) must match the size of tensor b (10)",
                      "you added the whole table P, 10 rows (max_len), to a sequence of 5 positions",
                      "P[:seq] = P[:5], shape (5, 8)"]),
    (_sliced(lambda E, P: P.unsqueeze(0)), [Q4_GOT, "you added the whole table P"]),
    (_sliced(lambda E, P: P[: E.shape[1] + 1]), [Q4_GOT, "off by one: P[:seq + 1] has 6 rows for 5 positions"]),
    (_sliced(lambda E, P: P[: E.shape[1] - 1]), [Q4_GOT, "off by one: P[:seq - 1] has 4 rows for 5 positions"]),
    (_sliced(lambda E, P: P[1: E.shape[1] + 1]), ["first difference", "off by one: P[1:seq + 1] starts at "
                                                  "position 1, but the first token stands at position 0"]),
    (_sliced(lambda E, P: P[: len(E)]), [Q4_GOT, "you sliced P to E.shape[0] = len(E) = 2, the batch size"]),
    (_sliced(lambda E, P: P[:, : E.shape[1]]), [Q4_GOT, "P[:, :seq] slices the columns of P",
                                                "(max_len, d) = (10, 8)", 'as in the pitfall "running past '
                                                'max_len without noticing", is the one sliced P[:, :seq]']),
])
def test_q4_the_rows_of_the_table_are_named(wrong, phrases):
    assert_fails_with(q4, wrong, *phrases)


def q4_own_assert(E, P):
    assert E.shape[1] <= P.shape[0], "the sequence is longer than the table"
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


def q4_own_bare_assert(E, P):
    assert E.shape[1] <= P.shape[0]
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


@pytest.mark.parametrize("wrong, source", [
    (q4_own_assert, '`assert E.shape[1] <= P.shape[0], "the sequence is longer than the table"`'),
    (q4_own_bare_assert, "`assert E.shape[1] <= P.shape[0]`"),
])
def test_q4_the_learners_own_assert_is_reported_as_their_assert(wrong, source):
    result = assert_fails_with(q4, wrong, "a sequence of 7 positions with a table of max_len=5: your code raised "
                               "AssertionError", "your own assert failed, on line", source,
                               "Refusing the sequence is right, but the exercise asks for a ValueError naming "
                               "max_len")
    assert "broadcasting" not in result.message


def q4_refuses_a_full_table(E, P):
    if E.shape[1] >= P.shape[0]:
        raise ValueError(f"longer than max_len={P.shape[0]}")
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


def q4_asserts_shorter_than_the_table(E, P):
    assert E.shape[1] < P.shape[0]
    return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]


@pytest.mark.parametrize("wrong, phrase", [(q4_refuses_a_full_table, "ValueError: longer than max_len=4"),
                                           (q4_asserts_shorter_than_the_table, "your own assert failed")])
def test_q4_a_length_check_off_by_one_is_named(wrong, phrase):
    assert_fails_with(q4, wrong, "on seq = max_len = 4, d=16, your code raised", phrase,
                      "a sequence of 4 positions fits a table of max_len = 4 rows: refuse only seq > max_len",
                      "`seq >= max_len`")


def test_q4_another_error_on_a_too_long_sequence_is_not_called_an_accident_of_broadcasting():
    def index_error(E, P):
        if E.shape[1] > P.shape[0]:
            raise IndexError(f"longer than max_len={P.shape[0]}")
        return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]
    result = assert_fails_with(q4, index_error, "your code raised IndexError: longer than max_len=5",
                               "the exercise asks for a ValueError naming max_len")
    assert "broadcasting" not in result.message


def test_q4_the_value_error_must_name_max_len_as_the_notebook_says():
    def vague(E, P):
        if E.shape[1] > P.shape[0]:
            raise ValueError("too long")
        return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]
    assert_fails_with(q4, vague, "refuses it with a ValueError, good, but its message (ValueError: too long) does "
                      "not name the limit", "max_len = 5")
    for message in ("sequence of {seq} positions, but max_len is {n}", "{seq} > {n}", "too long for the table "
                    "(maximum length {n})"):
        def named(E, P, message=message):
            if E.shape[1] > P.shape[0]:
                raise ValueError(message.format(seq=E.shape[1], n=P.shape[0]))
            return E * math.sqrt(E.shape[-1]) + P[: E.shape[1]]
        assert_passes_with(q4, named, "refused with a ValueError")
