"""Tests for the chapter 14 exercises (bertcourse.exercises.ch14): the scaling-up chapter.

The wrong answers are written the way a learner would write them, so the tests check that
real mistakes get a message naming them.
"""
import math

import pytest
import torch

from bertcourse.distributed import data_parallel_plan
from bertcourse.exercises import ch14
from bertcourse.exercises.ch14 import q1, q2, q3, q4
from bertcourse.batching import LengthBucketSampler


def test_references_are_the_package_and_match_the_sampler():
    assert q1.check(ch14._ref_plan)
    for (n, world_size, batch), _ in [(args, None) for _, args in ch14.Q1_CASES]:
        sampler = LengthBucketSampler(torch.ones(n), batch, world_size=world_size, rank=world_size - 1)
        assert len(list(sampler)) == len(sampler) == ch14._ref_plan(n, world_size, batch)[1]
    assert [ch14._ref_plan(*args) for _, args in ch14.Q1_CASES] == [(256, 112), (128, 8), (64, 2), (96, 10), (64, 8)]
    assert data_parallel_plan(100, 32, 2)["left_out_batches"] == 0 and data_parallel_plan(1000, 32, 3)["left_out_batches"] == 2


@pytest.mark.parametrize("wrong, phrase", [
    (lambda n, N, b: (b, math.ceil(n / b) // N), "the global batch is the pairs of *one* optimizer step"),
    (lambda n, N, b: (N * b, math.ceil(n / b)), "an epoch has N times fewer steps"),
    (lambda n, N, b: (N * b, math.ceil(n / b / N)), "you rounded the steps up"),
    (lambda n, N, b: (N * b, n // (N * b)), "the last, shorter batch of the epoch is still a batch"),
    (lambda n, N, b: N * b, "return a pair (global_batch, steps)"),
])
def test_q1_mistakes_are_named(wrong, phrase):
    result = q1.check(wrong)
    assert result.status == "fail" and phrase in result.message, result.message


def test_q2_any_fair_rule_passes_and_unfair_ones_are_named():
    def blocks(batches, world_size, rank):                  # contiguous blocks: also fair
        k = len(batches) // world_size
        return batches[rank * k:(rank + 1) * k]
    assert q2.check(blocks)
    result = q2.check(lambda batches, world_size, rank: batches[rank::world_size])
    assert result.status == "fail" and "must all get the same number" in result.message
    result = q2.check(lambda batches, world_size, rank: batches[:len(batches) // world_size])
    assert result.status == "fail" and "goes to two processes" in result.message
    result = q2.check(lambda batches, world_size, rank: batches[:0])
    assert result.status == "fail" and "as many" not in result.message and "each are possible" in result.message

    def pops(batches, world_size, rank):
        batches.pop()
        return []
    assert q2.check(pops).status == "fail"


def test_q3_mistakes_are_named():
    result = q3.check(lambda grads: [sum(g[i] for g in grads) for i in range(len(grads[0]))])
    assert result.status == "fail" and "you returned the sum over the processes" in result.message
    result = q3.check(lambda grads: list(grads[0]))
    assert result.status == "fail" and "rank 0's gradients" in result.message
    result = q3.check(lambda grads: [torch.stack([g[i] for g in grads]).mean(0) for i in range(len(grads[0]))])
    assert result.status == "pass"


def each_parameter(grads):
    return range(len(grads[0]))


@pytest.mark.parametrize("wrong, phrase", [
    # grads taken for a tensor: it is a list (processes) of lists (parameters) of tensors
    (lambda grads: sum(grads) / len(grads), "grads is a list per process"),
    (lambda grads: torch.stack(grads).mean(0), "grads is a list per process"),
    (lambda grads: torch.tensor(grads).mean(0), "grads is a list per process"),
    (lambda grads: torch.mean(grads, 0), "grads is a list per process"),
    (lambda grads: (grads[0] + grads[1]) / 2, "grads is a list per process"),
    (lambda grads: [torch.mean(ts, 0) for ts in zip(*grads)], "the tensors of one parameter are in a tuple"),
    # one process' parameters combined with each other
    (lambda grads: [sum(g) / len(g) for g in grads], "the tensors you combined have different shapes, so they "
                                                     "are different parameters"),
    (lambda grads: [torch.stack(g).mean(0) for g in grads], "(here of shapes (3, 4), (3,))"),
    (lambda grads: [sum(grads[i]) / len(grads) for i in each_parameter(grads)], "different parameters"),
    # the two indices swapped
    (lambda grads: [sum(g[i] for g in grads) / len(grads) for i in range(len(grads))],
     "grads has 4 entries (the processes) and each grads[r] has 3 (the parameters)"),
    # wrong values or shapes
    (lambda grads: [sum(g[i] for g in grads) / len(grads[0]) for i in each_parameter(grads)],
     "you divided by the number of parameters"),
    (lambda grads: [sum(g[i] for g in grads) // len(grads) for i in each_parameter(grads)], "floor division"),
    (lambda grads: [torch.cat([g[i] for g in grads]).mean(0) for i in each_parameter(grads)],
     "torch.cat joins the processes' tensors end to end"),
    (lambda grads: [torch.stack(ts).mean() for ts in zip(*grads)], "into one number"),
    (lambda grads: [torch.stack(ts).mean(1) for ts in zip(*grads)], "the shape of its parameter"),
    (lambda grads: [sum(g[i] for g in grads) / (len(grads) + 1) for i in each_parameter(grads)],
     "your result is 0.6667 times the mean over the processes"),
    # what each process holds, returned once per process
    (lambda grads: [[sum(g[i] for g in grads) / len(grads) for i in each_parameter(grads)] for _ in grads],
     "you returned a list of lists"),
])
def test_q3_slips_are_named(wrong, phrase):
    result = q3.check(wrong)
    assert result.status == "fail" and phrase in result.message, result.message
    assert result.message.count(" — ") <= 1, result.message        # named once


def test_q3_a_learner_exception_of_another_kind_is_still_reported():
    def typo(grads):
        return [g[i].means(0) for g in grads for i in each_parameter(grads)]
    result = q3.check(typo)
    assert result.status == "fail" and "raised AttributeError" in result.message and " — " not in result.message


@pytest.mark.parametrize("letter, phrase", [("A", "4 times fewer steps"), ("C", "global batch, 8 x 64 = 512"),
                                            ("D", "not 8 times"), ("E", "derived and tested for SGD"),
                                            ("F", "must be one of A, B, C, D, E")])
def test_q4_explains_each_wrong_letter(letter, phrase):
    result = q4.check(letter)
    assert result.status == "fail" and phrase in result.message
    assert q4.check(" b) ").status == "pass"


def test_q4_answer_is_the_square_root_rule_for_adamw_and_names_the_sources():
    from bertcourse.exercises.ch14 import Q4_CHOICES
    assert "sqrt(4)" in Q4_CHOICES["B"] and "4 times the learning rate" in Q4_CHOICES["E"]
    # the choices do not say which rule is whose: that is the question
    assert not any(word in text for text in Q4_CHOICES.values() for word in ("Adam", "SGD", "square-root", "linear"))
    message = q4.check("B").message
    assert "Malladi et al., 2022" in message and "Goyal et al., 2017" in message
    assert "Malladi et al., 2022" in q4.check("E").message
