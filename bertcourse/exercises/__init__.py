"""Auto-checked exercises: ``q1.check()``, ``q1.hint()``, ``q1.solution()``.

Each chapter has a module (``bertcourse.exercises.ch01`` …) that defines its exercises
with :class:`Exercise`. In a notebook::

    from bertcourse.exercises.ch01 import q1
    def scaled_scores(Q, K):
        ...                      # the learner's code
    q1.check()                   # finds `scaled_scores` in the notebook and checks it
    q1.hint()                    # first hint; call again for the next one
    q1.solution()                # the reference solution

``check()`` runs the learner's answer against the package's reference implementation on
several inputs (edge cases included) and prints PASS / FAIL with the first difference.
An answer that is still the starter stub (``...``, ``None`` or ``raise NotImplementedError``)
is reported as *not attempted yet*, which is not a failure. An exception raised by the
learner's code becomes a failed check with its message; it never crashes the notebook.
Every call gets fresh copies of its inputs, and an answer that changes its inputs in place
fails with a message naming them. ``bertcourse.exercises.core`` documents the machinery.
"""
from .core import (CheckFailed, CheckResult, Exercise, NotAttempted, Symptom, as_number, call_answer,
                   compare_tensors, equal_values, expect_raises, randn, run_cases, seeded)

__all__ = ["CheckFailed", "CheckResult", "Exercise", "NotAttempted", "Symptom", "as_number", "call_answer",
           "compare_tensors", "equal_values", "expect_raises", "randn", "run_cases", "seeded"]
