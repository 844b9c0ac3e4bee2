"""Chapter 1 exercises: scaled dot-product attention, masking, multi-head parameters.

In the notebook::

    from bertcourse.exercises.ch01 import q1, q2, q3, q4, q5, quiz

* ``q1`` — ``attention_weights(Q, K)``: the weights ``softmax(Q K^T / sqrt(d))``.
* ``q2`` — ``my_masked_softmax(scores, valid_lens)``: softmax over keys where key ``j`` is
  visible only when ``j < valid_len``; a row with ``valid_len == 0`` is all zeros.
* ``q3`` — ``attention_output(Q, K, V, valid_lens)``: the full masked attention output.
* ``q4`` — ``mha_param_count(d, heads, bias)``: the number of parameters of a multi-head attention layer.
* ``q5`` — ``prediction``: *before* running the experiment, predict the mean entropy of
  attention weights over 16 keys at ``d = 256`` when the ``1/sqrt(d)`` scale is left out.
  The check runs the experiment itself (:func:`mean_attention_entropy`).
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

Every reference answer calls :mod:`bertcourse.attention`, so the exercises check the
learner against exactly the code the chapter explains. Each exercise also knows the
typical wrong answers (``diagnoses``) and names the mistake when the learner makes one.
"""
from __future__ import annotations

import functools
import math
import warnings

import torch

from .. import attention
from ..attention import MultiHeadAttention, dot_product_attention, entropy, masked_softmax
from ..i18n import gettext as _, gettext_noop as N_
from .core import (CheckFailed, Exercise, Symptom, as_number, check_bool, check_positive_int, equal_values,
                   message_of, randn, run_cases, seeded)
from .guesses import predicted_number
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "mean_attention_entropy", "Q5_D", "Q5_KEYS", "Q5_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: scaled dot-product attention weights
# ---------------------------------------------------------------------------------------

def _ref_weights(Q, K):
    # values are irrelevant for the weights; pass K so that the shapes fit
    return dot_product_attention(Q, K, K)[1]


def _weights_no_scale(Q, K):
    """you forgot the scale: divide the scores by sqrt(d), where d = Q.shape[-1]."""
    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1)


def _weights_div_d(Q, K):
    """you divided the scores by d; the scale is 1 / sqrt(d) (use math.sqrt(d))."""
    return torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1], dim=-1)


def _weights_wrong_axis(Q, K):
    """the softmax runs over the wrong axis: each query's weights over the keys must sum to
    1, so use dim=-1 (the keys axis)."""
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-2)


def _weights_scores_only(Q, K):
    """you returned the scaled scores; the weights are their softmax over the keys."""
    return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])


def _weights_dot_T(Q, K):
    """K.T reverses all three axes of a (batch, keys, d) tensor; transpose only the last two:
    K.transpose(-2, -1), which gives (batch, d, keys)."""
    with warnings.catch_warnings():      # torch warns about .T on 3-D; the learner's code already did
        warnings.simplefilter("ignore")
        return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), dim=-1)


def _weights_torch_sqrt(Q, K):
    """torch.sqrt takes a tensor, and d = Q.shape[-1] is a Python int: use math.sqrt(d)."""
    return torch.softmax(Q @ K.transpose(-2, -1) / torch.sqrt(Q.shape[-1]), dim=-1)


Q1_CASES = [
    (N_("batch=2, 3 queries, 5 keys, d=8"),
     (randn(2, 3, 8, seed=1), randn(2, 5, 8, seed=2))),
    (N_("d=1 (then sqrt(d) = 1)"),
     (randn(2, 4, 1, seed=3), randn(2, 6, 1, seed=4))),
    (N_("a batch of 1 with one query and one key"),
     (randn(1, 1, 16, seed=5), randn(1, 1, 16, seed=6))),
    (N_("d=64 with large entries (an unscaled softmax would saturate)"),
     (randn(2, 3, 64, seed=7, scale=2.0), randn(2, 4, 64, seed=8, scale=2.0))),
]

Q1_DIAGNOSES = [_weights_no_scale, _weights_div_d, _weights_wrong_axis, _weights_scores_only, _weights_dot_T,
                _weights_torch_sqrt]


def _check_q1(answer) -> str:
    return run_cases(answer, _ref_weights, Q1_CASES, Q1_DIAGNOSES)


q1 = Exercise(
    name=N_("Q1 (scaled dot-product attention weights)"),
    var="attention_weights",
    checker=_check_q1,
    hints=[
        N_("Q is (batch, queries, d) and K is (batch, keys, d). The scores Q K^T must be "
           "(batch, queries, keys): transpose only the last two axes of K."),
        N_("scores = Q @ K.transpose(-2, -1) / math.sqrt(d) with d = Q.shape[-1]; then a softmax "
           "so that each query's weights over the keys sum to 1."),
        N_("torch.softmax(scores, dim=-1): the last axis is the keys axis."),
    ],
    solution=N_('''
def attention_weights(Q, K):
    d = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d)   # (batch, queries, keys)
    return torch.softmax(scores, dim=-1)              # each row sums to 1
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: masked softmax
# ---------------------------------------------------------------------------------------

def _visible(scores, valid_lens):
    """(batch, queries, keys) boolean: key j visible when j < valid_len."""
    positions = torch.arange(scores.shape[-1])
    return positions < valid_lens.reshape(-1, 1, 1)


def _ref_masked_softmax(scores, valid_lens):
    return masked_softmax(scores, valid_lens)


def _ms_no_mask(scores, valid_lens):
    """you ignored valid_lens: keys at positions >= valid_len must get weight 0."""
    return torch.softmax(scores, dim=-1)


def _ms_wrong_axis(scores, valid_lens):
    """the softmax runs over the wrong axis: it must run over the keys (dim=-1)."""
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), -1e6), dim=-2)


def _ms_after_softmax(scores, valid_lens):
    """you masked after the softmax: zeroing the padded weights afterwards leaves rows that no longer sum to 1. Fill the
    masked scores with a very negative number before the softmax."""
    return torch.softmax(scores, dim=-1) * _visible(scores, valid_lens)


def _ms_uniform_empty_rows(scores, valid_lens):
    """a row with valid_len 0 came out uniform: when every score is the same very negative
    number, softmax spreads the weight evenly over the padding. The course's convention is
    all-zero weights for such a row (zero the masked weights after the softmax as well)."""
    # d2l's version: a very negative fill, so a row with no visible key becomes uniform
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), -1e6), dim=-1)


def _ms_minus_inf(scores, valid_lens):
    """a row with valid_len 0 came out as NaN: softmax of all -inf is 0/0. Use a very
    negative finite number instead of -inf and zero the masked weights after the softmax."""
    return torch.softmax(scores.masked_fill(~_visible(scores, valid_lens), float("-inf")), dim=-1)


def _ms_off_by_one(scores, valid_lens):
    """off by one: key j is visible when j < valid_len (positions start at 0), not j <= valid_len."""
    visible = torch.arange(scores.shape[-1]) <= valid_lens.reshape(-1, 1, 1)
    return masked_softmax(scores, visible.expand_as(scores))


def _ms_lens_column(scores, valid_lens):
    # valid_lens[:, None]: a (batch, keys) mask lined up as (queries, keys); [None, :, None] raises alike (named too)
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None]
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1).masked_fill(~visible, 0.0)


def _ms_lens_column_message(scores, valid_lens) -> str:
    batch, queries, keys = scores.shape
    return _("valid_lens[:, None] makes a mask of shape ({batch}, {keys}) (so does valid_lens.reshape(-1, 1)), and "
             "valid_lens[None, :, None] one of shape (1, {batch}, {keys}): either way, against the scores ({batch}, "
             "{queries}, {keys}) broadcasting lines the mask's batch axis up with the queries axis. valid_lens here "
             "is ({batch},), one length per sequence, so the mask must be ({batch}, 1, {keys}): valid_lens[:, None, "
             "None] ([:, :, None] is for 2-D valid_lens, one length per query).").format(
        batch=batch, queries=queries, keys=keys)


# Mistakes that make the code raise: each wrong function raises what the learner's code raises
# (``run_cases`` compares the two errors), and its message function names the mistake with the shapes.

def _mask_three_axes(scores, valid_lens):
    # valid_lens[:, :, None] on 1-D valid_lens: IndexError, too many indices for tensor of dimension 1
    return torch.arange(scores.shape[-1]) < valid_lens[:, :, None]


def _three_axes_message(scores, valid_lens, *more) -> str:
    batch, queries, keys = scores.shape
    return _("valid_lens[:, :, None] indexes two axes of valid_lens, but it has one: shape ({batch},), one length "
             "per sequence. Add new axes with None alone: valid_lens[:, None, None] has shape ({batch}, 1, 1), and "
             "torch.arange({keys}) < valid_lens[:, None, None] is the mask ({batch}, 1, {keys}) that broadcasts "
             "against the scores ({batch}, {queries}, {keys}). (valid_lens[:, :, None] is for 2-D valid_lens, one "
             "length per query.)").format(batch=batch, queries=queries, keys=keys)


# masks compared with valid_lens (batch,) without new axes: the key positions as (keys,), (1, keys), (1, 1, keys)
_NO_NEW_AXES = (lambda scores, valid_lens: torch.arange(scores.shape[-1]) < valid_lens,
                lambda scores, valid_lens: torch.arange(scores.shape[-1])[None, :] < valid_lens,
                lambda scores, valid_lens: torch.arange(scores.shape[-1])[None, None, :] < valid_lens)


def _no_new_axes_message(scores, valid_lens, *more) -> str:
    batch, queries, keys = scores.shape
    return _("valid_lens is compared without new axes: it has shape ({batch},) and the key positions "
             "torch.arange({keys}) shape ({keys},), so broadcasting lines the {batch} lengths up with the {keys} key "
             "positions (or with the last axis of the scores). Give valid_lens two new axes, valid_lens[:, None, "
             "None] of shape ({batch}, 1, 1) (valid_lens.unsqueeze(-1).unsqueeze(-1)): then the mask is ({batch}, 1, "
             "{keys}) and broadcasts against the scores ({batch}, {queries}, {keys}).").format(
        batch=batch, queries=queries, keys=keys)


def _ms_half_fill(scores, valid_lens):
    # .half() on the scores, then the usual -1e6: RuntimeError, cannot be converted to Half without overflow
    return torch.softmax(scores.half().masked_fill(~_visible(scores, valid_lens), -1e6), dim=-1)


def _half_fill_message(scores, valid_lens) -> str:
    return _("you converted the scores to float16 (.half()): -1e6 does not fit in float16, whose largest number is "
             "65504, and float16 keeps only about 3 significant digits. The scores come as {dtype}: compute and "
             "return {dtype}, without .half().").format(dtype=str(scores.dtype).removeprefix("torch."))


def _ms_float_mask_invert(scores, valid_lens):
    # a float mask (.half(), .float()) flipped with ~: TypeError, only implemented on integer and Boolean tensors
    visible = _visible(scores, valid_lens).half()
    return torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1) * visible


def _float_mask_message(scores, valid_lens) -> str:
    return _("~ flips a boolean (or integer) tensor only, and your mask had become a floating-point tensor (by "
             ".half(), .float() or arithmetic). Keep the mask as the comparison gives it, torch.bool, for ~ and "
             "masked_fill; multiplying the weights by a boolean mask works as it is.")


def _hidden_weight(got, scores, valid_lens) -> float:
    """The largest weight the learner's result gives a key at a position >= valid_len (0 when none)."""
    hidden = ~_visible(scores, valid_lens).expand_as(scores)
    return float(got.detach().float().abs()[hidden].max()) if hidden.any() else 0.0


def _rows_off(got, scores, valid_lens) -> bool:
    # the hidden keys got weight 0, but the rows with visible keys do not sum to 1
    rows = got.detach().double().sum(-1)
    real = (valid_lens > 0)[:, None].expand_as(rows)
    return _hidden_weight(got, scores, valid_lens) <= 1e-5 and bool((rows[real] - 1).abs().max() > 1e-3)


def _rows_off_message(got, scores, valid_lens) -> str:
    rows = got.detach().double().sum(-1)[(valid_lens > 0)[:, None].expand(scores.shape[:2])]
    return _("the hidden keys got weight 0, but a row of visible weights sums to {total:.4g}, not 1: the hidden "
             "scores still took part in the softmax. Fill them with a very negative number (-1e6) *before* the "
             "softmax, so that exp() turns them into 0.").format(total=float(rows[(rows - 1).abs().argmax()]))


def _hidden_leaks(got, scores, valid_lens) -> bool:
    return _hidden_weight(got, scores, valid_lens) > 1e-5


def _hidden_leaks_message(got, scores, valid_lens) -> str:
    return _("a key at a position >= valid_len got weight {weight:.3g}; hidden keys must get exactly 0. Fill the "
             "hidden scores with a very negative number such as -1e6 (a fill like -10 still leaves them some weight "
             "next to large scores), and hide key j exactly when j >= valid_len.").format(
        weight=_hidden_weight(got, scores, valid_lens))


def _is_tensor_like(got, scores, valid_lens) -> bool:
    # weights of the right shape, in float32 or float64 (a float16 result is named by its dtype alone)
    return (isinstance(got, torch.Tensor) and got.shape == scores.shape
            and got.dtype in (torch.float32, torch.float64))


Q2_CASES = [
    (N_("batch=2, valid_lens=[2, 3] out of 4 keys"),
     (randn(2, 3, 4, seed=11), torch.tensor([2, 3]))),
    (N_("no padding (valid_lens = number of keys)"),
     (randn(2, 2, 5, seed=12), torch.tensor([5, 5]))),
    (N_("a sequence with valid_len 0 (its rows must be all zeros)"),
     (randn(3, 2, 4, seed=13), torch.tensor([0, 1, 4]))),
    (N_("a batch of 1 with a single key"),
     (randn(1, 3, 1, seed=14), torch.tensor([1]))),
    (N_("large scores (|s| up to ~30)"),
     (randn(2, 3, 6, seed=15, scale=10.0), torch.tensor([3, 6]))),
]

Q2_DIAGNOSES = [_ms_no_mask, _ms_after_softmax, _ms_wrong_axis, _ms_uniform_empty_rows,
                _ms_minus_inf, _ms_off_by_one, (_ms_lens_column, _ms_lens_column_message),
                # raised: valid_lens indexed or broadcast wrongly, float16
                (_mask_three_axes, _three_axes_message), *[(mask, _no_new_axes_message) for mask in _NO_NEW_AXES],
                (_ms_half_fill, _half_fill_message), (_ms_float_mask_invert, _float_mask_message),
                # near misses: what the numbers show when no known mistake matches exactly
                (Symptom(lambda got, s, v: _is_tensor_like(got, s, v) and _rows_off(got, s, v)), _rows_off_message),
                (Symptom(lambda got, s, v: _is_tensor_like(got, s, v) and _hidden_leaks(got, s, v)),
                 _hidden_leaks_message)]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_masked_softmax, Q2_CASES, Q2_DIAGNOSES)


q2 = Exercise(
    name=N_("Q2 (masked softmax)"),
    var="my_masked_softmax",
    forbidden=[(attention, "masked_softmax", "masked_softmax")],
    checker=_check_q2,
    hints=[
        N_("Build a boolean mask of shape (batch, 1, keys): key j is visible when j < valid_len. "
           "torch.arange(num_keys) compared with valid_lens[:, None, None] broadcasts to it."),
        N_("Before the softmax, replace the hidden scores by a very negative number "
           "(scores.masked_fill(~visible, -1e6)) so that exp() makes them 0."),
        N_("A row with valid_len 0 has every score replaced, so the softmax is uniform there: "
           "multiply the result by the mask (or masked_fill(~visible, 0.0)) to make it all zeros."),
    ],
    solution=N_('''
def my_masked_softmax(scores, valid_lens):
    # scores: (batch, queries, keys); valid_lens: (batch,)
    visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]  # (batch, 1, keys)
    weights = torch.softmax(scores.masked_fill(~visible, -1e6), dim=-1)
    return weights.masked_fill(~visible, 0.0)   # rows with valid_len 0 become all zeros
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the attention output
# ---------------------------------------------------------------------------------------

def _ref_output(Q, K, V, valid_lens):
    return dot_product_attention(Q, K, V, valid_lens)[0]


def _out_no_scale(Q, K, V, valid_lens):
    """you forgot the 1 / sqrt(d) scale on the scores."""
    return dot_product_attention(Q, K, V, valid_lens, scale=1.0)[0]


def _out_no_mask(Q, K, V, valid_lens):
    """you ignored valid_lens: padded keys must get weight 0 (use your masked softmax)."""
    return dot_product_attention(Q, K, V)[0]


def _out_weights_only(Q, K, V, valid_lens):
    """you returned the attention weights; the output is weights @ V."""
    return dot_product_attention(Q, K, V, valid_lens)[1]


def _out_uniform_empty_rows(Q, K, V, valid_lens):
    """a query whose keys are all padding (valid_len 0) must output the zero vector; yours
    averaged the padded values uniformly. Zero its weights."""
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return _ms_uniform_empty_rows(scores, valid_lens) @ V


def _out_k_times_v(Q, K, V, valid_lens):
    """there is no softmax in your computation: the weights are softmax(Q K^T / sqrt(d)), then multiply by V."""
    # "attention = Q times (K^T V)": skips the softmax entirely
    return Q @ (K.transpose(-2, -1) @ V) / math.sqrt(Q.shape[-1])


def _scores(Q, K): return Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])          # noqa: E704


def _on_scores(mistake):
    # a Q2 mistake (that raises) made on the scores inside Q3's attention output
    return lambda Q, K, V, valid_lens: mistake(_scores(Q, K), valid_lens)


def _out_lens_unsqueezed(Q, K, V, valid_lens):
    # valid_lens[:, None] handed to the package's masked_softmax, which adds the axes itself
    return masked_softmax(_scores(Q, K), valid_lens[:, None]) @ V


def _out_half_weights(Q, K, V, valid_lens):
    # weights in float16 (.half() on Q and K, or on the weights) times the float32 V
    return masked_softmax(_scores(Q.half(), K.half()), valid_lens) @ V


def _out_half_values(Q, K, V, valid_lens):
    # float32 weights times V.half()
    return masked_softmax(_scores(Q, K), valid_lens) @ V.half()


def _q3_message(message):
    # a Q2 message function, on the scores that Q and K make
    def q3_message(Q, K, V, valid_lens) -> str:
        return message(torch.empty(Q.shape[0], Q.shape[1], K.shape[1]), valid_lens)
    return q3_message


def _lens_unsqueezed_message(Q, K, V, valid_lens) -> str:
    return _("masked_softmax takes valid_lens as they come, shape ({batch},), and adds the new axes itself; yours "
             "had an extra axis (valid_lens[:, None] or .unsqueeze(-1)). Pass valid_lens unchanged.").format(
        batch=Q.shape[0])


def _half_matmul_message(Q, K, V, valid_lens) -> str:
    dtype = str(V.dtype).removeprefix("torch.")
    return _("your code mixed float16 and {dtype} in one product: a .half() made one side float16, and both sides "
             "of @ must have the same dtype. Q, K and V come as {dtype} and the output must be {dtype}: drop the "
             ".half() (float16 also keeps only about 3 significant digits).").format(dtype=dtype)


Q3_CASES = [
    (N_("batch=2, 3 queries, 4 keys, d=8, d_v=5, valid_lens=[2, 4]"),
     (randn(2, 3, 8, seed=21), randn(2, 4, 8, seed=22), randn(2, 4, 5, seed=23),
      torch.tensor([2, 4]))),
    (N_("cross-attention: 5 queries, 2 keys, d=1, valid_lens=[1, 2]"),
     (randn(2, 5, 1, seed=24), randn(2, 2, 1, seed=25), randn(2, 2, 3, seed=26),
      torch.tensor([1, 2]))),
    (N_("a sequence with valid_len 0 (its output must be the zero vector)"),
     (randn(2, 2, 4, seed=27), randn(2, 3, 4, seed=28), randn(2, 3, 4, seed=29),
      torch.tensor([0, 3]))),
    (N_("a batch of 1 with one query and one key"),
     (randn(1, 1, 6, seed=30), randn(1, 1, 6, seed=31), randn(1, 1, 2, seed=32),
      torch.tensor([1]))),
]

Q3_DIAGNOSES = [_out_no_scale, _out_no_mask, _out_uniform_empty_rows, _out_weights_only,
                _out_k_times_v,
                # raised: valid_lens indexed or broadcast wrongly, float16 mixed with float32
                *[(_on_scores(mistake), _q3_message(message)) for mistake, message in (
                    (_mask_three_axes, _three_axes_message), *[(mask, _no_new_axes_message) for mask in _NO_NEW_AXES],
                    (_ms_lens_column, _ms_lens_column_message), (_ms_half_fill, _half_fill_message))],
                (_out_lens_unsqueezed, _lens_unsqueezed_message),
                (_out_half_weights, _half_matmul_message), (_out_half_values, _half_matmul_message),
                # Q1's slips inside Q3: K.T on 3-D tensors, and the square root of the wrong size
                (lambda Q, K, V, valid_lens: _weights_dot_T(Q, K) @ V, message_of(_weights_dot_T)),
                (lambda Q, K, V, vl: masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(K.shape[1]), vl) @ V,
                 N_("you divided the scores by the square root of the number of keys, K.shape[1]; the scale is "
                    "1 / sqrt(d), d = Q.shape[-1], the length of one query or key vector."))]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_output, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (masked attention output)"),
    var="attention_output",
    checker=_check_q3,
    hints=[
        N_("Three steps: scores = Q K^T / sqrt(d); weights = masked softmax of the scores; "
           "output = weights @ V. The output has shape (batch, queries, d_v)."),
        N_("Reuse the masked softmax from Q2 (or bertcourse.attention.masked_softmax) for step 2."),
        N_("return masked_softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), valid_lens) @ V"),
    ],
    solution=N_('''
def attention_output(Q, K, V, valid_lens):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])   # (batch, queries, keys)
    weights = masked_softmax(scores, valid_lens)                 # padded keys get exactly 0
    return weights @ V                                           # (batch, queries, d_v)
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: parameters of multi-head attention
# ---------------------------------------------------------------------------------------

def _ref_param_count(d: int, heads: int, bias: bool) -> int:
    model = MultiHeadAttention(d, heads, bias=bias)
    return sum(p.numel() for p in model.parameters())


Q4_CASES = [(64, 4, True), (64, 1, True), (64, 16, False), (768, 12, True), (6, 3, False)]


Q4_DIAGNOSES = [
    (lambda d, h, b: h * 3 * d * d, N_("you used the heads × 3 × d² myth. The heads *split* d: each of "
                                     "the h heads has d/h columns of W_q, W_k, W_v, so together they "
                                     "are three d×d matrices whatever h is; add W_o.")),
    (lambda d, h, b: h * (3 * d * d + (3 * d if b else 0)),
     N_("you used the heads × 3 × d² myth with biases, (d² · 3 + d · 3) × heads, as the pitfall \"multi-head "
        "attention costs heads × 3 × d² parameters\" quotes it. The heads *split* d: together their W_q, W_k, W_v "
        "are three d×d matrices (3d biases) whatever h is; add W_o and its d biases.")),
    (lambda d, h, b: h * 4 * d * d + (4 * d * h if b else 0),
     N_("you multiplied by the number of heads. The heads share one d×d matrix per projection "
        "(each head gets d/h of its columns), so the count does not depend on h.")),
    (lambda d, h, b: 3 * d * d + (3 * d if b else 0),
     N_("you forgot the output projection W_o (a fourth d×d matrix, plus its bias).")),
    (lambda d, h, b: 4 * d * d + (4 * d * h if b else 0),
     N_("you counted the biases once per head: the heads split each projection's biases too, 4d in all for any h.")),
    (lambda d, h, b: 4 * d * d + (3 * d if b else 0), N_("you forgot W_o's d biases (with bias=True, 4d in all).")),
    (lambda d, h, b: 4 * d * d, N_("you forgot the biases: with bias=True each of the 4 projections "
                                   "also has d biases.")),
    (lambda d, h, b: 4 * d * d + 4 * d, N_("you counted biases when bias=False.")),
]


def _check_q4(answer) -> str:
    cases = [(f"d={d}, heads={h}, bias={b}", (d, h, b)) for d, h, b in Q4_CASES]
    run_cases(answer, _ref_param_count, cases, Q4_DIAGNOSES,
              prepare=lambda got, where, *args: as_number(got, where),
              compare=equal_values(N_("on {where}: expected {expected:,} parameters, got {got:,}")))
    return _("correct on all {n} cases (4·d² weights, +4·d biases, for any number of heads)").format(n=len(Q4_CASES))


q4 = Exercise(
    name=N_("Q4 (multi-head attention parameters)"),
    var="mha_param_count",
    checker=_check_q4,
    hints=[
        N_("Count the matrices: W_q, W_k, W_v project d -> d, and W_o projects the concatenated "
           "heads (d numbers) back to d."),
        N_("Splitting into heads only reshapes the d outputs of each projection into h groups of "
           "d/h; it adds no parameters. With biases, each projection also has d biases."),
    ],
    solution=N_('''
def mha_param_count(d, heads, bias):
    # four d x d projections (W_q, W_k, W_v, W_o); the heads only split their columns
    return 4 * d * d + (4 * d if bias else 0)
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — attention entropy without the scale
# ---------------------------------------------------------------------------------------

Q5_D, Q5_KEYS = 256, 16
"""The width and the number of keys of q5's experiment."""
Q5_TOLERANCE = 0.1
"""How far (in nats) a prediction of q5 may be from the measured entropy."""


def mean_attention_entropy(d: int, scaled: bool = True, num_keys: int = Q5_KEYS,
                           num_queries: int = 1000, seed: int = 0) -> float:
    """The experiment of q5: the mean entropy (nats) of the attention weights of
    ``num_queries`` random queries, each over ``num_keys`` random keys, all with independent
    N(0, 1) components in ``d`` dimensions; with the ``1/sqrt(d)`` scale (``scaled=True``)
    or without it (``scale=1``). Seeded: the same number on every run."""
    check_positive_int("d", d)
    check_bool("scaled", scaled)
    check_positive_int("num_keys", num_keys)
    check_positive_int("num_queries", num_queries)
    check_positive_int("seed", seed, allow_zero=True)
    g = seeded(seed)
    queries = randn(num_queries, 1, d, seed=g)            # (batch, 1 query, d)
    keys = randn(num_queries, num_keys, d, seed=g)        # (batch, keys, d)
    _output, weights = dot_product_attention(queries, keys, keys, scale=None if scaled else 1.0)
    return entropy(weights).mean().item()                 # (batch, 1) rows -> their mean


@functools.lru_cache(maxsize=None)
def _q5_measured() -> tuple[float, float]:
    return mean_attention_entropy(Q5_D, scaled=False), mean_attention_entropy(Q5_D, scaled=True)


def _check_q5(answer) -> str:
    guess = predicted_number(answer, "prediction", -math.inf, math.inf, _("a number (nats), e.g. 1.5"))
    uniform = math.log(Q5_KEYS)
    if not 0.0 <= guess <= uniform + 1e-9:
        raise CheckFailed(_("an entropy over {keys} keys lies between 0 (all the weight on one key) and "
                            "ln {keys} = {uniform:.2f} (uniform weights), got {guess:g}.").format(
            keys=Q5_KEYS, uniform=uniform, guess=guess))
    unscaled, scaled = _q5_measured()
    if guess > unscaled + Q5_TOLERANCE:
        why = (_("you predicted about what the scaled softmax gives (or uniform weights). ") if guess > 1.8 else
               _("the softmax saturates further than that. "))
        raise CheckFailed(_(
            "too high: {why}Without the 1/sqrt(d), q·k has variance d = {d} (standard deviation "
            "{sd:.0f}), so the best of {keys} scores usually beats the runner-up by several "
            "units, and exp() turns a gap of a few units into a factor of tens or hundreds: almost all the "
            "weight lands on one key. Run the experiment below to see how far it falls.").format(
            why=why, d=Q5_D, sd=math.sqrt(Q5_D), keys=Q5_KEYS))
    if guess < unscaled - Q5_TOLERANCE:
        raise CheckFailed(_(
            "too low: the unscaled softmax is close to one-hot, but not there yet. In many rows the best "
            "and second-best scores are close, and those rows keep a real share of entropy; the mean over "
            "all rows stays clearly above 0 (see the 'max weight, unscaled' column in section 2)."))
    return _("you said {guess:.2f} nats; the experiment gives {unscaled:.2f} without the scale, against "
             "{scaled:.2f} with it (uniform: ln {keys} = {uniform:.2f}). Without 1/sqrt(d) the softmax "
             "saturates: nearly one key per query, and gradients close to 0.").format(
        guess=guess, unscaled=unscaled, scaled=scaled, keys=Q5_KEYS, uniform=uniform)


q5 = Exercise(
    name=N_("Q5 (predict: attention entropy without the scale)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("The entropy of weights over {keys} keys is 0 when all the weight is on one key and "
           "ln {keys} ≈ 2.77 when it is uniform. With the scale it stays near 2.4 nats for every d."),
        N_("Section 2's table: without the scale, the mean largest weight at d = {d} is about 0.9. That "
           "mean mixes rows that are practically one-hot (entropy near 0) with rows where two keys nearly tie."),
        N_("A row split 0.5 / 0.5 between two keys has entropy ln 2 ≈ 0.69; a row with 0.99 on one key about "
           "0.06. If about a quarter of the rows are near-ties and the rest practically one-hot, the mean is ..."),
    ],
    solution=N_('''
# Without 1/sqrt(d), q·k has variance d = 256 (standard deviation 16): the best of 16 keys
# usually beats the runner-up by several units, and the softmax puts ~90 % or more on it.
# The mean entropy falls from about 2.4 nats (scaled, at every d) to about 0.2 nats; it
# roughly halves each time d quadruples (like 1/sqrt(d)).
prediction = 0.2
'''),
    fields={"keys": Q5_KEYS, "d": Q5_D},
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 1)"), [
    Question(
        N_("Section 2 measured the softmax over 16 random keys: at d = 512 its largest weight averaged 0.946 "
           "without the 1/√d scale and 0.247 with it. Why does the unscaled softmax saturate as d grows?"),
        options=(
            Option(N_("Wider random vectors are more alike, so the query finds a matching key more often."),
                   why=N_("The queries and keys are independent random draws: no key matches the query better at "
                          "d = 512 than at d = 4. What grows with d is the spread of the scores.")),
            Option(N_("The variance of q · k grows like d, so the scores spread over several √d and the largest "
                      "one takes almost all the weight."),
                   why=N_("Var(q · k) = d for unit-variance components (measured: Var(q · k) / d between 0.993 and "
                          "1.034). Dividing by √d brings it back to 1, and the largest scaled weight stayed between "
                          "0.2 and 0.3 at every width. A saturated softmax has gradients close to 0."), correct=True),
            Option(N_("A wider model compares the query with more keys."),
                   why=N_("There were 16 keys at every width; only d changed. The score of each key got a larger "
                          "variance, not the number of keys.")),
            Option(N_("Float32 rounding: large dot products lose precision."),
                   why=N_("Scores of size √512 ≈ 23 are far from float32's limits, and the largest unscaled weight "
                          "grew steadily from d = 2 (0.308) on. The softmax's exponential amplifies a wider spread "
                          "of the scores.")),
        )),
    Question(
        N_("Section 3 hid all 4 keys of one query. What did the softmax give when the hidden scores were filled "
           "with the finite number -10⁶?"),
        options=(
            Option(N_("NaN in every weight."),
                   why=N_("That was the fill with -∞: softmax(-∞, …, -∞) = 0/0 = NaN, which poisons everything "
                          "downstream. A finite fill never divides by zero.")),
            Option(N_("Uniform weights, 0.25 on each key: the query averages the padding."),
                   why=N_("Four equal scores give four equal weights, so the output is the mean of the padded "
                          "values, without an error to warn you. bertcourse gives such a row all-zero weights "
                          "instead, so its output is the zero vector."), correct=True),
            Option(N_("All-zero weights, so the output is the zero vector."),
                   why=N_("That is bertcourse's decision, made on purpose for a query with no visible key. A plain "
                          "softmax of finite scores always sums to 1.")),
            Option(N_("All the weight on the first key."),
                   why=N_("Equal scores give equal weights: no score is larger than the others, so no key takes all "
                          "the weight.")),
        )),
    Question(
        N_("Section 4 counted the parameters of MultiHeadAttention(64, heads, bias=True) for 1, 2, 4, 8 and 16 heads. "
           "What did the count do?"),
        options=(
            Option(N_("It grew in proportion to the number of heads."),
                   why=N_("That is the myth of the pitfall \"multi-head attention costs heads × 3 × d² "
                          "parameters\": for BERT-base it gives 21,233,664, about 9 times the 2,362,368 of every model "
                          "summary. Each head works in d/h dimensions, not d.")),
            Option(N_("It fell as the heads got narrower."),
                   why=N_("The heads get narrower but more numerous: h matrices of d × d/h make d² weights per "
                          "projection whatever h is.")),
            Option(N_("It stayed at 16,640 = 4d² + 4d for every number of heads."),
                   why=N_("Splitting into heads is only a reshape: the h matrices W_q^(i) side by side form one d × d "
                          "matrix. Four projections (W_q, W_k, W_v, W_o) of d² weights and d biases each, whatever "
                          "h is."), correct=True),
            Option(N_("It stayed at 3d² + 3d, for the queries, keys and values."),
                   why=N_("That forgets the output projection W_o, a fourth d × d matrix: 4 · 64² + 4 · 64 = 16,640.")),
        )),
    Question(
        N_("In the pitfall \"a padding mask with the wrong meaning in nn.MultiheadAttention\", bertcourse's mask "
           "(True = attend) went to nn.MultiheadAttention as key_padding_mask. What happened?"),
        options=(
            Option(N_("An error about the mask's meaning."),
                   why=N_("Both masks are boolean (batch, keys) tensors: PyTorch cannot know which meaning was meant, "
                          "and runs without a complaint.")),
            Option(N_("Nothing: a boolean mask is a boolean mask."),
                   why=N_("key_padding_mask means True = ignore, the opposite of bertcourse's True = attend: the "
                          "outputs changed, and one sequence became NaN.")),
            Option(N_("The padded sequence put all its weight on the padding, and the sequence without padding "
                      "became NaN."),
                   why=N_("The mask is inverted: the real tokens are hidden and the padding visible (weight 1 on the "
                          "padding for every query). A sequence without padding has every key hidden, which gives "
                          "NaN. Fix: key_padding_mask=~visible."), correct=True),
            Option(N_("Only the padded sequence changed; the one without padding came out right."),
                   why=N_("Without padding, the inverted mask is True at every key: every key is ignored, and the "
                          "output of that sequence was NaN.")),
        )),
    Question(
        N_("Section 5 let FlopCounterMode count a whole self-attention layer (12 heads, projections included) at "
           "n = 128, d = 768. How many million multiply-adds did it count?"),
        answer=327.2, tolerance=10,
        why=N_("4nd² = 302.0 M for the projections W_q, W_k, W_v, W_o plus 2n²d = 25.2 M for the pairwise part: more "
               "than the RNN layer's 151.0 M. What self-attention buys is parallelism and short paths, not fewer "
               "operations."),
        why_low=N_("Too low: 12.6 M is the table's n²d row, which counts only the pairwise comparison. The four "
                   "projections alone cost 4nd² = 302.0 M, over 90 % of the layer."),
        why_high=N_("Too high: the layer is its four projections, 4nd² = 302.0 M, plus the pairwise part, "
                    "2n²d = 25.2 M. (The CNN layer with k = 3 counted 226.5 M, the RNN layer 151.0 M.)")),
])
