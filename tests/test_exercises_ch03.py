"""Tests for the chapter 3 exercises (bertcourse.exercises.ch03).

The wrong answers are written the way a learner would write them (not imported from the
module), so the tests check that real mistakes get a message naming them."""

import pytest
import torch

from bertcourse.exercises import ch03
from bertcourse.exercises.ch03 import q1, q2, q3, q4, q5
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with


def test_references_pass_and_agree_with_torch():
    assert q1.check(ch03._ref_add_norm) and q2.check(ch03._ref_ffn)
    assert q3.check(ch03._ref_mask) and q4.check(ch03._ref_params)
    X, Y, g, b, eps = ch03.Q1_CASES[1][1]
    torch.testing.assert_close(ch03._ref_add_norm(X, Y, g, b, eps),
                               torch.nn.functional.layer_norm(X + Y, (X.shape[-1],), g, b, eps))
    assert ch03._ref_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]
    # BERT-base's encoder block: 7,087,872 parameters (12 of them + embeddings + pooler = 109,482,240)
    assert ch03._ref_params(768, 3072, 12, True) == 7_087_872


# --- typical wrong answers name the mistake ------------------------------------------------

def test_q2_missing_transpose_is_named_not_a_shape_error():
    def q2_no_transpose(X, W1, b1, W2, b2):
        return torch.relu(X @ W1 + b1) @ W2 + b2          # fine for square weights only

    result = q2.check(q2_no_transpose)
    # the square case comes first, so the mistake is named rather than a shape error shown
    assert result.status == "fail" and "transpose the weights" in result.message, result.message


def _ln(S, gamma, beta, eps, dim=-1, unbiased=False):
    mu = S.mean(dim, keepdim=True)
    return (S - mu) / torch.sqrt(S.var(dim, unbiased=unbiased, keepdim=True) + eps) * gamma + beta


@pytest.mark.parametrize("wrong, phrase", [
    (lambda X, Y, g, b, e: (X + Y - (X + Y).mean(-1, keepdim=True))
     / torch.sqrt((X + Y).var(-1, keepdim=True) + e) * g + b, "unbiased variance"),
    (lambda X, Y, g, b, e: X + _ln(Y, g, b, e), "you normalised Y and then added X"),
    (lambda X, Y, g, b, e: _ln(Y, g, b, e), "you forgot the residual connection"),
    (lambda X, Y, g, b, e: _ln(X + Y, g, b, e, dim=1), "over the sequence axis"),
    (lambda X, Y, g, b, e: _ln(X + Y, g, b, e, dim=0), "over the batch axis"),
    (lambda X, Y, g, b, e: (X + Y - (X + Y).mean(-1, keepdim=True))
     / ((X + Y).var(-1, unbiased=False, keepdim=True).sqrt() + e) * g + b, "eps goes inside"),
    (lambda X, Y, g, b, e: _ln(X + Y, 1.0, 0.0, e), "you forgot gamma and beta"),
])
def test_q1_mistakes(wrong, phrase):
    assert_fails_with(q1, wrong, phrase)


def test_q1_plain_layer_norm_is_accepted():
    def with_torch(X, Y, gamma, beta, eps):
        return torch.nn.functional.layer_norm(X + Y, (X.shape[-1],), gamma, beta, eps)
    assert q1.check(with_torch).status == "pass"


@pytest.mark.parametrize("wrong, phrase", [
    (lambda X, W1, b1, W2, b2: (X @ W1.T + b1) @ W2.T + b2, "you forgot the ReLU"),
    (lambda X, W1, b1, W2, b2: torch.relu(torch.relu(X @ W1.T + b1) @ W2.T + b2), "not after the second"),
    (lambda X, W1, b1, W2, b2: torch.relu(X @ W1.T) @ W2.T, "you forgot the biases"),
])
def test_q2_mistakes(wrong, phrase):
    assert_fails_with(q2, wrong, phrase)


@pytest.mark.parametrize("wrong, phrase", [
    (lambda q, k: torch.arange(k)[None, :] > torch.arange(q)[:, None] + (k - q), "the mask is inverted"),
    (lambda q, k: torch.arange(k)[None, :] < torch.arange(q)[:, None] + (k - q), "must also see itself"),
    (lambda q, k: torch.ones(q, k).triu().bool(), "see the future"),
    (lambda q, k: torch.ones(q, k).tril().bool(), "bottom-right"),
    (lambda q, k: torch.ones(q, k).tril(k - q), "return a boolean tensor"),
])
def test_q3_mistakes(wrong, phrase):
    assert_fails_with(q3, wrong, phrase)


@pytest.mark.parametrize("wrong, phrase", [
    (lambda d, f, h, b: 4 * d * d + (4 * d if b else 0) + 2 * d * f + f + d, "two layer norms"),
    (lambda d, f, h, b: 4 * d * d + (4 * d if b else 0) + 2 * d * f + f + d + 2 * d, "two add & norm layers"),
    (lambda d, f, h, b: 4 * d * d + (4 * d if b else 0) + 2 * d * f + 4 * d, "FFN's biases"),
    (lambda d, f, h, b: h * (4 * d * d + (4 * d if b else 0)) + 2 * d * f + f + d + 4 * d, "number of heads"),
    (lambda d, f, h, b: 3 * d * d + (3 * d if b else 0) + 2 * d * f + f + d + 4 * d, "output projection"),
    (lambda d, f, h, b: 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d, "with bias=False"),
])
def test_q4_mistakes(wrong, phrase):
    assert_fails_with(q4, wrong, phrase)


# --- Q5: predict which decoder outputs a changed target token reaches ---------------------

def test_q5_experiment_shows_the_causal_mask():
    assert ch03.changed_positions() == [3, 4, 5, 6, 7]
    assert ch03.changed_positions(position=0) == list(range(8))
    assert ch03.changed_positions(position=7) == [7]
    assert ch03.changed_positions("source", 2) == list(range(8))        # cross-attention reads it all
    assert ch03.changed_positions(causal=False) == list(range(8))       # the bug: everything sees it
    with pytest.raises(ValueError, match="change must be"):
        ch03.changed_positions("memory")


def test_q5_experiment_leaves_the_global_rng_alone():
    assert_leaves_global_rng_alone(ch03.changed_positions, ch03._q5_model)


def test_q5_right_prediction_passes():
    for answer in (5, 5.0, torch.tensor(5)):
        assert_passes_with(q5, answer, "3..7")


@pytest.mark.parametrize("answer, phrase", [
    (8, "causal mask"), (6, "causal mask"), (4, "one too few"), (3, "keep their output"),
    (1, "too few"), (0, "too few"),
])
def test_q5_wrong_predictions_explain(answer, phrase):
    assert_fails_with(q5, answer, phrase)


@pytest.mark.parametrize("bad, phrase", [
    ("5", "whole number from 0 to 8"), (True, "whole number from 0 to 8"), ([5], "whole number"),
    (5.5, "expected a whole number"), (9, "from 0 to 8"), (-1, "from 0 to 8"),
])
def test_q5_refuses_what_is_not_a_count(bad, phrase):
    assert_fails_with(q5, bad, phrase)


def test_q1_refuses_nn_layernorm_and_q4_refuses_building_the_block():
    def with_module(X, Y, gamma, beta, eps):
        norm = torch.nn.LayerNorm(X.shape[-1], eps=eps)
        with torch.no_grad():
            norm.weight.copy_(gamma)
            norm.bias.copy_(beta)
        return norm(X + Y)
    result = q1.check(with_module)
    assert result.status == "fail" and "without nn.LayerNorm" in result.message

    from bertcourse.transformer import EncoderBlock

    def measured(d, ffn_hiddens, heads, bias):
        return sum(p.numel() for p in EncoderBlock(d, ffn_hiddens, heads, bias=bias).parameters())
    result = q4.check(measured)
    assert result.status == "fail" and "building an EncoderBlock" in result.message


def test_q4_tells_forgotten_attention_biases_from_forgotten_layer_norms():
    result = q4.check(lambda d, f, h, b: 4 * d * d + 2 * d * f + f + d + 4 * d)      # no attention biases
    assert "each of the four attention projections has d biases too" in result.message, result.message
    result = q4.check(lambda d, f, h, b: 4 * d * d + (4 * d if b else 0) + 2 * d * f + f + d)   # no layer norms
    assert "you forgot the two layer norms" in result.message, result.message
