"""Tests for the exercise machinery in bertcourse.exercises.core, and the promises every
chapter's exercises keep (parametrized over every question of every chapter module the
package has: ``bertcourse.exercises.chNN``, discovered, not listed)."""
import ast
import contextlib
import copy
import dataclasses
import functools
import importlib
import inspect
import io
import json
import math
import pathlib
import pkgutil
import re
import sys

import pytest
import torch

import bertcourse.exercises
from bertcourse.exercises import (CheckFailed, CheckResult, Exercise, NotAttempted, Symptom, as_number,
                                  call_answer, compare_tensors, equal_values, expect_raises, randn,
                                  run_cases, seeded)
from bertcourse.exercises.core import message_of
from bertcourse.exercises.guesses import predicted_choice, predicted_dict, predicted_number


def assert_checks_as(status, ex, answer, *fragments):
    """``ex.check(answer)`` has ``status``, and its message holds every fragment (the chapter
    tests use it, through :func:`assert_fails_with` and :func:`assert_passes_with`)."""
    result = ex.check(answer)
    assert result.status == status, result.message
    for fragment in fragments:
        assert fragment in result.message, result.message
    return result


assert_fails_with = functools.partial(assert_checks_as, "fail")
assert_passes_with = functools.partial(assert_checks_as, "pass")


def assert_leaves_global_rng_alone(run, *caches):
    """``run()`` (a question's experiment, its caches cleared first) leaves torch's global
    random state as it found it; returns what ``run()`` returned."""
    for cache in caches:
        cache.cache_clear()
    torch.manual_seed(0)
    state = torch.random.get_rng_state()
    result = run()
    assert torch.equal(torch.random.get_rng_state(), state)
    return result


def reference(x):
    return 2 * x


CASES = [("a vector", (torch.arange(4.0),)), ("a matrix", (torch.ones(2, 3),))]
DIAGNOSES = [(lambda x: 3 * x, "you multiplied by 3 instead of 2.")]


def make_exercise():
    return Exercise("Q0 (doubling)", "double_it",
                    lambda answer: run_cases(answer, reference, CASES, DIAGNOSES),
                    hints=["first hint", "second hint", "third hint"],
                    solution="\ndef double_it(x):\n    return 2 * x\n\n")


# --- compare_tensors ---------------------------------------------------------------------

def test_compare_tensors_accepts_close_values():
    compare_tensors(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]), "x")


def test_compare_tensors_reports_first_difference():
    with pytest.raises(CheckFailed, match=r"x: first difference at index \(1, 0\): expected 3, got 5 "
                                          r"\(1 of 4 entries differ\)"):
        compare_tensors(torch.tensor([[1.0, 2.0], [5.0, 4.0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "x")


def test_compare_tensors_shape_and_type():
    with pytest.raises(CheckFailed, match=r"x: expected shape \(2, 3\), got \(3, 2\)"):
        compare_tensors(torch.zeros(3, 2), torch.zeros(2, 3), "x")
    with pytest.raises(CheckFailed, match=r"x: expected a torch.Tensor, got list"):
        compare_tensors([0.0, 0.0], torch.zeros(2), "x")


def test_compare_tensors_refuses_floats_for_ids_where_asked():
    ids = torch.tensor([4, 17, 9])
    # ids or positions (integers=True): a float tensor of the right values fails, any integer dtype passes
    with pytest.raises(CheckFailed, match=r"x: expected an integer tensor \(dtype torch.int64\), got the "
                                          r"floating-point dtype torch.float32"):
        compare_tensors(ids.float(), ids, "x", integers=True)
    compare_tensors(ids.to(torch.int32), ids, "x", integers=True)
    # counts, which a float holds exactly, pass as floats by default
    compare_tensors(ids.float(), ids, "x")
    with pytest.raises(TypeError, match="integers must be a bool"):
        compare_tensors(ids, ids, "x", integers=1)
    with pytest.raises(ValueError, match="integers must be False when compare is given"):
        run_cases(lambda x: x, reference, CASES, integers=True, compare=lambda got, expected, where: None)


def test_compare_tensors_nan_is_a_difference():
    with pytest.raises(CheckFailed, match="got nan"):
        compare_tensors(torch.tensor([float("nan")]), torch.tensor([0.0]), "x")


# --- check(): pass / fail / not attempted ----------------------------------------------

def test_correct_answer_passes(capsys):
    result = make_exercise().check(lambda x: x + x)
    assert isinstance(result, CheckResult) and result.status == "pass" and bool(result)
    assert "correct on all 2 cases (a vector, a matrix)" in result.message
    assert capsys.readouterr().out.startswith("[PASS] Q0 (doubling)")


def test_wrong_answer_fails_with_first_difference(capsys):
    result = make_exercise().check(lambda x: x + 1)
    assert result.status == "fail" and not result
    assert "on a vector: first difference at index (0,): expected 0, got 1" in result.message
    assert "call .hint()" in result.message
    assert capsys.readouterr().out.startswith("[FAIL]")


def test_diagnosis_names_the_mistake():
    result = make_exercise().check(lambda x: 3 * x)
    assert result.status == "fail"
    assert "on a vector" in result.message and "you multiplied by 3 instead of 2." in result.message


def _tripled(x):
    """you multiplied by 3
       instead of 2."""
    return 3 * x


def test_a_mistake_function_carries_its_message_as_its_docstring():
    # the docstring's line break and indent become one space
    assert message_of(_tripled) == "you multiplied by 3 instead of 2."
    with pytest.raises(CheckFailed, match=r"on a vector: .* — you multiplied by 3 instead of 2\.$"):
        run_cases(lambda x: 3 * x, reference, CASES, [_tripled])


def test_a_mistake_function_without_a_docstring_is_refused():
    def tripled(x):
        return 3 * x
    with pytest.raises(TypeError, match=r"diagnoses\[0\] must be a function with a docstring"):
        run_cases(lambda x: 2 * x, reference, CASES, [tripled])


def test_no_diagnosis_when_no_known_mistake_matches():
    result = make_exercise().check(lambda x: 4 * x)
    assert result.status == "fail" and "multiplied by 3" not in result.message


def test_wrong_shape_fails():
    result = make_exercise().check(lambda x: x.sum())
    assert result.status == "fail" and "expected shape (4,), got ()" in result.message


@pytest.mark.parametrize("stub", [None, ...])
def test_placeholder_value_is_not_attempted(stub):
    result = make_exercise().check(stub)
    assert result.status == "not attempted" and not result
    assert "starter placeholder" in result.message


def stub_dots(x):
    ...


def stub_raises(x):
    raise NotImplementedError


@pytest.mark.parametrize("stub", [stub_dots, stub_raises])
def test_stub_function_is_not_attempted(stub, capsys):
    result = make_exercise().check(stub)
    assert result.status == "not attempted"
    assert str(result).startswith("[NOT ATTEMPTED YET] Q0 (doubling):")
    assert "[NOT ATTEMPTED YET]" in capsys.readouterr().out


def test_learner_exception_is_a_failed_check_not_a_crash():
    def buggy(x):
        return x[0].item() + "2"

    result = make_exercise().check(buggy)
    assert result.status == "fail"
    assert result.message.startswith("on a vector, your code raised TypeError: unsupported operand")


def test_a_shape_error_is_told_in_the_exercises_terms():
    def buggy(x):
        return x @ torch.ones(7)

    result = make_exercise().check(buggy)
    assert result.status == "fail"
    assert result.message.startswith(
        "on a vector, the shapes or dtypes in your code do not fit together. Your function got x: shape (4,), "
        "float32. It must return a tensor of shape (4,), float32. (The error: RuntimeError: inconsistent tensor size")
    # a dtype error too, with every argument named after the reference's signature
    with pytest.raises(CheckFailed, match=r"^on c, the shapes .* got a: shape \(2,\), int64; n = 3\. It must return "
                                          r"a single number, a tensor of shape \(\), float32\. \(The error: "):
        run_cases(lambda x, y: torch.softmax(x, 0).sum(), lambda a, n: a.float().sum() * n,
                  [("c", (torch.tensor([1, 2]), 3))])
    # an index of floats: torch's message names no shape or dtype word, the arguments are shown all the same
    with pytest.raises(CheckFailed, match=r"^on c, the shapes .* got v: shape \(3,\), float32; i: shape \(1,\), "
                                          r"float32\. .*\(The error: IndexError: tensors used as indices must be long"):
        call_answer(lambda v, i: v[i], (torch.ones(3), torch.zeros(1)), "c")
    # call_answer has no reference: the answer's own names, and no result
    with pytest.raises(CheckFailed, match=r"^on c, the shapes .* got v: shape \(3,\), float32\. \(The error: "):
        call_answer(lambda v: v + torch.ones(2), (torch.ones(3),), "c")


def test_a_mistake_that_raises_names_a_learners_code_that_raises_alike():
    def sum_rows(m):
        """you summed over the wrong axis."""
        return m.sum(0)

    def pairs(m):
        """you paired each row with the wrong vector."""
        return m + torch.ones(m.shape[0])

    cases = [("a 2×3 matrix", (torch.ones(2, 3),))]
    # torch swaps the sizes with the operands: (2) and (3) in either order is the same error
    with pytest.raises(CheckFailed, match=r"\(The error: RuntimeError: The size of tensor a \(\d\) .* — you paired"):
        run_cases(lambda m: torch.ones(m.shape[0]) + m, lambda m: m.sum(1), cases, [sum_rows, pairs])
    # another size is not that mistake
    with pytest.raises(CheckFailed) as failure:
        run_cases(lambda m: m + torch.ones(4), lambda m: m.sum(1), cases, [sum_rows, pairs])
    assert " — " not in str(failure.value)


def test_checker_tripping_on_a_bad_value_is_a_failed_check():
    ex = Exercise("Q", "v", lambda answer: str(answer + 1), ["h"], "v = 1")
    result = ex.check("a string")
    assert result.status == "fail" and "checking `v` raised TypeError" in result.message


# --- looking the answer up in the notebook ----------------------------------------------

def test_check_finds_the_answer_in_main_globals(monkeypatch):
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "double_it", lambda x: 2 * x, raising=False)
    assert make_exercise().check().status == "pass"
    monkeypatch.setattr(main, "double_it", lambda x: 3 * x)
    result = make_exercise().check()
    assert result.status == "fail" and "multiplied by 3" in result.message


def test_check_when_the_variable_is_not_defined(monkeypatch):
    monkeypatch.delattr(sys.modules["__main__"], "double_it", raising=False)
    result = make_exercise().check()
    assert result.status == "not attempted"
    assert "define `double_it` in a cell above" in result.message


def test_check_finds_the_answer_in_the_callers_globals(monkeypatch):
    monkeypatch.delattr(sys.modules["__main__"], "double_it", raising=False)
    namespace = {"__name__": "learner_module"}
    exec("def double_it(x):\n    return x * 2\n"
         "def run(ex):\n    return ex.check()\n", namespace)
    assert namespace["run"](make_exercise()).status == "pass"


# --- hints and solution -------------------------------------------------------------------

def test_hints_come_in_tiers_and_stop_at_the_last(capsys):
    ex = make_exercise()
    shown = [ex.hint() for _ in range(4)]
    assert shown == ["Hint 1/3: first hint", "Hint 2/3: second hint", "Hint 3/3: third hint",
                     "Hint 3/3: third hint"]
    assert capsys.readouterr().out.splitlines() == shown


def test_solution_prints_the_reference(capsys):
    text = make_exercise().solution()
    assert text == "def double_it(x):\n    return 2 * x"
    assert capsys.readouterr().out == "def double_it(x):\n    return 2 * x\n"


def test_an_exercise_needs_a_hint():
    with pytest.raises(ValueError, match="at least one hint"):
        Exercise("Q", "v", lambda a: "ok", [], "v = 1")


def test_results_are_not_echoed_twice_in_jupyter():
    """check(), hint() and solution() print; their return values must not be shown again
    as the cell's result (IPython uses _ipython_display_ instead of the repr)."""
    from IPython.core.formatters import DisplayFormatter
    formatter = DisplayFormatter()
    ex = make_exercise()
    for value in (ex.check(lambda x: 2 * x), ex.hint(), ex.solution()):
        assert formatter.format(value) == ({}, {})      # nothing is displayed
    assert formatter.format("a plain str")[0] == {"text/plain": "'a plain str'"}  # the control
    assert isinstance(ex.hint(), str)


# --- compare_tensors: answers that must not pass -----------------------------------------

def test_compare_tensors_refuses_a_complex_tensor_whatever_its_real_part():
    with pytest.raises(CheckFailed, match=r"x: expected a real tensor \(dtype torch.float32\), got the "
                                          r"complex dtype torch.complex64"):
        compare_tensors(torch.tensor([1.0, 2.0], dtype=torch.complex64), torch.tensor([1.0, 2.0]), "x")


def test_compare_tensors_refuses_integers_where_floats_are_expected():
    # the values are equal, so only the dtype check stops an integer answer here
    with pytest.raises(CheckFailed, match=r"x: expected a floating-point tensor \(dtype torch.float32\), "
                                          r"got dtype torch.int64"):
        compare_tensors(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]), "x")
    with pytest.raises(CheckFailed, match="got dtype torch.bool"):
        compare_tensors(torch.tensor([True, False]), torch.tensor([1.0, 0.0]), "x")
    compare_tensors(torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([1.0, 2.0]), "x")
    compare_tensors(torch.tensor([4, 5]), torch.tensor([4, 5]), "x")          # ints where ints are expected


def test_compare_tensors_refuses_a_meta_tensor():
    with pytest.raises(CheckFailed, match="'meta' device"):
        compare_tensors(torch.empty(2, device="meta"), torch.zeros(2), "x")


# --- the learner's function gets fresh copies and must not change them ---------------------

def test_answer_that_changes_its_input_fails_and_cannot_spoil_the_next_check():
    ex = make_exercise()
    result = ex.check(lambda x: x.mul_(2))                  # the right numbers, computed in place
    assert result.status == "fail"
    assert "the result is right, but your code changed its argument `x` in place" in result.message
    assert "x.clone()" in result.message
    assert torch.equal(CASES[0][1][0], torch.arange(4.0))     # the case is untouched
    result = ex.check(lambda x: torch.zeros_like(x))          # a wrong answer still fails
    assert result.status == "fail" and "first difference" in result.message
    assert ex.check(lambda x: 2 * x).status == "pass"


def test_reference_and_diagnoses_get_their_own_copies():
    seen = []

    def greedy_reference(x):
        seen.append(x)
        return x.mul_(2)

    def greedy_wrong(x):
        seen.append(x)
        return x.mul_(3)

    case = torch.arange(3.0)
    with pytest.raises(CheckFailed, match="multiplied by 3"):
        run_cases(lambda x: 3 * x, greedy_reference, [("v", (case,))], [(greedy_wrong, "multiplied by 3")])
    assert torch.equal(case, torch.arange(3.0)) and len(seen) == 2 and all(t is not case for t in seen)


def test_a_changed_module_list_or_object_is_named():
    def reference(layer, xs, config):
        return layer(torch.tensor(xs, dtype=torch.float32)) * config.scale

    @dataclasses.dataclass
    class Config:
        scale: float

    layer = torch.nn.Linear(3, 2)
    cases = [("one case", (layer, [1.0, 2.0, 3.0], Config(2.0)))]

    def eval_mode(layer, xs, config):
        out = reference(layer, xs, config)
        layer.train(not layer.training)
        return out

    def new_layer(layer, xs, config):
        out = reference(layer, xs, config)
        layer.bias = None
        return out

    def weights(layer, xs, config):
        out = reference(layer, xs, config)
        with torch.no_grad():
            layer.weight.zero_()
        return out

    def appended(layer, xs, config):
        out = reference(layer, xs, config)
        xs.append(4.0)
        return out

    def config_field(layer, xs, config):
        out = reference(layer, xs, config)
        config.scale = 0.0
        return out

    for answer, name in [(eval_mode, "layer"), (new_layer, "layer"), (weights, "layer"), (appended, "xs"),
                         (config_field, "config")]:
        with pytest.raises(CheckFailed, match=f"changed its argument `{name}` in place"):
            run_cases(answer, reference, cases, no_grad=True)
    assert run_cases(reference, reference, cases, no_grad=True).startswith("correct")

    def two(layer, xs, config):
        out = reference(layer, xs, config)
        xs.clear()
        config.scale = 1.0
        return out

    with pytest.raises(CheckFailed, match=r"changed its arguments `xs` and `config` in place.*list\(xs\)"):
        run_cases(two, reference, cases)


def test_using_a_module_that_records_its_last_attention_is_not_a_change():
    from bertcourse.attention import MultiHeadAttention
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, bias=True).eval()

    def self_attention(layer, X):
        return layer(X, X, X)

    with torch.no_grad():
        cases = [("one case", (mha, randn(2, 3, 8, seed=1)))]
        assert run_cases(self_attention, self_attention, cases).startswith("correct")
        assert mha.attention_weights is None        # the case's own module was never called


def test_in_place_message_can_be_given():
    with pytest.raises(CheckFailed, match="^on v: copy first$"):
        run_cases(lambda x: x.mul_(2), lambda x: 2 * x, [("v", (torch.ones(2),))], in_place="on {where}: copy first")


def test_call_answer_gives_copies_and_refuses_changes_in_place():
    case = [1, 2]
    with pytest.raises(CheckFailed, match=r"^on c: your code changed its argument `xs` in place"):
        call_answer(lambda xs: xs.pop(), (case,), "c")
    assert case == [1, 2]
    got = call_answer(lambda xs: xs, (case,), "c")
    assert got == case and got is not case


def test_nan_in_an_input_is_not_a_change():
    def reference(x):
        return torch.nan_to_num(x)
    assert run_cases(reference, reference, [("nan", (torch.tensor([1.0, float("nan")]),))]).startswith("correct")


# --- exceptions: the stub, real code, SystemExit, KeyboardInterrupt -----------------------

def test_system_exit_is_a_failed_check():
    result = make_exercise().check(lambda x: sys.exit(2))
    assert result.status == "fail"
    assert result.message.startswith("on a vector, your code raised SystemExit: 2 (exit() and sys.exit()")


def test_keyboard_interrupt_still_stops():
    def interrupted(x):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        make_exercise().check(interrupted)


def helper_not_written(x):
    raise NotImplementedError("helper_not_written is still a stub")


def calls_a_stub(x):
    return helper_not_written(x) * 2


def raises_itself(x):
    if x.dim() > 1:
        raise NotImplementedError("matrices are not supported yet")
    return 2 * x


def stub_with_docstring(x):
    """Double x."""
    # your code here
    raise NotImplementedError("write your code here")


def stub_pass(x):
    pass


def test_not_implemented_error_means_not_attempted_only_for_the_starter():
    for stub in (stub_dots, stub_raises, stub_with_docstring, stub_pass, lambda x: None):
        assert make_exercise().check(stub).status == "not attempted", stub
    result = make_exercise().check(calls_a_stub)
    assert result.status == "fail"
    assert "your code raised NotImplementedError: helper_not_written is still a stub" in result.message
    assert "not the untouched starter" in result.message and "`helper_not_written`" in result.message
    result = make_exercise().check(raises_itself)
    assert result.status == "fail"
    assert "on a matrix, your code raised NotImplementedError: matrices are not supported yet" in result.message


def test_none_from_real_code_is_a_failed_check():
    def forgot_return(x):
        y = 2 * x                      # noqa: F841

    result = make_exercise().check(forgot_return)
    assert result.status == "fail" and "returned None instead of a result: did you forget the `return`?" \
        in result.message


def test_a_checker_that_calls_the_answer_itself_keeps_the_same_rules():
    """A chapter may write its checker by hand (calling the answer directly): the stub is
    still "not attempted", and a NotImplementedError of real code a failed check."""
    ex = Exercise("Q", "f", lambda answer: f"got {answer(3)}", ["h"], "def f(x): return x")
    assert ex.check(stub_raises).status == "not attempted"
    result = ex.check(calls_a_stub)
    assert result.status == "fail" and "checking `f` raised NotImplementedError" in result.message
    result = ex.check(lambda x: sys.exit(1))
    assert result.status == "fail" and "SystemExit" in result.message
    with pytest.raises(KeyboardInterrupt):
        ex.check(lambda x: (_ for _ in ()).throw(KeyboardInterrupt()))


def test_a_checker_that_wraps_the_answer_still_sees_the_stub():
    """The old chapter pattern: run_cases on a wrapper around the answer."""
    ex = Exercise("Q", "f", lambda answer: run_cases(lambda x: answer(x), reference, CASES), ["h"], "")
    for stub in (stub_raises, stub_dots, stub_with_docstring):
        assert ex.check(stub).status == "not attempted"
    result = ex.check(calls_a_stub)
    assert result.status == "fail" and "not the untouched starter" in result.message
    assert ex.check(lambda x: 2 * x).status == "pass"
    result = ex.check(42)
    assert result.status == "fail" and result.message.startswith("f must be a function, got int")


def test_not_a_function_names_the_notebook_variable():
    result = make_exercise().check(42)
    assert result.status == "fail" and result.message.startswith("double_it must be a function, got int")
    with pytest.raises(CheckFailed, match="^your answer must be a function, got str$"):
        call_answer("f", (1,), "x=1")


# --- plain values, symptoms, expected errors ----------------------------------------------

def test_run_cases_on_plain_values_with_prepare_and_diagnoses():
    def reference(n):
        return [0] * n

    compare = equal_values("on {where}: expected [{expected}], got [{got}]", show=lambda v: " ".join(map(str, v)))
    diagnoses = [(lambda n: [0] * (n + 1), "one too many."),
                 (Symptom(lambda got, n: len(got) == 0), "empty."),
                 (lambda n: [1] * n, lambda n: f"ones instead of {n} zeros.")]
    cases = [("n=2", (2,)), ("n=3", (3,))]
    assert run_cases(reference, reference, cases, compare=compare) == "correct on all 2 cases (n=2, n=3)"
    with pytest.raises(CheckFailed, match=r"^on n=2: expected \[0 0\], got \[0 0 0\] — one too many\.$"):
        run_cases(lambda n: [0] * (n + 1), reference, cases, diagnoses, compare=compare)
    with pytest.raises(CheckFailed, match=r"— empty\.$"):
        run_cases(lambda n: (), reference, cases, diagnoses, compare=compare, prepare=lambda got, where, n: list(got))
    with pytest.raises(CheckFailed, match=r"— ones instead of 2 zeros\.$"):
        run_cases(lambda n: [1] * n, reference, cases, diagnoses, compare=compare)
    with pytest.raises(CheckFailed, match=r"— one too many\. Or: ones"):
        run_cases(lambda n: [0] * (n + 1), reference, cases,
                  [diagnoses[0], (lambda n: [0] * (n + 1), "ones")], compare=compare, all_diagnoses=True)
    with pytest.raises(CheckFailed, match="^on n=2: not a count$"):
        run_cases(lambda n: "2", reference, cases, compare=compare,
                  prepare=lambda got, where, n: (_ for _ in ()).throw(CheckFailed(f"on {where}: not a count")))


def test_a_symptoms_message_function_sees_the_learners_result():
    compare = equal_values()
    diagnoses = [(Symptom(lambda got, n: len(got) != n), lambda got, n: f"{len(got)} items for n={n}.")]
    with pytest.raises(CheckFailed, match=r"— 3 items for n=2\.$"):
        run_cases(lambda n: [0] * (n + 1), lambda n: [0] * n, [("n=2", (2,))], diagnoses, compare=compare)



def test_a_raised_symptom_sees_what_the_code_raised_or_a_returned_none():
    def why(error, n):
        return f"raised {type(error).__name__} on n={n}." if error is not None else f"None on n={n}."
    diagnoses = [(Symptom(lambda got, n: True), "a wrong result."),        # never asked about a raise or a None
                 (Symptom(lambda error, n: n == 2, raised=True), why)]
    cases = [("n=1", (1,)), ("n=2", (2,))]

    def fails_on_two(n, outcome):
        if n == 2:
            return outcome()
        return [0] * n

    def forgets_return(n):
        [0] * n
    with pytest.raises(CheckFailed, match=r"^on n=2, your code raised KeyError: 2 — raised KeyError on n=2\.$"):
        run_cases(lambda n: fails_on_two(n, lambda: {}[n]), lambda n: [0] * n, cases, diagnoses, compare=equal_values())
    with pytest.raises(CheckFailed, match=r"your code returned None instead of a result: .* — None on n=2\.$"):
        run_cases(lambda n: fails_on_two(n, lambda: None), lambda n: [0] * n, cases, diagnoses, compare=equal_values())
    with pytest.raises(CheckFailed, match=r"^on n=1, your code returned None instead of a result: [^—]*$"):
        run_cases(forgets_return, lambda n: [0] * n, cases, diagnoses, compare=equal_values())     # no match on n=1

def test_equal_values_with_a_message_function():
    compare = equal_values(lambda got, expected, where: f"{where}: {got} is not {expected}")
    compare((1, [2]), (1, [2]), "w")
    with pytest.raises(CheckFailed, match="^w: 3 is not 4$"):
        compare(3, 4, "w")
    with pytest.raises(CheckFailed):
        compare(torch.ones(2), torch.ones(2), "w")        # not a plain value: never equal


def test_expect_raises():
    def guarded(n):
        if n > 3:
            raise ValueError("too big")
        return n

    assert str(expect_raises(guarded, (5,), "n=5", ValueError, returned="r", other="o")) == "too big"
    with pytest.raises(CheckFailed, match="^accepted 3$"):
        expect_raises(guarded, (3,), "n=3", ValueError, returned=lambda out: f"accepted {out}", other="o")
    with pytest.raises(CheckFailed, match="^ZeroDivisionError$"):
        expect_raises(lambda n: n / 0, (3,), "n=3", ValueError, returned="r",
                      other=lambda e: type(e).__name__)
    with pytest.raises(CheckFailed, match="^o$"):
        expect_raises(lambda n: sys.exit(), (3,), "n=3", ValueError, returned="r", other="o")
    with pytest.raises(NotAttempted):
        expect_raises(stub_raises, (3,), "n=3", ValueError, returned="r", other="o")
    with pytest.raises(NotAttempted):
        expect_raises(stub_dots, (3,), "n=3", ValueError, returned="r", other="o")


def test_seeded_inputs_are_reproducible_and_leave_the_global_rng_alone():
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    a, b = randn(2, 3, seed=5), randn(2, 3, seed=5, scale=2.0)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(2 * a, b)
    assert torch.equal(a, torch.randn(2, 3, generator=torch.Generator().manual_seed(5)))
    g = seeded(7)
    first, second = randn(2, seed=g), randn(2, seed=g)
    assert not torch.equal(first, second) and torch.equal(torch.cat([first, second]), randn(4, seed=7))


@pytest.mark.parametrize("call, error, words", [
    (lambda: run_cases(lambda x: x, 3, CASES), TypeError, "reference must be a function, got int"),
    (lambda: run_cases(lambda x: x, reference, []), ValueError, "cases must hold at least one"),
    (lambda: run_cases(lambda x: x, reference, [("a", torch.ones(1))]), TypeError,
     r"cases\[0\] must be a \(description: str, args: tuple\) pair, got tuple"),
    (lambda: run_cases(lambda x: x, reference, CASES, [(1, "m")]), TypeError, r"diagnoses\[0\] must be"),
    (lambda: run_cases(lambda x: x, reference, CASES, atol=-1), ValueError, "atol must be >= 0, got -1"),
    (lambda: run_cases(lambda x: x, reference, CASES, compare="=="), TypeError, "compare must be a function"),
    (lambda: run_cases(lambda x: x, reference, CASES, in_place=3), TypeError, "in_place must be a str"),
    (lambda: call_answer(lambda x: x, {1}, "w"), TypeError, r"args must be a tuple \(or list\) .*, got set"),
    (lambda: call_answer(lambda x: x, (1,), 3), TypeError, "where must be a str"),
    (lambda: expect_raises(lambda x: x, (1,), "w", 3, returned="r", other="o"), TypeError,
     "error must be an Exception class, got int"),
    (lambda: equal_values(message=3), TypeError, "message must be a str template or a function, got int"),
    (lambda: Symptom("x"), TypeError, "predicate must be a function"),
    (lambda: seeded(-1), ValueError, "seed must be >= 0, got -1"),
    (lambda: seeded(1.5), TypeError, "seed must be an int, got float"),
    (lambda: randn(2, "3", seed=1), TypeError, r"shape\[1\] must be an int, got str"),
    (lambda: compare_tensors(torch.ones(1), [1.0], "x"), TypeError, "expected must be a torch.Tensor, got list"),
    (lambda: as_number(1, 2), TypeError, "where must be a str"),
    (lambda: Exercise("Q", "not a name", lambda a: "ok", ["h"], ""), TypeError, "var must be"),
    (lambda: Exercise("Q", "v", "checker", ["h"], ""), TypeError, "checker must be a function"),
])
def test_public_functions_check_their_arguments(call, error, words):
    with pytest.raises(error, match=words):
        call()


# --- every chapter's exercises, discovered from the package ---------------------------------

def _chapter_modules() -> list:
    package = bertcourse.exercises
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if re.fullmatch(r"ch\d+", m.name))
    return [importlib.import_module(f"{package.__name__}.{name}") for name in names]


CHAPTERS = _chapter_modules()


def _exercises_of(module) -> list:
    return sorted(((name, ex) for name, ex in vars(module).items() if isinstance(ex, Exercise)),
                  key=lambda item: item[0])


def _solution_answer(ex, module):
    """Run the exercise's printed solution text with the names a notebook has (torch,
    math, F, nn and the chapter module's public names) and return what it defines."""
    import torch.nn.functional as F
    namespace = {name: value for name, value in vars(module).items()
                 if not name.startswith("_") and not isinstance(value, Exercise)}
    namespace.update(math=math, torch=torch, F=F, nn=torch.nn)
    with contextlib.redirect_stdout(io.StringIO()):          # solution() prints it
        text = ex.solution()
    exec(text, namespace)
    return namespace[ex.var]


def _all_questions() -> list:
    questions = []
    for module in CHAPTERS:
        chapter = module.__name__.rsplit(".", 1)[1]
        for name, ex in _exercises_of(module):
            questions.append(pytest.param(ex, _solution_answer(ex, module), id=f"{chapter}-{name}"))
    return questions


ALL_QUESTIONS = _all_questions()
FUNCTION_QUESTIONS = [q for q in ALL_QUESTIONS if callable(q.values[1])]


def _learner_mistakes() -> list:
    """Every function ``qN_...`` in ``tests/test_exercises_chNN.py`` whose docstring reads
    ``fails: <words>``: a wrong answer written as a learner would write it, which ``chNN.qN``
    must fail with a message that holds <words>. The mistake and the words stand together
    there; this file runs them all."""
    mistakes = []
    for module in CHAPTERS:
        chapter = module.__name__.rsplit(".", 1)[1]
        if not pathlib.Path(__file__).with_name(f"test_exercises_{chapter}.py").exists():
            continue
        tests = importlib.import_module(f"test_exercises_{chapter}")
        for name, wrong in vars(tests).items():
            question = re.fullmatch(r"(q\d+)_\w+", name)
            if question and inspect.isfunction(wrong) and (wrong.__doc__ or "").startswith("fails: "):
                mistakes.append(pytest.param(getattr(module, question[1]), wrong,
                                             wrong.__doc__.removeprefix("fails: "), id=f"{chapter}-{name}"))
    return mistakes


LEARNER_MISTAKES = _learner_mistakes()


@pytest.mark.parametrize("ex, wrong, words", LEARNER_MISTAKES)
def test_a_learner_mistake_fails_with_its_diagnosis(ex, wrong, words):
    assert_fails_with(ex, wrong, words)


def test_chapters_and_questions_are_discovered():
    names = [m.__name__.rsplit(".", 1)[1] for m in CHAPTERS]
    assert len(names) >= 8 and names == sorted(names)
    assert all(_exercises_of(m) for m in CHAPTERS), "every chapter module defines exercises"
    assert len(ALL_QUESTIONS) >= 32 and len(FUNCTION_QUESTIONS) >= 30
    assert len(LEARNER_MISTAKES) >= 52, [p.id for p in LEARNER_MISTAKES]


@pytest.mark.parametrize("ex, solution", ALL_QUESTIONS)
def test_printed_solution_passes(ex, solution):
    result = ex.check(solution)
    assert result.status == "pass", result.message


@pytest.mark.parametrize("ex, solution", ALL_QUESTIONS)
def test_undefined_answer_is_not_attempted(ex, solution, monkeypatch):
    monkeypatch.delattr(sys.modules["__main__"], ex.var, raising=False)
    result = ex.check()
    assert result.status == "not attempted" and f"define `{ex.var}`" in result.message


STARTER_BODIES = [
    "...",
    "# shape comments, as in the notebook\n    ...",
    "pass",
    "raise NotImplementedError",
    '"""What to compute."""\n    raise NotImplementedError("write your code here")',
]


def _like(ex, solution, body: str):
    """A function with the solution's name and signature and the given body."""
    with contextlib.redirect_stdout(io.StringIO()):
        text = ex.solution()
    definition = next(node for node in ast.walk(ast.parse(text))
                      if isinstance(node, ast.FunctionDef) and node.name == ex.var)
    namespace: dict = {"helper_not_written": helper_not_written}
    exec(f"def {ex.var}({ast.unparse(definition.args)}):\n    {body}\n", namespace)
    return namespace[ex.var]


@pytest.mark.parametrize("ex, solution", ALL_QUESTIONS)
def test_starter_stub_is_not_attempted_with_the_notebook_message(ex, solution):
    if callable(solution):
        stubs = [_like(ex, solution, body) for body in STARTER_BODIES]
        message = (f"`{ex.var}` still raises NotImplementedError or returns None; write your code where "
                   f"it says `...` and run the cell.")
    else:
        stubs, message = [..., None], f"`{ex.var}` is still the starter placeholder; replace it with your answer."
    for stub in stubs:
        result = ex.check(stub)
        assert (result.status, result.message) == ("not attempted", message)
        assert str(result) == f"[NOT ATTEMPTED YET] {ex.name}: {message}"


@pytest.mark.parametrize("ex, solution", FUNCTION_QUESTIONS)
def test_not_implemented_error_from_real_code_is_a_failed_check(ex, solution):
    for body in ("return helper_not_written(None)",
                 "reason = 'this case is not done yet'\n    raise NotImplementedError(reason)"):
        result = ex.check(_like(ex, solution, body))
        assert result.status == "fail", result.message
        assert "raised NotImplementedError" in result.message and "not the untouched starter" in result.message


def _raising(solution, error: BaseException):
    @functools.wraps(solution)
    def answer(*args, **kwargs):
        raise error
    return answer


@pytest.mark.parametrize("ex, solution", FUNCTION_QUESTIONS)
def test_every_question_reports_a_learner_exception_as_a_failed_check(ex, solution):
    result = ex.check(_raising(solution, IndexError("list index out of range")))
    assert result.status == "fail"
    assert "raised IndexError: list index out of range" in result.message


@pytest.mark.parametrize("ex, solution", FUNCTION_QUESTIONS)
def test_system_exit_is_a_failed_check_and_keyboard_interrupt_stops(ex, solution):
    result = ex.check(_raising(solution, SystemExit(0)))
    assert result.status == "fail" and "raised SystemExit" in result.message
    with pytest.raises(KeyboardInterrupt):
        ex.check(_raising(solution, KeyboardInterrupt()))


@pytest.mark.parametrize("ex, solution", FUNCTION_QUESTIONS)
def test_answer_that_is_not_a_function_fails(ex, solution):
    result = ex.check(42)
    assert result.status == "fail" and f"{ex.var} must be a function, got int" in result.message


def _damage_in_place(x, seen: set) -> bool:
    """Change ``x`` in place the way a careless answer would; True if anything changed."""
    if id(x) in seen:
        return False
    seen.add(id(x))
    if isinstance(x, torch.Tensor):
        if x.numel() == 0:
            return False
        with torch.no_grad():
            x.logical_not_() if x.dtype == torch.bool else x.add_(1)
        return True
    if isinstance(x, torch.nn.Module):
        with torch.no_grad():
            next(x.parameters()).add_(1)
        return True
    if isinstance(x, list):
        x.pop() if x else x.append(None)
        return True
    if isinstance(x, dict):
        x.clear() if x else x.update({None: None})
        return True
    if isinstance(x, tuple):
        return any([_damage_in_place(v, seen) for v in x])
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for field in dataclasses.fields(x):
            value = getattr(x, field.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(x, field.name, value + 1)
                return True
    return False


def _deeply_immutable(x) -> bool:
    if isinstance(x, tuple):
        return all(_deeply_immutable(v) for v in x)
    return isinstance(x, (int, float, complex, str, bytes, type(None), frozenset))


def _damaged(x):
    """A wrong version of a right result."""
    if isinstance(x, torch.Tensor):
        return ~x if x.dtype == torch.bool else (x + 1 if x.numel() else torch.ones(1))
    if isinstance(x, bool):
        return not x
    if isinstance(x, (int, float)):
        return x + 1
    if isinstance(x, str):
        return x + "?"
    if isinstance(x, (list, tuple)):
        return type(x)(_damaged(v) for v in x) if x else type(x)([0])
    if isinstance(x, dict):
        return {k: _damaged(v) for k, v in x.items()}
    raise TypeError(f"no wrong version of a {type(x).__name__} yet: extend _damaged")


def _far(x):
    """A guess an order of magnitude off: numbers times 10 plus 1, in dicts too."""
    if isinstance(x, dict):
        return {k: _far(v) for k, v in x.items()}
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x * 10 + 1
    return _damaged(x)


@pytest.mark.parametrize("ex, solution", ALL_QUESTIONS)
def test_input_mutating_answer_then_wrong_answer_both_fail(ex, solution):
    """The old hole: an answer that changed the shared case tensors in place (e.g.
    scores.masked_fill_, E *= sqrt(d), a changed encoder) made the next, wrong answer
    pass. Now the mutating answer fails by itself (with a message saying so), the wrong
    one fails too, and the right one still passes.

    Questions whose arguments are all immutable (ints, floats, strings) cannot be changed
    in place: for them the test checks that this is so (every argument the answer gets is
    immutable) and that the wrong answer fails. For a value question (no arguments) it
    checks that checking leaves the learner's value alone and that a wrong value fails."""
    if not callable(solution):
        given = copy.deepcopy(solution)
        assert ex.check(given).status == "pass" and given == solution
        # a prediction passes within a tolerance that may be wider than 1 (a guess in MB, within a
        # factor): its wrong version is off by an order of magnitude instead
        wrong = _damaged(solution) if "(predict:" not in ex.name else _far(solution)
        result = ex.check(wrong)
        assert result.status == "fail", result.message
        return

    damaged, calls = [], []

    @functools.wraps(solution)
    def mutating(*args):
        calls.append(args)
        result = solution(*copy.deepcopy(args))
        damaged.append(any([_damage_in_place(a, set()) for a in args]))
        return result

    @functools.wraps(solution)
    def wrong(*args):
        return _damaged(solution(*args))

    first = ex.check(mutating)
    assert calls, "the checker never called the answer"
    if any(damaged):
        assert first.status == "fail", first.message
        assert "changed" in first.message and "first difference" not in first.message, first.message
    else:
        assert all(_deeply_immutable(a) for args in calls for a in args), calls
        assert first.status == "pass", first.message
    second = ex.check(wrong)
    assert second.status == "fail", second.message
    assert "in place" not in second.message
    assert ex.check(solution).status == "pass"


class _AlwaysEqual:
    """An answer that says it equals whatever it is compared with."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __float__(self):
        return 0.0


class _LyingTensor(torch.Tensor):
    """Wrong values whose every comparison says "equal"."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func in (torch.isclose, torch.eq, torch.Tensor.__eq__, torch.Tensor.eq):
            return torch.ones(out.shape, dtype=torch.bool)
        if func in (torch.ne, torch.Tensor.__ne__, torch.Tensor.ne):
            return torch.zeros(out.shape, dtype=torch.bool)
        if func in (torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal):
            return True
        return out


def _lying(x):
    if isinstance(x, torch.Tensor):
        return x.detach().as_subclass(_LyingTensor)
    if isinstance(x, (list, tuple)):
        return type(x)(_lying(v) for v in x)
    if isinstance(x, dict):
        return {k: _lying(v) for k, v in x.items()}
    return x


@pytest.mark.parametrize("ex, solution", ALL_QUESTIONS)
def test_an_answer_that_claims_to_equal_everything_fails(ex, solution):
    """Checks compare with plain values: an object whose == always says True, or a tensor
    subclass whose comparisons lie about wrong values, is a failed check, not a pass."""
    if callable(solution):
        @functools.wraps(solution)
        def always_equal(*args):
            return _AlwaysEqual()

        @functools.wraps(solution)
        def lying(*args):
            return _lying(_damaged(solution(*args)))
        answers = [always_equal, lying]
    else:
        answers = [_AlwaysEqual()]
    for answer in answers:
        result = ex.check(answer)
        assert result.status == "fail", (answer, result.message)


@pytest.mark.parametrize("ex, solution", FUNCTION_QUESTIONS)
def test_each_call_gets_fresh_inputs_not_shared_with_other_calls(ex, solution):
    """An answer may keep what it was given (a cache, a generator it returns): every call,
    in one check and across checks, gets its own copies, so what one call keeps or changes
    later cannot reach another call, the reference or the next learner's answer."""
    seen: list = []

    @functools.wraps(solution)
    def keeping(*args):
        result = solution(*copy.deepcopy(args))
        seen.extend(a for a in args if isinstance(a, (torch.Tensor, torch.nn.Module, list, dict)))
        return result

    assert ex.check(keeping).status == "pass"
    assert ex.check(keeping).status == "pass"
    ids = [id(a) for a in seen]
    assert len(ids) == len(set(ids)), "two calls of the answer were given the same object"
    for a in seen:                  # what the answer kept is damaged after the checks
        _damage_in_place(a, set())
    assert ex.check(solution).status == "pass"


def test_the_reported_holes_are_closed():
    """ch01.q2, ch02.q4 and ch04.q3 could be fooled before; their inputs are mutable, so
    the generic test above covers them with the in-place branch."""
    from bertcourse.exercises import ch01, ch02, ch04

    def zeros(scores, valid_lens):
        return torch.zeros_like(scores)

    def in_place_softmax(scores, valid_lens):
        visible = torch.arange(scores.shape[-1]) < valid_lens[:, None, None]
        scores.masked_fill_(~visible, -1e6)
        return torch.softmax(scores, -1).masked_fill(~visible, 0.0)

    result = ch01.q2.check(in_place_softmax)
    assert result.status == "fail" and "`scores` in place" in result.message and "masked_fill_" in result.message
    assert ch01.q2.check(zeros).status == "fail"

    def scaled_in_place(E, P):
        if E.shape[1] > P.shape[0]:
            raise ValueError("longer than max_len")
        E *= math.sqrt(E.shape[-1])
        return E + P[: E.shape[1]]

    def unscaled(E, P):
        if E.shape[1] > P.shape[0]:
            raise ValueError("longer than max_len")
        return E + P[: E.shape[1]]

    result = ch02.q4.check(scaled_in_place)
    assert result.status == "fail" and "`E` in place" in result.message
    assert "you forgot to multiply" in ch02.q4.check(unscaled).message

    def identity_norm(encoder, tokens, segments):
        with torch.no_grad():
            encoder.embedding_norm.weight.fill_(1.0)
            encoder.embedding_norm.bias.zero_()
        return encoder.embed(tokens, segments)

    def plain_norm(encoder, tokens, segments):
        X = (encoder.token_embedding(tokens) + encoder.segment_embedding(segments)
             + encoder.pos_embedding.weight[:tokens.shape[1]])
        return torch.nn.functional.layer_norm(X, X.shape[-1:], eps=encoder.config.norm_eps)

    result = ch04.q3.check(identity_norm)
    assert result.status == "fail" and "`encoder` in place" not in result.message    # the numbers differ first
    assert ch04.q3.check(plain_norm).status == "fail"


# --- chapter modules are data on top of core ---------------------------------------------

def _package_path(node: ast.ImportFrom) -> list | None:
    """The imported module as a path inside bertcourse (["exercises", "core"], ["bert"]),
    or None for a module outside the package."""
    parts = [p for p in (node.module or "").split(".") if p]
    if node.level == 0:
        return parts[1:] if parts[:1] == ["bertcourse"] else None
    return (["exercises"] if node.level == 1 else []) + parts


@pytest.mark.parametrize("module", CHAPTERS, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_chapter_module_imports_only_public_names_of_core_modules(module):
    """No widgets, no other module's private names, and from the exercises package only the
    machinery: core (exercises), quiz (the chapter's quiz) and guesses (prediction exercises of
    several shares), never another chapter."""
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    module_aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            path = _package_path(node)
            if path is None:
                continue
            imported = [path + [alias.name] for alias in node.names]
            for full, alias in zip(imported, node.names):
                where = f"{module.__name__}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                assert "widgets" not in full, where
                assert not any(part.startswith("_") for part in full), where
                assert full[0] != "exercises" or full[:2] in (["exercises", "core"], ["exercises", "quiz"],
                                                              ["exercises", "guesses"]), where
                if not path or path == ["exercises"]:
                    module_aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith("bertcourse"), f"{module.__name__} imports {alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in module_aliases:
            assert not node.attr.startswith("_"), f"{module.__name__} uses {node.value.id}.{node.attr}"


# --- the notebooks' starter cells still print what the notebooks show ----------------------

_STARTER_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.Expr)


def _is_starter_cell(tree: ast.Module) -> bool:
    for node in tree.body:
        if not isinstance(node, _STARTER_NODES):
            return False
        if isinstance(node, ast.FunctionDef) and not all(
                (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) or isinstance(s, ast.Pass)
                or (isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s)) for s in node.body):
            return False
        if isinstance(node, ast.Assign) and not (isinstance(node.value, ast.Constant) and node.value.value is ...):
            return False
        if isinstance(node, ast.Expr) and not (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr == "check" and not node.value.args):
            return False
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.startswith("bertcourse") and "exercises" not in n for n in names):
                return False
    return True


def test_notebook_starter_cells_print_what_the_notebook_shows(course_notebook):
    """Every cell that defines a starter stub and calls qN.check() (nothing else: no
    model, no data) is run here, and prints exactly the recorded NOT ATTEMPTED YET line."""
    cells = json.loads(course_notebook.read_text(encoding="utf-8"))["cells"]
    namespace: dict = {"__name__": "notebook_starter"}
    checked = 0
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        if not _is_starter_cell(tree):      # only its imports of the exercises
            tree.body = [node for node in tree.body if isinstance(node, ast.ImportFrom)
                         and (node.module or "").startswith("bertcourse.exercises")]
        recorded = "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                           if o.get("output_type") == "stream")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(tree, course_notebook.name, "exec"), namespace)
        if "[NOT ATTEMPTED YET]" in recorded and _is_starter_cell(ast.parse(source)):
            assert printed.getvalue() == recorded
            checked += 1
    if not checked:
        pytest.skip(f"{course_notebook.name} has no recorded starter check")


# --- call_answer and as_number ----------------------------------------------------------------

def test_call_answer_reports_bugs_and_recognises_the_stub():
    assert call_answer(lambda x: x + 1, (1,), "x=1") == 2
    with pytest.raises(CheckFailed, match=r"on x=1, your code raised ZeroDivisionError"):
        call_answer(lambda x: x / 0, (1,), "x=1")
    for stub in (lambda x: None, lambda x: ..., stub_raises):
        with pytest.raises(NotAttempted):
            call_answer(stub, (1,), "x=1")


def test_as_number_unwraps_tensors_and_refuses_non_numbers():
    assert as_number(torch.tensor(7), "d=2") == 7
    assert as_number(2.5, "d=2") == 2.5
    with pytest.raises(CheckFailed, match="on d=2: expected a whole number, got 2.5"):
        as_number(2.5, "d=2", whole=True)
    with pytest.raises(CheckFailed, match="on d=2: expected a number, got bool"):
        as_number(True, "d=2")
    with pytest.raises(CheckFailed, match="expected a number, got Tensor"):
        as_number(torch.ones(3), "d=2")
    with pytest.raises(CheckFailed, match="expected a finite whole number, got inf"):
        as_number(float("inf"), "d=2", whole=True)


def test_as_number_refuses_nan_and_infinity():
    from bertcourse.exercises import as_number
    for bad in (float("nan"), float("inf"), torch.tensor(float("nan"))):
        with pytest.raises(CheckFailed, match="expected a finite number"):
            as_number(bad, "case 1")
    assert as_number(torch.tensor(2.5), "case 1") == 2.5


# --- the "predict, then run" answers ------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    ("1", "p must be a share, got str '1'"), (True, "p must be a share, got bool True"),
    ([0.5], "p must be a share, got list [0.5]"), (1.5, "p must be a share in range, got 1.5"),
    (float("nan"), "on p: expected a finite number, got nan"),
    (torch.tensor([0.1, 0.2]), "on p: expected a number, got Tensor"),
])
def test_predicted_number_refuses_what_is_not_a_number_in_range(value, message):
    with pytest.raises(CheckFailed) as e:
        predicted_number(value, "p", 0.0, 1.0, "a share", "a share in range")
    assert str(e.value) == message


def test_predicted_number_returns_a_plain_number():
    assert predicted_number(torch.tensor(0.25), "p", 0.0, 1.0, "a share") == 0.25
    got = predicted_number(3.0, "p", 0, 6, "a count", whole=True)
    assert got == 3 and type(got) is int
    with pytest.raises(CheckFailed, match="on p: expected a whole number, got 2.5"):
        predicted_number(2.5, "p", 0, 6, "a count", whole=True)


@pytest.mark.parametrize("answer, message", [
    ({"a": 1}, "p must be a dict with the keys ['a', 'b'], a count each, got {'a': 1}"),
    ([1, 2], "p must be a dict with the keys ['a', 'b'], a count each, got [1, 2]"),
    ({"a": ..., "b": 1}, "p['a'] is still ...: write a count"),
    ({"a": 1, "b": None}, "p['b'] is still None: write a count"),
    ({"a": "1", "b": 1}, "p['a'] must be a whole count, got '1'"),
    ({"a": 1, "b": 9}, "p['b'] must be from 0 to 6, got 9"),
])
def test_predicted_dict_names_the_entry(answer, message):
    with pytest.raises(CheckFailed) as e:
        predicted_dict(answer, ("a", "b"), "p", "a count each", low=0, high=6, must="a whole count",
                       in_range="from 0 to 6", whole=True, blank="a count")
    assert str(e.value) == message


def test_predicted_dict_keeps_the_keys_order():
    got = predicted_dict({"b": 2, "a": torch.tensor(1)}, ("a", "b"), "p", "", low=0, high=6, must="",
                         whole=True, blank="a count")
    assert list(got.items()) == [("a", 1), ("b", 2)]


def test_predicted_choice():
    choices = {"low": "below 0.5", "high": "above 0.5"}
    assert predicted_choice("  HIGH\n", choices, "p") == "high"
    with pytest.raises(CheckFailed, match=r"^p must be one of 'low', 'high' \(a string\), got int 3$"):
        predicted_choice(3, choices, "p")
    with pytest.raises(CheckFailed, match=r"^p must be one of 'low', 'high', got 'mid'$"):
        predicted_choice("mid", choices, "p")
    with pytest.raises(CheckFailed) as e:
        predicted_choice("x", choices, "p", described=True)
    assert str(e.value) == "p must be one of 'low' (below 0.5), 'high' (above 0.5), got 'x'"


def test_a_forbidden_function_fails_the_check_by_name_and_is_put_back():
    # an exercise may forbid what its text forbids; the learner's own name for it is caught too,
    # the checker's reference (which runs outside the learner's code) may still use it
    import torch.nn.functional as F
    from torch.nn.functional import cross_entropy as my_name_for_it
    original = F.cross_entropy

    def checker(answer):
        logits, labels = torch.tensor([[2.0, 0.5]]), torch.tensor([0])
        expected = F.cross_entropy(logits, labels)                    # the reference may use it
        got = call_answer(answer, (logits, labels), "one pair")
        compare_tensors(got, expected, "the loss")
        return "ok"

    ex = Exercise("Qx (a loss by hand)", "loss", checker, hints=["h"], solution="s",
                  forbidden=[(F, "cross_entropy", "F.cross_entropy")])
    by_hand = lambda logits, labels: -torch.log_softmax(logits, -1)[0, labels[0]]      # noqa: E731
    assert ex.check(by_hand).status == "pass"
    for cheat in (lambda logits, labels: F.cross_entropy(logits, labels),
                  lambda logits, labels: my_name_for_it(logits, labels),
                  lambda logits, labels: torch.nn.CrossEntropyLoss()(logits, labels)):
        result = ex.check(cheat)
        assert result.status == "fail" and "without F.cross_entropy, and your code called it" in result.message
    assert F.cross_entropy is original and my_name_for_it is original
    with pytest.raises(TypeError, match="forbidden must be a list of"):
        Exercise("Qx", "loss", checker, hints=["h"], solution="s", forbidden=[(F, "no_such_function", "x")])


def test_guesses_are_shares_judged_against_the_measurement_with_the_chapters_reasons():
    from bertcourse.exercises.guesses import judge_guesses, predicted_shares
    keys = ("a", "b")
    assert predicted_shares({"a": 0.5, "b": 1}, keys, "shares", "a share") == {"a": 0.5, "b": 1.0}
    with pytest.raises(CheckFailed, match=r"prediction\['b'\] is 94: write a share between 0 and 1 \(0\.94\), not a "
                                          r"percentage"):
        predicted_shares({"a": 0.5, "b": 94}, keys, "shares", "a share")
    with pytest.raises(CheckFailed, match=r"prediction must be a dict with the keys \['a', 'b'\], shares"):
        predicted_shares({"a": 0.5}, keys, "shares", "a share")
    measured = {"a": 0.50, "b": 0.80}
    assert judge_guesses({"a": 0.45, "b": 0.85}, measured, 0.1) == ("a: you said 0.45, measured 0.50, "
                                                                   "b: you said 0.85, measured 0.80")

    def reasons(guess, measured, off):
        return [f"{k} too {'low' if guess[k] < measured[k] else 'high'}" for k in off]
    with pytest.raises(CheckFailed, match=r"^a: you said 0\.20, measured 0\.50, b: you said 0\.85, measured 0\.80\. "
                                          r"Off by more than 0\.10 on a: a too low\.$"):
        judge_guesses({"a": 0.2, "b": 0.85}, measured, 0.1, reasons)
    with pytest.raises(CheckFailed, match=r"Off by more than 0\.10 on a, b\.$"):          # no reasons: none given
        judge_guesses({"a": 0.2, "b": 0.1}, measured, 0.1)


def _pitfall_names(chapter: str) -> set:
    """The names chapter ``chapter``'s notebook gives its pitfalls, backticks dropped, in lower case:
    ``### Pitfall N: name`` headings (or ``### Pitfall: name``), or bold numbered items ``**N. Name.**``
    (chapter 7's)."""
    notebook = next((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob(f"{chapter}_*.ipynb"))
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown").replace("`", "")
    names = re.findall(r"^### Pitfall(?: \d+)?: (.+)$", text, re.M)
    pitfalls = text[text.find("## Pitfalls"):] if "## Pitfalls" in text else ""
    names += re.findall(r"^\*\*\d+\. (.+?)\.\*\*", pitfalls, re.M)
    # a heading that quotes its name ('"random with probability 0.1" among the other 20 %') is named by the quote
    return {name.lower() for heading in names for name in [heading.strip('"'), *re.findall(r'"([^"]+)"', heading)]}


@pytest.mark.parametrize("module", CHAPTERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_exercises_refer_to_pitfalls_by_the_names_the_chapter_gives_them(module):
    """Issue 43, item 7: a quiz or a message says 'the pitfall "name"', never 'pitfall 2' (numbers
    clash between chapters and move when a pitfall is added), and the name is one of the chapter's."""
    texts = [" ".join(node.value.split()) for node in ast.walk(ast.parse(inspect.getsource(module)))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    by_number = [text for text in texts if re.search(r"\b[Pp]itfall \d", text)]
    assert not by_number, by_number
    quoted = {name.replace("`", "").lower() for text in texts for name in re.findall(r'[Pp]itfall "([^"]+)"', text)}
    assert quoted <= _pitfall_names(module.__name__[-2:]), quoted - _pitfall_names(module.__name__[-2:])
