"""A short quiz per chapter: what the chapter measured, and why.

In a notebook::

    from bertcourse.exercises.ch01 import quiz
    quiz.show()                            # the questions and their options
    quiz_answers = {1: "b", 2: 0.5, 3: ...}   # a letter, or a number where a question asks for one
    quiz.check()                           # each answer right or wrong, and why

A :class:`Quiz` is an :class:`~bertcourse.exercises.core.Exercise` whose answer is the dict
``quiz_answers``: it is checked like the exercises (``check()``, ``hint()``, ``solution()``), and
recorded like them when the learner tracks progress. Every option carries the reason it is right
or wrong, so a wrong answer gets the reason, not only "wrong"; a numeric question says why a
guess is too low or too high. Unanswered questions (``...``) are listed as such; a quiz with no
answer at all is "not attempted". Texts are marked with ``N_`` and translated when shown.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, CheckResult, Exercise, NotAttempted, Printed, as_number

__all__ = ["Option", "Question", "Quiz"]

LETTERS = "abcdef"


@dataclass(frozen=True)
class Option:
    """One option of a multiple-choice question: its text, why it is right or wrong, and whether
    it is the right one."""
    text: str
    why: str
    correct: bool = False


@dataclass(frozen=True)
class Question:
    """A multiple-choice question (``options``, lettered a, b, c, … in order, exactly one
    correct) or a numeric one (``answer`` within ``tolerance``; ``why`` for a right answer,
    ``why_low`` / ``why_high`` for a guess below / above the range)."""
    text: str
    options: tuple = ()
    answer: float | None = None
    tolerance: float = 0.0
    why: str = ""
    why_low: str = ""
    why_high: str = ""
    unit: str = ""

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text:
            raise TypeError(f"Question: text must be a non-empty str, got {self.text!r:.60}")
        if self.options:
            if not all(isinstance(o, Option) for o in self.options) or not 2 <= len(self.options) <= len(LETTERS):
                raise TypeError(f"Question {self.text[:40]!r}: options must be 2 to {len(LETTERS)} Option records")
            if sum(o.correct for o in self.options) != 1:
                raise ValueError(f"Question {self.text[:40]!r}: exactly one option must be correct")
            if self.answer is not None:
                raise ValueError(f"Question {self.text[:40]!r}: give options or a numeric answer, not both")
        elif not (isinstance(self.answer, (int, float)) and math.isfinite(self.answer)
                  and self.tolerance >= 0 and self.why and self.why_low and self.why_high):
            raise ValueError(f"Question {self.text[:40]!r}: a numeric question needs a finite answer, a "
                             f"tolerance >= 0 and why, why_low and why_high")

    @property
    def letters(self) -> str:
        return LETTERS[:len(self.options)]

    def shown(self, number: int) -> str:
        """The question as the learner reads it (translated)."""
        lines = [f"{number}. {_(self.text)}"]
        if self.options:
            lines += [f"   ({letter}) {_(o.text)}" for letter, o in zip(self.letters, self.options)]
        else:
            lines.append("   " + _("(a number)"))
        return "\n".join(lines)

    def judge(self, number: int, given) -> tuple[bool, str]:
        """``(right, one line saying why)`` for the answer ``given``."""
        if self.options:
            letter = given.strip().lower().strip("()") if isinstance(given, str) else given
            if letter not in self.letters:
                raise CheckFailed(_("question {n}: answer with one of the letters {letters}, got {given!r}").format(
                    n=number, letters=", ".join(self.letters), given=given))
            option = self.options[self.letters.index(letter)]
            return option.correct, _(option.why)
        value = as_number(given, _("question {n}").format(n=number))
        if abs(value - self.answer) <= self.tolerance:
            return True, _(self.why)
        if 0 < abs(self.answer) <= 1 and abs(value / 100 - self.answer) <= self.tolerance:
            # the right share written in percent (29.7 for 0.297): a slip of form, not of thought
            return False, _("{value:g} is the right answer in percent; write it as a share between 0 and 1 "
                            "({share:g}).").format(value=value, share=value / 100)
        if 1 < abs(self.answer) <= 100 and 0 < abs(value) <= 1 and abs(value * 100 - self.answer) <= self.tolerance:
            # the right percentage written as a share (0.47 for 47)
            return False, _("{value:g} is the right answer as a share; the question asks for a percentage "
                            "({percent:g}).").format(value=value, percent=value * 100)
        return False, _(self.why_low if value < self.answer else self.why_high)

    def right_value(self):
        """What a right answer is: the correct option's letter, or the number."""
        if self.options:
            return next(letter for letter, o in zip(self.letters, self.options) if o.correct)
        return self.answer

    def right_answer(self) -> str:
        if self.options:
            letter = next(letter for letter, o in zip(self.letters, self.options) if o.correct)
            return f"({letter}) {_(self.options[self.letters.index(letter)].text)}"
        return f"{self.answer:g}{self.unit}"


class Quiz(Exercise):
    """A chapter's quiz: ``questions`` (:class:`Question`), answered in the notebook variable
    ``quiz_answers`` = ``{question number: letter or number}``."""

    def __init__(self, name: str, questions, var: str = "quiz_answers"):
        questions = tuple(questions)
        if not questions or not all(isinstance(q, Question) for q in questions):
            raise TypeError("Quiz: questions must be a non-empty list of Question records")
        self.questions = questions
        super().__init__(name=name, var=var, checker=self._check_answers,
                         hints=[N_("Each wrong answer says why it is wrong: reread the section it points to, "
                                   "then answer again."),
                                N_("quiz.solution() shows every right answer and the reason for it.")],
                         solution="")

    def _not_attempted(self) -> CheckResult:
        return CheckResult(_(self.name), "not attempted",
                           _("no question answered yet: put a letter (or a number, where a question asks for one) "
                             "in place of each `...` in `{var}`, then run the cell.").format(var=self.var))

    def show(self) -> str:
        """Print the questions, with their options."""
        text = "\n\n".join(q.shown(i) for i, q in enumerate(self.questions, 1))
        print(text)
        return Printed(text)

    def _check_answers(self, answers) -> str:
        n = len(self.questions)
        if not isinstance(answers, dict):
            raise CheckFailed(_("`{var}` must be a dict {{question number: answer}}, e.g. {{1: 'b', 2: 0.5}}, got "
                                "{type}").format(var=self.var, type=type(answers).__name__))
        unknown = sorted(str(k) for k in answers if k not in range(1, n + 1))
        if unknown:
            raise CheckFailed(_("`{var}` has answers to questions {keys}; the questions are numbered 1 to {n}").format(
                var=self.var, keys=", ".join(unknown), n=n))
        given = {k: v for k, v in answers.items() if v is not None and v is not Ellipsis}
        if not given:
            raise NotAttempted()
        lines, right = [], 0
        for k, q in enumerate(self.questions, 1):
            if k not in given:
                lines.append(_("  {k}. not answered yet").format(k=k))
                continue
            ok, why = q.judge(k, given[k])
            right += ok
            mark = _("right") if ok else _("wrong")
            lines.append(f"  {k}. {mark}: {why}")
        summary = _("{right} of {n} right").format(right=right, n=n)
        text = summary + "\n" + "\n".join(lines)
        if right < n:
            raise CheckFailed(text)
        return text

    def solution(self) -> str:
        """Print every right answer with its reason, as code that sets the answers."""
        lines, values = [], []
        for k, q in enumerate(self.questions, 1):
            why = next(_(o.why) for o in q.options if o.correct) if q.options else _(q.why)
            lines.append(f"# {k}. {q.right_answer()}: {why}")
            values.append(f"{k}: {q.right_value()!r}")
        text = "\n".join(lines + [f"{self.var} = {{{', '.join(values)}}}"])
        print(text)
        return Printed(text)
