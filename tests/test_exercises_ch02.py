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
