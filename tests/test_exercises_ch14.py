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


@pytest.mark.parametrize("letter, phrase", [("A", "4 times fewer steps"), ("C", "the *same* step"),
                                            ("D", "not 16"), ("E", "derived and tested for SGD"),
                                            ("F", "must be one of A, B, C, D, E")])
def test_q4_explains_each_wrong_letter(letter, phrase):
    result = q4.check(letter)
    assert result.status == "fail" and phrase in result.message
    assert q4.check(" b) ").status == "pass"


def test_q4_answer_is_the_square_root_rule_for_adamw_and_names_the_sources():
    from bertcourse.exercises.ch14 import Q4_CHOICES
    assert "sqrt(4)" in Q4_CHOICES["B"] and "by 4" in Q4_CHOICES["E"]
    message = q4.check("B").message
    assert "Malladi et al., 2022" in message and "Goyal et al., 2017" in message
    assert "Malladi et al., 2022" in q4.check("E").message
