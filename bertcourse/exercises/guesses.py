"""The learner's predictions ("predict, then run"): read, and judged against the measurement,
in one place for every chapter that asks for them.

* :func:`predicted_number`, :func:`predicted_dict`, :func:`predicted_choice`: a predicted number
  in a range, a dict of them, one of a few named choices (anything else is a failed check);
* :func:`predicted_shares`: the learner's ``prediction`` dict, one share in [0, 1] per key (a
  percentage such as 94 is refused with the share it means);
* :func:`judge_guesses`: the report ``key: you said g, measured m, …``, returned when every guess
  is within the tolerance; else a :class:`~bertcourse.exercises.core.CheckFailed` naming the keys
  that are off, with the chapter's reasons for them.

What a chapter adds is its measurement and its reasons (why a guess is too high or too low).
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..i18n import gettext as _
from .authoring import need, need_where
from .core import CheckFailed, as_number

__all__ = ["predicted_number", "predicted_dict", "predicted_choice", "predicted_shares", "judge_guesses"]


def predicted_number(value, where: str, low, high, must: str, in_range: str = "", *, whole=False, blank=""):
    """A predicted number in ``[low, high]`` (``blank``: a dict entry's placeholder text), or CheckFailed."""
    # must, in_range and blank come translated from the checker (it runs when check() does)
    if blank and (value is Ellipsis or value is None):
        raise CheckFailed(_("{where} is still {value}: write {blank}").format(
            where=where, value="..." if value is Ellipsis else "None", blank=blank))
    if isinstance(value, (str, bool)) or not (blank or isinstance(value, (int, float, torch.Tensor))):
        got = repr(value) if blank else f"{type(value).__name__} {value!r:.40}"
        raise CheckFailed(_("{where} must be {must}, got {got}").format(where=where, must=must, got=got))
    number = as_number(value, where, whole=whole)
    if not low <= number <= high:
        raise CheckFailed(_("{where} must be {must}, got {got:g}").format(where=where, must=in_range, got=number))
    return int(number) if whole else float(number)


def predicted_dict(answer, keys: Sequence[str], where: str, each: str, **number) -> dict:
    """A dict of :func:`predicted_number` s, one per key (``each``: what every value is)."""
    if not isinstance(answer, dict) or set(answer) != set(keys):
        raise CheckFailed(_("{where} must be a dict with the keys {keys}, {each}, got {got:.80}").format(where=where, keys=list(keys), each=each, got=repr(answer)))
    return {key: predicted_number(answer[key], f"{where}[{key!r}]", **number) for key in keys}


def predicted_choice(answer, choices: dict, where: str, described: bool = False) -> str:
    """A "predict, then run" answer naming one of ``choices`` (case and outer spaces ignored)."""
    need_where("predicted_choice", where)
    need(isinstance(described, bool), "predicted_choice", "described", "True or False", described)
    if not isinstance(answer, str):
        raise CheckFailed(_("{where} must be one of {listed} (a string), got {type} {got:.40}").format(
            where=where, listed=", ".join(map(repr, choices)), type=type(answer).__name__, got=repr(answer)))
    if (choice := str.lower(str.strip(answer))) not in choices:      # a plain str, whatever subclass
        listed = ", ".join(f"{c!r} ({_(d)})" if described else repr(c) for c, d in choices.items())
        raise CheckFailed(_("{where} must be one of {listed}, got {got!r}").format(where=where, listed=listed, got=answer))
    return choice


def predicted_shares(answer, keys: Sequence[str], each: str, must: str) -> dict:
    """``answer`` (the learner's ``prediction``) as ``{key: float in [0, 1]}``: a dict with
    exactly ``keys`` (``each``: what the values are, ``must``: what one value must be), every
    value a finite number in [0, 1]; a value in (1, 100] fails as a percentage, with the share."""
    guess = predicted_dict(answer, keys, "prediction", each, low=0.0, high=100.0, must=must,
                           in_range=_("between 0 and 1"), blank=_("your guess, a number between 0 and 1"))
    for key in keys:
        if guess[key] > 1:
            raise CheckFailed(_("prediction[{key!r}] is {value:g}: write a share between 0 and 1 ({share:g}), not a "
                                "percentage").format(key=key, value=guess[key], share=guess[key] / 100))
    return guess


def judge_guesses(guess: dict, measured: dict, tolerance: float,
                  reasons: Callable[[dict, dict, list], list] = lambda guess, measured, off: []) -> str:
    """The report of ``guess`` against ``measured`` (the same keys, in ``guess``' order):
    ``key: you said g, measured m, …``, returned when every guess is within ``tolerance``.
    Otherwise raises CheckFailed: the report, the keys off by more than ``tolerance``, and the
    chapter's ``reasons(guess, measured, off)`` (messages for those keys, possibly none) after them."""
    report = _(", ").join(_("{key}: you said {guess:.2f}, measured {measured:.2f}").format(
        key=k, guess=guess[k], measured=measured[k]) for k in guess)
    off = [k for k in guess if abs(guess[k] - measured[k]) > tolerance]
    if off:
        why = reasons(guess, measured, off)
        raise CheckFailed(_("{report}. Off by more than {tolerance:.2f} on {keys}").format(
            report=report, tolerance=tolerance, keys=", ".join(off)) + (_(": ") + _("; ").join(why) if why else "")
            + _("."))
    return report
