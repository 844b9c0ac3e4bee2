"""Tests for the chapter 1 exercises (bertcourse.exercises.ch01).

The wrong answers below are written the way a learner would write them (not imported
from the module), so the tests check that real mistakes get a message naming them.
"""
import math

import pytest
import torch

from bertcourse import i18n
from bertcourse.attention import masked_softmax
from bertcourse.exercises import ch01
from bertcourse.exercises.ch01 import q1, q2, q3, q4, q5
from test_exercises import assert_fails_with, assert_passes_with


# --- references and solutions pass -------------------------------------------------------

def test_reference_implementations_pass_their_own_check():
    assert q1.check(ch01._ref_weights)
    assert q2.check(ch01._ref_masked_softmax)
    assert q3.check(ch01._ref_output)
    assert q4.check(ch01._ref_param_count)


def test_references_call_the_package_and_agree_with_plain_torch():
    Q, K = ch01.Q1_CASES[0][1]
    torch.testing.assert_close(ch01._ref_weights(Q, K),
                               torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1))
    assert ch01._ref_param_count(768, 12, True) == 4 * 768 * 768 + 4 * 768


def test_cases_include_edge_cases():
    descriptions = " | ".join(d for ex_cases in (ch01.Q1_CASES, ch01.Q2_CASES, ch01.Q3_CASES)
                              for d, _ in ex_cases)
    assert "d=1" in descriptions and "batch of 1" in descriptions and "valid_len 0" in descriptions
    assert any((args[1] == 0).any() for _, args in ch01.Q2_CASES)
    assert any((args[3] == 0).any() for _, args in ch01.Q3_CASES)
    assert any(args[0].shape[0] == 1 for _, args in ch01.Q1_CASES)


# --- typical wrong answers name the mistake ---------------------------------------------

def q1_no_scale(Q, K):
    """fails: you forgot the scale"""
    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1)


def q1_divided_by_d(Q, K):
    """fails: you divided the scores by d"""
    return torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1], dim=-1)


def q1_wrong_axis(Q, K):
    """fails: wrong axis"""
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=1)


def q1_scores(Q, K):
    """fails: you returned the scaled scores"""
    return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])


def _visible(scores, valid_lens):
    return torch.arange(scores.shape[-1])[None, None, :] < valid_lens[:, None, None]


def q2_d2l_style(scores, valid_lens):
    """fails: valid_len 0 came out uniform"""
    # the classic: fill with -1e6 and stop there
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), -1e6), dim=-1)


def q2_mask_after_softmax(scores, valid_lens):
    """fails: you masked after the softmax"""
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(~_visible(scores, valid_lens), 0.0)


def q2_wrong_axis(scores, valid_lens):
    """fails: wrong axis"""
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), -1e6), dim=1)


def q2_minus_inf(scores, valid_lens):
    """fails: came out as NaN"""
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), float("-inf")), dim=-1)


def q2_off_by_one(scores, valid_lens):
    """fails: off by one"""
    visible = torch.arange(scores.shape[-1])[None, None, :] <= valid_lens[:, None, None]
    w = torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1)
    return w * visible


def q2_no_mask(scores, valid_lens):
    """fails: you ignored valid_lens"""
    return torch.softmax(scores, dim=-1)


def q2_lens_column(scores, valid_lens):
    """fails: valid_lens[:, None] makes a mask of shape (2, 4)"""
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None]       # (batch, keys): one axis short
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible


def q2_lens_column_where(scores, valid_lens):
    """fails: one length per sequence, so the mask must be (2, 1, 4)"""
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None]
    return torch.where(visible, torch.softmax(torch.where(visible, scores, -1e6), dim=-1), 0.0)


def test_q2_a_mask_one_axis_short_is_named_with_the_shapes():
    # raised by torch as "The size of tensor a (2) must match the size of tensor b (3) ..." on the
    # cases whose batch and queries differ (and neither is 1)
    result = assert_fails_with(
        q2, q2_lens_column,
        "on batch=2, valid_lens=[2, 3] out of 4 keys, the shapes or dtypes in your code do not fit together. "
        "Your function got scores: shape (2, 3, 4), float32; valid_lens: shape (2,), int64. It must return a "
        "tensor of shape (2, 3, 4), float32. (The error: RuntimeError: The size of tensor a",
        "against the scores (2, 3, 4) broadcasting lines its batch axis up with the queries axis",
        "valid_lens[:, None, None]", "is for 2-D valid_lens, one length per query")
    assert result.message.index("(The error:") < result.message.index("valid_lens[:, None] makes")
    i18n.set_language("zh")
    try:
        chinese = q2.check(q2_lens_column)
    finally:
        i18n.set_language("en")
    assert "形状或数据类型对不上" in chinese.message and "它的批量轴会和查询轴对齐" in chinese.message


def q2_minus_1e6_then_zero(scores, valid_lens):
    # correct: -1e6 instead of the most negative float is fine (exp underflows to 0)
    visible = _visible(scores, valid_lens)
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible


def test_q2_minus_1e6_is_accepted():
    assert q2.check(q2_minus_1e6_then_zero).status == "pass"


def q3_no_scale(Q, K, V, valid_lens):
    """fails: you forgot the 1 / sqrt(d) scale"""
    return masked_softmax(Q @ K.transpose(-2, -1), valid_lens) @ V


def q3_no_mask(Q, K, V, valid_lens):
    """fails: you ignored valid_lens"""
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1) @ V


def q3_weights(Q, K, V, valid_lens):
    """fails: you returned the attention weights"""
    return masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), valid_lens)


def q3_d2l_style(Q, K, V, valid_lens):
    """fails: must output the zero vector"""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return q2_d2l_style(scores, valid_lens) @ V


@pytest.mark.parametrize("wrong, phrase", [
    (lambda d, heads, bias: heads * 3 * d * d, "heads × 3 × d² myth"),
    # the version with biases that pitfall 1 quotes: (768 × 768 × 3 + 768 × 3) × 12
    (lambda d, heads, bias: (d * d * 3 + d * 3) * heads, "myth with biases, (d² · 3 + d · 3) × heads"),
    (lambda d, heads, bias: heads * (3 * d * d + (3 * d if bias else 0)), "myth with biases"),
    (lambda d, heads, bias: heads * (4 * d * d + (4 * d if bias else 0)), "multiplied by the number of heads"),
    (lambda d, heads, bias: 3 * d * d + (3 * d if bias else 0), "forgot the output projection"),
    (lambda d, heads, bias: 4 * d * d, "you forgot the biases"),
    (lambda d, heads, bias: 4 * d * d + 4 * d, "you counted biases when bias=False"),
    (lambda d, heads, bias: 4 * d * d + 4 * d // heads, "expected"),   # unknown mistake: numbers only
])
def test_q4_mistakes(wrong, phrase):
    result = assert_fails_with(q4, wrong, phrase)
    assert "parameters, got" in result.message


def test_q4_myth_with_biases_is_named_in_chinese_too():
    i18n.set_language("zh")
    try:
        result = q4.check(lambda d, heads, bias: (d * d * 3 + d * 3) * heads)
    finally:
        i18n.set_language("en")
    assert result.status == "fail" and "陷阱1引用的那个带偏置的错误说法" in result.message


def test_q4_accepts_a_tensor_or_float_count_and_rejects_non_numbers():
    assert q4.check(lambda d, h, b: torch.tensor(4 * d * d + (4 * d if b else 0))).status == "pass"
    assert q4.check(lambda d, h, b: float(4 * d * d + (4 * d if b else 0))).status == "pass"
    result = q4.check(lambda d, h, b: "4d^2")
    assert result.status == "fail" and "expected a number, got str" in result.message
    result = q4.check(42)
    assert result.status == "fail" and "must be a function, got int" in result.message


# --- Q5: predict the entropy without the scale, then run the experiment -------------------

def test_q5_truth_is_the_experiment_and_tells_the_story():
    unscaled = ch01.mean_attention_entropy(ch01.Q5_D, scaled=False)
    assert ch01._q5_measured() == (unscaled, ch01.mean_attention_entropy(ch01.Q5_D, scaled=True))
    assert 0.1 < unscaled < 0.3
    widths = [4, 16, 64, 256]
    scaled = [ch01.mean_attention_entropy(d) for d in widths]
    raw = [ch01.mean_attention_entropy(d, scaled=False) for d in widths]
    assert all(2.3 < h < math.log(16) for h in scaled)                 # flat with the scale
    assert raw == sorted(raw, reverse=True) and raw[0] < scaled[0]     # falls without it


def test_q5_experiment_is_the_package_attention_and_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1000, 1, 8, generator=g), torch.randn(1000, 16, 8, generator=g)
    w = torch.softmax(q @ k.transpose(-2, -1), -1)
    by_hand = -(w * w.log()).sum(-1).mean().item()
    assert ch01.mean_attention_entropy(8, scaled=False) == pytest.approx(by_hand, abs=1e-5)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_q5_right_predictions_pass():
    truth = ch01._q5_measured()[0]
    for guess in (truth, truth + 0.09, truth - 0.09, 0.2, torch.tensor(0.2)):
        assert_passes_with(q5, guess, "without the scale")


@pytest.mark.parametrize("guess, phrase", [
    (2.4, "about what the scaled softmax gives"),
    (2.77, "uniform weights"),
    (1.0, "saturates further than that"),
    (0.0, "too low"),
])
def test_q5_wrong_predictions_explain_without_the_number(guess, phrase):
    result = assert_fails_with(q5, guess, phrase)
    assert f"{ch01._q5_measured()[0]:.2f}" not in result.message          # the experiment tells


@pytest.mark.parametrize("bad, phrase", [
    ("0.2", "must be a number"), (True, "must be a number"), ([0.2], "must be a number"),
    (float("nan"), "finite"), (-0.5, "between 0"), (3.0, "between 0"),
])
def test_q5_refuses_what_is_not_an_entropy(bad, phrase):
    assert_fails_with(q5, bad, phrase)


def test_q5_placeholder_is_not_attempted():
    assert q5.check(...).status == "not attempted" and q5.check(None).status == "not attempted"


def test_ch01_without_the_scale_the_entropy_about_halves_each_time_d_quadruples():
    """Chapter 1's Q5 experiment as the notebook reads it after the guess: with the scale the
    entropy stays between 2.3 and 2.45 nats at d = 4 ... 1024; without it, it falls, below 0.3
    at Q5_D, and about halves (a ratio of 0.4 to 0.6) each time d quadruples from 16 on."""
    widths = [4, 16, 64, 256, 1024]
    scaled = {d: ch01.mean_attention_entropy(d) for d in widths}
    raw = {d: ch01.mean_attention_entropy(d, scaled=False) for d in widths}
    assert all(2.3 <= h <= 2.45 for h in scaled.values())
    assert list(raw.values()) == sorted(raw.values(), reverse=True) and raw[ch01.Q5_D] < 0.3
    assert all(0.4 < raw[4 * d] / raw[d] < 0.6 for d in (16, 64, 256))


def test_q2_refuses_the_packages_masked_softmax():
    from bertcourse.attention import masked_softmax
    result = q2.check(lambda scores, valid_lens: masked_softmax(scores, valid_lens))
    assert result.status == "fail" and "without masked_softmax" in result.message


def test_q1_names_a_three_axis_transpose_and_torch_sqrt_of_an_int():
    import math
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # torch warns about .T on a 3-D tensor
        result = q1.check(lambda Q, K: torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), -1))
    assert "K.T reverses all three axes" in result.message, result.message
    result = q1.check(lambda Q, K: torch.softmax(Q @ K.transpose(-2, -1) / torch.sqrt(Q.shape[-1]), -1))
    assert "use math.sqrt(d)" in result.message, result.message
