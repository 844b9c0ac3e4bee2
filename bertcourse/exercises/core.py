"""The exercise checker's machinery, shared by every chapter's exercises.

A chapter module (``chNN.py``) is data: for each question a reference, the cases, the
typical mistakes (diagnoses), the hints and the solution text, tied together by an
:class:`Exercise` whose checker is usually one call of :func:`run_cases`::

    def _weights_no_scale(Q, K):
        \"\"\"you forgot the scale: ...\"\"\"        # the mistake's docstring: what the learner reads
        return torch.softmax(Q @ K.transpose(-2, -1), dim=-1)

    Q1_CASES = [("batch=2, d=8", (randn(2, 3, 8, seed=1), randn(2, 5, 8, seed=2))), ...]
    Q1_DIAGNOSES = [_weights_no_scale, ...]
    def _check_q1(answer) -> str:
        return run_cases(answer, _ref_weights, Q1_CASES, Q1_DIAGNOSES)
    q1 = Exercise(name="Q1 (...)", var="attention_weights", checker=_check_q1,
                  hints=[...], solution='''def attention_weights(Q, K): ...''')

The public API used by the chapter modules:

* :class:`Exercise` ``(name, var, checker, hints, solution)``: one question; ``check()``, ``hint()``,
  ``solution()``. ``checker(answer) -> str`` returns a success message or raises :class:`CheckFailed`.
* :func:`run_cases` ``(answer, reference, cases, diagnoses=(), atol=1e-5, *, rtol, compare,
  prepare, all_diagnoses, in_place, no_grad, integers)``: call the answer and the reference on every
  ``(description, args)`` case and compare; when they differ, name the first matching
  diagnosis. Tensors are compared with :func:`compare_tensors` (the default); plain values
  (numbers, lists, tuples, strings) with ``compare=equal_values(message)``. ``prepare(got,
  where, *args)`` normalises or type-checks the learner's result first (e.g. :func:`as_number`).
  A diagnosis is a function ``wrong(*args)`` that makes a typical mistake, its docstring the
  message; or a pair ``(wrong, message)``, where ``wrong`` may be a :class:`Symptom` (a
  predicate on the learner's result) and ``message`` text or ``message(*args) -> str``
  (``message(got, *args)`` for a Symptom). A mistake that raises names a learner's code
  that raises the same (see below); ``Symptom(predicate, raised=True)`` recognises what the
  learner's code raised, or None when it returned None (``predicate(error, *args)``, ``message(error, *args)``).
* :func:`call_answer` ``(answer, args, where)``: one guarded call, for checkers that compare themselves.
* :func:`expect_raises` ``(answer, args, where, error, *, returned, other)``: the answer must
  raise ``error`` (e.g. a ``ValueError`` for bad input).
* :func:`compare_tensors`, :func:`equal_values`, :func:`as_number`, :class:`Symptom`, :func:`message_of`.
* :func:`seeded` ``(seed)`` (a seeded ``torch.Generator``) and :func:`randn` ``(*shape, seed,
  scale=1.0)`` (a seeded normal tensor): the cases' reproducible inputs.
* :class:`CheckFailed` (a failed check, its message for the learner), :class:`NotAttempted` (the starter).

Every call of the learner's function (through :func:`run_cases`, :func:`call_answer` or
:func:`expect_raises`) is guarded the same way:

* it gets fresh deep copies of the case's arguments (tensors cloned, lists and modules
  copied), and so do the reference and every diagnosis, so no answer can change the cases
  that the next check uses; after the call its copies are compared with the pristine case,
  and an answer that changed an argument in place fails with a message naming it;
* an exception it raises (``SystemExit`` too; not ``KeyboardInterrupt``) is a failed check;
  a shape or dtype error (torch's "size of tensor a ... must match", "shape mismatch",
  "expected scalar type" ...) is told in the exercise's terms (:mod:`.learner_code`): the
  arguments' shapes and dtypes, named as in the reference's signature, the shape the
  result must have (in :func:`run_cases`), then the error. In :func:`run_cases` a diagnosis
  whose ``wrong(*args)`` raises the same kind of exception, with the same message (its numbers
  in order; two sizes in parentheses may be swapped when the same operation raised both, as
  torch swaps the operands' sizes), names the mistake, and so does a
  ``raised`` :class:`Symptom` that recognises the exception;
* only the untouched starter stub is "not attempted": a function whose whole body is
  ``...``, ``pass``, ``return None`` or ``raise NotImplementedError(...)``, when it returns
  ``None``/``...`` or raises ``NotImplementedError`` from its own frame. A
  ``NotImplementedError`` from real code (or from something it calls) and ``None`` returned
  by real code are failed checks that say so.

A checker calls the learner's function only through these three: a direct call skips the
copies and the in-place check (``Exercise`` still turns its exceptions into failed checks).
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
import inspect
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from .._checks import check_bool, check_choice, check_finite_number, check_int, check_positive_int  # noqa: F401
from ..i18n import gettext as _
from ..learner_progress import record as record_progress
from .learner_code import (argument_names, code_of, describe_error, error_note, innermost_frame, is_shape_error,
                           is_stub, raised_alike, raised_message, shape_message)
from .authoring import need as _need, need_args as _need_args, need_tolerance as _need_tolerance
from .authoring import need_where as _need_where, randn, seeded
from .forbidden import check_forbidden, forbidding
from .mutation import changed_arguments, in_place_detail
from .reveal import Reveal
from .values import plain_equal

__all__ = ["CheckFailed", "CheckResult", "Exercise", "NotAttempted", "Symptom", "as_number",
           "call_answer", "compare_tensors", "equal_values", "expect_raises", "message_of",
           "randn", "run_cases", "seeded"]

_MISSING = object()

# the notebook name of the answer being checked (set by Exercise.check), for messages
_CURRENT_VAR: contextvars.ContextVar = contextvars.ContextVar("bertcourse_exercise_var", default=None)
# the answer itself, so that a checker that wraps it (lambda *a: answer(*a)) still sees the stub
_CURRENT_ANSWER: contextvars.ContextVar = contextvars.ContextVar("bertcourse_exercise_answer", default=None)
# what the exercise being checked asks the learner not to call (Exercise's ``forbidden``)
_CURRENT_FORBIDDEN: contextvars.ContextVar = contextvars.ContextVar("bertcourse_exercise_forbidden", default=())


class CheckFailed(Exception):
    """Raised by a checker with a message that tells the learner what is wrong."""


class NotAttempted(Exception):
    """Raised by a checker when the answer is still the starter (stub or placeholder)."""


class Printed(str):
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
        mark = {"pass": _("PASS"), "fail": _("FAIL"), "not attempted": _("NOT ATTEMPTED YET")}[self.status]
        return _("[{mark}] {exercise}: {message}").format(mark=mark, exercise=self.exercise, message=self.message)

    __repr__ = __str__

    def _ipython_display_(self) -> None:
        # check() has already printed this line; a cell ending in `q1.check()` would show it twice
        pass


# --- Comparing ---

def compare_tensors(got, expected: torch.Tensor, what: str, atol: float = 1e-5,
                    rtol: float = 1e-4, *, integers: bool = False) -> None:
    """Raise CheckFailed describing the first difference between ``got`` and ``expected``.

    ``got`` must be a real tensor of ``expected``'s shape; where ``expected`` holds floats,
    an integer or boolean tensor is refused (it cannot hold fractions, and would pass only
    where the expected values happen to be whole); with ``integers`` (the result is ids or
    positions), where it holds integers, a floating-point tensor is refused too (PyTorch
    indexes and embeds only with integers, so the next layer would fail on it; counts, which
    a float holds as well, leave it off); a complex tensor is refused whatever its real part."""
    _need(isinstance(expected, torch.Tensor), "compare_tensors", "expected", "a torch.Tensor", expected)
    _need(isinstance(what, str), "compare_tensors", "what", "a str", what)
    _need_tolerance("compare_tensors", "atol", atol)
    _need_tolerance("compare_tensors", "rtol", rtol)
    _need(isinstance(integers, bool), "compare_tensors", "integers", "a bool", integers)
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(_("{what}: expected a torch.Tensor, got {type}").format(what=what, type=type(got).__name__))
    if type(got) not in (torch.Tensor, torch.nn.Parameter):   # a subclass can override every comparison
        raise CheckFailed(f"{what}: expected a plain torch.Tensor, got the subclass {type(got).__name__}; "
                          f"return the values as a torch.Tensor")
    if got.is_meta:
        raise CheckFailed(_("{what}: you returned a tensor on the 'meta' device, which has a shape "
                            "but no values; compute the values.").format(what=what))
    if tuple(got.shape) != tuple(expected.shape):
        raise CheckFailed(_("{what}: expected shape {expected}, got {got}").format(what=what, expected=tuple(expected.shape), got=tuple(got.shape)))
    if got.is_complex() and not expected.is_complex():
        raise CheckFailed(_("{what}: expected a real tensor (dtype {expected}), got the complex dtype {got}; "
                            "the answer has no imaginary part.").format(what=what, expected=expected.dtype, got=got.dtype))
    if expected.is_floating_point() and not (got.is_floating_point() or got.is_complex()):
        raise CheckFailed(_("{what}: expected a floating-point tensor (dtype {expected}), got dtype {got}, which cannot "
                            "hold fractions; compute with floats (true division /, or .float()).").format(
            what=what, expected=expected.dtype, got=got.dtype))
    if (integers and not (expected.is_floating_point() or expected.is_complex() or expected.dtype == torch.bool)
            and (got.is_floating_point() or got.is_complex())):
        raise CheckFailed(_("{what}: expected an integer tensor (dtype {expected}), got the floating-point dtype "
                            "{got}; the answer is ids or positions, and PyTorch indexes and embeds only with "
                            "integers: keep an integer dtype (.long() converts).").format(
            what=what, expected=expected.dtype, got=got.dtype))
    got = got.detach().cpu()
    if got.dtype == torch.bool or expected.dtype == torch.bool:
        bad = got != expected
    else:
        wide = torch.complex128 if (got.is_complex() or expected.is_complex()) else torch.float64
        bad = ~torch.isclose(got.to(wide), expected.detach().cpu().to(wide), atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(_("{what}: first difference at index {idx}: expected {expected}, got {got} ({bad} of {n} "
                            "entries differ)").format(what=what, idx=idx, expected=_show_entry(expected[idx]),
                                                      got=_show_entry(got[idx]), bad=int(bad.sum()), n=bad.numel())
                          + _precision_note(got.dtype, expected.dtype))


# the floating-point dtypes that keep fewer digits than float32, and about how many significant digits they keep
_LOW_PRECISION = {torch.float16: 3, torch.bfloat16: 2}


def _precision_note(got: torch.dtype, expected: torch.dtype) -> str:
    """What to add to a difference when the learner's result has a shorter float dtype than the reference's."""
    if got not in _LOW_PRECISION or expected in _LOW_PRECISION or not expected.is_floating_point:
        return ""
    return _(" — your result is {got}, the expected result {expected}: {got} keeps only about {digits} significant "
             "digits, so every value is rounded. A .half() (or .bfloat16(), or a tensor made in {got}) in your code "
             "did it; compute in {expected}.").format(got=str(got).removeprefix("torch."), digits=_LOW_PRECISION[got],
                                                      expected=str(expected).removeprefix("torch."))


def _show_entry(x: torch.Tensor) -> str:
    v = x.item()
    return f"{v:.6g}" if isinstance(v, (int, float, bool)) else str(v)


def equal_values(message: str | Callable[[Any, Any, str], str] =
                 "on {where}: expected {expected!r}, got {got!r}",
                 show: Callable[[Any], Any] | None = None) -> Callable[[Any, Any, str], None]:
    """A comparator for :func:`run_cases` on plain values (numbers, strings, lists, tuples):
    ``compare(got, expected, where)`` raises CheckFailed unless ``got == expected``.

    ``message`` is a ``str.format`` template with the fields ``where``, ``expected`` and
    ``got`` (after ``show``, e.g. a function that prints a list compactly; translated when
    shown, so mark it with ``N_``), or a function ``message(got, expected, where) -> str``."""
    _need(isinstance(message, str) or callable(message), "equal_values", "message",
          "a str template or a function", message)
    _need(show is None or callable(show), "equal_values", "show", "a function or None", show)

    def compare(got, expected, where: str) -> None:
        if plain_equal(got, expected):
            return
        if callable(message):
            raise CheckFailed(message(got, expected, where))
        g, e = (show(got), show(expected)) if show is not None else (got, expected)
        raise CheckFailed(_(message).format(where=where, expected=e, got=g))

    return compare


def as_number(got, where: str, whole: bool = False):
    """A learner's count as a Python number: a one-element tensor is unwrapped; anything
    that is not a number (or, with ``whole``, not a whole number) fails the check."""
    _need_where("as_number", where)
    _need(isinstance(whole, bool), "as_number", "whole", "a bool", whole)
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed((_("on {where}: expected a whole number, got {got}") if whole else
                           _("on {where}: expected a number, got {got}")).format(
            where=where, got=repr(got) if whole else type(got).__name__))
    if not math.isfinite(got):                  # NaN would slip through every "abs(a - b) > tol"
        raise CheckFailed((_("on {where}: expected a finite whole number, got {got!r}") if whole else
                           _("on {where}: expected a finite number, got {got!r}")).format(where=where, got=got))
    if whole and got != int(got):
        raise CheckFailed(_("on {where}: expected a whole number, got {got!r}").format(where=where, got=got))
    return got


class Symptom:
    """A diagnosis that recognises a mistake in the learner's result rather than
    reproducing it: it matches when ``predicate(got, *args)`` is true. Use it in place of
    a wrong function in :func:`run_cases`' ``diagnoses``.

    With ``raised=True`` it recognises what the learner's code gave instead of a result: what it
    raised (e.g. their own ``ValueError`` on an allowed input), or None when it returned None:
    ``predicate(error, *args)``, ``message(error, *args)``. A predicate that raises does not match."""

    def __init__(self, predicate: Callable[..., bool], raised: bool = False):
        _need(callable(predicate), "Symptom", "predicate", "a function (got, *args) -> bool", predicate)
        _need(isinstance(raised, bool), "Symptom", "raised", "True or False", raised)
        self.predicate = predicate
        self.raised = raised

    def __repr__(self) -> str:
        return f"Symptom({getattr(self.predicate, '__name__', self.predicate)!r})"


# --- Calling the learner's function ---

def _candidates(answer) -> list:
    """The function called and, when a checker wrapped it, the learner's own answer."""
    current = _CURRENT_ANSWER.get()
    return [answer] if current is None or current is answer else [answer, current]


def _starter(answer) -> bool:
    """Whether the learner's answer is still the untouched starter stub."""
    return any(is_stub(a) for a in _candidates(answer))


def _raised_by_stub(answer, error: BaseException) -> bool:
    """A NotImplementedError counts as "not attempted" only when the answer is a starter
    stub and raised it itself (from its own frame, not from something it called)."""
    frame, _line = innermost_frame(error)
    return frame is not None and any(code_of(a) is frame.f_code and is_stub(a) for a in _candidates(answer))


class _Raised(CheckFailed):
    """A failed check because the learner's code raised ``error`` (None: it returned None)."""

    def __init__(self, message: str, error: BaseException):
        super().__init__(message)
        self.error = error


def _require_function(answer) -> None:
    """The learner's answer must be a function (also when a checker passes a wrapper)."""
    for candidate in _candidates(answer):
        if not callable(candidate):
            who = _CURRENT_VAR.get() or _("your answer")      # the notebook name (an identifier) when set
            raise CheckFailed(_("{who} must be a function, got {type}").format(who=who, type=type(candidate).__name__))


def _copies(args: tuple) -> tuple:
    return copy.deepcopy(args)


def _grad_mode(no_grad: bool):
    return torch.no_grad() if no_grad else contextlib.nullcontext()


def _forbidding(answer):
    """The exercise's forbidden functions refused while ``answer`` runs (:mod:`.forbidden`)."""
    return forbidding(_CURRENT_FORBIDDEN.get(), _candidates(answer), lambda shown: CheckFailed(
        _("this exercise asks you to write it without {shown}, and your code called it").format(shown=_(shown))))


def _call(answer, given: tuple, no_grad: bool):
    """``(result, None)`` or ``(None, exception)``; KeyboardInterrupt goes through, and so
    do CheckFailed / NotAttempted raised by a checker's own wrapper around the answer."""
    try:
        with _grad_mode(no_grad), _forbidding(answer):
            return answer(*given), None
    except (KeyboardInterrupt, CheckFailed, NotAttempted):
        raise
    except BaseException as e:      # SystemExit and friends too: a failed check, not a crash
        return None, e


@dataclass
class _Attempt:
    value: Any
    changed: list        # [(argument name, kind)] of the arguments the answer changed in place


def _attempt(answer, args: tuple, where: str, no_grad: bool = False, reference=None,
             expected=None) -> _Attempt:
    _require_function(answer)
    given = _copies(args)
    got, error = _call(answer, given, no_grad)
    if error is not None:
        if isinstance(error, NotImplementedError) and _raised_by_stub(answer, error):
            raise NotAttempted() from None
        if is_shape_error(error):
            names = argument_names([f for f in (reference, *_candidates(answer)) if f is not None], len(args))
            raise _Raised(shape_message(where, error, names, args, expected), error) from None
        raise _Raised(raised_message(where, error), error) from None
    if got is None or got is Ellipsis:
        if _starter(answer):
            raise NotAttempted()
        raise _Raised(_("on {where}, your code returned {got!r} instead of a result: did you forget the `return`? "
                        "(Changing an argument in place gives nothing back.)").format(where=where, got=got), None)
    return _Attempt(got, changed_arguments(answer, args, given))


def call_answer(answer: Callable, args: tuple, where: str):
    """``answer(*args)`` inside a checker, guarded (see the module docstring): the answer
    gets fresh copies of ``args``; the starter stub raises :class:`NotAttempted`; an
    exception, a ``None`` from real code or an argument changed in place becomes a
    :class:`CheckFailed` naming ``where`` (the case). Returns the answer's result."""
    args = _need_args("call_answer", args)
    _need_where("call_answer", where)
    attempt = _attempt(answer, args, where)
    if attempt.changed:
        raise CheckFailed(_("on {where}: {detail}").format(where=where, detail=in_place_detail(attempt.changed)))
    return attempt.value


def expect_raises(answer: Callable, args: tuple, where: str, error: type,
                  *, returned: str | Callable[[Any], str], other: str | Callable[[BaseException], str]
                  ) -> BaseException:
    """The answer must raise ``error`` on ``args`` (e.g. a ``ValueError`` for an input it
    cannot handle). Returns the exception; otherwise fails with ``returned`` (text, or
    ``returned(result) -> str``) when it returned normally, or ``other`` (text, or
    ``other(exception) -> str``) when it raised something else."""
    args = _need_args("expect_raises", args)
    _need_where("expect_raises", where)
    _need(isinstance(error, type) and issubclass(error, Exception), "expect_raises", "error",
          "an Exception class", error)
    _need(isinstance(returned, str) or callable(returned), "expect_raises", "returned",
          "a str or a function", returned)
    _need(isinstance(other, str) or callable(other), "expect_raises", "other", "a str or a function", other)
    _require_function(answer)
    got, raised = _call(answer, _copies(args), False)
    if isinstance(raised, error):
        return raised
    if raised is not None:
        if isinstance(raised, NotImplementedError) and _raised_by_stub(answer, raised):
            raise NotAttempted() from None
        raise CheckFailed(other(raised) if callable(other) else other) from None
    if (got is None or got is Ellipsis) and _starter(answer):
        raise NotAttempted()
    raise CheckFailed(returned(got) if callable(returned) else returned)


# --- Running the cases ---

def _matches(wrong, got, args: tuple, compare, where: str, no_grad: bool) -> bool:
    try:
        if isinstance(wrong, Symptom):
            return not wrong.raised and bool(wrong.predicate(got, *_copies(args)))
        with _grad_mode(no_grad):
            mistake = wrong(*_copies(args))
        compare(got, mistake, where)
    except KeyboardInterrupt:
        raise
    except Exception:
        return False
    return True


def _raises_alike(wrong, error: BaseException, args: tuple, no_grad: bool) -> bool:
    """Whether the mistake ``wrong`` raises what the learner's code raised on ``args`` (a
    ``raised`` :class:`Symptom`: whether it recognises ``error``)."""
    if isinstance(wrong, Symptom):
        if not wrong.raised:
            return False
        try:
            return bool(wrong.predicate(error, *_copies(args)))
        except KeyboardInterrupt:
            raise
        except Exception:
            return False
    try:
        with _grad_mode(no_grad):
            wrong(*_copies(args))
    except KeyboardInterrupt:
        raise
    except Exception as e:
        return raised_alike(e, error)
    return False


def _named(failure: CheckFailed, diagnoses: list, matches: Callable, got, args: tuple, all_diagnoses: bool):
    """``failure`` with the messages of the diagnoses that ``matches``, else ``failure`` itself."""
    whys = []
    for wrong, why in diagnoses:
        if matches(wrong):
            if callable(why):
                whys.append(why(got, *_copies(args)) if isinstance(wrong, Symptom) else why(*_copies(args)))
            else:
                whys.append(_(why))
            if not all_diagnoses:
                break
    if whys:
        return CheckFailed(_("{failure} — {why}").format(failure=failure, why=_(" Or: ").join(whys)))
    return failure


def message_of(mistake: Callable) -> str:
    """A diagnosis function's message for the learner: its docstring, on one line, in the
    current language (``bertcourse.i18n`` extracts the docstrings of ``*_DIAGNOSES`` lists)."""
    _need(inspect.isfunction(mistake) and bool(mistake.__doc__), "message_of", "mistake",
          "a function with a docstring (the message)", mistake)
    return _(" ".join(mistake.__doc__.split()))


def run_cases(answer: Callable, reference: Callable, cases: Sequence[tuple[str, tuple]],
              diagnoses: Sequence[tuple[Any, Any]] = (), atol: float = 1e-5, *,
              rtol: float = 1e-4, compare: Callable[[Any, Any, str], None] | None = None,
              prepare: Callable[..., Any] | None = None, all_diagnoses: bool = False,
              in_place: str | None = None, no_grad: bool = False, integers: bool = False) -> str:
    """Call ``answer(*args)`` and ``reference(*args)`` on each case and compare.

    ``cases`` are ``(description, args)`` pairs. Each call gets its own deep copy of
    ``args``. The learner's result goes through ``prepare(got, description, *args)`` (if
    given; it may raise CheckFailed or return a normalised result), then ``compare(got,
    expected, description)`` raises CheckFailed on a difference (default: tensors with
    :func:`compare_tensors` and ``atol`` / ``rtol``, and ``integers``: ids or positions, which a
    floating-point result fails; :func:`equal_values` for plain values).

    ``diagnoses`` are typical mistakes: functions whose docstring is the message, or
    ``(wrong, message)`` pairs. ``wrong(*args)`` is the mistake's result (it matches when
    ``compare`` finds no difference from it) or a :class:`Symptom`; ``message`` is text or
    ``message(*args) -> str`` (``message(got, *args)`` for a Symptom, ``message(error, *args)``
    for a ``raised`` one; a docstring's line breaks
    and indents become single spaces). When the learner's result matches one, the failure
    names the mistake (with ``all_diagnoses``, every matching one, joined by " Or: "). When
    the learner's code raises, a mistake ``wrong`` that raises alike (the same kind, the same
    message: :func:`.learner_code.raised_alike`) is named; a shape or dtype error is reported
    with the arguments' shapes and the shape of the reference's result.

    A correct result from an answer that changed an argument in place fails too: with
    ``in_place`` (a template with the field ``where``) as the message, else a message
    naming the arguments. ``no_grad`` runs every call under ``torch.no_grad()``.
    Returns a short success message.
    """
    fn = "run_cases"
    _need(callable(reference), fn, "reference", "a function", reference)
    _need(isinstance(cases, Sequence) and not isinstance(cases, str), fn, "cases",
          "a list of (description, args) pairs", cases)
    if not cases:
        raise ValueError(f"{fn}: cases must hold at least one (description, args) pair, got an empty "
                         f"{type(cases).__name__}")
    for i, case in enumerate(cases):
        ok = (isinstance(case, tuple) and len(case) == 2 and isinstance(case[0], str)
              and isinstance(case[1], (tuple, list)))
        _need(ok, fn, f"cases[{i}]", "a (description: str, args: tuple) pair", case)
    cases = [(description, tuple(args)) for description, args in cases]
    _need(isinstance(diagnoses, Sequence) and not isinstance(diagnoses, str), fn, "diagnoses",
          "a list of mistakes (functions with a docstring, or (wrong, message) pairs)", diagnoses)
    diagnoses = [(d, message_of(d)) if inspect.isfunction(d) and d.__doc__ else d for d in diagnoses]
    for i, diagnosis in enumerate(diagnoses):
        ok = (isinstance(diagnosis, tuple) and len(diagnosis) == 2
              and (callable(diagnosis[0]) or isinstance(diagnosis[0], Symptom))
              and (isinstance(diagnosis[1], str) or callable(diagnosis[1])))
        _need(ok, fn, f"diagnoses[{i}]", "a function with a docstring (the message), or a (wrong "
              "function or Symptom, message str or function) pair", diagnosis)
    _need_tolerance(fn, "atol", atol)
    _need_tolerance(fn, "rtol", rtol)
    _need(compare is None or callable(compare), fn, "compare", "a function or None", compare)
    _need(prepare is None or callable(prepare), fn, "prepare", "a function or None", prepare)
    _need(isinstance(all_diagnoses, bool), fn, "all_diagnoses", "a bool", all_diagnoses)
    _need(in_place is None or isinstance(in_place, str), fn, "in_place", "a str template or None", in_place)
    _need(isinstance(no_grad, bool), fn, "no_grad", "a bool", no_grad)
    _need(isinstance(integers, bool), fn, "integers", "a bool", integers)
    if integers and compare is not None:
        raise ValueError(f"{fn}: integers must be False when compare is given (pass integers=True to "
                         f"compare_tensors inside it), got True")
    if compare is None:
        def compare(got, expected, where):
            compare_tensors(got, expected, _("on {where}").format(where=where), atol=atol, rtol=rtol,
                            integers=integers)
    _require_function(answer)
    cases = [(_(description), args) for description, args in cases]    # marked with N_ by the chapters
    for description, args in cases:
        with _grad_mode(no_grad):
            expected = reference(*_copies(args))
        try:
            attempt = _attempt(answer, args, description, no_grad, reference, expected)
        except _Raised as failure:
            raise _named(failure, diagnoses, lambda wrong: _raises_alike(wrong, failure.error, args, no_grad),
                         failure.error, args, all_diagnoses) from None
        got = attempt.value if prepare is None else prepare(attempt.value, description, *_copies(args))
        try:
            compare(got, expected, description)
        except CheckFailed as failure:
            raise _named(failure, diagnoses, lambda wrong: _matches(wrong, got, args, compare, description, no_grad),
                         got, args, all_diagnoses) from None
        if attempt.changed:
            if in_place is not None:
                raise CheckFailed(_(in_place).format(where=description))
            raise CheckFailed(_("on {where}: the result is right, but {detail}").format(where=description, detail=in_place_detail(attempt.changed)))
    return _("correct on all {n} cases ({cases})").format(n=len(cases), cases=_(", ").join(d for d, _a in cases))


# --- The exercise ---

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
        fields: values for ``{placeholders}`` in the hints, filled after translating them.
        forbidden: what the exercise asks the learner not to call, as ``(owner, attribute,
            shown)`` (``(torch.nn.functional, "cross_entropy", "F.cross_entropy")``): while
            the learner's code runs, calling it fails the check with a message naming ``shown``.
    """

    def __init__(self, name: str, var: str, checker: Callable[[Any], str],
                 hints: Sequence[str], solution: str, fields: dict | None = None,
                 forbidden: Sequence[tuple] = ()):
        _need(isinstance(name, str), "Exercise", "name", "a str", name)
        _need(isinstance(var, str) and var.isidentifier(), "Exercise", "var",
              "the answer's name in the notebook (an identifier)", var)
        _need(callable(checker), "Exercise", "checker", "a function (answer) -> str", checker)
        _need(isinstance(hints, Sequence) and not isinstance(hints, str)
              and all(isinstance(h, str) for h in hints), "Exercise", "hints", "a list of str", hints)
        _need(isinstance(solution, str), "Exercise", "solution", "the solution's code as a str", solution)
        _need(fields is None or isinstance(fields, dict), "Exercise", "fields", "a dict or None", fields)
        _need(check_forbidden(forbidden), "Exercise", "forbidden",
              "a list of (module or class, attribute it defines, shown name)", forbidden)
        if not hints:
            raise ValueError("an exercise needs at least one hint")
        self.name, self.var, self.checker, self.fields = name, var, checker, fields
        self.forbidden = tuple(forbidden)
        self.hints, self._solution, self._hints_shown = list(hints), solution, 0
        self.guessed = False      # has check() seen an answer in place of the starter (this kernel)?

    def __repr__(self) -> str:
        return f"<Exercise {self.name}: `{self.var}`>"

    def check(self, answer: Any = _MISSING) -> CheckResult:
        """Check ``answer`` (default: the notebook variable named ``self.var``). The result is
        recorded when the learner tracks progress (``bertcourse.track_progress()``)."""
        if answer is _MISSING:
            answer = _find_in_notebook(self.var)
        result = self._evaluate(answer)
        self.guessed = self.guessed or result.status != "not attempted"
        print(result)
        record_progress(self, result.status)
        return result

    def _not_attempted(self) -> CheckResult:
        return CheckResult(_(self.name), "not attempted",
                           _("`{var}` still raises NotImplementedError or returns None; write your code "
                             "where it says `...` and run the cell.").format(var=self.var))

    def _evaluate(self, answer: Any) -> CheckResult:
        # name, hints and solution are marked with N_ by the chapters; translated here, when shown
        if answer is _MISSING:
            return CheckResult(_(self.name), "not attempted",
                               _("define `{var}` in a cell above, run it, then check again.").format(var=self.var))
        if answer is None or answer is Ellipsis:
            return CheckResult(_(self.name), "not attempted", _("`{var}` is still the starter placeholder; "
                                                                "replace it with your answer.").format(var=self.var))
        tokens = _CURRENT_VAR.set(self.var), _CURRENT_ANSWER.set(answer), _CURRENT_FORBIDDEN.set(self.forbidden)
        try:
            message = self.checker(answer)
        except NotAttempted:
            return self._not_attempted()
        except CheckFailed as e:
            return CheckResult(_(self.name), "fail", _("{message}  (stuck? call .hint() on this exercise)").format(message=e))
        except KeyboardInterrupt:
            raise
        except NotImplementedError as e:   # a checker that called the answer itself
            if _raised_by_stub(answer, e):
                return self._not_attempted()
            return CheckResult(_(self.name), "fail", _("checking `{var}` raised {error}{note}").format(
                var=self.var, error=describe_error(e), note=error_note(e)))
        except BaseException as e:  # a bug in the learner's value that the checker tripped on
            return CheckResult(_(self.name), "fail", _("checking `{var}` raised {error}{note}").format(
                var=self.var, error=f"{type(e).__name__}: {e}", note=error_note(e)))
        finally:
            _CURRENT_VAR.reset(tokens[0])
            _CURRENT_ANSWER.reset(tokens[1])
            _CURRENT_FORBIDDEN.reset(tokens[2])
        return CheckResult(_(self.name), "pass", message)

    def reveal(self, *parts) -> Reveal:
        """What a "predict, then run" cell shows: the measurement ``parts`` (text, a matplotlib
        figure, a pandas table), folded in a collapsed element until this exercise has seen a
        guess, then open (:mod:`bertcourse.exercises.reveal`)."""
        return Reveal(self, parts)

    def hint(self) -> str:
        """Print the next hint (they get more specific)."""
        i = min(self._hints_shown, len(self.hints) - 1)
        self._hints_shown += 1
        hint = _(self.hints[i]).format(**self.fields) if self.fields is not None else _(self.hints[i])
        text = Printed(_("Hint {i}/{n}: {hint}").format(i=i + 1, n=len(self.hints), hint=hint))
        print(text)
        return text

    def solution(self) -> str:
        """Print the reference solution (its comments in the current language)."""
        text = _(self._solution).strip("\n")
        print(text)
        return Printed(text)
