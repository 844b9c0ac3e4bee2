"""Chapter 5 exercises: masked language modelling.

In the notebook::

    from bertcourse.exercises.ch05 import q1, q2, q3, q4, q5, quiz

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
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

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

from .. import bert, pretrain
from ..bert import MaskLM
from ..data import generate_corpus, get_tokenizer, mask_tokens, num_mlm_preds
from ..pretrain import mlm_loss
from ..i18n import gettext as _, gettext_noop as N_
from ..utils import cached
from .core import (CheckFailed, Exercise, Symptom, as_number, check_finite_number, check_positive_int,
                   equal_values, message_of, randn, run_cases, seeded)
from .guesses import predicted_number
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "both_neighbours_visible", "Q5_MASK_PROB", "Q5_TOLERANCE"]


# ---------------------------------------------------------------------------------------
# Q1: how many predictions
# ---------------------------------------------------------------------------------------

def _ref_num_predictions(num_candidates: int, mask_prob: float = 0.15) -> int:
    return num_mlm_preds(num_candidates, mask_prob)


# (num_candidates, mask_prob); chosen so that floor(p * n + 0.5) has no floating-point trap
Q1_CASES = [(20, 0.15), (100, 0.15), (13, 0.15), (10, 0.15), (30, 0.15), (3, 0.15), (1, 0.15),
            (7, 0.15), (10, 0.25), (5, 0.5), (61, 0.15)]

Q1_DIAGNOSES = [
    # first: on mask_prob=0.25 and 0.5 a fixed 0.15 can land on what the round() mistake gives
    (lambda n, p: max(1, math.floor(0.15 * n + 0.5)),
     N_("you used 0.15 whatever mask_prob is: the share is the argument mask_prob (0.15 is only its "
        "default).")),
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
    """no token ever becomes a random one: once u < 0.8 is false, u is at least 0.8, so a test like u < 0.1 is never
    true. The bands are [0, 0.8) [MASK], [0.8, 0.9) random, [0.9, 1) kept."""
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
    """only u < 0.8 becomes [MASK] (80 %), then [0.8, 0.9) random, [0.9, 1) kept."""
    return torch.where(u < 0.1, torch.full_like(labels, mask_id), torch.where(u < 0.9, random_ids, labels))


_BANDS = (N_("[MASK]"), N_("random-token"), N_("kept"))


def _first_slip(got, labels, u, random_ids, mask_id):
    """A near miss of the bands: the results follow the case's bands in order as u grows, every
    one of them, but a threshold is off. Returns the first chosen token (by u) whose result is
    another band's outcome, as (u, its band, the band of u), bands numbered as in _BANDS; else None."""
    if not isinstance(got, torch.Tensor) or got.shape != labels.shape:
        return None
    fits = torch.stack([got == mask_id, got == random_ids, got == labels])        # (3, k)
    bands = _ref_apply(torch.full_like(labels, 2), u, torch.full_like(labels, 1), 0)   # the band of each u
    slip, last, seen = None, 0, set()
    for i in u.argsort().tolist():
        fitting = [b for b in range(last, 3) if fits[b, i]]
        if not fitting:             # another outcome, or the bands out of order: not a near miss
            return None
        last = fitting[0]
        seen.add(last)
        if slip is None and not fits[bands[i], i]:
            slip = (u[i].item(), last, int(bands[i]))
    return slip if seen == set(bands.tolist()) else None


_near_miss = Symptom(lambda got, *args: _first_slip(got, *args) is not None)


def _off_the_mistake(got, mistake, labels, u, random_ids, mask_id):
    """Where the learner's result differs from the named ``mistake``'s (a boolean per chosen token),
    or None when it is no result of the right shape."""
    if not isinstance(got, torch.Tensor) or got.shape != labels.shape:
        return None
    return got != mistake(labels, u, random_ids, mask_id)


def _beside(mistake) -> Symptom:
    # a near miss of a named band mistake: the learner's result is `mistake`'s except where u lies exactly on a
    # threshold, 0.8 or 0.9 (e.g. u > 0.9 where the swapped bands have u >= 0.9). (A comment, not a docstring:
    # the docstrings of the functions named in *_DIAGNOSES are messages for the learner.)
    def predicate(got, labels, u, random_ids, mask_id) -> bool:
        off = _off_the_mistake(got, mistake, labels, u, random_ids, mask_id)
        return off is not None and bool(off.any()) and bool(((u == 0.8) | (u == 0.9))[off].all())
    return Symptom(predicate)


def _beside_message(mistake):
    # the mistake's message, and the first threshold where the learner's result is not the mistake's
    def message(got, labels, u, random_ids, mask_id) -> str:
        first = int(torch.nonzero(_off_the_mistake(got, mistake, labels, u, random_ids, mask_id))[0])
        band = int(_ref_apply(torch.full_like(labels, 2), u, torch.full_like(labels, 1), 0)[first])
        return _("{mistake} Mind the boundary as well: each band includes its lower end, so u = {u:.4g} exactly "
                 "belongs to the {band} band.").format(mistake=message_of(mistake), u=u[first].item(),
                                                        band=_(_BANDS[band]))
    return message


def _band_message(got, labels, u, random_ids, mask_id) -> str:
    value, band, expected = _first_slip(got, labels, u, random_ids, mask_id)
    if band < expected:
        return _("the {band} band is too wide: u = {u:.4g} fell in it, but that draw belongs to a later band. "
                 "Check the threshold where the {band} band ends.").format(band=_(_BANDS[band]), u=value)
    return _("the {band} band is too narrow: u = {u:.4g} belongs to it, but your code gave it a later band's "
             "outcome. Check the threshold where the {band} band ends.").format(band=_(_BANDS[expected]), u=value)


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
                _apply_10_80_10,
                # a named mistake but for u exactly on a threshold: its name, and a nudge about the boundary
                *[(_beside(mistake), _beside_message(mistake)) for mistake in (_apply_swapped, _apply_10_80_10,
                                                                               _apply_pitfall)],
                # last: a near miss of the bands' thresholds, told which band is off and which way
                (_near_miss, _band_message)]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_apply, Q2_CASES, Q2_DIAGNOSES, atol=0, integers=True)   # token ids


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
                                   labels))                  # 10 %: kept
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
    """your loss is the plain mean over every slot, padding included. Multiplying a reduction='mean' loss by the weights
    does not help: the mean already contains the padded slots, and (mean · w).sum() / w.sum() is that same mean. Use
    reduction='none' (one loss per slot), then weight, sum and divide."""
    mean = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    return (mean * weights).sum() / weights.sum().clamp(min=1e-8)


def _loss_sum(logits, labels, weights):
    """you summed the weighted losses but did not divide by the sum of the weights."""
    return (_per_slot(logits, labels) * weights).sum()


def _loss_per_slot_count(logits, labels, weights):
    """divide by the sum of the weights (the number of real predictions), not by the number of slots."""
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


def _loss_not_flattened(logits, labels, weights):
    """F.cross_entropy reads the classes from axis 1: given logits of shape (batch, max_preds, vocab), it takes
    max_preds for the vocabulary. Flatten first: logits.reshape(-1, vocab) and labels.reshape(-1), one row per slot."""
    per_slot = F.cross_entropy(logits, labels, reduction="none")
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def _loss_labels_not_flat(logits, labels, weights):
    """you flattened the logits to (batch · max_preds, vocab) rows but not the labels (or the labels but not the
    logits): flatten both alike, logits.reshape(-1, vocab) and labels.reshape(-1), one label per row."""
    per_slot = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels, reduction="none")
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def _loss_weights_not_flat(logits, labels, weights):
    """the per-slot losses come out flat, of shape (batch · max_preds,), but the weights are (batch, max_preds): flatten
    the weights too, weights.reshape(-1) (or reshape the losses to labels.shape)."""
    per_slot = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


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

def _loss_weights_column(logits, labels, weights):
    return (_per_slot(logits, labels).reshape(-1) * weights.reshape(-1, 1)).sum() / weights.sum().clamp(min=1e-8)


Q3_DIAGNOSES = [_loss_pitfall, _loss_sum, _loss_per_slot_count, _loss_mean_of_sequences,
                _loss_nan_when_empty, _loss_not_flattened, _loss_labels_not_flat, _loss_weights_not_flat,
                (_loss_weights_column, lambda logits, labels, weights: _(
                    "weights.reshape(-1, 1) is a column, ({rows}, 1): times the ({rows},) per-slot losses it "
                    "broadcasts to a ({rows}, {rows}) table, every loss times every weight. d2l's line shapes the "
                    "weights so because its loss is one number; with reduction='none' flatten both alike: "
                    "weights.reshape(-1).").format(rows=labels.numel()))]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_loss, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (the weighted MLM loss)"),
    var="weighted_mlm_loss",
    forbidden=[(bert, "mlm_loss", "mlm_loss"), (pretrain, "mlm_loss", "mlm_loss")],
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
    """X[:, pred_positions] gives every sequence the positions of every sequence (shape (batch, batch, num_preds,
    hidden)). Sequence b must use its own row pred_positions[b]: X[torch.arange(batch)[:, None], pred_positions]."""
    return X[:, pred_positions]


def _gather_first_row(X, pred_positions):
    """you used the first sequence's positions for the whole batch; sequence b has its own row pred_positions[b]."""
    return X[:, pred_positions[0]]


def _gather_arange_row(X, pred_positions):
    """torch.arange(batch) is a row of shape (batch,): against the (batch, num_preds) positions broadcasting lines it up
    with the num_preds axis, not the batch axis. Make it a column of shape (batch, 1): torch.arange(batch)[:, None]."""
    return X[torch.arange(X.shape[0]), pred_positions]


def _gather_positions_only(X, pred_positions):
    """X[pred_positions] indexes the first axis, the batch, with the positions. Index two axes: the batch axis with a
    (batch, 1) column of batch indices, the sequence axis with pred_positions."""
    return X[pred_positions]


def _gather_torch_gather(X, pred_positions):
    """torch.gather(X, 1, index) needs an index with as many axes as X, (batch, num_preds, hidden): repeat the positions
    along the hidden axis, pred_positions[..., None].expand(-1, -1, X.shape[-1]) (or use advanced indexing)."""
    return torch.gather(X, 1, pred_positions)


def _sized(template: str):
    # a diagnosis message: `template` (marked with N_) filled in with the case's sizes (a Symptom's
    # message gets the learner's result first, as `got`)
    def message(*args):
        X, pred_positions = args[-2:]
        (batch, seq, hidden), preds = X.shape, pred_positions.shape[1]
        return _(template).format(batch=batch, seq=seq, hidden=hidden, preds=preds, flat=batch * preds,
                                  got=tuple(args[0].shape) if len(args) > 2 else None)
    return message


def _boolean_mask(X, pred_positions):
    mask = torch.zeros(X.shape[:2], dtype=torch.bool)
    mask[torch.arange(X.shape[0])[:, None], pred_positions] = True
    return X[mask]


def _right_values_wrong_shape(got, X, pred_positions) -> bool:
    expected = MaskLM.gather(X, pred_positions)
    return (isinstance(got, torch.Tensor) and got.shape != expected.shape and got.numel() == expected.numel()
            and torch.equal(got.detach().reshape(-1), expected.reshape(-1)))


_GATHER_AXIS = _sized(N_("torch.gather(X, dim, index) picks along the axis dim, and the positions index the seq axis "
                         "of X, (batch, seq, hidden) = ({batch}, {seq}, {hidden}): dim=1."))


def _q4_case(batch: int, seq: int, hidden: int, positions, seed: int):
    return (randn(batch, seq, hidden, seed=seed), torch.tensor(positions))


Q4_CASES = [
    (N_("batch=2, seq=6, hidden=4, 3 predictions each"), _q4_case(2, 6, 4, [[1, 3, 4], [2, 2, 5]], 1)),
    (N_("padding slots at position 0"), _q4_case(3, 5, 2, [[1, 0], [4, 0], [2, 3]], 2)),
    (N_("a batch of one"), _q4_case(1, 4, 3, [[3, 1]], 3)),
    (N_("one prediction per sequence"), _q4_case(4, 3, 5, [[1], [2], [0], [1]], 4)),
]

Q4_DIAGNOSES = [
    _gather_cross, _gather_first_row, _gather_arange_row, _gather_positions_only, _gather_torch_gather,
    # a mistake that raises is named when the learner's code raises alike, with the case's sizes
    (lambda X, P: X[P > 0], _sized(N_(
        "pred_positions holds positions, numbers from 0 to seq-1, not a mask: a boolean mask would need X's first "
        "two axes, (batch, seq) = ({batch}, {seq}), not (batch, num_preds) = ({batch}, {preds}), and would lose the "
        "order and the repeats. Index with the numbers: X[torch.arange(batch)[:, None], pred_positions]."))),
    (lambda X, P: X[torch.arange(X.shape[0]), P.reshape(-1)], _sized(N_(
        "you flattened the positions to (batch · num_preds,) = ({flat},) but kept one batch index per sequence, "
        "torch.arange(batch), ({batch},). Flat, every position needs its own: torch.arange(batch).repeat_interleave("
        "num_preds), ({flat},), then a reshape; or keep the positions and make the batch index a column, "
        "({batch}, 1)."))),
    (lambda X, P: X[torch.arange(P.shape[1])[:, None], P], _sized(N_(
        "the column of batch indices counts the sequences: torch.arange(batch)[:, None] with batch = X.shape[0] = "
        "{batch}, shape ({batch}, 1). Yours counts the num_preds = {preds} predictions of a row."))),
    (lambda X, P: torch.gather(X, 0, P[..., None].expand(-1, -1, X.shape[-1])), _GATHER_AXIS),
    (lambda X, P: torch.gather(X, 2, P[..., None].expand(-1, -1, X.shape[-1])), _GATHER_AXIS),
    (lambda X, P: X.index_select(1, P), _sized(N_(
        "X.index_select(1, index) takes one 1-D list of positions for the whole batch, but each sequence has its own "
        "row of pred_positions, (batch, num_preds) = ({batch}, {preds}): index the batch and the seq axes together, "
        "X[torch.arange(batch)[:, None], pred_positions]."))),
    (lambda X, P: X[torch.arange(X.shape[0])[None, :], P], _sized(N_(
        "torch.arange(batch)[None, :] (or .unsqueeze(0)) is a row, (1, batch) = (1, {batch}): against the (batch, "
        "num_preds) = ({batch}, {preds}) positions broadcasting lines it up with the num_preds axis, not the batch "
        "axis. Make it a column, (batch, 1) = ({batch}, 1): torch.arange(batch)[:, None]."))),
    (lambda X, P: X[torch.arange(X.shape[0])[:, None], P.T], _sized(N_(
        "pred_positions is already (batch, num_preds) = ({batch}, {preds}), one row per sequence, like the (batch, 1) "
        "column of batch indices: no transpose."))),
    # near misses: the code runs, one known step is off
    (lambda X, P: X[torch.arange(X.shape[0]).repeat(P.shape[1]), P.reshape(-1)].reshape(*P.shape, -1), N_(
        "torch.arange(batch).repeat(num_preds) gives 0 1 0 1 ..., but the flattened positions run sequence by "
        "sequence and need 0 0 ... 1 1 ...: torch.arange(batch).repeat_interleave(num_preds).")),
    (lambda X, P: torch.gather(X, 1, P[..., None]), _sized(N_(
        "your index is (batch, num_preds, 1), so torch.gather picks one number per position, ({batch}, {preds}, 1): "
        "expand it along the hidden axis, pred_positions[..., None].expand(-1, -1, hidden), ({batch}, {preds}, "
        "{hidden})."))),
    (_boolean_mask, _sized(N_(
        "X[mask] with a boolean (batch, seq) mask returns the chosen vectors in one flat list, (number of True, "
        "hidden): it loses the batch axis, the order of pred_positions and its repeats. Index with the positions "
        "themselves: X[torch.arange(batch)[:, None], pred_positions], (batch, num_preds, hidden) = ({batch}, "
        "{preds}, {hidden})."))),
    (Symptom(_right_values_wrong_shape), _sized(N_(
        "the numbers are right, in the right order, but laid out as {got}: give the result its three axes, (batch, "
        "num_preds, hidden) = ({batch}, {preds}, {hidden}), e.g. .reshape(batch, num_preds, -1) (in a loop over the "
        "sequences, torch.stack the rows; torch.cat joins them into one)."))),
]


def _check_q4(answer) -> str:
    return run_cases(answer, _ref_gather, Q4_CASES, Q4_DIAGNOSES)


q4 = Exercise(
    name=N_("Q4 (gather the prediction positions)"),
    var="gather_predictions",
    forbidden=[(MaskLM, "gather", "MaskLM.gather")],
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


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 5)"), [
    Question(
        N_("Why does BERT replace only 80 % of the chosen tokens by [MASK], and not all of them?"),
        options=(
            Option(N_("To make the loss smaller: a kept token is easy to predict."),
                   why=N_("The aim is not a lower loss but a model that works on inputs without [MASK]; the loss "
                          "of the kept tokens is a side effect.")),
            Option(N_("To save computation: a random or kept token needs no prediction."),
                   why=N_("Every chosen token is predicted, the kept and the random ones too: the model cannot tell "
                          "which visible tokens were chosen.")),
            Option(N_("Because [MASK] would give the label away."),
                   why=N_("[MASK] hides the token and says nothing about it. Its problem is that it never appears "
                          "after pretraining.")),
            Option(N_("[MASK] never appears at fine-tuning time; with 10 % random and 10 % kept tokens, the "
                      "model must keep a good representation of every visible token."),
                   why=N_("If only [MASK] positions were predicted, the model could pass every real token through "
                          "unexamined. Random tokens make it check each token against its context; kept ones make the "
                          "visible token itself a right answer."), correct=True),
        )),
    Question(
        N_("Section 3 masked 10,000 pairs: 0.1530 of the candidates were chosen, a little above 15 %. Why?"),
        options=(
            Option(N_("Chance: with more sequences the share would come closer to 0.15."),
                   why=N_("The number chosen is not random: num_mlm_preds fixes it for each sequence, so more "
                          "sequences of the same lengths give the same share.")),
            Option(N_("The count is rounded per sequence, halves up and at least one: for short sequences that "
                      "moves the share away from 15 %."),
                   why=N_("10 candidates give 2 predictions (20 %), 13 give 2 (15.4 %), 17 give 3 (17.6 %); over "
                          "this corpus the rounding goes up a little more often than down."), correct=True),
            Option(N_("[CLS] and [SEP] are counted in the length, as in Google's code."),
                   why=N_("The course counts only the candidates: [CLS] and [SEP] are neither chosen nor counted.")),
            Option(N_("The random 10 % sometimes draws the original token."),
                   why=N_("That changes what the input shows at a chosen position, not how many positions are "
                          "chosen.")),
        )),
    Question(
        N_("A common way to write the rule (the pitfall \"random with probability 0.1\" among the other 20 %) draws a second number for the tokens that did not become "
           "[MASK] and replaces them with a random token 'with probability 0.1'. What shares of [MASK] / random / "
           "kept did it give?"),
        options=(
            Option(N_("80 / 10 / 10, the same as mask_tokens."),
                   why=N_("The 0.1 applies only to the remaining 20 %, so random gets 0.2 × 0.1 = 2 %; the "
                          "proportions test found random and kept about 39 and 38 standard errors off.")),
            Option(N_("80 / 18 / 2."),
                   why=N_("That swaps the two: the second draw picks a random token with probability 0.1, so random "
                          "is the small share, 2 %, and 18 % are kept.")),
            Option(N_("80 / 2 / 18."),
                   why=N_("0.2 × 0.1 = 2 % random and 0.2 × 0.9 = 18 % kept (measured 0.0204 and 0.1773). "
                          "Nothing fails: only a proportions test with a stated tolerance catches it."), correct=True),
            Option(N_("72 / 10 / 18."),
                   why=N_("The first draw, u < 0.8 → [MASK], is the same as in mask_tokens, so [MASK] stays at 80 % "
                          "(measured 0.8023). Only the other 20 % are split wrongly: 2 / 18.")),
        )),
    Question(
        N_("d2l's pretraining code (the pitfall \"reduction='mean', then the weights\") averages the cross-entropy over all slots (reduction='mean') and "
           "then multiplies by the weights. On the batch with 9 real predictions in 20 slots, what happened?"),
        options=(
            Option(N_("The loss was the plain mean over all 20 slots, and the padding slots got gradients."),
                   why=N_("(ℓ̄·w).sum() / w.sum() = ℓ̄: the weights cancel. Every padding slot ([CLS], label [PAD]) "
                          "got a gradient of 0.1, which trains the model to predict [PAD]."), correct=True),
            Option(N_("The same loss as mlm_loss: the weights remove the padding slots."),
                   why=N_("29.94 against 32.67: the 11 padding slots are averaged in. The check of "
                          "tests/test_pretrain.py catches the difference.")),
            Option(N_("A wrong value, but the padding slots got no gradient, since their weight is 0."),
                   why=N_("The weights cancel before they can block anything: the gradient was 0.1 on every slot, "
                          "padding included (mlm_loss: 0 on the padding slots).")),
            Option(N_("A shape error: the weights do not match the loss."),
                   why=N_("A mean is one number, which multiplies a tensor of any shape: the bug runs without an "
                          "error, and the model even trains.")),
        )),
    Question(
        N_("Section 5: with PyTorch's default initialisation (token table N(0, 1), tied to the MLM decoder) and "
           "d = 64, what standard deviation did the MLM logits have?"),
        answer=8.06, tolerance=0.5,
        why=N_("The layer norm before the decoder makes ‖h‖² = d, so a logit E_v · h with N(0, 1) entries has variance "
               "d and standard deviation √64 = 8 (measured 8.06): a confident, wrong softmax, and a loss of 32.67 "
               "instead of ln V ≈ 8.0."),
        why_low=N_("Too low: 0.16 = 0.02·√d is what init_bert_weights gives. With N(0, 1) entries a logit E_v · h, "
                   "with ‖h‖² = d after the layer norm, has variance d: standard deviation √64 = 8."),
        why_high=N_("Too high: the variance of a logit is d = 64, so its standard deviation is √d = 8; the layer norm "
                    "makes ‖h‖² = d, and each N(0, 1) entry of E_v contributes h_i² to the variance.")),
])
