"""Prediction exercises that guess several measured shares ("predict, then run"): the guesses
read, and judged against the measurement, in one place for every chapter that asks for them.

* :func:`predicted_shares`: the learner's ``prediction`` dict, one share in [0, 1] per key (a
  percentage such as 94 is refused with the share it means);
* :func:`judge_guesses`: the report ``key: you said g, measured m, …``, returned when every guess
  is within the tolerance; else a :class:`~bertcourse.exercises.core.CheckFailed` naming the keys
  that are off, with the chapter's reasons for them.

What a chapter adds is its measurement and its reasons (why a guess is too high or too low).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..i18n import gettext as _
from .core import CheckFailed, predicted_dict

__all__ = ["predicted_shares", "judge_guesses"]


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
