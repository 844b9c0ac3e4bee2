"""Tests for the chapter 13 exercises (bertcourse.exercises.ch13): the prediction of what a
training step keeps for its backward pass."""
import pytest
import torch

from bertcourse.exercises import ch13
from bertcourse.exercises.ch13 import q1


def test_q1_measures_what_the_chapter_says():
    """The measurement the prediction is checked against: more than twice the 86 MB of weights
    (the chapter's summary says so), the same on every call."""
    assert ch13.activation_mb() > 2 * ch13.WEIGHTS_MB
    assert ch13.activation_mb() == ch13.activation_mb.__wrapped__()


def test_q1_passes_a_guess_within_its_factor_and_explains_far_ones():
    measured = ch13.activation_mb()
    assert q1.check(measured / 1.4) and q1.check(measured * 1.4)
    result = q1.check(86)                    # "about the weights": the usual first guess
    assert result.status == "fail" and "too low" in result.message and "6 blocks" in result.message
    result = q1.check(4 * 86)                # "four copies of the model"
    assert result.status == "fail" and "too high" in result.message and "only what the backward" in result.message
    assert q1.check(torch.tensor(200.0)).status == "pass"


@pytest.mark.parametrize("bad, words_in_message", [
    ("200 MB", "must be a number of MB"),
    (-5, "between 0 and 1,000,000"),
    (float("nan"), "finite"),
])
def test_q1_refuses_malformed_predictions(bad, words_in_message):
    result = q1.check(bad)
    assert result.status == "fail" and words_in_message in result.message, result.message


def test_q1_feedback_speaks_chinese():
    """The explanation of a wrong guess comes from the catalog, numbers kept."""
    from bertcourse import i18n
    i18n.set_language("zh")
    try:
        result = q1.check(86)
    finally:
        i18n.set_language("en")
    assert result.status == "fail" and result.message.startswith("太低了：你说86 MB") and "6个块" in result.message
