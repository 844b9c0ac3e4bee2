"""bertcourse.exercises.quiz: a chapter's quiz is checked like an exercise, and every answer,
right or wrong, gets its reason."""
import importlib

import pytest

from bertcourse.exercises.core import Exercise
from bertcourse.exercises.quiz import Option, Question, Quiz
from bertcourse.i18n import set_language

QUIZ = Quiz("Quiz (toy)", [
    Question("Which is even?", options=(Option("3", why="3 is odd."), Option("4", why="4 = 2 x 2.", correct=True),
                                        Option("5", why="5 is odd."))),
    Question("Half of 3?", answer=1.5, tolerance=0.05, why="3 / 2 = 1.5.", why_low="Too low: 2 x that < 3.",
             why_high="Too high: 2 x that > 3."),
])


def test_right_answers_pass_with_their_reasons(capsys):
    result = QUIZ.check({1: "b", 2: 1.5})
    assert result.status == "pass" and "2 of 2 right" in result.message
    assert "4 = 2 x 2." in result.message and "3 / 2 = 1.5." in result.message
    assert QUIZ.check({1: "(B) ", 2: 1.52}).status == "pass"           # letters as a learner types them


def test_a_wrong_answer_gets_the_reason_of_the_option_chosen():
    result = QUIZ.check({1: "a", 2: 1.0})
    assert result.status == "fail" and "0 of 2 right" in result.message
    assert "3 is odd." in result.message and "Too low" in result.message
    assert "Too high" in QUIZ.check({1: "b", 2: 2}).message


def test_the_right_share_written_in_percent_is_named_and_not_counted():
    quiz = Quiz("Quiz (toy)", [Question("Which share flips?", answer=0.297, tolerance=0.01, why="1 - 0.703.",
                                        why_low="Too low.", why_high="Too high.")])
    result = quiz.check({1: 29.7})
    assert result.status == "fail" and "29.7 is the right answer in percent" in result.message
    assert "(0.297)" in result.message and "Too high" not in result.message
    assert "Too high." in quiz.check({1: 45}).message                 # 45 % is not the answer
    assert "right answer in percent" not in QUIZ.check({1: "b", 2: 150}).message   # 1.5 is not a share
    percent = Quiz("Quiz (toy)", [Question("What percent?", answer=47, tolerance=3, why="47 %.",
                                           why_low="Too low.", why_high="Too high.")])
    result = percent.check({1: 0.47})
    assert "0.47 is the right answer as a share; the question asks for a percentage (47)" in result.message
    assert "Too low." in percent.check({1: 0.2}).message


def test_unanswered_questions_and_starters():
    starter = QUIZ.check({1: ..., 2: ...})
    assert starter.status == "not attempted" and "in place of each `...` in `quiz_answers`" in starter.message
    assert QUIZ.check(...).status == "not attempted"
    result = QUIZ.check({1: "b", 2: ...})
    assert result.status == "fail" and "not answered yet" in result.message and "1 of 2 right" in result.message


@pytest.mark.parametrize("answers, words", [
    ({1: "z"}, "one of the letters a, b, c"), ({3: "a"}, "numbered 1 to 2"), (["b", 1.5], "must be a dict"),
    ({1: "b", 2: "half"}, "question 2"),
])
def test_malformed_answers_are_named(answers, words):
    result = QUIZ.check(answers)
    assert result.status == "fail" and words in result.message, result.message


def test_show_and_solution(capsys):
    shown = QUIZ.show()
    assert "1. Which is even?" in shown and "(b) 4" in shown and "(a number)" in shown
    namespace = {}
    exec(QUIZ.solution(), namespace)                     # the solution is code that sets the answers
    assert namespace["quiz_answers"] == {1: "b", 2: 1.5}
    assert QUIZ.check(namespace["quiz_answers"]).status == "pass"
    assert isinstance(QUIZ, Exercise) and QUIZ.hint().startswith("Hint 1/2")


def test_questions_are_checked_when_written():
    with pytest.raises(ValueError, match="exactly one option must be correct"):
        Question("?", options=(Option("a", why="x"), Option("b", why="y")))
    with pytest.raises(ValueError, match="numeric question needs"):
        Question("?", answer=1.0)
    with pytest.raises(TypeError, match="non-empty list of Question"):
        Quiz("Quiz", [])


def test_the_chinese_edition_translates_the_frame():
    set_language("zh")
    try:
        result = QUIZ.check({1: "a", 2: ...})
    finally:
        set_language("en")
    assert "3 is odd." in result.message and "Hint" not in result.message
    assert result.message != QUIZ.check({1: "a", 2: ...}).message       # the frame is Chinese


# --- every chapter's quiz -----------------------------------------------------------------------

# The answer key, written down once more: a quiz whose right option moves fails here.
ANSWER_KEYS = {
    "ch01": {1: "b", 2: "b", 3: "c", 4: "c", 5: 327.2}, "ch02": {1: "c", 2: "b", 3: "b", 4: "a", 5: 32},
    "ch03": {1: "a", 2: "c", 3: "b", 4: "b", 5: 8}, "ch04": {1: "b", 2: "c", 3: "d", 4: 0.0353, 5: "a"},
    "ch05": {1: "d", 2: "b", 3: "c", 4: "a", 5: 8.06}, "ch06": {1: "c", 2: 0.297, 3: "b", 4: "d", 5: "a"},
    "ch07": {1: "b", 2: "c", 3: "d", 4: "a", 5: 0.969}, "ch08": {1: "b", 2: "c", 3: "a", 4: 47, 5: "b"},
    "ch09": {1: "a", 2: "c", 3: "b", 4: 0.907}, "ch10": {1: "a", 2: "b", 3: "a", 4: 1.449}, "ch11": {1: "b", 2: "c", 3: "d", 4: "a"}, "ch12": {1: "c", 2: "a", 3: "d", 4: "b"}, "ch13": {1: "c", 2: "b", 3: "c"}, "ch14": {1: "c", 2: "a", 3: "b", 4: "c", 5: 0.616},
}


def chapter_quiz(chapter: str) -> Quiz:
    return importlib.import_module(f"bertcourse.exercises.{chapter}").quiz


def wrong_answers(quiz: Quiz) -> list:
    """``(question number, wrong answer, the reason it must get)`` for every wrong option, and for
    a numeric question a guess below and one above its range."""
    out = []
    for k, q in enumerate(quiz.questions, 1):
        if q.options:
            out += [(k, letter, o.why) for letter, o in zip(q.letters, q.options) if not o.correct]
        else:
            step = q.tolerance + max(abs(q.answer), 1.0)
            out += [(k, q.answer - step, q.why_low), (k, q.answer + step, q.why_high)]
    return out


@pytest.mark.parametrize("chapter", sorted(ANSWER_KEYS))
def test_every_chapter_has_a_quiz_whose_answers_pass_with_their_reasons(chapter):
    quiz = chapter_quiz(chapter)
    assert 3 <= len(quiz.questions) <= 6 and sum(not q.options for q in quiz.questions) <= 1
    assert {k: q.right_value() for k, q in enumerate(quiz.questions, 1)} == ANSWER_KEYS[chapter]
    result = quiz.check(ANSWER_KEYS[chapter])
    assert result.status == "pass", result.message
    for q in quiz.questions:
        assert (next(o.why for o in q.options if o.correct) if q.options else q.why) in result.message
    reasons = [o.why for q in quiz.questions for o in q.options] + [
        why for q in quiz.questions if not q.options for why in (q.why, q.why_low, q.why_high)]
    assert len(set(reasons)) == len(reasons), f"{chapter}: two answers share a reason"


@pytest.mark.parametrize("chapter", sorted(ANSWER_KEYS))
def test_every_wrong_answer_of_every_quiz_gets_its_own_reason(chapter):
    quiz = chapter_quiz(chapter)
    n = len(quiz.questions)
    for k, wrong, why in wrong_answers(quiz):
        result = quiz.check({**ANSWER_KEYS[chapter], k: wrong})
        assert result.status == "fail" and f"{n - 1} of {n} right" in result.message, (k, wrong, result.message)
        assert f"  {k}. wrong: {why}" in result.message, (k, wrong, result.message)
