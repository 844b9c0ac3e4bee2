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
        "against the scores (2, 3, 4) broadcasting lines the mask's batch axis up with the queries axis",
        "valid_lens[:, None, None]", "is for 2-D valid_lens, one length per query")
    assert result.message.index("(The error:") < result.message.index("valid_lens[:, None] makes")
    i18n.set_language("zh")
    try:
        chinese = q2.check(q2_lens_column)
    finally:
        i18n.set_language("en")
    assert "形状或数据类型对不上" in chinese.message and "掩码的批量轴都会和查询轴对齐" in chinese.message


def q2_lens_middle_axis(scores, valid_lens):
    """fails: valid_lens[None, :, None] one of shape (1, 2, 4): either way"""
    visible = torch.arange(scores.shape[-1]) < valid_lens[None, :, None]     # (1, batch, keys): raises as [:, None]
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible


def test_q2_two_masks_that_raise_alike_get_one_message_that_names_both():
    # valid_lens[:, None] and valid_lens[None, :, None] raise the same error at the same masked_fill: the
    # message names both ways of writing it, and neither as the other's mistake
    for wrong in (q2_lens_column, q2_lens_middle_axis):
        assert_fails_with(q2, wrong, Q2_GOT, "The size of tensor a (2) must match the size of tensor b (3) at "
                          "non-singleton dimension 1", "valid_lens[:, None] makes a mask of shape (2, 4) (so does "
                          "valid_lens.reshape(-1, 1)), and valid_lens[None, :, None] one of shape (1, 2, 4): either "
                          "way", "the mask must be (2, 1, 4): valid_lens[:, None, None]")


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
    # the version with biases that the pitfall "multi-head attention costs heads × 3 × d² parameters" quotes:
    # (768 × 768 × 3 + 768 × 3) × 12
    (lambda d, heads, bias: (d * d * 3 + d * 3) * heads, "myth with biases, (d² · 3 + d · 3) × heads, as the "
     "pitfall \"multi-head attention costs heads × 3 × d² parameters\" quotes it"),
    (lambda d, heads, bias: heads * (3 * d * d + (3 * d if bias else 0)), "myth with biases"),
    (lambda d, heads, bias: heads * (4 * d * d + (4 * d if bias else 0)), "multiplied by the number of heads"),
    (lambda d, heads, bias: 3 * d * d + (3 * d if bias else 0), "forgot the output projection"),
    (lambda d, heads, bias: 4 * d * d + (4 * d * heads if bias else 0), "you counted the biases once per head"),
    (lambda d, heads, bias: 4 * d * d + (3 * d if bias else 0), "you forgot W_o's d biases"),
    (lambda d, heads, bias: 4 * d * d, "you forgot the biases"),
    (lambda d, heads, bias: 4 * d * d + 4 * d, "you counted biases when bias=False"),
    (lambda d, heads, bias: 4 * d * d + 4 * d // heads, "expected"),   # unknown mistake: numbers only
])
def test_q4_mistakes(wrong, phrase):
    result = assert_fails_with(q4, wrong, phrase)
    assert "parameters, got" in result.message


def test_q4_myth_is_named_in_chinese_too():
    i18n.set_language("zh")
    try:
        plain = q4.check(lambda d, heads, bias: heads * 3 * d * d)
        with_biases = q4.check(lambda d, heads, bias: (d * d * 3 + d * 3) * heads)
    finally:
        i18n.set_language("en")
    assert plain.status == "fail" and "应为16,640个参数" in plain.message
    assert "你用了“头数 × 3 × d²”这个错误说法" in plain.message
    assert with_biases.status == "fail" and "陷阱“多头注意力的参数量是头数 × 3 × d²”引用的那个带偏置的错误说法" in with_biases.message


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


# --- shape and dtype slips in Q2 and Q3: named in the exercise's terms (issue 43) ----------

def _q2_mask(visible):
    """A learner's masked softmax around their mask ``visible``."""
    def my_masked_softmax(scores, valid_lens):
        mask = visible(scores, valid_lens)
        return torch.softmax(scores.masked_fill(~mask, -1e6), dim=-1) * mask
    return my_masked_softmax


def _q3_mask(visible):
    """A learner's attention output around their mask ``visible``."""
    def attention_output(Q, K, V, valid_lens):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        return _q2_mask(visible)(scores, valid_lens) @ V
    return attention_output


Q2_GOT = ("Your function got scores: shape (2, 3, 4), float32; valid_lens: shape (2,), int64. It must return a "
          "tensor of shape (2, 3, 4), float32.")
Q3_GOT = ("Your function got Q: shape (2, 3, 8), float32; K: shape (2, 4, 8), float32; V: shape (2, 4, 5), float32; "
          "valid_lens: shape (2,), int64. It must return a tensor of shape (2, 3, 5), float32.")

# the masks as learners write them, one axis too many or none added at all
THREE_AXES = lambda scores, valid_lens: torch.arange(scores.shape[-1]) < valid_lens[:, :, None]        # noqa: E731
NO_NEW_AXES = [
    lambda scores, valid_lens: torch.arange(scores.shape[-1]) < valid_lens,
    lambda scores, valid_lens: valid_lens > torch.arange(scores.shape[-1]),
    lambda scores, valid_lens: torch.arange(scores.shape[-1])[None, :] < valid_lens,
    lambda scores, valid_lens: torch.arange(scores.shape[-1]).unsqueeze(0).unsqueeze(0) < valid_lens,
]


@pytest.mark.parametrize("ex, wrong, got", [(q2, _q2_mask, Q2_GOT), (q3, _q3_mask, Q3_GOT)], ids=["q2", "q3"])
def test_valid_lens_with_one_axis_too_many_is_named_with_the_shapes(ex, wrong, got):
    result = assert_fails_with(
        ex, wrong(THREE_AXES), got, "IndexError: too many indices for tensor of dimension 1",
        "valid_lens[:, :, None] indexes two axes of valid_lens, but it has one: shape (2,)",
        "valid_lens[:, None, None] has shape (2, 1, 1)", "the mask (2, 1, 4)", "the scores (2, 3, 4)")
    assert result.message.index("(The error:") < result.message.index("valid_lens[:, :, None] indexes")


@pytest.mark.parametrize("mask", NO_NEW_AXES, ids=["arange<lens", "lens>arange", "row<lens", "unsqueezed-row<lens"])
@pytest.mark.parametrize("ex, wrong, got", [(q2, _q2_mask, Q2_GOT), (q3, _q3_mask, Q3_GOT)], ids=["q2", "q3"])
def test_valid_lens_without_new_axes_is_named_with_the_shapes(ex, wrong, got, mask):
    assert_fails_with(ex, wrong(mask), got, "RuntimeError: The size of tensor a",
                      "valid_lens is compared without new axes: it has shape (2,) and the key positions "
                      "torch.arange(4) shape (4,)", "valid_lens[:, None, None] of shape (2, 1, 1)",
                      "then the mask is (2, 1, 4) and broadcasts against the scores (2, 3, 4)")


def q2_half_scores(scores, valid_lens):
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
    return torch.softmax(scores.half().masked_fill(~visible, -1e6), dim=-1) * visible


def q2_half_scores_small_fill(scores, valid_lens):
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
    return torch.softmax(scores.half().masked_fill(~visible, -1e4), dim=-1) * visible


def q2_half_result(scores, valid_lens):
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
    return (torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible).half()


def q2_half_mask(scores, valid_lens):
    visible = (torch.arange(scores.shape[-1]) < valid_lens[:, None, None]).half()
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible


def test_q2_half_scores_with_the_usual_fill_is_named():
    # -1e6 does not fit in float16: torch raises "value cannot be converted to type c10::Half without overflow"
    assert_fails_with(q2, q2_half_scores, Q2_GOT, "without overflow",
                      "you converted the scores to float16 (.half()): -1e6 does not fit in float16",
                      "The scores come as float32: compute and return float32")


@pytest.mark.parametrize("wrong", [q2_half_scores_small_fill, q2_half_result])
def test_q2_a_float16_result_gives_both_dtypes_and_names_half(wrong):
    result = assert_fails_with(q2, wrong, "first difference", "your result is float16, the expected result float32",
                               "about 3 significant digits", "A .half()", "compute in float32")
    assert "took part in the softmax" not in result.message       # rounding is not a masking mistake


def test_q2_a_float_mask_flipped_with_tilde_is_named():
    assert_fails_with(q2, q2_half_mask, Q2_GOT, "TypeError: ~ (operator.invert)",
                      "~ flips a boolean (or integer) tensor only", "torch.bool")
    assert_fails_with(q2, lambda scores, valid_lens: q2_half_mask(scores, valid_lens.float()), "~ flips a boolean")


def q3_half_queries_and_keys(Q, K, V, valid_lens):
    scores = Q.half() @ K.half().transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return masked_softmax(scores, valid_lens) @ V


def q3_half_values(Q, K, V, valid_lens):
    return masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), valid_lens) @ V.half()


def q3_half_both(Q, K, V, valid_lens):
    weights = masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), valid_lens)
    return weights.half() @ V.half()


@pytest.mark.parametrize("wrong, error", [(q3_half_queries_and_keys, "expected scalar type Half but found Float"),
                                          (q3_half_values, "expected scalar type Float but found Half")])
def test_q3_float16_mixed_with_float32_is_named_with_the_dtypes(wrong, error):
    assert_fails_with(q3, wrong, Q3_GOT, error, "your code mixed float16 and float32 in one product",
                      "Q, K and V come as float32 and the output must be float32: drop the .half()")


def test_q3_a_float16_result_gives_both_dtypes():
    assert_fails_with(q3, q3_half_both, "your result is float16, the expected result float32", "A .half()")


def q3_lens_unsqueezed(Q, K, V, valid_lens):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return masked_softmax(scores, valid_lens.unsqueeze(-1)) @ V


@pytest.mark.parametrize("mask", [lambda scores, lens: torch.arange(scores.shape[-1]) < lens[:, None],
                                  lambda scores, lens: torch.arange(scores.shape[-1]) < lens.reshape(-1, 1)],
                         ids=["[:, None]", "reshape(-1, 1)"])
def test_q3_a_mask_one_axis_short_is_named_as_in_q2(mask):
    result = assert_fails_with(q3, _q3_mask(mask), Q3_GOT, "The size of tensor a (2) must match the size of tensor b "
                               "(3)", "valid_lens[:, None] makes a mask of shape (2, 4) (so does "
                               "valid_lens.reshape(-1, 1))", "against the scores (2, 3, 4) broadcasting lines the "
                               "mask's batch axis up with the queries axis", "valid_lens[:, None, None]")
    assert result.message.index("(The error:") < result.message.index("valid_lens[:, None] makes")


def test_a_mask_with_another_mistakes_sizes_is_not_given_its_name():
    # (1, keys, batch): positions on the queries axis, lengths on the keys axis. masked_fill raises with the sizes
    # that `torch.arange(keys)[None, None, :] < valid_lens` names the other way round, but at another operation:
    # not "compared without new axes", only the shapes
    def transposed(scores, valid_lens):
        return torch.arange(scores.shape[-1])[:, None] < valid_lens[None, None, :]

    for ex, wrong, got in ((q2, _q2_mask, Q2_GOT), (q3, _q3_mask, Q3_GOT)):
        result = assert_fails_with(ex, wrong(transposed), got, "(The error: RuntimeError: The size of tensor a (2) "
                                   "must match the size of tensor b (4) at non-singleton dimension 2)")
        assert " — " not in result.message and "without new axes" not in result.message
    # the same comparison written the other way round is still named: torch names its sizes in the other order
    assert_fails_with(q2, _q2_mask(lambda scores, lens: lens > torch.arange(scores.shape[-1])[None, None, :]),
                      "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 2",
                      "valid_lens is compared without new axes")


def test_raised_alike_keeps_shapes_in_order_and_swaps_sizes_only_at_the_same_operation():
    from bertcourse.exercises.learner_code import raised_alike

    def raised(f):
        try:
            f()
        except Exception as e:          # the error is what the test reads
            return e
        raise AssertionError("did not raise")

    X, lens, keys = torch.zeros(2, 6, 4), torch.tensor([2, 3]), torch.arange(4)
    P = torch.zeros(2, 3, dtype=torch.long)
    row = raised(lambda: X[torch.arange(2)[None, :], P])                    # shapes [1, 2], [2, 3]
    transposed = raised(lambda: X[torch.arange(2)[:, None], P.T])          # shapes [2, 1], [3, 2]
    assert raised_alike(row, raised(lambda: X[torch.arange(2).unsqueeze(0), P]))
    assert not raised_alike(row, transposed)
    # a comparison with its operands the other way round: the same mistake
    assert raised_alike(raised(lambda: keys < lens), raised(lambda: lens > keys))
    # the same sizes the other way round from masked_fill and from a comparison: not the same mistake
    fill = raised(lambda: torch.zeros(2, 3, 4).masked_fill(keys[:, None] < lens[None, None, :], 0.0))
    compare = raised(lambda: keys[None, None, :] < lens)
    assert str(fill).replace("(2)", "(x)").replace("(4)", "(2)").replace("(x)", "(4)") == str(compare)
    assert not raised_alike(fill, compare)
    assert not raised_alike(raised(lambda: keys < lens), ValueError(str(raised(lambda: keys < lens))))


def test_q3_valid_lens_unsqueezed_for_the_packages_masked_softmax_is_named():
    assert_fails_with(q3, q3_lens_unsqueezed, Q3_GOT, "got shape (2, 1)",
                      "masked_softmax takes valid_lens as they come, shape (2,), and adds the new axes itself")


# near misses of the masking mistakes get a nudge, not only the numbers

def q2_fill_zero(scores, valid_lens):
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
    return torch.softmax(scores.masked_fill(~visible, 0.0), dim=-1) * visible


def q2_fill_minus_ten(scores, valid_lens):
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
    weights = torch.softmax(scores.masked_fill(~visible, -10.0), dim=-1)
    return weights.masked_fill((valid_lens == 0)[:, None, None], 0.0)


def test_q2_near_misses_of_the_masking_mistakes_get_a_nudge():
    assert_fails_with(q2, q2_fill_zero, "first difference", "the hidden keys got weight 0, but a row of visible "
                      "weights sums to", "the hidden scores still took part in the softmax", "*before* the softmax")
    assert_fails_with(q2, q2_fill_minus_ten, "first difference", "a key at a position >= valid_len got weight",
                      "a very negative number such as -1e6")


def test_q3_slips_of_q1_inside_q3_are_named():
    # written inside the test, not as module-level "fails:" functions: test_exercises.py would
    # run those too, and K.T's deprecation warning would reach the run's summary
    import warnings

    def k_dot_t(Q, K, V, valid_lens):
        return masked_softmax(Q @ K.T / math.sqrt(Q.shape[-1]), valid_lens) @ V

    def scaled_by_the_keys(Q, K, V, valid_lens):
        return masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(K.shape[1]), valid_lens) @ V

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # torch warns about .T on 3-D tensors
        assert_fails_with(q3, k_dot_t, "K.T reverses all three axes")
    assert_fails_with(q3, scaled_by_the_keys, "square root of the number of keys")
