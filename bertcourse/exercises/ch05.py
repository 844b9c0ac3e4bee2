"""Chapter 5 exercises: masked language modelling.

In the notebook::

    from bertcourse.exercises.ch05 import q1, q2, q3, q4, q5

* ``q1`` — ``num_predictions(num_candidates, mask_prob)``: how many tokens are chosen
  (15 % rounded half up, at least one).
* ``q2`` — ``apply_80_10_10(labels, u, random_ids, mask_id)``: what the chosen tokens
  become, given one uniform number per chosen token.
* ``q3`` — ``weighted_mlm_loss(logits, labels, weights)``: the MLM loss over the real
  predictions only.
* ``q4`` — ``gather_predictions(X, pred_positions)``: the hidden states the MLM head reads.
* ``q5`` — ``prediction``: *before* running the experiment, predict what share of the chosen
  positions still see both neighbours (neither is ``[MASK]``) when 40 % of the tokens are
  chosen instead of 15 %. The check runs the experiment itself
  (:func:`both_neighbours_visible`).

The references are the package's own :func:`bertcourse.data.num_mlm_preds`, the rule
inside :func:`bertcourse.data.mask_tokens` (``tests/test_exercises_ch05.py`` replays
``mask_tokens``' random draws to show that :func:`_ref_apply` is that rule),
:func:`bertcourse.pretrain.mlm_loss` and :meth:`bertcourse.bert.MaskLM.gather`.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ..bert import MaskLM
from ..data import generate_corpus, get_tokenizer, mask_tokens, num_mlm_preds
from ..pretrain import mlm_loss
from ..i18n import gettext as _, gettext_noop as N_
from ..utils import cached
from .core import (CheckFailed, Exercise, as_number, check_finite_number, check_positive_int, equal_values,
                   predicted_number, randn, run_cases, seeded)

__all__ = ["q1", "q2", "q3", "q4", "q5", "both_neighbours_visible", "Q5_MASK_PROB", "Q5_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: how many predictions
# ---------------------------------------------------------------------------------------

def _ref_num_predictions(num_candidates: int, mask_prob: float = 0.15) -> int:
    return num_mlm_preds(num_candidates, mask_prob)


# (num_candidates, mask_prob); chosen so that floor(p * n + 0.5) has no floating-point trap
Q1_CASES = [(20, 0.15), (100, 0.15), (13, 0.15), (10, 0.15), (30, 0.15), (3, 0.15), (1, 0.15),
            (7, 0.15), (10, 0.25), (5, 0.5), (61, 0.15)]

Q1_DIAGNOSES = [
    (lambda n, p: max(1, round(p * n)),
     N_("Python's round() rounds halves to the nearest EVEN number (round(4.5) = 4, round(2.5) = 2); "
        "the rule here rounds halves up: floor(x + 0.5).")),
    (lambda n, p: math.floor(p * n + 0.5),
     N_("every sequence needs at least one prediction: when 0.15 · n rounds to 0, choose 1.")),
    (lambda n, p: round(p * n),
     N_("two things: round() rounds halves to even, and a sequence needs at least one prediction.")),
    (lambda n, p: max(1, int(p * n)),
     N_("int() cuts the fraction off (1.95 -> 1); round to the nearest integer, halves up.")),
    (lambda n, p: max(1, math.ceil(p * n)), N_("ceil() always rounds up (1.05 -> 2); round to the nearest, halves up.")),
]


def _q1_cases() -> list:
    return [(f"num_candidates={n}, mask_prob={p} (p · n = {p * n:.4g})", (n, p)) for n, p in Q1_CASES]


def _check_q1(answer) -> str:
    run_cases(answer, _ref_num_predictions, _q1_cases(), Q1_DIAGNOSES,
              prepare=lambda got, where, *args: int(as_number(got, where, whole=True)),
              compare=equal_values(N_("on {where}: expected {expected}, got {got}")))
    return _("correct on all {n} cases (halves round up, at least one prediction)").format(n=len(Q1_CASES))


q1 = Exercise(
    name=N_("Q1 (number of predictions)"),
    var="num_predictions",
    checker=_check_q1,
    hints=[
        N_("Multiply: x = mask_prob * num_candidates, then round x to the nearest whole number."),
        N_("Round halves UP: math.floor(x + 0.5). Python's round(4.5) gives 4 (halves to even)."),
        N_("A sequence always gets at least one prediction: max(1, ...)."),
    ],
    solution=N_('''
def num_predictions(num_candidates, mask_prob=0.15):
    x = mask_prob * num_candidates
    return max(1, math.floor(x + 0.5))     # halves round up; at least one prediction
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: what a chosen token becomes
# ---------------------------------------------------------------------------------------

def _ref_apply(labels, u, random_ids, mask_id):
    """The 80 / 10 / 10 rule of :func:`bertcourse.data.mask_tokens`, for given draws."""
    return torch.where(u < 0.8, torch.full_like(labels, mask_id),
                       torch.where(u < 0.9, random_ids, labels))


def _apply_pitfall(labels, u, random_ids, mask_id):
    """no token ever becomes a random one: once u < 0.8 is false, u is at least 0.8, so a
    test like u < 0.1 is never true. The bands are [0, 0.8) [MASK], [0.8, 0.9) random,
    [0.9, 1) unchanged."""
    # "random with probability 0.1" tested on the same u: never true once u >= 0.8
    return torch.where(u < 0.8, torch.full_like(labels, mask_id), torch.where(u < 0.1, random_ids, labels))


def _apply_swapped(labels, u, random_ids, mask_id):
    """you swapped the last two bands: here [0.8, 0.9) is the random token and [0.9, 1) keeps
    the original (the shares would be the same, but the check compares token by token)."""
    return torch.where(u < 0.8, torch.full_like(labels, mask_id), torch.where(u < 0.9, labels, random_ids))


def _apply_inclusive(labels, u, random_ids, mask_id):
    """check the boundaries: u = 0.8 exactly is a random token and u = 0.9 exactly keeps the
    original (use u < 0.8 and u < 0.9)."""
    return torch.where(u <= 0.8, torch.full_like(labels, mask_id), torch.where(u <= 0.9, random_ids, labels))


def _apply_always_mask(labels, u, random_ids, mask_id):
    """every chosen token became [MASK]; only u < 0.8 does (80 %)."""
    return torch.full_like(labels, mask_id)


def _apply_10_80_10(labels, u, random_ids, mask_id):
    """only u < 0.8 becomes [MASK] (80 %), then [0.8, 0.9) random, [0.9, 1) unchanged."""
    return torch.where(u < 0.1, torch.full_like(labels, mask_id), torch.where(u < 0.9, random_ids, labels))


def _q2_case(k: int, seed: int, vocab: int = 50):
    g = seeded(seed)
    labels = torch.randint(5, vocab, (k,), generator=g)
    return labels, torch.rand(k, generator=g), torch.randint(5, vocab, (k,), generator=g), 4


_BOUNDARY_U = torch.tensor([0.0, 0.5, 0.7999, 0.8, 0.85, 0.8999, 0.9, 0.95, 0.9999])

Q2_CASES = [
    (N_("u at and around the thresholds 0.8 and 0.9"),
     (torch.arange(10, 19), _BOUNDARY_U, torch.arange(30, 39), 4)),
    (N_("60 chosen tokens with random u"), _q2_case(60, 1)),
    (N_("one chosen token, u = 0.83"), (torch.tensor([17]), torch.tensor([0.83]), torch.tensor([9]), 4)),
    (N_("a random token that happens to be the original one"),
     (torch.tensor([7, 8]), torch.tensor([0.86, 0.86]), torch.tensor([7, 20]), 4)),
    (N_("another mask id (103, as in bert-base-uncased)"),
     (torch.tensor([2000, 2001, 2002]), torch.tensor([0.1, 0.82, 0.93]), torch.tensor([999, 998, 997]), 103)),
]

Q2_DIAGNOSES = [_apply_pitfall, _apply_swapped, _apply_inclusive, _apply_always_mask,
                _apply_10_80_10]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_apply, Q2_CASES, Q2_DIAGNOSES, atol=0)


q2 = Exercise(
    name=N_("Q2 (the 80 / 10 / 10 rule)"),
    var="apply_80_10_10",
    checker=_check_q2,
    hints=[
        N_("One uniform number u per chosen token decides: u < 0.8 -> mask_id; 0.8 <= u < 0.9 -> "
           "the random id; u >= 0.9 -> the original label."),
        N_("torch.where(condition, a, b) picks a where the condition holds, else b; nest two of them."),
        N_("torch.where(u < 0.8, mask_id, torch.where(u < 0.9, random_ids, labels)) — with "
           "torch.full_like(labels, mask_id) for the first branch if your torch wants a tensor."),
    ],
    solution=N_('''
def apply_80_10_10(labels, u, random_ids, mask_id):
    # labels, u, random_ids: (num_preds,)
    masked = torch.full_like(labels, mask_id)
    return torch.where(u < 0.8, masked,                      # 80 %: [MASK]
                       torch.where(u < 0.9, random_ids,      # 10 %: a random token
                                   labels))                  # 10 %: unchanged
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: the weighted MLM loss
# ---------------------------------------------------------------------------------------

def _ref_loss(logits, labels, weights):
    return mlm_loss(logits, labels, weights)


def _per_slot(logits, labels):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           reduction="none").reshape(labels.shape)


def _loss_pitfall(logits, labels, weights):
    """your loss is the plain mean over every slot, padding included. Multiplying a
    reduction='mean' loss by the weights does not help: the mean already contains the
    padded slots, and (mean · w).sum() / w.sum() is that same mean. Use reduction='none'
    (one loss per slot), then weight, sum and divide."""
    mean = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    return (mean * weights).sum() / weights.sum().clamp(min=1e-8)


def _loss_sum(logits, labels, weights):
    """you summed the weighted losses but did not divide by the sum of the weights."""
    return (_per_slot(logits, labels) * weights).sum()


def _loss_per_slot_count(logits, labels, weights):
    """divide by the sum of the weights (the number of real predictions), not by the number
    of slots."""
    return (_per_slot(logits, labels) * weights).sum() / weights.numel()


def _loss_mean_of_sequences(logits, labels, weights):
    """you averaged each sequence first, then the sequences: every real prediction must count
    equally, so sum over the whole batch and divide once by the total weight."""
    per_seq = (_per_slot(logits, labels) * weights).sum(1) / weights.sum(1).clamp(min=1e-8)
    return per_seq.mean()


def _loss_nan_when_empty(logits, labels, weights):
    """with every weight 0 the sum of the weights is 0 and you divided by it (NaN); divide by
    weights.sum().clamp(min=1e-8) so the loss is 0."""
    return (_per_slot(logits, labels) * weights).sum() / weights.sum()


def _q3_case(batch: int, preds: int, vocab: int, weights, seed: int):
    g = seeded(seed)
    logits = randn(batch, preds, vocab, seed=g, scale=2.0)
    labels = torch.randint(0, vocab, (batch, preds), generator=g)
    return logits, labels, torch.as_tensor(weights, dtype=torch.float32)


Q3_CASES = [
    (N_("batch=2, 4 slots, vocab 7, padded slots (weights [[1,1,1,0],[1,0,0,0]])"),
     _q3_case(2, 4, 7, [[1, 1, 1, 0], [1, 0, 0, 0]], 1)),
    (N_("no padding (all weights 1)"), _q3_case(3, 2, 11, [[1, 1], [1, 1], [1, 1]], 2)),
    (N_("one sequence with one prediction"), _q3_case(1, 1, 5, [[1]], 3)),
    (N_("fractional weights"), _q3_case(2, 3, 6, [[0.5, 1.0, 0.0], [1.5, 0.25, 1.0]], 4)),
    (N_("no real prediction at all (every weight 0: the loss is 0, not NaN)"),
     _q3_case(2, 2, 4, [[0, 0], [0, 0]], 5)),
]

Q3_DIAGNOSES = [_loss_pitfall, _loss_sum, _loss_per_slot_count, _loss_mean_of_sequences,
                _loss_nan_when_empty]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_loss, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (the weighted MLM loss)"),
    var="weighted_mlm_loss",
    checker=_check_q3,
    hints=[
        N_("logits are (batch, max_preds, vocab), labels and weights (batch, max_preds). Get one "
           "cross-entropy per slot: F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), "
           "reduction='none')."),
        N_("Multiply each slot's loss by its weight, sum, and divide by the sum of the weights."),
        N_("Guard the division: weights.sum().clamp(min=1e-8), so a batch without predictions gives 0."),
    ],
    solution=N_('''
def weighted_mlm_loss(logits, labels, weights):
    vocab = logits.shape[-1]
    per_slot = F.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), reduction="none")
    w = weights.reshape(-1)
    return (per_slot * w).sum() / w.sum().clamp(min=1e-8)
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: gather the hidden states at the prediction positions
# ---------------------------------------------------------------------------------------

def _ref_gather(X, pred_positions):
    return MaskLM.gather(X, pred_positions)


def _gather_cross(X, pred_positions):
    """X[:, pred_positions] gives every sequence the positions of every sequence (shape
    (batch, batch, num_preds, hidden)). Sequence b must use its own row pred_positions[b]:
    X[torch.arange(batch)[:, None], pred_positions]."""
    return X[:, pred_positions]


def _gather_first_row(X, pred_positions):
    """you used the first sequence's positions for the whole batch; sequence b has its own
    row pred_positions[b]."""
    return X[:, pred_positions[0]]


def _q4_case(batch: int, seq: int, hidden: int, positions, seed: int):
    return (randn(batch, seq, hidden, seed=seed), torch.tensor(positions))


Q4_CASES = [
    (N_("batch=2, seq=6, hidden=4, 3 predictions each"), _q4_case(2, 6, 4, [[1, 3, 4], [2, 2, 5]], 1)),
    (N_("padding slots at position 0"), _q4_case(3, 5, 2, [[1, 0], [4, 0], [2, 3]], 2)),
    (N_("a batch of one"), _q4_case(1, 4, 3, [[3, 1]], 3)),
    (N_("one prediction per sequence"), _q4_case(4, 3, 5, [[1], [2], [0], [1]], 4)),
]

Q4_DIAGNOSES = [_gather_cross, _gather_first_row]


def _check_q4(answer) -> str:
    return run_cases(answer, _ref_gather, Q4_CASES, Q4_DIAGNOSES)


q4 = Exercise(
    name=N_("Q4 (gather the prediction positions)"),
    var="gather_predictions",
    checker=_check_q4,
    hints=[
        N_("The result is (batch, num_preds, hidden): out[b, i] = X[b, pred_positions[b, i]]."),
        N_("Advanced indexing with two index tensors that broadcast: a (batch, 1) column of batch "
           "indices and the (batch, num_preds) positions."),
        N_("X[torch.arange(X.shape[0])[:, None], pred_positions]"),
    ],
    solution=N_('''
def gather_predictions(X, pred_positions):
    # X: (batch, seq, hidden), pred_positions: (batch, num_preds)
    batch_idx = torch.arange(X.shape[0])[:, None]            # (batch, 1), broadcasts
    return X[batch_idx, pred_positions]                      # (batch, num_preds, hidden)
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — how much context is left at a 40 % masking rate?
# ---------------------------------------------------------------------------------------

Q5_MASK_PROB = 0.4
"""The masking rate of q5's experiment (BERT's is 0.15)."""
Q5_TOLERANCE = 0.1


@functools.lru_cache(maxsize=None)
def _held_out_pairs(seed: int) -> tuple:
    """Every pair of consecutive held-out sentences as ``[CLS] A [SEP] B [SEP]`` ids."""
    corpus, vocab = generate_corpus(seed), get_tokenizer(seed).vocab
    tok = get_tokenizer(seed)
    pairs = [(p[i], p[i + 1]) for p in corpus.held_out for i in range(len(p) - 1)]
    ids_a, ids_b = tok.encode_batch([a for a, _ in pairs]), tok.encode_batch([b for _, b in pairs])
    return tuple((vocab.cls_id, *a, vocab.sep_id, *b, vocab.sep_id) for a, b in zip(ids_a, ids_b))


@cached     # lru_cache, but a wrong (even unhashable) argument reaches the checks below
def both_neighbours_visible(mask_prob: float, seed: int = 0) -> float:
    """The experiment of q5: mask every pair of consecutive held-out sentences
    (``[CLS] A [SEP] B [SEP]``, about 700 pairs) once with :func:`bertcourse.data.mask_tokens`
    at ``mask_prob`` (a seeded generator), and return the share of the chosen positions
    whose left *and* right neighbours are both not ``[MASK]`` in the model's input."""
    check_finite_number("mask_prob", mask_prob, low=0, high=1, low_open=True, high_open=True)
    check_positive_int("seed", seed, allow_zero=True)
    vocab = get_tokenizer(seed).vocab
    g = seeded(seed)
    seen = total = 0
    for seq in _held_out_pairs(seed):
        masked = mask_tokens(list(seq), vocab, mask_prob, generator=g)
        is_mask = masked.ids == vocab.mask_id                       # (seq,)
        for p in masked.pred_positions.tolist():                    # never [CLS] or [SEP]: 0 < p < len - 1
            seen += not (is_mask[p - 1] or is_mask[p + 1])
            total += 1
    return seen / total


def _check_q5(answer) -> str:
    guess = predicted_number(answer, "prediction", 0.0, 1.0, _("a share between 0 and 1, e.g. 0.5"),
                             _("a share between 0 and 1 (0.5 for half)"))
    measured, at_bert = both_neighbours_visible(Q5_MASK_PROB), both_neighbours_visible(0.15)
    if guess > measured + Q5_TOLERANCE:
        raise CheckFailed(_(
            "too high: at {rate:.0f} % each ordinary neighbour is itself chosen {rate:.0f} % of the "
            "time, and 80 % of the chosen ones become [MASK]. Both neighbours must escape that, and a token "
            "has two of them.").format(rate=100 * Q5_MASK_PROB))
    if guess < measured - Q5_TOLERANCE:
        raise CheckFailed(_(
            "too low: only the chosen neighbours that become [MASK] count (80 % of them: 10 % are random "
            "tokens and 10 % stay, and both still look like words), and the neighbours [CLS] and [SEP] are "
            "never chosen."))
    return _("you said {guess:.2f}; at {rate:.0f} % masking {measured:.2f} of the chosen positions see both "
             "neighbours, against {at_bert:.2f} at BERT's 15 %. More predictions per sentence, but each with "
             "less context to predict from: the trade-off behind the 15 %.").format(
        guess=guess, rate=100 * Q5_MASK_PROB, measured=measured, at_bert=at_bert)


q5 = Exercise(
    name=N_("Q5 (predict: context left at a 40 % masking rate)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Take one chosen token and look at its left neighbour. If it is an ordinary token, it was chosen "
           "too with probability about {mask_prob}, and a chosen token becomes [MASK] with probability 0.8."),
        N_("So one neighbour shows [MASK] with probability about 0.4 × 0.8 = 0.32, and both neighbours must "
           "avoid it. Then correct a little upwards: [CLS] and [SEP] are neighbours that are never masked."),
    ],
    solution=N_('''
# A neighbour shows [MASK] when it was chosen (40 %) and then masked (80 %): about 0.32.
# Both neighbours avoid it with probability about (1 - 0.32)² ≈ 0.46; [CLS] and [SEP],
# which are never chosen, are the neighbours of many tokens, so the share is a bit higher.
prediction = 0.5
'''),
    fields={"mask_prob": Q5_MASK_PROB},
)
