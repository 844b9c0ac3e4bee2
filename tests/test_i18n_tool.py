"""The Chinese edition's one upkeep tool (tools/i18n.py): the chapters' catalogs (segmentation,
update, build, check) and the package's catalog (extraction, update, completeness).

The last test runs `check` on the repository itself: it is the gate that fails until every
chapter is translated, built and in step with its English notebook.
"""
from __future__ import annotations

import inspect
import pathlib
import re
import shutil
import subprocess
import sys
import types

import nbformat
import polib
import pytest

import i18n  # tools/i18n.py (conftest.py puts tools/ on the path)
from bertcourse import i18n as runtime  # the package's run-time side, which reads the package catalog
from bertcourse.exercises.core import message_of

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTER_1 = ROOT / "notebooks" / "01_self_attention.ipynb"

FENCED = "Before the code:\n\n```python\nx = 1\n\ny = 2\n```\n\nAfter."
MATH = "The formula\n\n$$\na = b\n\nc = d\n$$\n\nends here.\n"


def tiny_notebook(path: pathlib.Path) -> pathlib.Path:
    """A three-cell chapter: markdown (two paragraphs), code with an output, markdown."""
    nb = nbformat.v4.new_notebook()
    intro = nbformat.v4.new_markdown_cell("# Title\n\nFirst paragraph,\nover two lines.")
    code = nbformat.v4.new_code_cell("print(1 + 1)")
    code.outputs = [nbformat.v4.new_output("stream", text="2\n")]
    code.execution_count = 1
    outro = nbformat.v4.new_markdown_cell(MATH + "\nLast words.")
    for cell, cid in zip((intro, code, outro), ("aaaa0001", "aaaa0002", "aaaa0003")):
        cell.id = cid
    nb.cells = [intro, code, outro]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def translate_all(po_path: pathlib.Path, translate=lambda text: "中文：" + text) -> polib.POFile:
    po = polib.pofile(str(po_path), wrapwidth=0)
    for entry in po:
        entry.msgstr = translate(entry.msgid)
    po.save(str(po_path))
    return po


def translated_tiny_chapter(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The tiny chapter under ``tmp_path`` and its catalog, every paragraph translated
    (:func:`translate_all`'s "中文：" + the English)."""
    notebook = tiny_notebook(tmp_path / "notebooks" / "01_tiny.ipynb")
    po_path = i18n.catalog_path(notebook, tmp_path)
    i18n.update_catalog(notebook, po_path)
    translate_all(po_path)
    return notebook, po_path


@pytest.fixture
def no_package_problems(monkeypatch):
    """The package catalog's problems stood in for: none, unless a test sets ``.problems``."""
    stub = types.SimpleNamespace(problems=[])
    monkeypatch.setattr(i18n, "package_catalog_problems", lambda *args, **kwargs: list(stub.problems))
    return stub


# --- segmentation -------------------------------------------------------------------------

def test_segments_join_back_to_the_source_in_every_chapter():
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                assert "".join(text for text, _ in i18n.segments(cell.source)) == cell.source, path


def test_blank_lines_inside_fences_and_display_math_do_not_split():
    assert [t for t, p in i18n.segments(FENCED) if p] == [
        "Before the code:", "```python\nx = 1\n\ny = 2\n```", "After."]
    assert [t for t, p in i18n.segments(MATH) if p] == [
        "The formula", "$$\na = b\n\nc = d\n$$", "ends here."]


def test_display_math_alone_needs_no_translation():
    assert not i18n.needs_translation("$$\na = b\n$$")
    assert i18n.needs_translation("The formula $a = b$ says so.")


# --- update ------------------------------------------------------------------------------

def test_update_marks_changed_paragraphs_fuzzy_and_new_ones_untranslated(tmp_path):
    notebook = tmp_path / "notebooks" / CHAPTER_1.name
    notebook.parent.mkdir()
    shutil.copy(CHAPTER_1, notebook)
    po_path = i18n.catalog_path(notebook, tmp_path)
    i18n.update_catalog(notebook, po_path)
    translate_all(po_path)

    nb = nbformat.read(str(notebook), as_version=4)
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    first = i18n.paragraphs(nb)[1][2]                 # the first paragraph after the title
    markdown[0].source = markdown[0].source.replace(first, first + " (edited)") + "\n\nA new paragraph."
    # the last cell of several paragraphs (the glossary's last cells are one table each)
    last = next(c for c in reversed(markdown) if sum(p for _, p in i18n.segments(c.source)) > 1)
    vanished = last.source
    last.source = "Nothing left of the old text."
    nbformat.write(nb, str(notebook))
    po = i18n.update_catalog(notebook, po_path)

    edited = po.find(first + " (edited)", msgctxt=markdown[0].id)
    assert "fuzzy" in edited.flags and edited.previous_msgid == first
    assert edited.msgstr == "中文：" + first            # the old translation, to review
    new = po.find("A new paragraph.", msgctxt=markdown[0].id)
    assert new.msgstr == "" and "fuzzy" not in new.flags
    # the last cell's paragraphs: the first one is paired with the new text, the others obsolete
    obsolete = [e for e in po if e.obsolete]
    assert obsolete and all(e.msgctxt == last.id for e in obsolete)
    assert all(e.msgid in vanished for e in obsolete)
    assert po.find(first, msgctxt=markdown[0].id) is None
    # update is idempotent
    before = po_path.read_text()
    i18n.update_catalog(notebook, po_path)
    assert po_path.read_text() == before


def replace_last_paragraph(notebook, new: str) -> None:
    """Edit the tiny notebook's English: cell 2's last paragraph becomes ``new``."""
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[2].source = nb.cells[2].source.rsplit("\n\n", 1)[0] + "\n\n" + new
    nbformat.write(nb, str(notebook))


def test_update_keeps_a_translation_through_two_edits_with_the_first_english(tmp_path):
    notebook, po_path = translated_tiny_chapter(tmp_path)
    for new in ("Last words!", "Last words!!"):
        replace_last_paragraph(notebook, new)
        po = i18n.update_catalog(notebook, po_path)
    entry = po.find("Last words!!", msgctxt="aaaa0003")
    assert "fuzzy" in entry.flags and entry.previous_msgid == "Last words."
    assert entry.msgstr == "中文：Last words."


def test_a_paragraph_moved_to_a_new_cell_keeps_its_translation_fuzzy(tmp_path):
    notebook, po_path = translated_tiny_chapter(tmp_path)
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[0].id = "bbbb0001"                       # the cell was recreated
    nbformat.write(nb, str(notebook))
    po = i18n.update_catalog(notebook, po_path)
    entry = po.find("# Title", msgctxt="bbbb0001")
    assert entry.msgstr == "中文：# Title" and "fuzzy" in entry.flags
    assert entry.previous_msgctxt == "aaaa0001"


# --- build -------------------------------------------------------------------------------

def test_build_replaces_each_paragraph_and_keeps_the_rest(tmp_path):
    notebook, po_path = translated_tiny_chapter(tmp_path)
    zh = i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, tmp_path))
    assert zh.cells[0].source == "中文：# Title\n\n中文：First paragraph,\nover two lines."
    assert zh.cells[2].source == ("中文：The formula\n\n$$\na = b\n\nc = d\n$$\n\n中文：ends here.\n"
                                  "\n中文：Last words.")
    # a fresh build has no outputs yet: they come from executing the Chinese notebook
    assert zh.cells[1].outputs == [] and zh.cells[1].execution_count is None


def test_build_with_the_english_as_translation_gives_the_english_back(tmp_path):
    notebook = tmp_path / "notebooks" / CHAPTER_1.name
    notebook.parent.mkdir()
    shutil.copy(CHAPTER_1, notebook)
    po_path = i18n.catalog_path(notebook, tmp_path)
    i18n.update_catalog(notebook, po_path)
    translate_all(po_path, translate=lambda text: text)
    english = nbformat.read(str(notebook), as_version=4)
    zh = i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, tmp_path))
    assert [c.source for c in zh.cells if c.cell_type == "markdown"] == \
           [c.source for c in english.cells if c.cell_type == "markdown"]


def test_untranslated_and_fuzzy_paragraphs_are_built_in_english(tmp_path):
    notebook = tiny_notebook(tmp_path / "notebooks" / "01_tiny.ipynb")
    po_path = i18n.catalog_path(notebook, tmp_path)
    po = i18n.update_catalog(notebook, po_path)
    po.find("# Title", msgctxt="aaaa0001").msgstr = "# 标题"
    fuzzy = po.find("Last words.", msgctxt="aaaa0003")
    fuzzy.msgstr, fuzzy.flags = "最后", ["fuzzy"]
    po.save(str(po_path))
    zh = i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, tmp_path))
    assert zh.cells[0].source == "# 标题\n\nFirst paragraph,\nover two lines."
    assert zh.cells[2].source.endswith("\n\nLast words.")


def test_code_cells_equal_the_english_but_for_the_switch_line_and_keep_outputs(tmp_path):
    notebook = tiny_notebook(tmp_path / "notebooks" / "01_tiny.ipynb")
    po_path = i18n.catalog_path(notebook, tmp_path)
    i18n.update_catalog(notebook, po_path)
    out = i18n.zh_path(notebook, tmp_path)
    zh = i18n.build_notebook(notebook, po_path, out)
    assert zh.cells[1].source == "print(1 + 1)\n" + i18n.SWITCH_LINE
    # outputs of the executed Chinese notebook survive a rebuild while the code is unchanged
    zh.cells[1].outputs = [nbformat.v4.new_output("stream", text="2\n")]
    zh.cells[1].execution_count = 1
    nbformat.write(zh, str(out))
    again = i18n.build_notebook(notebook, po_path, out)
    assert again.cells[1].outputs[0]["text"] == "2\n" and again.cells[1].execution_count == 1
    # ... and are dropped when the English code changes
    english = nbformat.read(str(notebook), as_version=4)
    english.cells[1].source = "print(2 + 2)"
    nbformat.write(english, str(notebook))
    changed = i18n.build_notebook(notebook, po_path, out)
    assert changed.cells[1].outputs == [] and changed.cells[1].execution_count is None


# --- check -------------------------------------------------------------------------------

def complete_fixture(root: pathlib.Path) -> pathlib.Path:
    notebook = tiny_notebook(root / "notebooks" / "01_tiny.ipynb")
    po_path = i18n.catalog_path(notebook, root)
    i18n.update_catalog(notebook, po_path)
    translate_all(po_path, translate=lambda text: "这是一段完整的中文翻译。")
    i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, root))
    return notebook


def test_check_passes_on_a_complete_fixture(tmp_path, no_package_problems):
    complete_fixture(tmp_path)
    assert i18n.check(tmp_path) == []


def test_check_names_a_stale_entry_after_an_english_edit(tmp_path, no_package_problems):
    notebook = complete_fixture(tmp_path)
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("First paragraph", "The first paragraph")
    nbformat.write(nb, str(notebook))
    problems = i18n.check(tmp_path)
    assert any("locale/zh/01_tiny.po: msgctxt aaaa0001: 'The first paragraph, over two lines.': "
               "no entry" in p for p in problems), problems
    assert any("'First paragraph, over two lines.': stale" in p for p in problems), problems
    assert any(p.startswith("notebooks/zh/01_tiny.ipynb: cell 0 ") for p in problems), problems
    i18n.update_catalog(notebook, i18n.catalog_path(notebook, tmp_path))
    assert any("'The first paragraph, over two lines.': fuzzy" in p for p in i18n.check(tmp_path))


def test_check_names_untranslated_entries_and_too_little_chinese(tmp_path, no_package_problems):
    notebook = complete_fixture(tmp_path)
    po_path = i18n.catalog_path(notebook, tmp_path)
    po = translate_all(po_path, translate=lambda text: text)      # "translated" as the English
    po.find("# Title", msgctxt="aaaa0001").msgstr = ""
    po.save(str(po_path))
    i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, tmp_path))
    problems = i18n.check(tmp_path)
    assert "locale/zh/01_tiny.po: msgctxt aaaa0001: '# Title': untranslated" in problems
    assert any(p.startswith("notebooks/zh/01_tiny.ipynb: 0% of the prose letters are Chinese")
               for p in problems), problems


def test_check_reports_the_package_catalog(tmp_path, no_package_problems):
    complete_fixture(tmp_path)
    no_package_problems.problems = ["msgid 'Correct!': untranslated"]
    assert i18n.check(tmp_path) == ["package catalog: msgid 'Correct!': untranslated"]


def test_check_fails_when_the_package_catalog_cannot_be_read(tmp_path, monkeypatch):
    complete_fixture(tmp_path)
    monkeypatch.setattr(i18n, "package_catalog_path", lambda root=i18n.ROOT: tmp_path / "gone.po")
    (problem,) = i18n.check(tmp_path)
    assert problem.startswith("package catalog cannot be read")


def test_the_command_line_exits_1_naming_the_problems(tmp_path, monkeypatch, capsys, no_package_problems):
    complete_fixture(tmp_path)
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    assert i18n.main(["check"]) == 0
    (tmp_path / "notebooks" / "zh" / "01_tiny.ipynb").unlink()
    assert i18n.main(["check"]) == 1
    assert "notebooks/zh/01_tiny.ipynb: missing" in capsys.readouterr().out


def test_the_command_line_without_its_requirements_says_so_in_one_line():
    # a Python without nbformat (not the course's environment): exit code 2 and what to do, no traceback
    run = ("import runpy, sys; sys.modules['nbformat'] = None; sys.argv = ['tools/i18n.py', 'check']; "
           f"runpy.run_path({str(i18n.ROOT / 'tools' / 'i18n.py')!r}, run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == "", result
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "nbformat is not installed" in result.stderr and "pip install -r requirements.txt" in result.stderr


# --- the package's catalog --------------------------------------------------------------

def test_every_wrapped_string_has_a_finished_translation():
    assert i18n.package_catalog_problems() == []


def test_extraction_finds_marked_strings_and_diagnosis_docstrings():
    messages = i18n.extract_messages()
    from bertcourse.exercises import ch01
    assert message_of(ch01._weights_no_scale) in messages            # a diagnosis's docstring
    assert "Q1 (scaled dot-product attention weights)" in messages   # an N_() mark
    assert "sentence A" in messages                                  # a widget's _() call
    assert any(p.startswith("bertcourse/widgets/bert_input.py:") for p in messages["sentence A"])
    # helpers' docstrings are not learner-facing: only functions listed in *_DIAGNOSES are taken
    assert inspect.getdoc(ch01._visible) not in messages


def test_extraction_reads_tr_in_the_english_notebooks_code(tmp_path):
    (tmp_path / "bertcourse").mkdir()
    (tmp_path / "bertcourse" / "m.py").write_text('from .i18n import gettext as _\nX = _("from the package")\n')
    cells = [nbformat.v4.new_markdown_cell('tr("in markdown, not code")'),
             nbformat.v4.new_code_cell('%matplotlib inline\n!ls\nlabel = "x"\nprint(tr("{n} steps").format(n=3))\n'
                                       'print(f"{tr(\'accuracy\')}: 1")\ntr(label)  # not a literal: not taken'),
             nbformat.v4.new_code_cell('print(tr("{n} steps").format(n=4))\n'
                                       'tr_table(t.round(2), "layer", name, "gap")  # the literal labels only')]
    for folder in ("notebooks", "notebooks/zh"):                   # the Chinese edition is not read
        (tmp_path / folder).mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = cells if folder == "notebooks" else [nbformat.v4.new_code_cell('tr("only in zh")')]
        nbformat.write(nb, str(tmp_path / folder / "01_x.ipynb"))
    assert i18n.notebook_messages(tmp_path / "notebooks") == [
        ("{n} steps", "notebooks/01_x.ipynb:1"), ("accuracy", "notebooks/01_x.ipynb:1"),
        ("{n} steps", "notebooks/01_x.ipynb:2"), ("layer", "notebooks/01_x.ipynb:2"),
        ("gap", "notebooks/01_x.ipynb:2")]
    assert i18n.extract_messages(tmp_path / "bertcourse") == {
        "from the package": ["bertcourse/m.py:2"], "{n} steps": ["notebooks/01_x.ipynb:1", "notebooks/01_x.ipynb:2"],
        "accuracy": ["notebooks/01_x.ipynb:1"], "layer": ["notebooks/01_x.ipynb:2"],
        "gap": ["notebooks/01_x.ipynb:2"]}
    nb = nbformat.read(str(tmp_path / "notebooks" / "01_x.ipynb"), as_version=4)
    nb.cells[2].source = 'print(tr("unclosed")'
    nbformat.write(nb, str(tmp_path / "notebooks" / "01_x.ipynb"))
    with pytest.raises(SyntaxError, match=r"notebooks/01_x.ipynb, cell 2: "):
        i18n.notebook_messages(tmp_path / "notebooks")


def test_catalog_problems_names_missing_fuzzy_untranslated_and_stale_entries(tmp_path):
    path = tmp_path / "bertcourse.po"
    shutil.copy(i18n.package_catalog_path(), path)
    catalog = polib.pofile(str(path))
    missing, fuzzy, empty = catalog[0], catalog[1], catalog[2]
    catalog.remove(missing)
    fuzzy.flags.append("fuzzy")
    empty.msgstr = ""
    catalog.append(polib.POEntry(msgid="a string no code uses any more", msgstr="没人用的字符串"))
    catalog.save()
    problems = "\n".join(i18n.package_catalog_problems(path))
    assert f"missing from the catalog: {missing.msgid[:70]!r}" in problems
    assert f"fuzzy (the English changed; check the translation): {fuzzy.msgid[:70]!r}" in problems
    assert f"untranslated: {empty.msgid[:70]!r}" in problems
    assert "stale" in problems and "a string no code uses any more" in problems
    assert "run `python tools/i18n.py update package`" in problems    # the command that retires it
    assert len(i18n.package_catalog_problems(path)) == 4


def test_update_adds_new_strings_untranslated_and_retires_old_ones(tmp_path):
    path = tmp_path / "bertcourse.po"
    shutil.copy(i18n.package_catalog_path(), path)
    catalog = polib.pofile(str(path))
    gone = catalog[5]
    catalog.remove(gone)
    catalog.append(polib.POEntry(msgid="an old string", msgstr="旧字符串"))
    catalog.save()
    assert i18n.update_package_catalog(path) == (1, 1)
    catalog = polib.pofile(str(path))
    assert catalog.find(gone.msgid).msgstr == ""                    # back, to be translated
    assert catalog.find("an old string", include_obsolete_entries=True).obsolete
    problems = i18n.package_catalog_problems(path)
    assert problems == [f"untranslated: {gone.msgid[:70]!r} ({gone.occurrences[0][0]}:{gone.occurrences[0][1]})"]


def test_the_tool_keeps_the_catalog_that_the_package_reads():
    kept = polib.pofile(str(i18n.package_catalog_path()))
    read = runtime._read_catalog()
    assert [(e.msgid, e.msgstr, e.obsolete) for e in kept] == [(e.msgid, e.msgstr, e.obsolete) for e in read]


def test_the_command_line_updates_the_package_catalog(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "bertcourse", tmp_path / "bertcourse", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "notebooks").mkdir()                 # the notebooks' tr() labels are in the catalog too
    for notebook in i18n.english_notebooks(ROOT):
        shutil.copy(notebook, tmp_path / "notebooks")
    path = i18n.package_catalog_path(tmp_path)
    catalog = polib.pofile(str(path))
    catalog.remove(catalog[3])
    catalog.save()
    monkeypatch.setattr(i18n, "ROOT", tmp_path)
    assert i18n.main(["update", "package"]) == 0
    assert capsys.readouterr().out == "bertcourse/locale/zh/LC_MESSAGES/bertcourse.po: 1 new (untranslated), 0 made obsolete\n"
    assert len(i18n.package_catalog_problems(path, tmp_path / "bertcourse")) == 1
    with pytest.raises(SystemExit):                  # the package's catalog is updated alone
        i18n.main(["update", "01", "package"])


# --- the measure of Chinese ----------------------------------------------------------------

def test_chinese_share_counts_letters_of_prose_only():
    assert i18n.chinese_share("注意力 attention") == pytest.approx(3 / 12)
    # code, math, link targets and URLs are not prose
    assert i18n.chinese_share("注意力 `masked_softmax` $QK^\\top$ [图](https://x.org/a) "
                              "```\ncode\n```") == 1.0
    assert i18n.chinese_share("1 + 2 = 3") == 0.0


def test_a_translated_chapter_is_mostly_chinese_with_code_cells_as_in_english():
    english = nbformat.read(str(CHAPTER_1), as_version=4)
    zh = nbformat.read(str(ROOT / "notebooks" / "zh" / CHAPTER_1.name), as_version=4)
    assert i18n.chinese_share(i18n.markdown_of(zh)) >= i18n.MIN_CHINESE_SHARE
    assert [c.id for c in zh.cells] == [c.id for c in english.cells]
    codes = [(e.source, z.source) for e, z in zip(english.cells, zh.cells) if e.cell_type == "code"]
    assert codes[0][1].endswith("\n" + i18n.SWITCH_LINE)
    # the code is the English code token for token; only the comments differ
    assert i18n.code_tokens(codes[0][1].removesuffix("\n" + i18n.SWITCH_LINE)) == i18n.code_tokens(codes[0][0])
    assert all(i18n.code_tokens(e) == i18n.code_tokens(z) for e, z in codes[1:])
    assert sum(e != z for e, z in codes) > len(codes) / 2            # most cells have Chinese comments


def is_prose(comment: str) -> bool:
    """A comment line in words (two words in a row outside parentheses), not a shape such as
    ``(batch, seq, d)`` or a signature ``Q: (batch, d) -> (batch, keys)``, which stay as they are."""
    return bool(re.search(r"[A-Za-z]{2,} [A-Za-z]{2,}", re.sub(r"\([^()]*\)", "", comment)))


def comment_share(english, zh) -> tuple[int, int]:
    """``(Chinese, all)``: of the English edition's comment lines in words (:func:`is_prose`), how
    many are Chinese at the same place (row and column of the ``#``) of the Chinese edition's cell."""
    chinese = total = 0
    for e, z in zip(english.cells, zh.cells):
        if e.cell_type != "code":
            continue
        zh_lines = z.source.splitlines()
        for block in i18n.comment_blocks(e.source):
            for (row, col), line in zip(block.places, block.lines):
                if not is_prose(line):
                    continue
                total += 1
                chinese += bool(re.search(r"[\u4e00-\u9fff]", zh_lines[row - 1][col:]))
    return chinese, total


def test_nine_in_ten_comment_lines_of_every_chinese_notebook_are_chinese():
    shares = {}
    for english in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        zh = nbformat.read(str(ROOT / "notebooks" / "zh" / english.name), as_version=4)
        chinese, total = comment_share(nbformat.read(str(english), as_version=4), zh)
        shares[english.name[:2]] = (chinese, total)
        assert total and chinese >= 0.9 * total, (english.name, chinese, total)
    assert sum(t for _, t in shares.values()) > 300, shares           # the chapters' ~360 comment lines in words


def test_no_english_words_in_the_formulas_of_the_chinese_edition():
    count = 0
    for path in sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        formulas = [m for cell in nb.cells if cell.cell_type == "markdown"
                    for m in re.findall(r"\$\$.*?\$\$", cell.source, flags=re.DOTALL)]
        count += len(formulas)
        assert not [(f[:60], i18n.english_in_math(f)) for f in formulas if i18n.english_in_math(f)], path.name
    assert count > 20                                                     # the check saw the formulas


# --- code comments and formulas (issue 44) ---------------------------------------------------

CODE = ('x = 1  # the first value\n# two lines\n# of comment\nif x:\n    # inside\n'
        '    y = "# not a comment"  # NBVAL_IGNORE_OUTPUT\n# ---\n')


def test_comment_blocks_group_whole_line_comments_and_skip_markers_and_strings():
    blocks = i18n.comment_blocks(CODE)
    assert [b.lines for b in blocks] == [["the first value"], ["two lines", "of comment"], ["inside"]]
    assert [b.places for b in blocks] == [[(1, 7)], [(2, 0), (3, 0)], [(5, 4)]]
    assert i18n.comment_blocks('s = """never closed  # not a comment') == []    # not Python: left alone


def test_translate_code_replaces_comments_line_for_line_and_keeps_the_code():
    table = {"the first value": "第一个值", "two lines\nof comment": "两行\n注释", "inside": "里面"}
    zh = i18n.translate_code(CODE, table)
    assert zh.splitlines()[:5] == ["x = 1  # 第一个值", "# 两行", "# 注释", "if x:", "    # 里面"]
    assert "# NBVAL_IGNORE_OUTPUT" in zh and zh.endswith("# ---\n")
    assert i18n.code_tokens(zh) == i18n.code_tokens(CODE) and i18n.code_tokens(CODE) != i18n.code_tokens("x = 2\n")
    assert i18n.code_tokens("# a new comment line\n" + CODE) == i18n.code_tokens(CODE)   # a comment added: same code
    with pytest.raises(ValueError, match=r"x.po: the translation of the comment 'two lines of comment' has 1 line\(s\), the English 2"):
        i18n.translate_code(CODE, {"two lines\nof comment": "两行注释"}, where="x.po")


def test_a_formula_gets_an_entry_when_its_text_has_english_words():
    assert i18n.english_in_math(r"$$\text{score}(a) = \frac{\text{freq}(a)}{\text{MLM}}\,\text{logits}$$") == \
        ["score", "freq"]                                       # capitals and the kept terms stay
    assert i18n.needs_translation(r"$$P_{i+k} = P_i M_k \quad \text{for every position } i.$$")
    assert not i18n.needs_translation(r"$$\mathcal L_{\text{MLM}} = -\log p$$")


def test_build_keeps_the_outputs_of_a_cell_whose_comments_alone_changed(tmp_path):
    root = tmp_path
    (root / "notebooks" / "zh").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title", id="m1"),
                nbformat.v4.new_code_cell("x = 1  # the value\nprint(x)", id="c1")]
    english = root / "notebooks" / "01_tiny.ipynb"
    nbformat.write(nb, str(english))
    po = i18n.catalog_path(english, root)
    catalog = i18n.update_catalog(english, po)
    assert [(e.msgctxt, e.msgid) for e in catalog] == [("m1", "# Title"), ("c1", "the value")]
    out = i18n.zh_path(english, root)
    zh = i18n.build_notebook(english, po, out)
    zh.cells[1].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    zh.cells[1].execution_count = 1
    nbformat.write(zh, str(out))
    for entry in catalog:
        entry.msgstr = "# 标题" if entry.msgid == "# Title" else "这个值"
    catalog.save(str(po))
    again = i18n.build_notebook(english, po, out)
    assert again.cells[1].source.startswith("x = 1  # 这个值\nprint(x)")
    assert again.cells[1].outputs[0]["text"] == "1\n" and again.cells[1].execution_count == 1


# --- one term per concept, one number format (issue 44) --------------------------------------

def write_terms(root: pathlib.Path, *rows: str) -> None:
    (root / "locale" / "zh").mkdir(parents=True, exist_ok=True)
    (root / i18n.TERMS).write_text("# english\tchinese\tvariant\n" + "\n".join(rows) + "\n", encoding="utf-8")


def write_catalog(path: pathlib.Path, *pairs: tuple[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    po = polib.POFile()
    for english, chinese in pairs:
        po.append(polib.POEntry(msgid=english, msgstr=chinese))
    po.save(str(path))


def test_style_problems_name_the_variant_the_term_and_the_file(tmp_path):
    write_terms(tmp_path, "nat\t纳特\t奈特", "piece\t子词\t片段\t(?i)segment")
    write_catalog(tmp_path / "locale" / "zh" / "01_tiny.po",
                  ("in nats", "单位是奈特"),                         # the variant: a problem
                  ("Segment 0 covers [CLS]", "片段0包括[CLS]"),       # allowed: the English says segment
                  ("a piece", "一个片段"),                           # the same word for a piece: a problem
                  ("the code `x = 奈特`", "代码`x = 奈特`"))           # inside code: not prose
    write_catalog(i18n.package_catalog_path(tmp_path), ("BERT-base has 110M parameters and needs 86 MB",
                                                         "BERT-base有110M个参数，需要86 MB"))
    problems = i18n.style_problems(tmp_path)
    assert problems == [
        "locale/zh/01_tiny.po: 'in nats': '奈特' for nat: write 纳特 (locale/zh/terms.tsv)",
        "locale/zh/01_tiny.po: 'a piece': '片段' for piece: write 子词 (locale/zh/terms.tsv)",
        "bertcourse/locale/zh/LC_MESSAGES/bertcourse.po: 'BERT-base has 110M parameters and needs 86 MB': "
        "'110M': write counts with 万 or 亿 (e.g. 1.1亿, 2,270万)"]      # 86 MB is a unit, not a count
    assert problems[0] in i18n.check(tmp_path)


@pytest.mark.parametrize("text, counts", [("1.1亿个参数，2,270万个", []), ("110M个参数", ["110M"]),
                                          ("50K个子词", ["50K"]), ("302.0 M次运算", ["302.0 M"]),
                                          ("约196k", ["196k"]), ("86 MB、2 GB", []), ("BERT-base", []),
                                          ("来自Flickr30k数据集", []), ("1.1M和Flickr8k", ["1.1M"])])
def test_english_count_suffixes_are_found_and_units_are_not(text, counts):
    assert [m.group(0) for m in i18n.ENGLISH_COUNT.finditer(text)] == counts


@pytest.mark.parametrize("row", ["nat\t纳特", "nat\t纳特\t奈特\tx\ty", "nat\t纳特\t(奈特"])
def test_a_bad_term_table_line_is_a_named_error(tmp_path, row):
    write_terms(tmp_path, row)
    with pytest.raises(ValueError, match=r"terms.tsv line 2"):
        i18n.read_terms(tmp_path / i18n.TERMS)


def test_the_term_table_covers_the_terms_the_chinese_reader_found_named_two_ways():
    # Issue 44's list: piece/segment, nat, all-reduce, standard error, the exercise titles'
    # MLM, NSP and 输出头, example/instance.
    english = {term.english.split(" (")[0] for term in i18n.read_terms(ROOT / i18n.TERMS)}
    assert {"nat", "all-reduce", "standard error", "piece", "segment", "MLM", "NSP", "head",
            "example", "instance"} <= english


# --- the gate ------------------------------------------------------------------------------

def test_the_chinese_edition_is_complete_and_in_step():
    problems = i18n.check(ROOT)
    assert not problems, f"{len(problems)} problem(s), e.g.:\n" + "\n".join(problems[:40])


# --- the Chinese README --------------------------------------------------------------------

BADGE_LINK = re.compile(r"https://(?:colab\.research\.google\.com|mybinder\.org)/[^\s)]+")


def test_the_chinese_readme_has_the_english_badges_opening_the_chinese_notebooks():
    """Same repository, reference and chapters as README.md's badges, under notebooks/zh/."""
    english = BADGE_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    chinese = BADGE_LINK.findall((ROOT / "README.zh-CN.md").read_text(encoding="utf-8"))
    notebook_links = [u for u in english if "notebooks/" in u]
    import tomllib
    setting = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    published = setting["repository"] != "ORG/REPO"      # unpublished (the placeholder): no badges at all
    assert len(notebook_links) == 2 * len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))) * published
    assert sorted(u.replace("notebooks/", "notebooks/zh/") for u in notebook_links) == \
           sorted(u for u in chinese if "notebooks/" in u)


def test_the_readmes_link_each_other():
    assert "(README.zh-CN.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(README.md)" in (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def test_a_reviewed_entry_forgets_the_old_english(tmp_path):
    """Once the translator removes `#, fuzzy`, the next edit compares with the reviewed English."""
    notebook, po_path = translated_tiny_chapter(tmp_path)
    for new in ("Last words!", "Last words!!"):
        replace_last_paragraph(notebook, new)
        po = i18n.update_catalog(notebook, po_path)
        entry = po.find(new, msgctxt="aaaa0003")
        entry.flags.remove("fuzzy")                       # reviewed, #| msgid left in place
        po.save(str(po_path))
    po = i18n.update_catalog(notebook, po_path)
    assert po.find("Last words!!", msgctxt="aaaa0003").previous_msgid is None
    replace_last_paragraph(notebook, "Final words.")             # it was "Last words!!"
    entry = i18n.update_catalog(notebook, po_path).find("Final words.", msgctxt="aaaa0003")
    assert entry.previous_msgid == "Last words!!" and "fuzzy" in entry.flags


# --- the Chinese notebooks' outputs --------------------------------------------------------

CJK = re.compile(r"[\u4e00-\u9fff]")
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))


def printed_text(cell) -> str:
    """What a code cell shows as text: streams, text/plain results and errors."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        else:
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


@pytest.mark.parametrize("zh_notebook", ZH_NOTEBOOKS, ids=[p.name for p in ZH_NOTEBOOKS])
def test_a_chinese_notebook_is_executed_and_prints_what_the_english_one_prints(zh_notebook):
    """Committed executed (nbval needs outputs to compare), and a cell that prints no Chinese
    prints exactly what the English notebook's cell prints: the code is the same."""
    english = {c.id: c for c in nbformat.read(str(ROOT / "notebooks" / zh_notebook.name),
                                              as_version=4).cells}
    zh = nbformat.read(str(zh_notebook), as_version=4)
    code = [c for c in zh.cells if c.cell_type == "code"]
    unexecuted = [c.id for c in code if c.execution_count is None]
    assert not unexecuted, (f"{zh_notebook.name}: cells {unexecuted} were never run: "
                            f"python tools/run_notebooks.py --lang zh {zh_notebook.name[:2]}")
    differ = [c.id for c in code
              if c.id in english and "NBVAL_IGNORE_OUTPUT" not in c.source
              and not CJK.search(printed_text(c)) and printed_text(c) != printed_text(english[c.id])]
    assert not differ, f"{zh_notebook.name}: cells {differ} print what the English cells do not"


# --- renaming a chapter --------------------------------------------------------------------

def test_rename_keeps_every_translation(tmp_path, no_package_problems):
    notebook, po_path = translated_tiny_chapter(tmp_path)
    i18n.build_notebook(notebook, po_path, i18n.zh_path(notebook, tmp_path))
    before = nbformat.read(str(i18n.zh_path(notebook, tmp_path)), as_version=4)
    problems = i18n.check(tmp_path)      # only the tiny translation's low share of Chinese letters
    assert problems and all("prose letters are Chinese" in p for p in problems)
    written = i18n.rename_chapter("01_tiny", "03_tiny", tmp_path)
    renamed = tmp_path / "notebooks" / "03_tiny.ipynb"
    assert written == [renamed, i18n.zh_path(renamed, tmp_path), i18n.catalog_path(renamed, tmp_path)]
    assert not notebook.exists() and not po_path.exists()
    assert i18n.check(tmp_path) == [p.replace("01_tiny", "03_tiny") for p in problems]   # nothing untranslated
    po = polib.pofile(str(i18n.catalog_path(renamed, tmp_path)))
    assert {where for e in po for where, _line in e.occurrences} == {"notebooks/03_tiny.ipynb"}
    assert all(e.msgstr.startswith("中文：") for e in po)
    after = nbformat.read(str(i18n.zh_path(renamed, tmp_path)), as_version=4)
    assert [c.source for c in after.cells] == [c.source for c in before.cells]


@pytest.mark.parametrize("old, new, error, words", [
    ("01_tiny", "3_tiny", ValueError, "new must be a chapter's notebook name"),
    ("01_tiny", "01_tiny", ValueError, "must differ"),
    ("02_gone", "03_tiny", FileNotFoundError, "old: no English notebook"),
    ("01_tiny", "01_tiny_again", None, None),
])
def test_rename_refuses_what_it_cannot_do(tmp_path, old, new, error, words):
    translated_tiny_chapter(tmp_path)
    if error is None:                     # a free name is fine; then the same name again is taken
        i18n.rename_chapter(old, new, tmp_path)
        tiny_notebook(tmp_path / "notebooks" / "01_tiny.ipynb")
        with pytest.raises(ValueError, match="already exists"):
            i18n.rename_chapter("01_tiny", new, tmp_path)
        return
    with pytest.raises(error, match=words):
        i18n.rename_chapter(old, new, tmp_path)


def test_rename_on_the_command_line_names_a_wrong_call_without_a_traceback():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "i18n.py"), "rename", "10_scaling_up"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "rename needs OLD and NEW" in result.stderr
    assert "Traceback" not in result.stderr
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "i18n.py"), "rename", "10_scaling_up", "x"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "new must be a chapter's notebook name" in result.stderr


def test_mentions_lists_the_files_that_still_name_a_chapter(tmp_path):
    (tmp_path / "a.py").write_text("from bertcourse.exercises.ch10 import q1\n")
    (tmp_path / "b.md").write_text("see notebooks/10_scaling_up.ipynb\n")
    (tmp_path / "c.md").write_text("nothing here\n")
    (tmp_path / "d.ipynb").write_text("ch10 10_scaling_up\n")      # notebooks are renamed, not listed
    assert i18n.mentions("ch10", tmp_path) == ["a.py"]
    assert i18n.mentions("10_scaling_up", tmp_path) == ["b.md"]


# --- the chapters' static previews -------------------------------------------------------------

def _preview_notebook(figure: str | None):
    """A notebook whose first cell previews the figure its second cell draws (``figure``: the
    drawn PNG's data; None: not executed yet)."""
    nb = nbformat.v4.new_notebook()
    preview = nbformat.v4.new_markdown_cell("![the figure](attachment:preview.png)", id="m1")
    preview.attachments = {"preview.png": {"image/png": "OLD"}}
    preview.metadata[i18n.PREVIEWS] = {"preview.png": "c1"}
    code = nbformat.v4.new_code_cell("fig", id="c1")
    if figure is not None:
        code.outputs = [nbformat.v4.new_output("stream", text="a line first\n"),
                        nbformat.v4.new_output("display_data", data={"image/png": figure, "text/plain": "<Figure>"})]
    nb.cells = [preview, code]
    return nb


def test_a_preview_becomes_the_figure_of_this_run():
    """A chapter's preview is the figure its own code draws later: after a run (English or
    Chinese, tools/run_notebooks.py; build for the Chinese one) it is that run's figure."""
    nb = _preview_notebook("NEW")
    assert i18n.refresh_previews(nb) == ["preview.png"]
    assert nb.cells[0].attachments["preview.png"] == {"image/png": "NEW"}
    assert i18n.refresh_previews(nb) == []                         # nothing left to change
    unexecuted = _preview_notebook(None)
    assert i18n.refresh_previews(unexecuted) == [] and unexecuted.cells[0].attachments["preview.png"]["image/png"] == "OLD"
    wrong = _preview_notebook("NEW")
    wrong.cells[0].metadata[i18n.PREVIEWS] = {"other.png": "c1"}
    with pytest.raises(ValueError, match=r"cell m1: metadata 'previews' names 'other.png', which is not one of its"):
        i18n.refresh_previews(wrong)


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                         + sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")),
                         ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_preview_is_its_notebooks_own_figure(path):
    """The committed previews are the committed run's figures: the Chinese edition's carry its
    Chinese labels (issue 44), and none is left from an older run."""
    nb = nbformat.read(str(path), as_version=4)
    assert i18n.refresh_previews(nb) == [], f"{path.name}: run tools/run_notebooks.py (or i18n.py build for zh)"
