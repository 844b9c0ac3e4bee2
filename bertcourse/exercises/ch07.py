"""Chapter 7 exercises: the pretraining loss, honest evaluation, the masking rate, and
reading a wrong prediction.

In the notebook::

    from bertcourse.exercises.ch07 import q1, q2, q3, q4, q5, quiz

* ``q1`` — ``mlm_loss_by_hand(mlm_logits, mlm_labels, mlm_weights)``: the MLM loss, the
  mean cross-entropy over the *real* predictions only.
* ``q2`` — ``mlm_top1_accuracy(mlm_logits, mlm_labels, mlm_weights)``: the fraction of
  real predictions whose most probable token is the label.
* ``q3`` — ``predictions_per_sequence(num_tokens, mask_prob)``: how many positions BERT's
  masking chooses in a sequence of ``num_tokens`` ordinary tokens (then: what happens to
  the training signal and to the context when the masking rate goes up?).
* ``q4`` — ``why_wrong``: a letter; which explanation fits the model's wrong answer shown
  in the notebook.
* ``q5`` — ``prediction``: one of ``"same"``, ``"higher"``, ``"lower"``; *before* running the
  experiment, predict the first MLM loss of the tiny BERT built *without*
  :func:`bertcourse.pretrain.init_bert_weights` and with an MLM decoder of its own (not tied to
  the N(0, 1) embedding), compared with ``ln |V|``. The check runs the experiment itself
  (:func:`first_mlm_loss`).
* ``quiz`` — ``quiz_answers``: a letter (or a number) for each question on what the chapter
  measured and why (:class:`~bertcourse.exercises.quiz.Quiz`).

The references are the package's own functions (:func:`bertcourse.pretrain.mlm_loss`,
:func:`bertcourse.pretrain.mlm_accuracy`, :func:`bertcourse.data.num_mlm_preds`), so
the exercises check the learner against exactly the code the chapter runs.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ..bert import BERTModel, get_config
from ..data import load_pretrain_data, num_mlm_preds
from ..pretrain import init_bert_weights, mlm_accuracy, mlm_loss
from ..i18n import gettext as _, gettext_noop as N_
from .core import (CheckFailed, Exercise, as_number, check_bool, check_positive_int, equal_values, randn,
                   run_cases, seeded)
from .guesses import predicted_choice
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "q5", "quiz", "first_mlm_loss", "Q5_CHOICES"]


def _mlm_case(batch: int, preds: int, vocab: int, seed: int, real: list | None = None, scale: float = 1.0):
    """(logits, labels, weights); ``real[b]`` = number of real predictions in row b."""
    g = seeded(seed)
    logits = randn(batch, preds, vocab, seed=g, scale=scale)
    labels = torch.randint(5, vocab, (batch, preds), generator=g)
    weights = torch.ones(batch, preds)
    if real is not None:
        for b, n in enumerate(real):
            weights[b, n:] = 0.0
            labels[b, n:] = 0                    # padding slots carry label 0 ([PAD])
    return logits, labels, weights


# ---------------------------------------------------------------------------------------
# Q1: the MLM loss by hand
# ---------------------------------------------------------------------------------------

def _ref_loss(mlm_logits, mlm_labels, mlm_weights):
    # the exercise's names: a shape error in the learner's code is told with them
    return mlm_loss(mlm_logits, mlm_labels, mlm_weights)


def _per_slot(logits, labels):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")


def _loss_mean_all_slots(logits, labels, weights):
    """the padding slots count in your loss: a plain mean over all slots (which is also what
    reduction='mean' followed by multiplying by the weights gives) averages the padding
    in. Use reduction='none', multiply each slot by its weight, then divide by the sum of
    the weights."""
    # also what "reduction='mean', then multiply by the weights" boils down to
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def _loss_mean_times_weights(logits, labels, weights):
    """reduction='mean' already averaged over every slot, padding included; multiplying by
    the weights afterwards cannot take the padding out. Use reduction='none' and weight
    each slot."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)) * weights.mean()


def _loss_sum(logits, labels, weights):
    """you returned the weighted sum; divide it by the number of real predictions
    (mlm_weights.sum())."""
    return (_per_slot(logits, labels) * weights.reshape(-1)).sum()


def _loss_over_slots(logits, labels, weights):
    """you divided by the number of slots (padding included); divide by the number of real
    predictions, mlm_weights.sum()."""
    return (_per_slot(logits, labels) * weights.reshape(-1)).sum() / weights.numel()


def _loss_over_rows(logits, labels, weights):
    """you divided by the batch size; the loss is a mean per real prediction: divide by
    mlm_weights.sum()."""
    return (_per_slot(logits, labels) * weights.reshape(-1)).sum() / weights.shape[0]


def _loss_wrong_sign(logits, labels, weights):
    """the sign is wrong: the cross-entropy is -log p(label), a positive number."""
    return -_ref_loss(logits, labels, weights)


Q1_CASES = [
    (N_("batch=2, 4 slots, vocab 9; row 0 has 3 real predictions, row 1 has 2"),
     _mlm_case(2, 4, 9, seed=1, real=[3, 2])),
    (N_("every slot is a real prediction"), _mlm_case(3, 2, 7, seed=2)),
    (N_("a row with no real prediction at all"), _mlm_case(3, 3, 11, seed=3, real=[2, 0, 3])),
    (N_("large logits (spread over hundreds: use log_softmax / cross_entropy, not log(softmax))"),
     _mlm_case(2, 3, 6, seed=4, real=[3, 1], scale=100.0)),
]

def _sizes(logits) -> dict:
    """The sizes of the (batch, num_preds, vocab) logits, for the messages."""
    batch, preds, vocab = logits.shape
    return dict(shape=tuple(logits.shape), batch=batch, preds=preds, vocab=vocab, rows=batch * preds)


def _weighted(per_slot, weights):
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


# Mistakes that raise: named when the learner's code raises what they raise (the same error:
# learner_code.raised_alike), with the sizes of the case in the exercise's terms.

def _loss_3d_logits(logits, labels, weights):
    # forgetting to flatten (or to move the vocabulary to axis 1): cross_entropy takes num_preds for
    # the classes and wants (batch, vocab) labels
    return _weighted(F.cross_entropy(logits, labels, reduction="none"), weights)


def _why_3d_logits(logits, labels, weights) -> str:
    return _("F.cross_entropy reads the classes from axis 1: given mlm_logits of shape (batch, num_preds, "
             "vocab) = {shape}, it took the {preds} slots for the classes and wanted labels of shape (batch, "
             "vocab) = ({batch}, {vocab}), not mlm_labels, {labels}. Flatten first, one row per slot: "
             "mlm_logits.reshape(-1, vocab), ({rows}, {vocab}), and mlm_labels.reshape(-1), ({rows},) (or move "
             "the vocabulary to axis 1: mlm_logits.transpose(1, 2)).").format(labels=tuple(labels.shape),
                                                                              **_sizes(logits))


def _loss_one_side_flat(logits, labels, weights):
    # the logits flattened, the labels not (torch's message is the same, up to the order of the
    # numbers, when only the labels are flattened)
    return _weighted(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels, reduction="none"),
                     weights.reshape(-1))


def _why_one_side_flat(logits, labels, weights) -> str:
    return _("mlm_logits and mlm_labels must be flattened alike, one row and one label per slot: "
             "mlm_logits.reshape(-1, vocab) is ({rows}, {vocab}) and mlm_labels.reshape(-1) is ({rows},). "
             "F.cross_entropy met {rows} rows and {batch} labels (or {batch} rows and {rows} labels): you "
             "flattened one of them but not the other.").format(**_sizes(logits))


def _loss_weights_not_flat(logits, labels, weights):
    return _weighted(_per_slot(logits, labels), weights)


def _why_weights_not_flat(logits, labels, weights) -> str:
    return _("the per-slot losses and the weights must have the same shape: from the flattened logits the "
             "losses are ({rows},), one per slot, but mlm_weights is (batch, num_preds) = ({batch}, {preds}). "
             "Flatten the weights too, mlm_weights.reshape(-1) (or keep both (batch, num_preds)).").format(
        **_sizes(logits))


def _loss_all_flat(logits, labels, weights):
    return _weighted(F.cross_entropy(logits.reshape(-1), labels.reshape(-1), reduction="none"),
                     weights.reshape(-1))


def _why_all_flat(logits, labels, weights) -> str:
    return _("mlm_logits.reshape(-1) flattens the vocabulary axis away too, into one vector of {n} numbers: "
             "keep it, mlm_logits.reshape(-1, vocab) is ({rows}, {vocab}), one row of {vocab} logits per "
             "slot.").format(n=logits.numel(), **_sizes(logits))


def _loss_float_targets(logits, labels, weights):
    return _weighted(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).float(),
                                     reduction="none"), weights.reshape(-1))


def _why_float_targets(logits, labels, weights) -> str:
    return _("the targets of F.cross_entropy are the class ids, mlm_labels ({dtype}), and you passed floats "
             "(mlm_labels.float(), or mlm_weights in their place): pass mlm_labels.reshape(-1) as it is, and "
             "use the weights only to weight the per-slot losses.").format(
        dtype=str(labels.dtype).removeprefix("torch."))


def _loss_gather_flat_index(logits, labels, weights):
    log_p = torch.log_softmax(logits, dim=-1)
    return _weighted(-log_p.gather(-1, labels).squeeze(-1), weights)


def _why_gather_flat_index(logits, labels, weights) -> str:
    return _("log_p.gather(-1, index) needs an index with as many axes as the log-probabilities, (batch, "
             "num_preds, vocab) = {shape}: mlm_labels[..., None], ({batch}, {preds}, 1), then .squeeze(-1) "
             "(mlm_labels itself is ({batch}, {preds})).").format(**_sizes(logits))


# Near misses: the result runs, but is one known step off.

def _loss_weights_column(logits, labels, weights):
    # d2l's weights.reshape(-1, 1), next to per-slot losses
    return (_per_slot(logits, labels) * weights.reshape(-1, 1)).sum() / weights.sum().clamp(min=1e-8)


def _why_weights_column(logits, labels, weights) -> str:
    return _("mlm_weights.reshape(-1, 1) is a column, ({rows}, 1): times the ({rows},) per-slot losses it "
             "broadcasts to a ({rows}, {rows}) table, every loss times every weight. d2l's line shapes the "
             "weights so because its loss is one number; with reduction='none' flatten both alike: "
             "mlm_weights.reshape(-1).").format(**_sizes(logits))


def _loss_softmax_over_slots(logits, labels, weights):
    """your log_softmax normalised over axis 1, the num_preds slots; the probabilities are over the
    vocabulary, the last axis: torch.log_softmax(mlm_logits, dim=-1)."""
    log_p = torch.log_softmax(logits, dim=1)
    return _weighted(-log_p.gather(-1, labels[..., None]).squeeze(-1), weights)


def _loss_nll_of_logits(logits, labels, weights):
    """F.nll_loss expects log-probabilities (it only picks -input[label]), and you gave it the raw
    logits: apply torch.log_softmax(..., dim=-1) first (F.cross_entropy does both)."""
    per_slot = F.nll_loss(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    return _weighted(per_slot, weights.reshape(-1))


def _loss_reshaped_vocab_first(logits, labels, weights):
    """mlm_logits.reshape(vocab, -1).T has the right shape, (batch · num_preds, vocab), but not one
    slot's logits per row: reshape keeps the order of the numbers in memory, where each slot's vocab
    logits come one after another. Use mlm_logits.reshape(-1, vocab)."""
    per_slot = F.cross_entropy(logits.reshape(logits.shape[-1], -1).T, labels.reshape(-1), reduction="none")
    return _weighted(per_slot, weights.reshape(-1))


Q1_DIAGNOSES = [_loss_mean_all_slots, _loss_mean_times_weights, _loss_sum, _loss_over_slots,
                _loss_over_rows, _loss_wrong_sign,
                (_loss_3d_logits, _why_3d_logits), (_loss_one_side_flat, _why_one_side_flat),
                (_loss_weights_not_flat, _why_weights_not_flat), (_loss_all_flat, _why_all_flat),
                (_loss_float_targets, _why_float_targets), (_loss_gather_flat_index, _why_gather_flat_index),
                (_loss_weights_column, _why_weights_column), _loss_softmax_over_slots, _loss_nll_of_logits,
                _loss_reshaped_vocab_first]


def _check_q1(answer) -> str:
    return run_cases(answer, _ref_loss, Q1_CASES, Q1_DIAGNOSES)


q1 = Exercise(
    name=N_("Q1 (the MLM loss by hand)"),
    var="mlm_loss_by_hand",
    checker=_check_q1,
    hints=[
        N_("mlm_logits is (batch, num_preds, vocab): flatten it to (batch * num_preds, vocab) and the "
           "labels to (batch * num_preds,) so that every prediction slot is one row."),
        N_("F.cross_entropy(logits, labels, reduction='none') gives one loss per slot. Padding slots "
           "(weight 0) must not count: multiply by the flattened weights."),
        N_("Divide the weighted sum by the number of real predictions, mlm_weights.sum() (clamp it to at "
           "least a tiny number so that a batch without predictions gives 0, not NaN)."),
    ],
    solution=N_('''
def mlm_loss_by_hand(mlm_logits, mlm_labels, mlm_weights):
    vocab = mlm_logits.shape[-1]
    per_slot = F.cross_entropy(mlm_logits.reshape(-1, vocab), mlm_labels.reshape(-1),
                               reduction="none")              # (batch * num_preds,)
    w = mlm_weights.reshape(-1)
    return (per_slot * w).sum() / w.sum().clamp(min=1e-8)     # mean over real predictions
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: top-1 accuracy over the real predictions
# ---------------------------------------------------------------------------------------

def _ref_acc(mlm_logits, mlm_labels, mlm_weights):
    return mlm_accuracy(mlm_logits, mlm_labels, mlm_weights)


def _acc_all_slots(logits, labels, weights):
    """the padding slots count in your accuracy: keep only the slots with mlm_weights > 0."""
    return (logits.argmax(-1) == labels).float().mean()


def _acc_count(logits, labels, weights):
    """you returned the number of right answers; divide by the number of real predictions."""
    return ((logits.argmax(-1) == labels) & (weights > 0)).sum().float()


def _acc_over_slots(logits, labels, weights):
    """you divided by the number of slots (padding included); divide by the number of real
    predictions, (mlm_weights > 0).sum()."""
    return ((logits.argmax(-1) == labels) & (weights > 0)).float().mean()


def _acc_cases():
    cases = []
    logits, labels, weights = _mlm_case(3, 4, 8, seed=11, real=[4, 2, 3])
    labels = labels.clone()
    labels[0, :2] = logits[0, :2].argmax(-1)           # make some predictions right
    labels[2, 0] = logits[2, 0].argmax(-1)
    cases.append((N_("batch=3, 4 slots, some padding, some right answers"), (logits, labels, weights)))
    logits, labels, weights = _mlm_case(2, 5, 6, seed=12)
    labels = labels.clone()
    labels[:, ::2] = logits[:, ::2].argmax(-1)
    cases.append((N_("no padding"), (logits, labels, weights)))
    logits, labels, weights = _mlm_case(2, 3, 7, seed=13, real=[2, 0])
    logits = logits.clone()
    logits[1, :, 0] = 100.0                             # the padding slots "predict" [PAD] = label 0
    cases.append((N_("padding slots whose argmax happens to be their label 0 (they must still not count)"),
                  (logits, labels, weights)))
    return cases


Q2_CASES = _acc_cases()

Q2_DIAGNOSES = [_acc_over_slots, _acc_all_slots, _acc_count]


def _check_q2(answer) -> str:
    return run_cases(answer, _ref_acc, Q2_CASES, Q2_DIAGNOSES)


q2 = Exercise(
    name=N_("Q2 (MLM top-1 accuracy)"),
    var="mlm_top1_accuracy",
    checker=_check_q2,
    hints=[
        N_("The model's guess for a slot is the token with the highest logit: mlm_logits.argmax(dim=-1), "
           "shape (batch, num_preds)."),
        N_("A slot is right when the guess equals the label, and it only counts when it is a real "
           "prediction: real = mlm_weights > 0."),
        N_("accuracy = (right & real).sum() / real.sum(), as a float tensor (clamp the denominator to at "
           "least 1)."),
    ],
    solution=N_('''
def mlm_top1_accuracy(mlm_logits, mlm_labels, mlm_weights):
    real = mlm_weights > 0                                  # (batch, num_preds)
    right = (mlm_logits.argmax(dim=-1) == mlm_labels) & real
    return right.sum().float() / real.sum().clamp(min=1)
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: how many predictions per sequence for a masking rate
# ---------------------------------------------------------------------------------------

def _ref_count(num_tokens, mask_prob):
    return num_mlm_preds(num_tokens, mask_prob)


Q3_CASES = [
    (20, 0.15, N_("20 tokens at 15% (3.0)")),
    (10, 0.15, N_("10 tokens at 15% (1.5 rounds up)")),
    (3, 0.15, N_("3 tokens at 15% (0.45: at least one prediction)")),
    (10, 0.25, N_("10 tokens at 25% (2.5 rounds up)")),
    (50, 0.15, N_("50 tokens at 15% (7.5 rounds up)")),
    (18, 0.4, N_("18 tokens at 40% (7.2)")),
    (90, 0.35, N_("90 tokens at 35% (31.5, though 90 * 0.35 is 31.4999... in floating point)")),
    (1, 0.5, N_("a single token at 50%")),
]


def _just_below_half(n, p) -> str:
    return _("floating point: {n} * {p} is {product!r}, just below the half; add a tiny 1e-9 before "
             "rounding").format(n=n, p=p, product=n * p)


Q3_DIAGNOSES = [
    (lambda n, p: 0, N_("every sequence gets at least one prediction")),
    (lambda n, p: math.floor(n * p + 0.5), _just_below_half),
    (lambda n, p: round(n * p), N_("Python's round() rounds halves to the even number (round(2.5) == 2); "
                                   "round half up instead: math.floor(x + 0.5)")),
    (lambda n, p: math.floor(n * p), N_("you rounded down; BERT's count rounds to the nearest whole number "
                                        "(half up)")),
    (lambda n, p: math.ceil(n * p), N_("you rounded up; round to the nearest whole number (half up)")),
]


def _check_q3(answer) -> str:
    run_cases(answer, _ref_count, [(where, (n, p)) for n, p, where in Q3_CASES], Q3_DIAGNOSES,
              prepare=lambda got, where, *args: int(as_number(got, where, whole=True)),
              compare=equal_values(N_("on {where}: expected {expected}, got {got}")))
    return _("correct on all {n} cases").format(n=len(Q3_CASES))


q3 = Exercise(
    name=N_("Q3 (predictions per sequence)"),
    var="predictions_per_sequence",
    checker=_check_q3,
    hints=[
        N_("BERT predicts about mask_prob of the ordinary tokens: start from x = num_tokens * mask_prob."),
        N_("Round x to the nearest whole number, halves up: math.floor(x + 0.5) (Python's round() sends "
           "2.5 to 2). A product like 90 * 0.35 is 31.4999999...: add a tiny 1e-9 before rounding."),
        N_("A sequence always gets at least one prediction: max(1, ...)."),
    ],
    solution=N_('''
def predictions_per_sequence(num_tokens, mask_prob):
    x = num_tokens * mask_prob
    return max(1, math.floor(x + 0.5 + 1e-9))   # nearest whole number (half up), at least 1
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: explain a wrong prediction
# ---------------------------------------------------------------------------------------

Q4_CHOICES = {
    "A": N_("The model has not learned English grammar yet: it puts any token in the blank."),
    "B": N_("The model has learned which kind of word fits the blank (a town after 'the capital of X is'), "
            "but not yet this particular fact."),
    "C": N_("[MASK] never appears in the training data, so the model cannot fill it in."),
    "D": N_("The answer is missing from the vocabulary, so no model could predict it."),
}

Q4_WHY_NOT = {
    "A": N_("a model without grammar would guess a random kind of token (a verb, a full stop, 'the'); "
            "its guess here is a town, exactly the kind of word the blank needs."),
    "C": N_("80% of the chosen positions are replaced by [MASK] during pretraining: the model sees "
            "[MASK] in every batch."),
    "D": N_("the notebook checks that the answer is a single token of the vocabulary; the model even gives "
            "it some probability."),
}


def _check_q4(answer) -> str:
    if not isinstance(answer, str):
        raise CheckFailed(_("why_wrong must be one letter as a string, e.g. 'A', got {type}").format(
            type=type(answer).__name__))
    letter = answer.strip().upper().rstrip(")").strip()
    if letter not in Q4_CHOICES:
        raise CheckFailed(_("why_wrong must be one of {choices}, got {answer!r}").format(
            choices=", ".join(Q4_CHOICES), answer=answer))
    if letter != "B":
        raise CheckFailed(_("{letter} is not the best explanation: {why}").format(letter=letter, why=_(Q4_WHY_NOT[letter])))
    return _("B: grammar (the kind of word) comes first, facts need many more repetitions — so a "
             "wrong answer of the right kind is the typical error of a briefly trained model.")


q4 = Exercise(
    name=N_("Q4 (explain a wrong prediction)"),
    var="why_wrong",
    checker=_check_q4,
    hints=[
        N_("Look at the model's guess: what kind of word is it? Is it the kind the blank asks for?"),
        N_("Compare the 'right kind of word' and 'right fact' accuracies in the table above: which does "
           "the model reach first?"),
    ],
    solution=N_('''
why_wrong = "B"   # the guess is a town (grammar learned), just not the capital of this country (fact)
'''),
)


# ---------------------------------------------------------------------------------------
# Q5: predict, then run the experiment — the first loss with a decoder of its own
# ---------------------------------------------------------------------------------------

Q5_CHOICES = {
    "same": N_("about ln|V|: within 25 % of it"),
    "higher": N_("far above ln|V|: more than 25 % above it"),
    "lower": N_("far below ln|V|: more than 20 % below it"),
}
"""q5's answers: where the first MLM loss of the model built without init_bert_weights, with a
decoder of its own (not tied to the embedding), lies."""


@functools.lru_cache(maxsize=None)
def _first_losses(seed: int) -> dict:
    # fork_rng: leave the notebook's random numbers alone (even an unshuffled DataLoader draws
    # a seed from torch's global generator when it starts iterating)
    with torch.random.fork_rng(devices=[]):
        loader, tokenizer = load_pretrain_data(batch_size=128, max_len=64, split="held_out", seed=seed)
        batch = next(iter(loader))                   # the first 128 held-out pairs
        vocab_size = len(tokenizer.vocab)
        losses = {}
        for bert_init, tied in ((False, True), (True, True), (False, False), (True, False)):
            torch.manual_seed(seed)
            model = BERTModel(get_config("tiny", vocab_size=vocab_size, dropout=0.0))
            if not tied:                             # a fresh nn.Linear: PyTorch's default, uniform in ±1/sqrt(64)
                model.mlm.decoder = torch.nn.Linear(model.mlm.decoder.in_features, vocab_size)
            if bert_init:
                init_bert_weights(model)
            with torch.no_grad():
                _, mlm_logits, _ = model.eval()(batch["tokens"], batch["segments"], batch["valid_lens"],
                                                batch["pred_positions"])
            losses[bert_init, tied] = (mlm_loss(mlm_logits, batch["mlm_labels"], batch["mlm_weights"]).item(),
                                       mlm_logits.std().item())
    return {"vocab_size": vocab_size, "losses": losses}


def first_mlm_loss(bert_init: bool, seed: int = 0, tied: bool = True) -> dict:
    """The experiment of q5: the MLM loss of a freshly built tiny BERT (the notebook's
    configuration, no dropout, ``torch.manual_seed(seed)``) on the first batch of 128 held-out
    pairs, before any training — with BERT's initialisation (``bert_init=True``:
    :func:`~bertcourse.pretrain.init_bert_weights`) or PyTorch's default one; with the MLM
    decoder tied to the token embedding, as BERT does (``tied=True``), or a decoder of its own
    (a fresh ``nn.Linear``). Returns ``{"loss", "ln_vocab", "logit_std"}``."""
    check_bool("bert_init", bert_init)
    check_positive_int("seed", seed, allow_zero=True)
    check_bool("tied", tied)
    result = _first_losses(seed)
    loss, logit_std = result["losses"][bool(bert_init), bool(tied)]
    return {"loss": loss, "ln_vocab": math.log(result["vocab_size"]), "logit_std": logit_std}


def _q5_category(loss: float, ln_vocab: float) -> str:
    ratio = loss / ln_vocab
    return "higher" if ratio > 1.25 else "lower" if ratio < 0.8 else "same"


_Q5_WHY_NOT = {
    "higher": N_("the embeddings are still N(0, 1), but the decoder is no longer that table. It reads the output "
                 "of a layer norm, 64 entries of size about 1, and nn.Linear starts its weights uniform in "
                 "±1/sqrt(64) = ±0.125 (a standard deviation of about 0.07): a logit, a sum of 64 products, "
                 "spreads by about sqrt(64) × 0.07 ≈ 0.6, not by 8. What made chapter 5's loss high was the "
                 "tie to the N(0, 1) table."),
    "lower": N_("a loss below ln|V| means more probability than 1/|V| on the right token, on average. Random "
                "weights know nothing about which token is right, so they cannot do better than a uniform "
                "guess on average — a confident random guess does worse."),
}


def _check_q5(answer) -> str:
    choice = predicted_choice(answer, Q5_CHOICES, "prediction")
    own = first_mlm_loss(bert_init=False, tied=False)
    tied, bert = first_mlm_loss(bert_init=False), first_mlm_loss(bert_init=True)
    truth = _q5_category(own["loss"], own["ln_vocab"])
    if choice != truth:
        raise CheckFailed(_("{choice!r} is not what happens: ").format(choice=choice)
                          + _(_Q5_WHY_NOT.get(choice, N_("run the experiment below."))))
    return _("{truth!r}: with a decoder of its own the first MLM loss is {own:.2f}, ln|V| = {ln_v:.2f} (tied to "
             "the N(0, 1) table: {tied:.1f}; with init_bert_weights: {bert:.2f}). The logits' spread comes from "
             "the decoder's weights, and nn.Linear's default keeps it near 0.6. BERT ties the decoder to the "
             "embedding, so the embedding's scale becomes the logits' scale: one more reason to start every "
             "weight small.").format(truth=truth, own=own["loss"], ln_v=own["ln_vocab"], tied=tied["loss"],
                                     bert=bert["loss"])


q5 = Exercise(
    name=N_("Q5 (predict: the first loss with a decoder of its own)"),
    var="prediction",
    checker=_check_q5,
    hints=[
        N_("Chapter 5: a logit is the dot product of the hidden state with a row of the decoder. Tied, that row "
           "is the N(0, 1) embedding. Untied, what is it?"),
        N_("nn.Linear(64, |V|) starts with weights uniform in ±1/sqrt(64). A logit sums 64 products of a "
           "layer-normed entry (size about 1) with such a weight: how large is its spread?"),
        N_("A spread of about 0.6 over 3,000 tokens: is the softmax peaked, or nearly uniform?"),
    ],
    solution=N_('''
# The decoder is no longer the N(0, 1) embedding table: nn.Linear's default weights are
# uniform in ±1/sqrt(64), so each logit (64 products with a normalised hidden state) spreads
# by about 0.6. The softmax stays nearly uniform, and the first loss is about ln|V| ≈ 8.0.
prediction = "same"
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 7)"), [
    Question(
        N_("The pitfall \"evaluating MLM on the training sentences\": the trained model scored higher on training "
           "pairs with their training masks than on held-out pairs, but with fresh masks the same training pairs "
           "scored no better than held-out pairs. What does the gap measure?"),
        options=(
            Option(N_("The training sentences are easier than the held-out ones."),
                   why=N_("The same training sentences with fresh masks scored no better than held-out text; only "
                          "their training masks made them easier.")),
            Option(N_("Memory of which word was under which blank: static masking showed every pair about 7 "
                      "times with the same blanks."),
                   why=N_("The gap disappears with fresh blanks, so the model remembers the masks, not just the "
                          "sentences. Report held-out pairs; dynamic masking draws new blanks every epoch."),
                   correct=True),
            Option(N_("Dropout: the model was in training mode on the training pairs."),
                   why=N_("The model was trained without dropout, and evaluate switches to eval() itself; only the "
                          "masks differ between the two evaluations of the training pairs.")),
            Option(N_("Held-out paragraphs leaked into the training split."),
                   why=N_("0 of the 146 held-out paragraphs are training paragraphs (tests/test_corpus.py checks it); "
                          "and a leak would raise the held-out score, not the training one.")),
        )),
    Question(
        N_("Section 1 compared two ways to choose MLM blanks over the 28,606 training pairs: a fixed count per pair "
           "(the course, d2l, Google) and a coin per token with p = 0.15 (Hugging Face). Both choose about 15 % of "
           "the tokens. What differs?"),
        options=(
            Option(N_("The coins choose fewer tokens in all."),
                   why=N_("15.1 % against 15.3 %: both choose 15 % on average. The difference is how the blanks are "
                          "spread over the pairs.")),
            Option(N_("With a fixed count, short pairs sometimes get no blank."),
                   why=N_("num_mlm_preds gives every pair at least one blank (0.0 % without); it is the coin rule "
                          "that leaves pairs empty.")),
            Option(N_("With coins, about one pair in ten gets no blank, and a 13-token pair gets 0 to 7 blanks "
                      "instead of exactly 2."),
                   why=N_("A pair of n candidates gets no blank with probability 0.85^n, about 10 % for pairs this "
                          "short. A fixed count gives every pair a steady number of blanks and a fixed-size "
                          "pred_positions tensor."), correct=True),
            Option(N_("In BERT's long sequences the coin rule also often leaves a sequence without a blank."),
                   why=N_("0.85^128 ≈ 10⁻⁹: in sequences of 128 or 512 tokens that almost never happens; it matters "
                          "for short pairs like ours.")),
        )),
    Question(
        N_("Section 4 sorted the held-out NSP pairs by what could give a random B away. Which pairs did the tiny "
           "BERT get wrong most often?"),
        options=(
            Option(N_("Real next sentences (B follows A)."),
                   why=N_("It recognised most of them (more than 0.75, which the notebook asserts).")),
            Option(N_("A random B that opens a paragraph ('let us talk about velora, ...')."),
                   why=N_("An opening sentence follows nothing, and the model recognised most of these (more than 0.75).")),
            Option(N_("A random B about another kind of thing ('she' after a sentence about a country)."),
                   why=N_("Its words give it away, and the model caught most of these (more than half).")),
            Option(N_("A random B about the same kind of thing (a capital after a sentence about another "
                      "country)."),
                   why=N_("Fewer than half were caught: only a name or the facts give such a B away, the finer things "
                          "a briefly trained model knows least. ALBERT's point in miniature: NSP mostly tests the "
                          "topic."), correct=True),
        )),
    Question(
        N_("Section 7 read the vector of silver (and of gold) at the same position in many training sentences, "
           "where the word is a metal or a colour. What did the cosine similarities show?"),
        options=(
            Option(N_("Before training all the vectors were practically identical; after training, two vectors of "
                      "the same sense were closer than two of different senses."),
                   why=N_("Untrained: every cosine above 0.99. Predicting masked words alone made the vector follow "
                          "its context, and the contexts of one sense are alike (flag, export)."), correct=True),
            Option(N_("They stayed identical after training: the token, segment and position embeddings are the "
                      "same."),
                   why=N_("The inputs at that position are identical, but the outputs mix in the other tokens: after "
                          "training, pairs of different senses had a cosine below 0.95.")),
            Option(N_("After training, a metal silver and a colour silver were closer than two colour silvers."),
                   why=N_("The other way round: pairs of the same sense were closer than pairs of different senses, "
                          "for both words.")),
            Option(N_("The untrained model already separated the two senses; training changed nothing."),
                   why=N_("Untrained, every cosine was above 0.99 whatever the sense: the untrained encoder hardly "
                          "mixes in its context.")),
        )),
    Question(
        N_("Section 2: the learning rate is η · min(1, (t + 1)/w) · (1 − t/T), with w = 50 warm-up steps and "
           "T = 1,600 steps. What is its largest value, as a multiple of η?"),
        answer=0.969, tolerance=0.01,
        why=N_("The peak is at the end of the warm-up, t = w − 1 = 49, where the decay has already taken "
               "(w − 1)/T ≈ 3 %: η · (1 − 49/1,600) ≈ 0.97 η."),
        why_low=N_("Too low: the decay is linear over all 1,600 steps, so at the peak, at the end of the warm-up "
                   "(t = 49), it has taken only 49/1,600 ≈ 3 %: 0.97 η."),
        why_high=N_("Too high: the rate never quite reaches η. The decay runs during the warm-up too, so at the "
                    "peak (t = 49) it has already taken 49/1,600 ≈ 3 %: 0.97 η.")),
])
