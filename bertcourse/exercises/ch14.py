"""Chapter 14 exercises: data parallelism — the global batch, the shards, the all-reduce, and
the learning rate.

In the notebook::

    from bertcourse.exercises.ch14 import q1, q2, q3, q4, quiz

* ``q1`` — ``global_batch_and_steps(num_pairs, world_size, batch_size)``: predict, before the
  experiment, the global batch and the optimizer steps of one epoch, as ``(global_batch,
  steps)``.
* ``q2`` — ``my_shard(batches, world_size, rank)``: the batches process ``rank`` trains on
  (any rule passes that gives every process the same number of batches, as many as
  possible, and no batch to two processes).
* ``q3`` — ``average_gradients(grads)``: what the all-reduce leaves on every process, from
  the gradients ``grads[rank][i]`` of each process.
* ``q4`` — ``lr_choice``: a letter; the learning rate of AdamW when the global batch grows
  (the square-root rule; the linear rule is SGD's).
* ``quiz`` — five questions on what the chapter measured, and why (answers in
  ``quiz_answers``, a letter or a number each; see :mod:`bertcourse.exercises.quiz`).

The references are the package's own functions where it has them
(:func:`bertcourse.distributed.data_parallel_plan`, :func:`bertcourse.batching.shard_batches`).
"""
from __future__ import annotations

import math
import re

import torch

from ..distributed import data_parallel_plan
from ..i18n import gettext as _, gettext_noop as N_
from .core import (CheckFailed, Exercise, Symptom, as_number, call_answer, compare_tensors,
                   equal_values, randn, run_cases, seeded)
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "quiz"]


# ---------------------------------------------------------------------------------------
# Q1: the global batch and the steps of an epoch (a prediction)
# ---------------------------------------------------------------------------------------

def _ref_plan(num_pairs, world_size, batch_size):
    plan = data_parallel_plan(num_pairs, batch_size, world_size)
    return plan["global_batch"], plan["steps_per_epoch"]


Q1_CASES = [
    (N_("28,606 pairs, 2 processes of 128 pairs"), (28606, 2, 128)),
    (N_("1,000 pairs, 4 processes of 32 pairs (32 batches, 8 each)"), (1000, 4, 32)),
    (N_("100 pairs, 2 processes of 32 pairs (batches of 32, 32, 32 and 4)"), (100, 2, 32)),
    (N_("1,000 pairs, 3 processes of 32 pairs (32 batches: 2 left out)"), (1000, 3, 32)),
    (N_("one process: the usual training"), (500, 1, 64)),
]

Q1_DIAGNOSES = [
    (lambda n, N, b: (b, math.ceil(n / b) // N),
     N_("the global batch is the pairs of *one* optimizer step over all processes: N x batch_size.")),
    (lambda n, N, b: (N * b, math.ceil(n / b)),
     N_("each optimizer step uses N batches (one per process), so an epoch has N times fewer steps.")),
    (lambda n, N, b: (N * b, math.ceil(math.ceil(n / b) / N)),
     N_("you rounded the steps up: when the batches do not divide evenly, some process would have one "
        "batch fewer and the others would wait for it forever; the last batches % N are left out.")),
    (lambda n, N, b: (N * b, n // (N * b)),
     N_("the last, shorter batch of the epoch is still a batch: count ceil(num_pairs / batch_size) "
        "batches, then divide by N (rounding down).")),
]


def _as_pair(got, where, *args):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise CheckFailed(_("on {where}: return a pair (global_batch, steps), got {got:.60}").format(where=where, got=repr(got)))
    return tuple(int(as_number(x, where, whole=True)) for x in got)


def _check_q1(answer) -> str:
    run_cases(answer, _ref_plan, Q1_CASES, Q1_DIAGNOSES, prepare=_as_pair,
              compare=equal_values(N_("on {where}: expected (global_batch, steps) = {expected}, got {got}")))
    return _("correct on all {n} cases: N processes of b pairs learn from N x b pairs per step, and an epoch has "
             "N times fewer steps").format(n=len(Q1_CASES))


q1 = Exercise(
    name=N_("Q1 (global batch and steps per epoch)"),
    var="global_batch_and_steps",
    checker=_check_q1,
    hints=[
        N_("One optimizer step: every process computes the gradients of its own batch, then they are "
           "averaged. How many pairs is that?"),
        N_("An epoch is cut into ceil(num_pairs / batch_size) batches (the last one may be shorter). Each "
           "step uses one batch per process."),
        N_("Every process must do the same number of steps: batches // world_size (the rest is left out "
           "this epoch)."),
    ],
    solution=N_('''
def global_batch_and_steps(num_pairs, world_size, batch_size):
    batches = math.ceil(num_pairs / batch_size)      # the last batch may be shorter
    return world_size * batch_size, batches // world_size
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: this process' shard of the epoch
# ---------------------------------------------------------------------------------------

Q2_CASES = [(10, 2), (10, 3), (7, 4), (3, 3), (5, 1), (2, 4)]


def _check_q2(answer) -> str:
    for n, world_size in Q2_CASES:
        batches = [f"batch {i}" for i in range(n)]
        where = _("{n} batches, world_size={world_size}").format(n=n, world_size=world_size)
        shares = []
        for rank in range(world_size):
            got = call_answer(answer, (batches, world_size, rank), f"{where}, rank={rank}")
            if not isinstance(got, (list, tuple)):
                raise CheckFailed(_("on {where}, rank={rank}: return a list of batches, got {type}").format(
                    where=where, rank=rank, type=type(got).__name__))
            if any(b not in batches for b in got):
                raise CheckFailed(_("on {where}, rank={rank}: {got!r} holds something that is not one of the "
                                    "batches").format(where=where, rank=rank, got=got))
            shares.append(list(got))
        sizes = [len(s) for s in shares]
        if len(set(sizes)) > 1:
            raise CheckFailed(_("on {where}: the processes get {sizes} batches; they must all get the same "
                                "number, or the ones with more wait forever in an all-reduce that the others "
                                "never join (leave out the last len(batches) % world_size)").format(where=where, sizes=sizes))
        used = [b for s in shares for b in s]
        if len(used) != len(set(used)):
            twice = next(b for b in used if used.count(b) > 1)
            raise CheckFailed(_("on {where}: {twice!r} goes to two processes; each batch must go to one").format(
                where=where, twice=twice))
        if sizes[0] != n // world_size:
            raise CheckFailed(_("on {where}: each process gets {got} batches, but {possible} each are possible: only "
                                "len(batches) % world_size = {left} should be left out").format(
                where=where, got=sizes[0], possible=n // world_size, left=n % world_size))
    return _("correct: equal shares, no batch twice, as many as possible (the package deals them out "
             "like cards: rank, rank + N, ... — shard_batches)")


q2 = Exercise(
    name=N_("Q2 (this process' shard)"),
    var="my_shard",
    checker=_check_q2,
    hints=[
        N_("Every process receives the same list `batches` (the same seed gives the same epoch order) and "
           "must pick its own part of it."),
        N_("Leave out the last len(batches) % world_size batches, so that the rest divides evenly."),
        N_("Then deal them out like cards: batches[rank::world_size] of what is left."),
    ],
    solution=N_('''
def my_shard(batches, world_size, rank):
    usable = len(batches) // world_size * world_size    # the same number for every process
    return batches[:usable][rank::world_size]
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: what the all-reduce computes
# ---------------------------------------------------------------------------------------

def _ref_average(grads):
    world_size = len(grads)
    return [sum(g[i] for g in grads) / world_size for i in range(len(grads[0]))]


def _grad_case(world_size: int, shapes: list, seed: int):
    g = seeded(seed)
    return [[randn(*shape, seed=g) for shape in shapes] for _ in range(world_size)]


Q3_CASES = [
    (N_("2 processes, a weight (3, 4) and a bias (3,)"), (_grad_case(2, [(3, 4), (3,)], seed=1),)),
    (N_("4 processes, three parameters"), (_grad_case(4, [(2, 2), (5,), (1,)], seed=2),)),
    (N_("3 processes, one parameter"), (_grad_case(3, [(6,)], seed=3),)),
    (N_("1 process: nothing to average"), (_grad_case(1, [(2, 3)], seed=4),)),
]


def _as_tensor_list(got, where, grads):
    if isinstance(got, (list, tuple)) and got and all(isinstance(x, (list, tuple)) for x in got):
        raise CheckFailed(_("on {where}: you returned a list of lists; return one list, what every process ends up "
                            "with: one averaged tensor per parameter ({n}). (After the all-reduce each process "
                            "holds the same list.)").format(where=where, n=len(grads[0])))
    if not isinstance(got, (list, tuple)) or len(got) != len(grads[0]):
        raise CheckFailed(_("on {where}: return a list with one averaged tensor per parameter ({n}), got "
                            "{type}").format(where=where, n=len(grads[0]), type=type(got).__name__)
                          + (_(" of length {n}").format(n=len(got)) if isinstance(got, (list, tuple)) else ""))
    return list(got)


def _compare_lists(got, expected, where):
    for i, (a, e) in enumerate(zip(got, expected)):
        compare_tensors(a, e, _("on {where}, parameter {i}").format(where=where, i=i))


def _averaged_to_a_number(got, grads) -> bool:
    return any(isinstance(a, torch.Tensor) and a.dim() == 0 and e.dim() > 0 for a, e in zip(got, _ref_average(grads)))


def _not_the_parameter_shape(got, grads) -> bool:
    return any(isinstance(a, torch.Tensor) and a.shape != e.shape for a, e in zip(got, _ref_average(grads)))


def _mean_times(got, grads) -> float | None:
    # c when the learner's result is c times the mean for every parameter (c != 1), else None
    expected = _ref_average(grads)
    if not all(isinstance(a, torch.Tensor) and a.shape == e.shape and a.is_floating_point() for a, e in zip(got, expected)):
        return None
    a, e = torch.cat([x.detach().double().flatten() for x in got]), torch.cat([x.double().flatten() for x in expected])
    big = e.abs() > 1e-3
    if not big.any():
        return None
    c = float((a[big] / e[big]).median())
    return c if abs(c - 1) > 1e-3 and torch.allclose(a, c * e, rtol=1e-4, atol=1e-6) else None


Q3_DIAGNOSES = [
    (lambda grads: [sum(g[i] for g in grads) for i in range(len(grads[0]))],
     N_("you returned the sum over the processes: an all-reduce with SUM gives that, and DDP then divides "
        "by the number of processes, so that the step is the one for the mean loss of the global batch.")),
    (lambda grads: list(grads[0]), N_("you returned rank 0's gradients: the others' batches are lost.")),
    (lambda grads: [sum(g[i] for g in grads) / len(grads[0]) for i in range(len(grads[0]))],
     N_("you divided by the number of parameters, len(grads[0]); the mean runs over the processes: divide by "
        "len(grads), the number of processes.")),
    (lambda grads: [sum(g[i] for g in grads) // len(grads) for i in range(len(grads[0]))],
     N_("// is floor division: it rounds every entry down to a whole number. Divide with /.")),
    (lambda grads: [torch.cat([g[i] for g in grads]).mean(0) for i in range(len(grads[0]))],
     N_("torch.cat joins the processes' tensors end to end along their first axis, so mean(0) then averages "
        "across the rows of a parameter. torch.stack puts the processes on a new axis 0: "
        "torch.stack([g[i] for g in grads]).mean(0).")),
    (Symptom(_averaged_to_a_number),
     N_("you averaged every entry of a parameter into one number (a mean without dim); average over the "
        "processes only, so each parameter keeps its shape: torch.stack([g[i] for g in grads]).mean(0).")),
    (Symptom(_not_the_parameter_shape),
     N_("each averaged gradient has the shape of its parameter, grads[0][i].shape: average over the processes' "
        "axis only, which torch.stack([g[i] for g in grads]) puts first (mean(0), dim=0).")),
    (Symptom(lambda got, grads: _mean_times(got, grads) is not None),
     lambda got, grads: _("your result is {c:.4g} times the mean over the processes: check what you divide by "
                          "(the number of processes, len(grads) = {n}).").format(c=_mean_times(got, grads), n=len(grads))),
    # Q3's mistakes that raise: every learner's code raises its own message, so they go by the kind
    (Symptom(lambda error, grads: _q3_stuck(error, grads) is not None, raised=True),
     lambda error, grads: _q3_stuck(error, grads)),
]


def _q3_stuck(error: BaseException | None, grads) -> str | None:
    # what the learner's code got wrong when it raised `error` (None: it returned None) on `grads`;
    # None when nothing fits. Every learner's code raises its own message, so these go by the kind
    text = str(error)
    given_a_list = re.search(r"'list'|got \(?list|not list|only one element tensors|inhomogeneous|with a sequence", text)
    given_a_tuple = re.search(r"'tuple'|got \(?tuple|not tuple", text)
    if isinstance(error, (TypeError, ValueError)) and given_a_tuple and not given_a_list:
        return _("the tensors of one parameter are in a tuple (zip gives tuples), and torch.mean and the like take "
                 "one tensor: torch.stack(them).mean(0), or sum(them) / len(them).")
    if isinstance(error, (TypeError, ValueError)) and given_a_list:
        return _("grads is a list per process (grads[r][i]: process r, parameter i), not a tensor: average one "
                 "parameter at a time, torch.stack([g[i] for g in grads]).mean(0).")
    if isinstance(error, RuntimeError) and re.search(r"size|shape|dimension", text):
        return _("the tensors you combined have different shapes, so they are different parameters: grads[r] holds "
                 "the gradients of process r, one per parameter (here of shapes {shapes}), and those cannot be added "
                 "or stacked together. Combine one parameter across the processes: grads[0][i], grads[1][i], … "
                 "(grads[r][i] for every r).").format(shapes=", ".join(str(tuple(t.shape)) for t in grads[0]))
    if isinstance(error, IndexError) and re.search(r"(list|tuple) index out of range", text):
        return _("an index ran past the end of its list: grads has {n} entries (the processes) and each grads[r] "
                 "has {p} (the parameters). Did you swap them? grads[r][i] is process r's gradient of parameter i: "
                 "i runs over range(len(grads[0])), r over range(len(grads)).").format(n=len(grads), p=len(grads[0]))
    return None


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_average, Q3_CASES, Q3_DIAGNOSES, prepare=_as_tensor_list, compare=_compare_lists)


q3 = Exercise(
    name=N_("Q3 (what the all-reduce computes)"),
    var="average_gradients",
    checker=_check_q3,
    hints=[
        N_("grads[r][i] is the gradient of parameter i on process r. Every process ends up with the same "
           "result, one tensor per parameter."),
        N_("For parameter i, combine grads[0][i], grads[1][i], ...: which combination gives the gradient of "
           "the mean loss over all N batches?"),
        N_("The mean over the processes: sum(g[i] for g in grads) / len(grads), for every i."),
    ],
    solution=N_('''
def average_gradients(grads):
    world_size = len(grads)
    return [sum(g[i] for g in grads) / world_size for i in range(len(grads[0]))]
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: the learning rate of a bigger global batch
# ---------------------------------------------------------------------------------------

Q4_CHOICES = {
    "A": N_("Keep it: the model, the data and the optimizer are the same."),
    "B": N_("Start from 2 = sqrt(4) times the learning rate (the global batch is 4 times larger), with a warm-up."),
    "C": N_("Halve it: each process now sees half as many pairs per step."),
    "D": N_("Multiply it by 8: eight processes each take a step."),
    "E": N_("Start from 4 times the learning rate (the global batch is 4 times larger), with a warm-up."),
}

Q4_WHY_NOT = {
    "A": N_("the optimizer takes one step per global batch of 8 x 64 = 512 pairs, 4 times the single process's "
            "128: its gradient is less noisy, and an epoch has 4 times fewer steps. Kept as it is, the run makes "
            "4 times fewer steps of the same size and learns slower per pair seen."),
    "C": N_("what moves the weights is the global batch, 8 x 64 = 512 pairs, whose averaged gradient every process "
            "applies in the same step; the 64 per process only say how the 512 are split."),
    "D": N_("the processes do not take separate steps: after the all-reduce they all take the *same* step, with "
            "the gradient averaged over the global batch of 8 x 64 = 512 pairs, 4 times the 128 of one process "
            "(not 8 times)."),
    "E": N_("the linear scaling rule (Goyal et al., 2017) was derived and tested for SGD, whose step is "
            "proportional to the gradient. AdamW divides the step by the root of the running mean of the "
            "squared gradients, and for Adam-type optimizers the square-root rule (Malladi et al., 2022) "
            "is the one with a derivation: 4 times the batch, sqrt(4) = 2 times the learning rate. With SGD, "
            "E would be the right start."),
}


def _check_q4(answer) -> str:
    if not isinstance(answer, str):
        raise CheckFailed(_("lr_choice must be one letter as a string, e.g. 'A', got {type}").format(
            type=type(answer).__name__))
    letter = answer.strip().upper().rstrip(")").strip()
    if letter not in Q4_CHOICES:
        raise CheckFailed(_("lr_choice must be one of {choices}, got {answer!r}").format(
            choices=", ".join(Q4_CHOICES), answer=answer))
    if letter != "B":
        raise CheckFailed(_("{letter} is not the best choice: {why}").format(letter=letter, why=_(Q4_WHY_NOT[letter])))
    return _("B: the square-root scaling rule for Adam and AdamW (Malladi et al., 2022; their rule also "
             "adjusts Adam's betas and epsilon), with a warm-up. For SGD the starting point would be the "
             "linear rule (Goyal et al., 2017): 4 times. Both hold up to some batch size and then break "
             "down: a rule to start from, then check the loss curve.")


q4 = Exercise(
    name=N_("Q4 (learning rate and global batch)"),
    var="lr_choice",
    checker=_check_q4,
    hints=[
        N_("How many pairs does one optimizer step learn from with 8 processes of 64, compared with 1 of 128?"),
        N_("The averaged gradient of 512 pairs is less noisy than that of 128: how far can one step go?"),
        N_("The optimizer is AdamW, not SGD: which scaling rule was derived for Adam-type optimizers?"),
    ],
    solution=N_('''
lr_choice = "B"   # global batch 8 x 64 = 4 x 128: sqrt(4) = 2x for AdamW (the square-root rule), with a warm-up
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 14)"), [
    Question(
        N_("Section 1 split a batch of 16 pairs into two halves of 8. The plain mean of the halves' gradients "
           "differed from the gradient on all 16 by 9% of the largest gradient. Why?"),
        options=(
            Option(N_("Rounding: the float32 sums were added in another order."),
                   why=N_("No: weighted by the number of predictions, the halves' gradients agree with the full "
                          "batch's to below 1e-5 of the largest gradient. Rounding cannot explain 9%.")),
            Option(N_("Dropout drew different masks in the two halves."),
                   why=N_("No: the model was in eval() mode, without dropout, so every computation repeats "
                          "exactly.")),
            Option(N_("The MLM loss is a mean over the real predictions, and the halves had 20 and 16 of them: the "
                      "plain mean gives each half the same say."),
                   why=N_("Right: averaging the ranks' means weighs a prediction of the smaller half more. Weighted "
                          "by the predictions, the equation holds again."), correct=True),
            Option(N_("The NSP loss: the two halves hold different numbers of pairs."),
                   why=N_("No: each half holds 8 pairs, so the mean over pairs averages exactly. It is the MLM "
                          "loss, a mean over a varying number of predictions, that differs.")),
        )),
    Question(
        N_("The exact version (global_mean_loss) divides each rank's MLM loss sum by the global number of "
           "predictions, and then multiplies it by N. Why the factor N?"),
        options=(
            Option(N_("DDP then averages the ranks' gradients, dividing their sum by N once more: the factor N "
                      "cancels that."),
                   why=N_("Right: the mean over the ranks of the gradients of N * S_r / (global count) is the "
                          "gradient of the global batch's mean. Without N every step would be N times too small."),
                   correct=True),
            Option(N_("It is the linear scaling rule: N times the learning rate for an N times larger global "
                      "batch."),
                   why=N_("No: the learning rate is a separate choice (and for AdamW the chapter starts from sqrt(N) "
                          "times). The factor N only makes the averaged gradient exactly the global batch's.")),
            Option(N_("It gives a rank with more predictions a larger say."),
                   why=N_("The division by the global count already does that: every prediction, on whichever rank, "
                          "counts the same. The factor N cancels DDP's averaging over the ranks.")),
        )),
    Question(
        N_("Every rank builds the length-bucket sampler with the same seed, then takes its own share. What would "
           "a seed per rank do?"),
        options=(
            Option(N_("Nothing bad: different orders give each rank more variety."),
                   why=N_("No: two independent orders do not split the epoch between the ranks; some pairs are "
                          "read twice, others never.")),
            Option(N_("The ranks would draw different orders: their shards would overlap, and some pairs would "
                      "never be seen."),
                   why=N_("Right: with one shared order, each rank takes every N-th batch: disjoint shares that "
                          "together are the epoch (the first batches of rank 0 and rank 1 shared 0 pairs). Dropout "
                          "masks, on the other hand, differ between ranks."), correct=True),
            Option(N_("The model copies would drift apart."),
                   why=N_("No: whatever they read, every rank takes the same step with the same averaged gradient, "
                          "so the copies stay identical. The harm is in the data: overlapping shards, pairs never "
                          "seen.")),
        )),
    Question(
        N_("Section 6: plotted against pairs seen, the two-process run (global batch 256) needs more pairs than one "
           "process (128) for the same loss, at least early on. Why?"),
        options=(
            Option(N_("Its two shards overlap, so it reads some pairs twice."),
                   why=N_("No: the shares are disjoint (the first batches of rank 0 and rank 1 shared 0 pairs).")),
            Option(N_("Averaging over two ranks makes the gradient noisier."),
                   why=N_("The opposite: the averaged gradient of B pairs is less noisy than that of b; its variance "
                          "shrinks like 1/B.")),
            Option(N_("At the same learning rate, a step of 256 pairs moves the weights about as far as a step of "
                      "128: twice the data per step, without bigger steps."),
                   why=N_("Right: against steps the two-process curve is as low or lower (its less noisy gradient "
                          "points a little better), but each step costs twice the pairs. That is why the learning "
                          "rate should grow with the global batch."), correct=True),
        )),
    Question(
        N_("Section 7: the ring all-reduce of BERT-base's gradients (about 110 million parameters, 440 MB in "
           "float32) over 8 processes on 10 Gbit/s Ethernet (1.25 GB/s). About how many seconds does one "
           "all-reduce take? (a number, in seconds)"),
        answer=0.616, tolerance=0.06, unit=" s",
        why=N_("Right: each rank sends and receives 2(N - 1)/N = 1.75 times the 440 MB, 770 MB, which takes about "
               "0.62 s at 1.25 GB/s, every step. Over 100 Gbit/s InfiniBand it is ten times less."),
        why_low=N_("Too low: the ring makes each rank send and receive 2(N - 1)/N = 1.75 times the 440 MB, not a "
                   "share of it: 770 MB at 1.25 GB/s takes about 0.62 s."),
        why_high=N_("Too high: what each rank sends hardly grows with N (the factor 2(N - 1)/N stays below 2): "
                    "1.75 x 440 MB = 770 MB at 1.25 GB/s, about 0.62 s. (6.2 s on 1 Gbit/s Ethernet.)"),
    ),
])
