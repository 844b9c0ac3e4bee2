"""Where the course is published is said once: pyproject.toml's [tool.bertcourse] (repository,
ref). Every README badge, the book's address in the READMEs and every notebook's Colab install
cell must follow exactly that, and ``python tools/run_notebooks.py --links`` must rewrite them
all (and nothing else) when it changes.

``repository = "ORG/REPO"`` (tools/run_notebooks.py's ``UNSET``) means *unpublished*: no badge,
no book address and no install from GitHub; learners read how to run the course locally or
upload a chapter to Colab, and on Colab the install cell says why it cannot install. Both states
are tested here whatever the setting is now: the current one on the committed files, the other
on rewritten copies."""
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
LANG = {"README.md": "en", "README.zh-CN.md": "zh"}
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

COLAB = re.compile(r"https://colab\.research\.google\.com/github/([^/\s)]+/[^/\s)]+)/blob/([^/\s)]+)/([^\s)]+)")
BINDER = re.compile(r"https://mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)/([^?\s)]+)\?urlpath=lab/tree/([^\s)]+)")
INSTALL = re.compile(r"git\+https://github\.com/([^@\s\"]+)@([^\s\"]+)\"")
PLACEHOLDER = re.compile(r"ORG/REPO|ORG\.github\.io|github\.com/ORG\b")
FORK = ("someone/bert-fork", "v1.2")


def _setting() -> tuple[str | None, str]:
    """Read here, independently of tools/run_notebooks.py; None: unpublished."""
    setting = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["bertcourse"]
    repository = setting["repository"]
    return (None if repository == "ORG/REPO" else repository), setting["ref"]


def _links(text: str) -> tuple[list, list]:
    colab, binder = COLAB.findall(text), BINDER.findall(text)
    # every link of either site must be a badge link the patterns read (no other form slips by)
    assert len(colab) == text.count("colab.research.google.com/github/"), "a Colab link of another form"
    assert len(binder) == text.count("mybinder.org/v2/"), "a Binder link of another form"
    return colab, binder


def _edition(readme: str) -> str:
    return "notebooks/zh/" if readme == "README.zh-CN.md" else "notebooks/"


def _check_published(text: str, readme: str, repository: str, ref: str) -> None:
    """Every chapter has both badges, all naming ``repository``@``ref``, and the book's address."""
    colab, binder = _links(text)
    wanted = sorted(_edition(readme) + p.name for p in NOTEBOOKS)
    assert sorted(p for *_, p in colab) == wanted, f"{readme}: not one Colab badge per chapter"
    assert sorted(p for *_, p in binder) == wanted, f"{readme}: not one Binder badge per chapter"
    wrong = [f"{r}@{g} ({p})" for r, g, p in colab + binder if (r, g) != (repository, ref)]
    assert not wrong, (f"{readme}: badges that do not name [tool.bertcourse]'s {repository}@{ref} "
                       f"(run python tools/run_notebooks.py --links): {wrong}")
    owner, name = repository.split("/")
    assert f"https://{owner.lower()}.github.io/{name}/" in text, f"{readme}: no book address"
    assert not PLACEHOLDER.search(text), f"{readme}: a placeholder address"


def _check_unpublished(text: str, readme: str) -> None:
    """No badge, no book address, no placeholder; the way in says to install locally or upload."""
    colab, binder = _links(text)
    assert not colab and not binder, f"{readme}: badges while the course is unpublished"
    assert "github.io" not in text, f"{readme}: a book address while the course is unpublished"
    assert not PLACEHOLDER.search(text), f"{readme}: a placeholder address is shown to learners"
    assert "Upload notebook" in text and "%pip install '/content/" in text, \
        f"{readme}: say how to upload a chapter to Colab and install the course there"


def test_the_tool_reads_the_one_setting(run_notebooks):
    assert (run_notebooks.REPO, run_notebooks.REF) == _setting()


def test_the_placeholder_is_the_one_unset_value(run_notebooks, monkeypatch, tmp_path):
    for value, expected in (("ORG/REPO", None), ("someone/bert-fork", "someone/bert-fork")):
        (tmp_path / "pyproject.toml").write_text(f'[tool.bertcourse]\nrepository = "{value}"\nref = "main"\n')
        monkeypatch.setattr(run_notebooks, "ROOT", tmp_path)
        assert run_notebooks.publishing() == (expected, "main")
    for bad in ("", "ORG", "https://github.com/a/b"):
        (tmp_path / "pyproject.toml").write_text(f'[tool.bertcourse]\nrepository = "{bad}"\nref = "main"\n')
        with pytest.raises(ValueError, match="owner/name"):
            run_notebooks.publishing()


@pytest.mark.parametrize("readme", READMES, ids=[p.name for p in READMES])
def test_the_readme_follows_the_setting(readme, run_notebooks):
    repository, ref = _setting()
    text = readme.read_text(encoding="utf-8")
    for name in ("first-way-in", "book-address", "chapters"):
        assert f"<!-- begin {name} " in text and f"<!-- end {name} -->" in text, \
            f"{readme.name}: the {name} markers are missing (tools/run_notebooks.py writes between them)"
    assert run_notebooks.rewrite_links(text, repository, ref, LANG[readme.name]) == text, (
        f"{readme.name} is not what [tool.bertcourse] makes it: run python tools/run_notebooks.py --links")
    if repository is None:
        _check_unpublished(text, readme.name)
    else:
        _check_published(text, readme.name, repository, ref)


@pytest.mark.parametrize("readme", READMES, ids=[p.name for p in READMES])
def test_rewrite_links_both_ways(readme, run_notebooks):
    """Published: badges for every chapter and the book's address; unpublished: none of them; and
    rewriting back gives the README again (the table's other columns and the text outside the
    markers are kept)."""
    text, lang = readme.read_text(encoding="utf-8"), LANG[readme.name]
    published = run_notebooks.rewrite_links(text, *FORK, lang)
    _check_published(published, readme.name, *FORK)
    unpublished = run_notebooks.rewrite_links(published, None, "main", lang)
    _check_unpublished(unpublished, readme.name)
    assert run_notebooks.rewrite_links(unpublished, *FORK, lang) == published
    assert run_notebooks.rewrite_links(published, *FORK, lang) == published, "a second run changes nothing"
    assert run_notebooks.rewrite_links(unpublished, *_setting(), lang) == text, "rewriting back must give the README again"
    outside = lambda t: re.sub(r"<!-- begin ([\w-]+).*?<!-- end \1 -->", "", t, flags=re.DOTALL)  # noqa: E731
    assert outside(published) == outside(unpublished) == outside(text), "only the marked parts may change"
    rows = lambda t: [line.split("|")[1:4] for line in t.splitlines() if re.match(r"\| \d+ \|", line)]  # noqa: E731
    assert rows(published) == rows(unpublished) == rows(text) and len(rows(text)) == len(NOTEBOOKS)


def test_book_address_of_a_user_site(run_notebooks):
    assert run_notebooks.book_address("Someone/bert") == "https://someone.github.io/bert/"
    assert run_notebooks.book_address("someone/Someone.github.io") == "https://someone.github.io/"


def test_every_colab_cell_installs_from_the_setting(course_notebook):
    repository, ref = _setting()
    nb = nbformat.read(course_notebook, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    found = INSTALL.findall(first.source)
    expected = [] if repository is None else [(repository, ref)]
    assert found == expected, (
        f"{course_notebook.name}: the Colab cell installs from {found}, not [tool.bertcourse]'s "
        f"{repository}@{ref} (run python tools/run_notebooks.py --links)")
    assert not PLACEHOLDER.search(first.source), f"{course_notebook.name}: a placeholder address"


def test_readme_tells_whoever_publishes_a_fork_what_to_change():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = next((s for s in re.split(r"(?<=\.)\s", text) if "fork" in s), "")
    assert "[tool.bertcourse]" in text and "pyproject.toml" in text, "README: say where the setting is"
    assert "run_notebooks.py --links" in sentence, f"README: the fork sentence must say what to run: {sentence!r}"
    quick = text[text.index("\n## Quick start\n"):text.index("\n## ", text.index("\n## Quick start\n") + 1)]
    assert "fork" not in quick, "the quick start is for learners; publishing a fork belongs further down"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_links_option_rewrites_only_the_colab_cell(run_notebooks, tmp_path, monkeypatch, lang):
    """--links and --install-cells edit the cell's source in the notebook's JSON: outputs,
    execution counts, ids and every other cell stay byte-identical (no re-execution); both ways."""
    source = ROOT / "notebooks" / ("zh" if lang == "zh" else "") / "08_pretrained_bert.ipynb"
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    old = json.loads(source.read_text())
    index = next(i for i, c in enumerate(old["cells"]) if c["cell_type"] == "code")
    for repository, ref in (FORK, (None, "main"), _setting()):
        monkeypatch.setattr(run_notebooks, "REPO", repository)
        monkeypatch.setattr(run_notebooks, "REF", ref)
        changed = run_notebooks.rewrite_colab_cell(copy, lang)
        if repository == FORK[0]:
            assert changed is True
        new = json.loads(copy.read_text())
        cell = "".join(new["cells"][index]["source"])
        assert cell == run_notebooks.install_cell(source.name, lang)
        if repository:
            assert f"bertcourse[pretrained] @ git+https://github.com/{repository}@{ref}" in cell
        else:
            assert "git+https" not in cell and "not published" in cell
        if lang == "zh":
            assert cell.endswith('\nfrom bertcourse.i18n import set_language; set_language("zh")  # 中文版：练习反馈和控件标签用中文')
        new["cells"][index]["source"] = old["cells"][index]["source"]
        assert new == old, "only the Colab cell's source may change"
        assert run_notebooks.rewrite_colab_cell(copy, lang) is False, "a second run changes nothing"


def test_zh_install_cell_is_what_i18n_build_writes(run_notebooks):
    """The Chinese cell is the English one plus tools/i18n.py's language switch, as `build` makes it."""
    import i18n
    english = run_notebooks.install_cell("09_fine_tuning.ipynb", "en")
    assert run_notebooks.install_cell("09_fine_tuning.ipynb", "zh") == english.rstrip("\n") + "\n" + i18n.SWITCH_LINE


def test_install_cells_option_touches_only_notebooks(run_notebooks, tmp_path, monkeypatch):
    """``--install-cells`` rewrites the Colab cells of both editions and nothing else (no README)."""
    for lang, sub in (("en", ""), ("zh", "zh")):
        folder = tmp_path / "notebooks" / sub
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("01_self_attention.ipynb", "08_pretrained_bert.ipynb"):
            shutil.copy(ROOT / "notebooks" / sub / name, folder / name)
    monkeypatch.setattr(run_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(run_notebooks, "LANGUAGES", {"en": tmp_path / "notebooks", "zh": tmp_path / "notebooks" / "zh"})
    monkeypatch.setattr(run_notebooks, "REPO", FORK[0])
    monkeypatch.setattr(run_notebooks, "REF", FORK[1])
    (tmp_path / "README.md").write_text("untouched")
    run_notebooks.main(["--install-cells"])
    assert (tmp_path / "README.md").read_text() == "untouched"
    for path in sorted((tmp_path / "notebooks").rglob("*.ipynb")):
        lang = "zh" if path.parent.name == "zh" else "en"
        first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert first.source == run_notebooks.install_cell(path.name, lang), path
        assert f"{FORK[0]}@{FORK[1]}" in first.source
