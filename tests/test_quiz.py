"""bertcourse.exercises.quiz: a chapter's quiz is checked like an exercise, and every answer,
right or wrong, gets its reason."""
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
