"""Where the course is published is said once: pyproject.toml's [tool.bertcourse] (repository,
ref). Every README badge and every notebook's Colab install cell must name exactly that, and
``python tools/run_notebooks.py --links`` must rewrite them all (and nothing else) when it
changes."""
from __future__ import annotations

import json
import pathlib
import re
import shutil
import tomllib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
READMES = [p for p in (ROOT / "README.md", ROOT / "README.zh-CN.md") if p.exists()]

COLAB = re.compile(r"https://colab\.research\.google\.com/github/([^/\s)]+/[^/\s)]+)/blob/([^/\s)]+)/([^\s)]+)")
BINDER = re.compile(r"https://mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)/([^?\s)]+)\?urlpath=lab/tree/([^\s)]+)")
INSTALL = re.compile(r"git\+https://github\.com/([^@\s\"]+)@([^\s\"]+)\"")


def _setting() -> tuple[str, str]:
    """Read here, independently of tools/run_notebooks.py."""
    setting = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    return setting["repository"], setting["ref"]


def test_the_tool_reads_the_one_setting(run_notebooks):
    assert (run_notebooks.REPO, run_notebooks.REF) == _setting()


@pytest.mark.parametrize("readme", READMES, ids=[p.name for p in READMES])
def test_every_badge_names_the_setting(readme):
    repository, ref = _setting()
    text = readme.read_text(encoding="utf-8")
    colab, binder = COLAB.findall(text), BINDER.findall(text)
    assert colab and binder, f"{readme.name} has no Colab or no Binder badge"
    # every link of either site must be a badge link the patterns read (no other form slips by)
    assert len(colab) == text.count("colab.research.google.com/github/"), f"{readme.name}: a Colab link of another form"
    assert len(binder) == text.count("mybinder.org/v2/"), f"{readme.name}: a Binder link of another form"
    wrong = [f"Colab {r}@{g} ({path})" for r, g, path in colab if (r, g) != (repository, ref)]
    wrong += [f"Binder {r}@{g} ({path})" for r, g, path in binder if (r, g) != (repository, ref)]
    assert not wrong, (f"{readme.name}: badges that do not name [tool.bertcourse]'s {repository}@{ref} "
                       f"(run python tools/run_notebooks.py --links): {wrong}")


def test_every_colab_cell_installs_from_the_setting(course_notebook):
    repository, ref = _setting()
    nb = nbformat.read(course_notebook, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    found = INSTALL.findall(first.source)
    assert found == [(repository, ref)], (
        f"{course_notebook.name}: the Colab cell installs from {found}, not [tool.bertcourse]'s "
        f"{repository}@{ref} (run python tools/run_notebooks.py --links)")


def test_readme_tells_whoever_publishes_a_fork_what_to_change():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = next((s for s in re.split(r"(?<=\.)\s", text) if "fork" in s), "")
    assert "[tool.bertcourse]" in text and "pyproject.toml" in text, "README: say where the setting is"
    assert "run_notebooks.py --links" in sentence, f"README: the fork sentence must say what to run: {sentence!r}"


def test_rewrite_links_moves_every_badge_and_keeps_what_they_open(run_notebooks):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    moved = run_notebooks.rewrite_links(text, "someone/bert-fork", "v1.2")
    before = [path for *_, path in COLAB.findall(text)] + [path for *_, path in BINDER.findall(text)]
    after_colab, after_binder = COLAB.findall(moved), BINDER.findall(moved)
    assert {(r, g) for r, g, _ in after_colab + after_binder} == {("someone/bert-fork", "v1.2")}
    assert [p for *_, p in after_colab] + [p for *_, p in after_binder] == before, "the badges must open the same notebooks"
    assert run_notebooks.rewrite_links(moved, *_setting()) == text, "rewriting back must give the README again"


def test_links_option_rewrites_only_the_colab_cell(run_notebooks, tmp_path, monkeypatch):
    """--links edits the cell's source in the notebook's JSON: outputs, execution counts, ids
    and every other cell stay byte-identical (no re-execution)."""
    source = ROOT / "notebooks" / "08_pretrained_bert.ipynb"
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    monkeypatch.setattr(run_notebooks, "REPO", "someone/bert-fork")
    monkeypatch.setattr(run_notebooks, "REF", "v1.2")
    assert run_notebooks.rewrite_colab_cell(copy) is True
    old, new = json.loads(source.read_text()), json.loads(copy.read_text())
    index = next(i for i, c in enumerate(old["cells"]) if c["cell_type"] == "code")
    assert "bertcourse[pretrained] @ git+https://github.com/someone/bert-fork@v1.2" in "".join(new["cells"][index]["source"])
    new["cells"][index]["source"] = old["cells"][index]["source"]
    assert new == old, "only the Colab cell's source may change"
    assert run_notebooks.rewrite_colab_cell(copy) is False, "a second run changes nothing"
