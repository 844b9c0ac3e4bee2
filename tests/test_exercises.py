"""Tests for the exercise machinery in bertcourse.exercises.core."""
import sys

import pytest
import torch

from bertcourse.exercises import CheckFailed, CheckResult, Exercise, compare_tensors, run_cases


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
        return x @ torch.ones(7)

    result = make_exercise().check(buggy)
    assert result.status == "fail"
    assert result.message.startswith("on a vector, your code raised RuntimeError:")


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


# --- every chapter's exercises: the same two promises -------------------------------------

def _all_chapter_exercises():
    import importlib
    return [pytest.param(getattr(importlib.import_module(f"bertcourse.exercises.ch0{n}"), q),
                         id=f"ch0{n}-{q}")
            for n in range(1, 9) for q in ("q1", "q2", "q3", "q4")]


ALL_EXERCISES = _all_chapter_exercises()


def _solution_answer(ex):
    """Run the exercise's printed solution text, with the imports a notebook has, and
    return what it defines."""
    import math

    import torch.nn.functional as F

    from bertcourse.attention import masked_softmax
    namespace = {"math": math, "torch": torch, "F": F, "masked_softmax": masked_softmax}
    exec(ex.solution(), namespace)
    return namespace[ex.var]


@pytest.mark.parametrize("ex", ALL_EXERCISES)
def test_printed_solution_passes(ex):
    result = ex.check(_solution_answer(ex))
    assert result.status == "pass", result.message


@pytest.mark.parametrize("ex", ALL_EXERCISES)
def test_undefined_answer_is_not_attempted(ex, monkeypatch):
    monkeypatch.delattr(sys.modules["__main__"], ex.var, raising=False)
    result = ex.check()
    assert result.status == "not attempted" and f"define `{ex.var}`" in result.message


def test_call_answer_reports_bugs_and_recognises_the_stub():
    from bertcourse.exercises.core import _NotAttempted, call_answer
    assert call_answer(lambda x: x + 1, (1,), "x=1") == 2
    with pytest.raises(CheckFailed, match=r"on x=1, your code raised ZeroDivisionError"):
        call_answer(lambda x: x / 0, (1,), "x=1")
    for stub in (lambda x: None, lambda x: ..., stub_raises):
        with pytest.raises(_NotAttempted):
            call_answer(stub, (1,), "x=1")


def test_as_number_unwraps_tensors_and_refuses_non_numbers():
    from bertcourse.exercises import as_number
    assert as_number(torch.tensor(7), "d=2") == 7
    assert as_number(2.5, "d=2") == 2.5
    with pytest.raises(CheckFailed, match="on d=2: expected a whole number, got 2.5"):
        as_number(2.5, "d=2", whole=True)
    with pytest.raises(CheckFailed, match="on d=2: expected a number, got bool"):
        as_number(True, "d=2")
    with pytest.raises(CheckFailed, match="expected a number, got Tensor"):
        as_number(torch.ones(3), "d=2")
