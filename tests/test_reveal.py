"""Guess, then see (bertcourse.exercises.reveal): a prediction's measurement stays folded until
the learner has made a guess, in the kernel and in every committed notebook."""
import importlib
import json
import pathlib
import pkgutil
import re

import pandas as pd
import pytest
from matplotlib.figure import Figure

import bertcourse.exercises
from bertcourse.exercises import Exercise
from bertcourse.i18n import set_language

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.ipynb"))


def guess_exercise() -> Exercise:
    def check(answer):
        return "you said {:g}".format(answer)
    return Exercise(name="Q9 (predict: a number)", var="prediction", checker=check, hints=["h"], solution="x = 1")


def test_folded_until_a_guess_then_open(capsys):
    ex = guess_exercise()
    shown = ex.reveal("the answer is 0.19")
    folded = shown._repr_mimebundle_()
    assert folded["text/html"].startswith("<details><summary>") and "0.19" in folded["text/html"]
    assert "0.19" not in folded["text/plain"] and "`prediction`" in folded["text/plain"]
    ex.check(...)                                   # the starter placeholder is not a guess
    assert shown._repr_mimebundle_() == folded
    ex.check(0.7)                                   # a guess, right or wrong, opens it
    opened = shown._repr_mimebundle_()
    assert opened["text/plain"] == "the answer is 0.19" and "<details>" not in opened["text/html"]
    assert repr(shown) == "the answer is 0.19"


def test_parts_text_table_and_figure():
    ex = guess_exercise()
    ex.check(1.0)
    table = pd.DataFrame({"share": [0.552]})
    html = ex.reveal("a <b> line", table, Figure(figsize=(1, 1)))._repr_mimebundle_()["text/html"]
    assert "<pre>a &lt;b&gt; line</pre>" in html            # text is escaped, not markup
    assert table._repr_html_() in html and '<img src="data:image/png;base64,' in html


@pytest.mark.parametrize("parts, words", [((), "at least one part"), ((3,), "part 0 is a int"),
                                          (("ok", object()), "part 1 is a object")])
def test_wrong_parts_are_named(parts, words):
    with pytest.raises(TypeError, match=words):
        guess_exercise().reveal(*parts)


def test_the_folded_text_speaks_chinese():
    shown = guess_exercise().reveal("0.19")
    set_language("zh")
    try:
        bundle = shown._repr_mimebundle_()
    finally:
        set_language("en")
    assert re.search(r"[\u4e00-\u9fff]", bundle["text/plain"]) and "`prediction`" in bundle["text/plain"]
    assert re.search(r"<summary>[^<]*[\u4e00-\u9fff]", bundle["text/html"])


def prediction_exercises() -> dict:
    """``{(chapter, variable name): exercise}`` for every "predict, then run" question."""
    found = {}
    for info in pkgutil.iter_modules(bertcourse.exercises.__path__):
        if re.fullmatch(r"ch\d\d", info.name):
            module = importlib.import_module(f"bertcourse.exercises.{info.name}")
            for name, value in vars(module).items():
                if isinstance(value, Exercise) and "(predict:" in value.name:
                    found[info.name[2:], name] = value
    return found


def test_every_chapter_with_a_prediction_is_found():
    chapters = {chapter for chapter, _name in prediction_exercises()}
    assert {"01", "05", "09"} <= chapters, chapters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_committed_notebook_shows_a_prediction_before_the_guess(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    for (chapter, name), _ex in prediction_exercises().items():
        if not path.name.startswith(chapter):
            continue
        checks = [i for i, c in enumerate(code) if re.search(rf"^{name}\.check\(\)", "".join(c["source"]), re.M)]
        assert len(checks) == 1, f"{name}.check() should be in one cell of {path.name}"
        reveal = code[checks[0] + 1]
        assert f"{name}.reveal(" in "".join(reveal["source"]), f"the cell after {name}.check() must show its measurement with {name}.reveal(...)"
        shown = [o for o in reveal["outputs"] if o["output_type"] == "execute_result"]
        assert len(shown) == 1, f"{path.name}: {name}.reveal(...) must be the cell's last expression"
        html = "".join(shown[0]["data"]["text/html"])
        assert html.startswith("<details><summary>"), f"{path.name}: {name}'s measurement is committed unfolded"
        printed = "".join("".join(o.get("text", "")) for o in reveal["outputs"] if o["output_type"] == "stream")
        assert not printed, f"{path.name}: the cell after {name}.check() prints beside its folded measurement: {printed[:200]}"
