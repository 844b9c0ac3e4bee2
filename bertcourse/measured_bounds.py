"""What chapter 9's trained numbers may be, on any machine: the ranges and gaps its notebook
asserts, in one place.

A trained accuracy is not one number. Another seed, another CPU (bf16 autocast or float32,
AVX-512 or AMX or AVX2 kernels) and the rounding changes, which are small, grow through a
training run into a different model. ``benchmarks/spread.py`` measures chapter 9's methods over
five seeds in several configurations, on the machine that executed the notebook
(``benchmarks/spread.json``) and on others (``benchmarks/spread_<machine>.json``), shown in
``benchmarks/README.md``; the bounds below hold for every one of those runs and for the values
other machines reported, with a margin taken from that spread (``tests/test_measured_bounds.py`` checks
both). The notebook asserts these, so a claim it makes holds wherever it runs.

On top of the spread of training, a test accuracy measured on 300 sentences has a sampling
uncertainty: :func:`standard_error`.
"""
from __future__ import annotations

from ._checks import check_choice, check_finite_number, check_positive_int

__all__ = ["TEST_SENTENCES", "ONE_SENTENCE", "RANGES", "GAPS", "MOVED_RATIO", "standard_error", "in_range",
           "gap_holds", "unmet"]

TEST_SENTENCES = 300
"""Sentences in chapter 9's test split (and in its validation split)."""

ONE_SENTENCE = 1 / TEST_SENTENCES
"""The smallest step of an accuracy on 300 sentences (0.0033): "better" means at least this."""

RANGES = {
    # name: (lowest, highest) the notebook accepts; the names are those of its results table
    "untrained head, validation": (0.40, 0.60),
    "a. bag of words": (0.75, 0.85),
    "d. MiniLM from scratch": (0.55, 0.80),
    "b. frozen MiniLM + probe": (0.86, 0.92),
    "c. fine-tuned MiniLM": (0.88, 1.00),
    "c. fine-tuned MiniLM, validation": (0.89, 1.00),
    "bag of words, 100 labels": (0.00, 0.70),
    # section 8's learning-rate test: accuracy, and the mean cosine to the pretrained sentence vectors
    "10 steps at 1e-3, validation": (0.00, 0.80),
    "10 steps at 1e-3, similarity": (-1.00, 0.50),
    "c. fine-tuned MiniLM, similarity": (0.80, 1.00),
}
"""The numbers chapter 9 asserts, each as ``(lowest, highest)``."""

GAPS = {
    # (better, worse): the least difference better - worse the notebook asserts
    ("b. frozen MiniLM + probe", "a. bag of words"): 0.05,
    ("c. fine-tuned MiniLM", "d. MiniLM from scratch"): 0.10,
    ("a. bag of words", "d. MiniLM from scratch"): 0.05,
    ("b. probe, validation", "probe on [CLS], validation"): 0.03,
    # on test, mean pooling's 0.04 over [CLS] is within noise: only validation's gap is claimed
    ("probe, 100 labels", "bag of words, 100 labels"): 0.15,          # "far ahead" on the same 100
    ("probe, 100 labels", "a. bag of words"): -0.02,                  # "comparable" to 2,400 labels
    ("probe, 300 labels", "b. frozen MiniLM + probe"): -0.02,
    ("bag of words, 300 labels", "bag of words, 100 labels"): 0.0,
    ("bag of words, 1000 labels", "bag of words, 300 labels"): 0.0,
    ("a. bag of words", "bag of words, 1000 labels"): 0.0,
}
"""Differences chapter 9 claims, both numbers from the same run: ``(better, worse): least
difference`` (negative: "at most that much worse"). A difference inside the measured spread is
not claimed (the chapter says "within noise" instead)."""

MOVED_RATIO = 3
"""Ten steps at 1e-3 move the encoder's weight matrices at least this many times farther than
section 4's epoch at 5e-5 (the largest relative change of any matrix)."""


def standard_error(accuracy: float, n: int = TEST_SENTENCES) -> float:
    """Binomial standard error ``sqrt(p (1 - p) / n)`` of an accuracy ``p`` measured on ``n``
    sentences: how much the same model's accuracy would move on another sample of ``n``."""
    check_finite_number("accuracy", accuracy, low=0.0, high=1.0)
    check_positive_int("n", n)
    return (accuracy * (1 - accuracy) / n) ** 0.5


def in_range(name: str, value: float) -> bool:
    """Whether ``value`` lies inside ``RANGES[name]`` (bounds included)."""
    check_choice("name", name, RANGES)
    check_finite_number("value", value)
    low, high = RANGES[name]
    return low <= value <= high


def gap_holds(values: dict, better: str, worse: str) -> bool:
    """Whether ``values[better] - values[worse]`` is at least ``GAPS[(better, worse)]``."""
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict {{name: accuracy}}, got {type(values).__name__}")
    for name, label in ((better, "better"), (worse, "worse")):
        if not isinstance(name, str):
            raise TypeError(f"{label} must be a method's name (a str, e.g. 'a. bag of words'), "
                            f"got {type(name).__name__}")
    if (better, worse) not in GAPS:
        raise ValueError(f"(better, worse) must be one of {sorted(GAPS)}, got {(better, worse)!r}")
    for name in (better, worse):
        if name not in values:
            raise ValueError(f"values must have an entry {name!r}, got keys {sorted(values, key=str)}")
        check_finite_number(f"values[{name!r}]", values[name])
    # accuracies are multiples of 1/300 in float: allow the rounding of their difference
    return values[better] - values[worse] >= GAPS[(better, worse)] - 1e-9


def unmet(values: dict) -> list[str]:
    """The measured claims about ``values`` (``{name: number}``) that do not hold: every range of
    :data:`RANGES` whose name is a key of ``values`` and every gap of :data:`GAPS` whose two names
    both are, each failure written out with its bound. An empty list: every claim that applies
    holds. The notebook asserts ``not unmet(results)``, one line for a whole table of claims.

    ``values`` must name at least one claim: a dict that names none would pass vacuously."""
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict {{name: number}}, got {type(values).__name__}")
    for name, value in values.items():
        check_finite_number(f"values[{name!r}]", value)
    ranges = [name for name in RANGES if name in values]
    gaps = [pair for pair in GAPS if pair[0] in values and pair[1] in values]
    if not ranges and not gaps:
        raise ValueError(f"values must name at least one measured range or both sides of a gap, got keys "
                         f"{sorted(values, key=str)}")
    failures = [f"{name} = {values[name]:.4f}, outside [{RANGES[name][0]}, {RANGES[name][1]}]"
                for name in ranges if not in_range(name, values[name])]
    failures += [f"{better} - {worse} = {values[better] - values[worse]:+.4f}, less than {GAPS[(better, worse)]:+.4f}"
                 for better, worse in gaps if not gap_holds(values, better, worse)]
    return failures
