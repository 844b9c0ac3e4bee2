"""The package speaks Chinese on request (bertcourse.i18n, the learner's run-time side): the
switch, reading the catalog, exercise feedback and widget labels in both languages. The
catalog's upkeep (extraction, update, completeness) is tools/i18n.py's: tests/test_i18n_tool.py."""
from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import re

import matplotlib
import polib
import pytest

matplotlib.use("Agg")

from bertcourse import i18n  # noqa: E402
from bertcourse.exercises.core import message_of  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]

CHAPTERS = sorted(p.stem for p in (pathlib.Path(__file__).resolve().parents[1] / "bertcourse" / "exercises").glob("ch[0-9][0-9].py"))


@pytest.fixture(autouse=True)
def english_afterwards():
    """Every test starts and ends in English, whatever it switches to."""
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def cjk_share(text: str) -> float:
    """The share of Chinese characters among the letters of ``text``."""
    letters = [c for c in text if c.isalpha()]
    return sum("\u4e00" <= c <= "\u9fff" for c in letters) / max(1, len(letters))


# --- the switch --------------------------------------------------------------------------------

def test_english_is_the_default_and_set_language_switches():
    assert i18n.get_language() == "en"
    i18n.set_language("zh")
    assert i18n.get_language() == "zh"
    assert i18n.gettext("sentence A") == "句子A"
    i18n.set_language("en")
    assert i18n.gettext("sentence A") == "sentence A"


@pytest.mark.parametrize("bad, error", [("fr", ValueError), ("ZH", ValueError), ("", ValueError),
                                        (None, TypeError), (1, TypeError), (["zh"], TypeError)])
def test_set_language_refuses_other_values(bad, error):
    with pytest.raises(error) as e:
        i18n.set_language(bad)
    message = str(e.value)
    assert "lang" in message and "'en'" in message and "'zh'" in message and repr(bad)[:10] in message
    assert i18n.get_language() == "en"          # a refused value changes nothing


def test_the_language_reaches_the_programs_a_kernel_starts():
    """set_language exports BERTCOURSE_LANG; a new process (a command a notebook runs) starts in
    that language; a value that is no language is said, and English spoken."""
    import os
    import subprocess
    import sys
    i18n.set_language("zh")
    assert os.environ[i18n.LANGUAGE_VARIABLE] == "zh"
    ask = [sys.executable, "-c", "from bertcourse import i18n; print(i18n.get_language(), i18n.gettext('sentence A'))"]
    started = subprocess.run(ask, capture_output=True, text=True, check=True)
    assert started.stdout.split() == ["zh", "句子A"]
    i18n.set_language("en")
    assert os.environ[i18n.LANGUAGE_VARIABLE] == "en"
    wrong = subprocess.run(ask, capture_output=True, text=True, check=True,
                           env={**os.environ, i18n.LANGUAGE_VARIABLE: "fr"})
    assert wrong.stdout.split() == ["en", "sentence", "A"]
    assert "BERTCOURSE_LANG must be one of ['en', 'zh'], got 'fr': speaking English" in wrong.stderr


def test_gettext_refuses_a_non_string():
    with pytest.raises(TypeError, match="msgid"):
        i18n.gettext(3)
    with pytest.raises(TypeError, match="^tr: msgid must be a str, got int 3"):
        i18n.tr(3)


def test_the_notebooks_labels_speak_the_language_asked_for():
    """`tr` is the notebooks' gettext: every label their code wraps is English by default and
    the catalog's Chinese after the switch (tools/i18n.py puts each into the package catalog)."""
    import i18n as tool            # tools/i18n.py (conftest.py puts tools/ on the path)
    labels = [msgid for msgid, _where in tool.notebook_messages(ROOT / "notebooks")]
    assert len(labels) >= 100, len(labels)                  # every chapter prints some
    assert [i18n.tr(m) for m in labels] == labels
    i18n.set_language("zh")
    chinese = {m: i18n.tr(m) for m in labels}
    assert not [m for m, text in chinese.items() if text == m], "untranslated"
    # each speaks Chinese, but for the few that hold only a formula or an identifier and its colon
    assert sum(cjk_share(text) == 0 for text in chinese.values()) <= len(chinese) // 100
    fields = re.compile(r"{([^{}:!]*)[^{}]*}")          # a placeholder's name (a translation may pad otherwise)
    assert all(sorted(fields.findall(m)) == sorted(fields.findall(text))     # in any order
               for m, text in chinese.items() if "\\" not in m)        # TeX's braces are no placeholders


def test_chinese_labels_pad_by_display_width():
    """A Chinese letter takes two columns: what `tr` returns in Chinese pads by columns, so that
    `f"{label:12s}"` lines up; in English it is the plain str it always was."""
    assert type(i18n.tr("accuracy")) is str
    assert (i18n.display_width("词元 ab"), i18n.display_width("，："), i18n.display_width("")) == (7, 4, 0)
    i18n.set_language("zh")
    label = i18n.tr("accuracy")
    assert isinstance(label, i18n.Text) and label == "准确率" and i18n.display_width(label) == 6
    assert [f"[{label:8s}]", f"[{label:>8}]", f"[{label:*^9}]", f"[{label:4}]"] == \
        ["[准确率  ]", "[  准确率]", "[*准确率**]", "[准确率]"]
    assert "{x:7s}|{y:.2}".format(x=label, y=label) == "准确率 |准确"     # str's precision, then width
    assert f"{label!r}" == "'准确率'" and type(label + "!") is str        # otherwise a str
    assert f"{i18n.Text('ab'):4s}|" == f"{'ab':4s}|"                      # ASCII: as str pads


def test_pandas_counts_chinese_letters_as_two_columns_in_chinese_only():
    import pandas as pd
    i18n.set_language("zh")
    assert pd.get_option("display.unicode.east_asian_width") is True
    table = pd.DataFrame({i18n.tr("accuracy"): [0.5]}, index=["ab"]).to_string().splitlines()
    assert [i18n.display_width(line) for line in table] == [len(table[1])] * 2      # the header lines up
    i18n.set_language("en")
    assert pd.get_option("display.unicode.east_asian_width") is False


def test_tr_table_shows_a_tables_labels_in_the_learners_language():
    import pandas as pd
    table = pd.DataFrame({"accuracy": [0.5, 0.7], "pairs": [3, 4]},
                         index=pd.Index(["B follows A", "B opens a paragraph"], name="what could give B away"))
    assert i18n.tr_table(table, "accuracy", "B follows A").equals(table)          # English: as it was
    i18n.set_language("zh")
    shown = i18n.tr_table(table, "accuracy", "B follows A", "what could give B away")
    assert list(shown.columns) == ["准确率", "pairs"] and list(shown.index) == ["B紧跟在A之后", "B opens a paragraph"]
    assert shown.index.name == "什么可能暴露B" and list(table.columns) == ["accuracy", "pairs"]   # a copy
    levels = table.set_index("pairs", append=True)["accuracy"]                    # a Series on two levels
    assert list(i18n.tr_table(levels, "B follows A").index.get_level_values(0))[0] == "B紧跟在A之后"
    with pytest.raises(ValueError, match=r"tr_table: the label 'acuracy' is not a column, an index entry"):
        i18n.tr_table(table, "acuracy")                   # a typo would otherwise stay English, silently
    with pytest.raises(TypeError, match="tr_table: each label must be a str, got int 3"):
        i18n.tr_table(table, 3)
    with pytest.raises(TypeError, match="tr_table: table must be a pandas DataFrame or Series, got dict"):
        i18n.tr_table({"accuracy": 1}, "accuracy")


def test_placeholders_are_kept_and_filled_after_translating():
    i18n.set_language("zh")
    text = i18n.gettext("correct on all {n} cases ({cases})")
    assert "{n}" in text and "{cases}" in text
    assert text.format(n=3, cases="a") == "3个测试用例全部正确（a）"


def test_the_runtime_module_imports_only_the_standard_library_and_polib():
    """Every layer imports bertcourse.i18n: it needs no torch and nothing of the package. Only
    the function that gives matplotlib the Chinese font imports matplotlib, and only the Chinese
    switch and `tr_table` import pandas, when they run
    (tests/test_fonts.py checks that importing the module and speaking English import none)."""
    tree = ast.parse(pathlib.Path(i18n.__file__).read_text(encoding="utf-8"))

    def imports(nodes):
        imported = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"bertcourse.i18n imports from the package: {ast.dump(node)}"
                imported.add(node.module)
        return imported

    at_the_top = imports(tree.body)
    anywhere = imports(ast.walk(tree))
    assert at_the_top <= {"__future__", "contextlib", "dataclasses", "functools", "importlib.resources", "polib",
                          "os", "re", "unicodedata", "warnings"}, at_the_top
    assert anywhere - at_the_top <= {"matplotlib.font_manager", "pandas"}, anywhere - at_the_top


# --- reading the catalog ------------------------------------------------------------------------

def test_a_fuzzy_translation_is_not_used(monkeypatch):
    catalog = polib.POFile()
    catalog.append(polib.POEntry(msgid="head", msgstr="头"))
    catalog.append(polib.POEntry(msgid="layer", msgstr="层", flags=["fuzzy"]))
    monkeypatch.setattr(i18n, "_read_catalog", lambda path=None: catalog)
    i18n._translations.cache_clear()
    try:
        i18n.set_language("zh")
        assert (i18n.gettext("head"), i18n.gettext("layer"), i18n.gettext("unknown")) == ("头", "layer", "unknown")
    finally:
        i18n._translations.cache_clear()


# --- exercise feedback --------------------------------------------------------------------------

def _mistake_answer(chapter: str):
    """A chapter's exercise, a wrong answer for it and the English messages of its list of
    mistakes. The wrong answer is the first diagnosis of a ``Q<k>_DIAGNOSES`` list that is a
    plain function (a docstring diagnosis, or the ``wrong`` of a ``(wrong, message)`` pair):
    it makes exactly that mistake."""
    module = importlib.import_module(f"bertcourse.exercises.{chapter}")
    for k in range(1, 6):
        mistakes = []
        for d in getattr(module, f"Q{k}_DIAGNOSES", []):
            if inspect.isfunction(d) and d.__doc__:
                mistakes.append((d, message_of(d)))
            elif isinstance(d, tuple) and inspect.isfunction(d[0]) and isinstance(d[1], str):
                mistakes.append(d)
        if mistakes:
            return getattr(module, f"q{k}"), mistakes[0][0], [message for _, message in mistakes]
    raise AssertionError(f"{chapter} has no diagnosis that a wrong answer can reproduce")


# chapters whose only exercise is a prediction: no code to diagnose (tests/test_exercises_chNN.py
# checks that their feedback speaks Chinese)
PREDICTION_ONLY = {"ch13"}


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c not in PREDICTION_ONLY])
def test_a_diagnosed_mistake_is_explained_in_the_language_asked_for(chapter, capsys):
    exercise, wrong, messages = _mistake_answer(chapter)
    english = exercise.check(wrong)
    assert english.status == "fail"
    named = [m for m in messages if m in english.message]
    assert named, english.message                    # the English feedback names the mistake
    assert cjk_share(str(english)) == 0
    assert str(english).startswith(f"[FAIL] {exercise.name}: ")

    i18n.set_language("zh")
    chinese = exercise.check(wrong)
    assert chinese.status == "fail"
    why = i18n.gettext(named[0])                     # the catalog's translation of the diagnosis
    assert why != named[0] and cjk_share(why) > 0.3    # code and identifiers stay as they are
    assert why in chinese.message and named[0] not in chinese.message
    assert cjk_share(str(chinese)) >= 0.5, str(chinese)
    assert str(chinese).startswith(f"[未通过] {i18n.gettext(exercise.name)}：")
    hint = exercise.hint()                           # hints name code, so no share is asked of them
    assert hint == f"提示1/{len(exercise.hints)}：" + i18n.gettext(exercise.hints[0]).format(**exercise.fields or {})
    assert i18n.gettext(exercise.hints[0]) != exercise.hints[0]

    i18n.set_language("en")                          # back in English: exactly the English again
    assert exercise.check(wrong).message == english.message
    capsys.readouterr()


def test_a_prediction_is_answered_in_chinese(capsys):
    from bertcourse.exercises.ch02 import q5
    i18n.set_language("zh")
    result = q5.check({"first": 6, "mean": 6})        # too many for both readouts
    assert result.status == "fail" and cjk_share(result.message) >= 0.5, result.message
    assert "太多了" in result.message
    printed = capsys.readouterr().out
    assert printed.strip() == str(result)


def test_not_attempted_and_solution_speak_chinese(capsys):
    from bertcourse.exercises.ch01 import q1
    i18n.set_language("zh")
    result = q1.check(None)
    assert result.status == "not attempted" and "尚未作答" in str(result) and "占位符" in result.message
    solution = q1.solution()
    assert "每一行之和为1" in solution                    # the comment is Chinese
    assert "return torch.softmax(scores, dim=-1)" in solution   # the code is not translated
    capsys.readouterr()


# --- widgets ------------------------------------------------------------------------------------

def test_a_widget_built_after_the_switch_has_chinese_labels():
    from bertcourse.widgets.positional import PositionalEncodingExplorer
    english = PositionalEncodingExplorer()
    assert [c.description for c in english.controls] == ["model width d", "position", "dimensions"]
    i18n.set_language("zh")
    chinese = PositionalEncodingExplorer()
    assert [c.description for c in chinese.controls] == ["模型宽度d", "位置", "维度"]
    assert [c.description for c in english.controls] == ["model width d", "position", "dimensions"]


def test_widget_messages_and_figure_text_are_chinese():
    from bertcourse.widgets.attention import AttentionExplorer
    i18n.set_language("zh")
    explorer = AttentionExplorer()
    assert [explorer.sentence.description, explorer.query.description] == ["句子", "查询"]
    assert cjk_share(explorer.state["message"]) >= 0.5, explorer.state["message"]
    # titles and axis labels speak Chinese (the tick labels are the sentence's tokens), drawn with
    # the font set_language("zh") registers (tests/test_fonts.py checks its glyphs)
    labels = [t for ax in explorer.figure.axes for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) if t]
    assert labels and all(cjk_share(t) > 0 for t in labels), labels
    explorer.text.value = ""                                        # the message drawn in the figure
    assert "至少输入一个词" in explorer.state["message"]
    drawn = [t.get_text() for ax in explorer.figure.axes for t in ax.texts]
    assert len(drawn) == 1 and cjk_share(drawn[0]) >= 0.5, drawn
    assert drawn == [i18n.gettext("Type at least one word in the text box (it is empty now).")]


def test_the_chinese_edition_never_says_qing_or_nin():
    # CONTRIBUTING.md's style rule (d2l-zh's): 你 and 我们, never the polite 请 ("please") or
    # 您; 请求 ("request", as in 拉取请求, a pull request) is a word of its own.
    polite = re.compile(r"请(?!求)|您")
    catalogs = [ROOT / "bertcourse" / "locale" / "zh" / "LC_MESSAGES" / "bertcourse.po",
                *sorted((ROOT / "locale" / "zh").glob("*.po"))]
    found = [(path.name, entry.msgstr[:60]) for path in catalogs for entry in polib.pofile(str(path))
             if not entry.obsolete and polite.search(entry.msgstr)]
    assert len(catalogs) > 10 and not found, found
