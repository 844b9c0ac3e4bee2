"""The form every chapter keeps (issue 43, "a story a learner can follow"): short cells, short
chapters, the story in front and the proof behind.

Counted on the English notebooks (the Chinese edition has the same cells and the same code):

* a markdown cell holds at most 250 words and at most one heading; a word is a run of letters
  and digits (``self-attention`` is two, ``d2l-zh`` two, ``0.5`` two), or a piece between
  white space where that gives more: the stricter of the two usual ways to count;
* a chapter holds at most 3,500 words of prose: its markdown cells, the glossary's cells aside
  (they start with ``### Glossary`` or go on with its ``| English`` table);
* at most 15 ``assert`` lines: one visible check per idea; the regression checks live in
  ``tests/`` and nbval compares what the notebooks print;
* the first code cell after the Colab install cell holds at most 15 lines;
* the test suite is named at most 3 times (``tests/``, "test suite", ``pytest``, a test file).
"""
from __future__ import annotations

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

MAX_CELL_WORDS, MAX_HEADINGS, MAX_CHAPTER_WORDS = 250, 1, 3500
MAX_ASSERTS, MAX_FIRST_CELL_LINES, MAX_TEST_MENTIONS = 15, 15, 3
TEST_MENTION = re.compile(r"tests/|test suite|pytest|test_\w+\.py")


def cells(path: pathlib.Path) -> list[tuple[str, str]]:
    """``(cell_type, source)`` of every cell."""
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]


WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")


def words(text: str) -> int:
    """The number of words of ``text``, counted the stricter way (see the module docstring)."""
    return max(len(text.split()), len(WORD.findall(text)))


def is_glossary(source: str) -> bool:
    return source.startswith("### Glossary") or source.startswith("| English")


def form(path: pathlib.Path) -> dict:
    """What the limits are about, counted for one notebook."""
    all_cells = cells(path)
    markdown = [s for t, s in all_cells if t == "markdown"]
    code = [s for t, s in all_cells if t == "code"]
    first = next(s for s in code if not s.startswith("# On Colab only"))
    return {"cell words": max(words(s) for s in markdown),
            "headings": max(sum(bool(re.match(r"#{1,6} ", line)) for line in s.splitlines()) for s in markdown),
            "chapter words": sum(words(s) for s in markdown if not is_glossary(s)),
            "asserts": sum(bool(re.match(r"\s*assert\b", line)) for s in code for line in s.splitlines()),
            "first cell lines": len(first.splitlines()),
            "test mentions": sum(len(TEST_MENTION.findall(s)) for _, s in all_cells)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_keeps_the_form(path):
    got = form(path)
    limits = {"cell words": MAX_CELL_WORDS, "headings": MAX_HEADINGS, "chapter words": MAX_CHAPTER_WORDS,
              "asserts": MAX_ASSERTS, "first cell lines": MAX_FIRST_CELL_LINES, "test mentions": MAX_TEST_MENTIONS}
    over = {k: f"{got[k]} > {limit}" for k, limit in limits.items() if got[k] > limit}
    assert not over, f"{path.name} is over the course's limits: {over}"


def test_the_counts_see_what_they_count(tmp_path):
    """The counter itself: the glossary's words are aside from the chapter's (but a glossary cell
    is still a cell), assert lines inside a block count, the Colab cell is not the first cell."""
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# Chapter 0 — A title\n", "\n", "one two three"]},
        {"cell_type": "code", "source": ["# On Colab only: install\n", "import sys"]},
        {"cell_type": "code", "source": ["x = 1\n", "for i in range(3):\n", "    assert i < 3\n", "assert x\n"]},
        {"cell_type": "markdown", "source": ["### Glossary (词汇表)\n", "\n", "| English | 中文 | meaning |\n",
                                             "|---|---|---|\n", "| a | b | c d e |"]},
        {"cell_type": "markdown", "source": ["See tests/test_x.py and pytest."]},
    ]}
    path = tmp_path / "00_demo.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    got = form(path)
    # 9 words in the title cell (split), 7 in the last (tests/test_x.py is 3 runs of letters)
    assert got == {"cell words": 20, "headings": 1, "chapter words": 16, "asserts": 2, "first cell lines": 4,
                   "test mentions": 3}
    assert words("self-attention in d2l-zh, p = 0.5") == 8 and words("a — b") == 3


def section_three(cells_: list[dict]) -> int:
    """The index of the cell holding the heading of section 3 (``## 3. ...``)."""
    return next(i for i, c in enumerate(cells_) if c["cell_type"] == "markdown"
                and any(line.startswith("## 3.") for line in "".join(c["source"]).splitlines()))


def shows_a_picture(cell: dict) -> bool:
    """The chapter's widget, or a figure drawn by its widget module, in a code cell's outputs; or
    a picture of it attached to a markdown cell (a static picture from the notebook's own run)."""
    drawn = any("image/png" in o.get("data", {}) or "application/vnd.jupyter.widget-view+json" in o.get("data", {})
                for o in cell.get("outputs", []))
    return bool(cell.get("attachments")) or (drawn and "bertcourse.widgets" in "".join(cell["source"]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_chapter_shows_its_widget_or_a_picture_of_it_in_its_first_two_sections(path):
    # issue 43, "play early": the picture a chapter's widget draws comes before its third section
    cells_ = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert any(shows_a_picture(c) for c in cells_[:section_three(cells_)]), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_text_refers_to_pitfalls_by_name(path):
    """Issue 43, item 7: "(Pitfall 2)" makes the reader look the number up, and numbers move when a
    pitfall is added; the text says "the pitfall *name*" (the headings keep their numbers)."""
    markdown = "\n".join(s for t, s in cells(path) if t == "markdown")
    by_number = [line for line in markdown.splitlines()
                 if re.search(r"(?i)\bpitfalls? \d", line) and not re.match(r"#+ Pitfall \d+: ", line)]
    assert not by_number, by_number
