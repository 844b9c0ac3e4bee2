"""Every chapter ends with a glossary (词汇表), and GLOSSARY.md is generated from the glossary
cells, so the two cannot drift apart. The chapter's Chinese summary is the Chinese edition's 小结
(the translation of the English "Summary"), not a second summary in the English notebook.

To change a term: edit the chapter's glossary cell, then run `python tools/make_glossary.py`.
"""
from __future__ import annotations

import importlib
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def make_glossary():
    """tools/make_glossary.py as a module (conftest.py puts tools/ on the path)."""
    return importlib.import_module("make_glossary")


def test_every_chapter_has_a_glossary(course_notebook, make_glossary):
    rows = make_glossary.read_glossary(course_notebook)
    assert rows is not None, (
        f"{course_notebook.name} has no glossary: add a markdown cell that starts with the line "
        f"{make_glossary.GLOSSARY_HEADING!r} and holds a table {make_glossary.TABLE_HEADER!r}")
    assert len(rows) >= 8, f"{course_notebook.name}: only {len(rows)} glossary terms"
    english = [en for en, _, _ in rows]
    assert len(set(english)) == len(english), f"{course_notebook.name}: a term is listed twice"
    assert sum(bool(CJK.search(zh)) for _, zh, _ in rows) >= len(rows) - 2, \
        f"{course_notebook.name}: the second column must hold the Chinese terms"
    if any(make_glossary.DAGGER in zh for _, zh, _ in rows):
        text = make_glossary.section(nbformat.read(course_notebook, as_version=4),
                                     make_glossary.GLOSSARY_HEADING)
        assert "† not a d2l-zh term" in text, f"{course_notebook.name}: explain the † under the table"


# The Chinese summary the English notebooks used to end with; it moved into the Chinese edition.
OLD_SUMMARY_HEADING = "### 本章小结"
# The heading of the Chinese edition's summary: "## 小结" or, in numbered chapters, "## 10. 小结".
ZH_SUMMARY_HEADING = re.compile(r"#{2,3} (?:\d+\. )?小结")


def test_the_english_chapter_carries_no_chinese_summary(course_notebook):
    nb = nbformat.read(course_notebook, as_version=4)
    found = [cell.id for cell in nb.cells if cell.cell_type == "markdown"
             and any(line.strip() == OLD_SUMMARY_HEADING for line in cell.source.splitlines())]
    assert not found, (f"{course_notebook.name}: cell(s) {found} hold a {OLD_SUMMARY_HEADING!r}; the "
                       f"Chinese summary is the Chinese edition's 小结 (translate the English Summary)")


def test_every_chinese_chapter_has_a_summary(zh_course_notebook):
    nb = nbformat.read(zh_course_notebook, as_version=4)
    bodies = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            if ZH_SUMMARY_HEADING.fullmatch(line.strip()):
                body = []
                for rest in lines[i + 1:]:
                    if re.match(r"#{1,3} ", rest):
                        break
                    body.append(rest)
                bodies.append(body)
    assert len(bodies) == 1, f"zh/{zh_course_notebook.name}: {len(bodies)} sections headed 小结, expected 1"
    bullets = [line for line in bodies[0] if line.startswith("* ")]
    assert len(bullets) >= 3 and all(CJK.search(b) for b in bullets), \
        f"zh/{zh_course_notebook.name}: the 小结 needs at least 3 bullet points in Chinese"


def test_glossary_md_is_what_make_glossary_writes(make_glossary):
    text = (ROOT / "GLOSSARY.md").read_text(encoding="utf-8")
    assert text == make_glossary.render(NOTEBOOKS), \
        "GLOSSARY.md is out of date: run `python tools/make_glossary.py`"


def _sections(text: str) -> dict[str, str]:
    """GLOSSARY.md's chapter sections: title -> text (the index at the end is left out)."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.splitlines()[0].strip(): p for p in parts if not p.startswith("All terms")}


def test_glossary_md_has_every_chapter_term_with_the_same_chinese_and_no_other(make_glossary):
    # an independent reading of GLOSSARY.md, not a call to render()
    sections = _sections((ROOT / "GLOSSARY.md").read_text(encoding="utf-8"))
    expected = {}
    for path in NOTEBOOKS:
        rows = make_glossary.read_glossary(path)
        if rows is not None:
            title = make_glossary.chapter_title(nbformat.read(path, as_version=4), path)
            expected[title] = {(en, zh) for en, zh, _ in rows}
    assert set(sections) == set(expected), "GLOSSARY.md's chapters differ from the notebooks'"
    for title, terms in expected.items():
        in_file = {(en, zh) for en, zh, _ in make_glossary.parse_table(sections[title], title)}
        assert in_file == terms, (f"{title}: only in the notebook {sorted(terms - in_file)}, "
                                  f"only in GLOSSARY.md {sorted(in_file - terms)}")


def test_the_chinese_glossary_is_what_make_glossary_writes_and_the_chinese_readme_links_it(make_glossary):
    zh = make_glossary.CHINESE
    text = (ROOT / zh.target).read_text(encoding="utf-8")
    assert text == make_glossary.render(make_glossary.notebooks(zh), zh), \
        f"{zh.target} is out of date: run `python tools/make_glossary.py`"
    # every chapter's 词汇表, with the English term and Chinese term of the English glossary
    # and a Chinese meaning (an independent reading of the two files)
    english = _sections((ROOT / "GLOSSARY.md").read_text(encoding="utf-8"))
    chinese = [p for p in re.split(r"^## ", text, flags=re.M)[1:] if not p.startswith("全部术语")]
    assert len(chinese) == len(english)
    for en_part, zh_part in zip(english.values(), chinese):
        en_rows = make_glossary.parse_table(en_part, "GLOSSARY.md")
        zh_rows = make_glossary.parse_table(zh_part, zh.target, header=zh.header)
        assert [(en, term) for en, term, _ in zh_rows] == [(en, term) for en, term, _ in en_rows]
        assert all(CJK.search(meaning) or "$" in meaning for _, _, meaning in zh_rows)
    assert "(GLOSSARY.zh-CN.md)" in (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "(GLOSSARY.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_term_has_one_chinese_rendering_in_all_chapters(make_glossary):
    renderings: dict[str, dict[str, list[str]]] = {}
    for path in NOTEBOOKS:
        for en, zh, _ in make_glossary.read_glossary(path) or []:
            renderings.setdefault(en, {}).setdefault(zh, []).append(path.name[:2])
    conflicts = {en: zh for en, zh in renderings.items() if len(zh) > 1}
    assert not conflicts, f"one English term, several Chinese terms (chapters in brackets): {conflicts}"


@pytest.mark.parametrize("row", ["| a | b |", "| a |  | c |", "| a | b | c | d |"])
def test_a_malformed_row_is_an_error_that_names_the_notebook(make_glossary, row):
    text = f"{make_glossary.GLOSSARY_HEADING}\n\n{make_glossary.TABLE_HEADER}\n|---|---|---|\n{row}\n"
    with pytest.raises(ValueError, match=r"99_x\.ipynb: a glossary row needs 3 non-empty cells"):
        make_glossary.parse_table(text, where="99_x.ipynb")


def test_a_glossary_may_go_on_in_the_next_cells(make_glossary):
    """One markdown cell holds at most 250 words, so a long glossary is several tables with the
    same header, in consecutive cells; the next heading or code cell ends it."""
    header = make_glossary.TABLE_HEADER
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"{make_glossary.GLOSSARY_HEADING}\n\n{header}\n|---|---|---|\n"
                                              "| attention | 注意力 | weights |"),
                nbformat.v4.new_markdown_cell(f"{header}\n|---|---|---|\n| query | 查询 | what looks |\n\n"
                                              "† not a d2l-zh term: the usual rendering."),
                nbformat.v4.new_markdown_cell(f"## Next\n\n{header}\n|---|---|---|\n| key | 键 | not read |")]
    text = make_glossary.section(nb, make_glossary.GLOSSARY_HEADING)
    assert [en for en, _, _ in make_glossary.parse_table(text)] == ["attention", "query"]
    assert "† not a d2l-zh term" in text
    nb.cells.insert(1, nbformat.v4.new_code_cell("x = 1"))          # a code cell ends it too
    text = make_glossary.section(nb, make_glossary.GLOSSARY_HEADING)
    assert [en for en, _, _ in make_glossary.parse_table(text)] == ["attention"]
