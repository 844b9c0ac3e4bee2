"""The exercise checker's machinery, shared by every chapter's exercises."""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

__all__ = ["CheckFailed", "CheckResult", "Exercise", "as_number", "call_answer", "compare_tensors",
           "run_cases"]

_MISSING = object()


class CheckFailed(Exception):
    """Raised by a checker with a message that tells the learner what is wrong."""


class _NotAttempted(Exception):
    pass


class _Printed(str):
    """Text that has already been printed. It is a plain ``str`` in every other way, but
    Jupyter does not echo it a second time when it is a cell's last expression."""

    def _ipython_display_(self) -> None:
        pass


@dataclass
class CheckResult:
    """What ``check()`` returns: truthy only when the answer passed."""
    exercise: str
    status: str          # "pass", "fail" or "not attempted"
    message: str

    def __bool__(self) -> bool:
        return self.status == "pass"

    def __str__(self) -> str:
        mark = {"pass": "PASS", "fail": "FAIL", "not attempted": "NOT ATTEMPTED YET"}[self.status]
        return f"[{mark}] {self.exercise}: {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _ipython_display_(self) -> None:
        # check() has already printed this line; without this, a cell ending in
        # `q1.check()` would show it twice (the print and the echoed return value).
        pass


def compare_tensors(got, expected: torch.Tensor, what: str, atol: float = 1e-5,
                    rtol: float = 1e-4) -> None:
    """Raise CheckFailed describing the first difference between ``got`` and ``expected``."""
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"{what}: expected a torch.Tensor, got {type(got).__name__}")
    if tuple(got.shape) != tuple(expected.shape):
        raise CheckFailed(f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}")
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        bad = got != expected
    else:
        got_f, exp_f = got.detach().double(), expected.detach().double()
        bad = ~torch.isclose(got_f, exp_f, atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(f"{what}: first difference at index {idx}: expected "
                          f"{expected[idx].item():.6g}, got {got[idx].item():.6g} "
                          f"({int(bad.sum())} of {bad.numel()} entries differ)")


def call_answer(answer: Callable, args: tuple, where: str):
    """``answer(*args)`` inside a checker. The stub (``NotImplementedError``, ``None`` or
    ``...``) means "not attempted"; any other exception is the learner's bug, reported as a
    failed check on ``where`` (the case), never re-raised."""
    try:
        got = answer(*args)
    except (NotImplementedError, _NotAttempted):
        raise _NotAttempted() from None
    except CheckFailed:
        raise
    except Exception as e:
        raise CheckFailed(f"on {where}, your code raised {type(e).__name__}: {e}") from None
    if got is None or got is Ellipsis:
        raise _NotAttempted()
    return got


def as_number(got, where: str, whole: bool = False):
    """A learner's count as a Python number: a one-element tensor is unwrapped; anything
    that is not a number (or, with ``whole``, not a whole number) fails the check."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed(f"on {where}: expected a {'whole ' if whole else ''}number, got "
                          + (repr(got) if whole else type(got).__name__))
    if whole and got != int(got):
        raise CheckFailed(f"on {where}: expected a whole number, got {got!r}")
    return got


def run_cases(answer: Callable, reference: Callable, cases: Sequence[tuple[str, tuple]],
              diagnoses: Sequence[tuple[Callable, str]] = (), atol: float = 1e-5) -> str:
    """Call ``answer(*args)`` and ``reference(*args)`` on each case and compare.

    ``cases`` are ``(description, args)`` pairs. ``diagnoses`` are ``(wrong_function,
    message)`` pairs: typical mistakes. When a wrong output matches one of them, the
    failure message names the mistake instead of only showing numbers.
    Returns a short success message.
    """
    for description, args in cases:
        expected = reference(*args)
        got = call_answer(answer, args, description)
        try:
            compare_tensors(got, expected, f"on {description}", atol=atol)
        except CheckFailed as failure:
            for wrong, message in diagnoses:
                try:
                    compare_tensors(got, wrong(*args), "", atol=atol)
                except Exception:
                    continue
                raise CheckFailed(f"{failure} — {message}") from None
            raise
    return f"correct on all {len(cases)} cases ({', '.join(d for d, _ in cases)})"


def _find_in_notebook(name: str):
    """Look ``name`` up where the learner defined it: the notebook's (``__main__``'s)
    globals, else the caller's frames."""
    main = sys.modules.get("__main__")
    if main is not None and name in vars(main):
        return vars(main)[name]
    frame = inspect.currentframe()
    while frame is not None:
        if name in frame.f_globals and frame.f_globals.get("__name__") != __name__:
            return frame.f_globals[name]
        frame = frame.f_back
    return _MISSING


class Exercise:
    """One exercise.

    Args:
        name: short label shown in messages, e.g. ``"Q1 (scaled scores)"``.
        var: the name the learner's answer has in the notebook (function or value).
        checker: ``checker(answer) -> str``; returns a success message or raises
            :class:`CheckFailed`. It may call :func:`run_cases`.
        hints: tiered hints; each ``hint()`` call shows the next one.
        solution: reference solution as code text (shown by ``solution()``).
    """

    def __init__(self, name: str, var: str, checker: Callable[[Any], str],
                 hints: Sequence[str], solution: str):
        if not hints:
            raise ValueError("an exercise needs at least one hint")
        self.name, self.var, self.checker = name, var, checker
        self.hints, self._solution = list(hints), solution.strip("\n")
        self._hints_shown = 0

    def check(self, answer: Any = _MISSING) -> CheckResult:
        """Check ``answer`` (default: the notebook variable named ``self.var``)."""
        if answer is _MISSING:
            answer = _find_in_notebook(self.var)
        result = self._evaluate(answer)
        print(result)
        return result

    def _evaluate(self, answer: Any) -> CheckResult:
        if answer is _MISSING:
            return CheckResult(self.name, "not attempted",
                               f"define `{self.var}` in a cell above, run it, then check again.")
        if answer is None or answer is Ellipsis:
            return CheckResult(self.name, "not attempted",
                               f"`{self.var}` is still the starter placeholder; replace it with your answer.")
        try:
            message = self.checker(answer)
        except (_NotAttempted, NotImplementedError):
            return CheckResult(self.name, "not attempted",
                               f"`{self.var}` still raises NotImplementedError or returns None; "
                               f"write your code where it says `...` and run the cell.")
        except CheckFailed as e:
            return CheckResult(self.name, "fail", f"{e}  (stuck? call .hint() on this exercise)")
        except Exception as e:  # a bug in the learner's value that the checker tripped on
            return CheckResult(self.name, "fail", f"checking `{self.var}` raised "
                                                  f"{type(e).__name__}: {e}")
        return CheckResult(self.name, "pass", message)

    def hint(self) -> str:
        """Print the next hint (they get more specific)."""
        i = min(self._hints_shown, len(self.hints) - 1)
        self._hints_shown += 1
        text = _Printed(f"Hint {i + 1}/{len(self.hints)}: {self.hints[i]}")
        print(text)
        return text

    def solution(self) -> str:
        """Print the reference solution."""
        print(self._solution)
        return _Printed(self._solution)
