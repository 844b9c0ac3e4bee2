"""The Chinese plot font (bertcourse/fonts, issue 44): the subset covers the catalogs, set_language("zh")
registers it with matplotlib as a fallback after the plot's own font, so a Chinese title, axis
labels and legend draw without a missing glyph while Latin text is drawn exactly as before, and
the font ships with its licence under a name of its own (tools/make_font_subset.py makes it)."""
from __future__ import annotations

import importlib.resources
import logging
import pathlib
import subprocess
import sys
import tomllib
import warnings

import matplotlib
import numpy as np
import polib
import pytest
from fontTools.ttLib import TTFont
from matplotlib import font_manager, ft2font
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import make_font_subset  # tools/make_font_subset.py (conftest.py puts tools/ on the path)
from bertcourse import i18n

ROOT = pathlib.Path(__file__).resolve().parents[1]
FONTS = importlib.resources.files("bertcourse").joinpath("fonts")
REBUILD = "python tools/make_font_subset.py noto_cjk_sans_otc-0.0.1-py3-none-any.whl"
DEJAVU = pathlib.Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
PLAIN = {"font.family": ["sans-serif"], "font.sans-serif": matplotlib.rcParamsDefault["font.sans-serif"]}


@pytest.fixture(autouse=True)
def matplotlib_settings_and_english_afterwards():
    """Every test leaves matplotlib's settings and the language as it found them."""
    with matplotlib.rc_context():
        yield
    i18n.set_language("en")


@pytest.fixture(scope="module")
def font():
    return TTFont(FONTS.joinpath(i18n.FONT_FILE))


def cmap_of(path) -> set[int]:
    return set(TTFont(path).getBestCmap())


def package_catalog() -> polib.POFile:
    return polib.pofile(str(ROOT / "bertcourse" / "locale" / "zh" / "LC_MESSAGES" / "bertcourse.po"))


def draw(title: str, xlabel: str, ylabel: str, legend: list[str], extra: str = "") -> np.ndarray:
    """Draw a figure (Agg, no pyplot) and return its pixels."""
    fig = Figure(figsize=(8, 6), dpi=50)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for k, label in enumerate(legend):
        ax.plot([0, 1], [k, k + 1], label=label)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    if extra:
        fig.text(0.01, 0.01, extra, fontsize=6)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


def chinese_texts(n: int) -> list[str]:
    """``n`` short Chinese msgstrs of the package catalog (widget labels and the like)."""
    texts = [e.msgstr for e in package_catalog().translated_entries()
             if 2 <= len(e.msgstr) <= 30 and "$" not in e.msgstr and "\n" not in e.msgstr
             and sum("\u4e00" <= c <= "\u9fff" for c in e.msgstr) >= 2]
    assert len(texts) >= n
    return texts[:n]


def every_catalog_character() -> str:
    """Every character of both catalogs' msgstrs, in lines of 80 ("$" escaped: no mathtext)."""
    chars = sorted(make_font_subset.catalog_characters())
    text = "".join(chars).replace("\\", "\\\\").replace("$", r"\$")
    return "\n".join(text[i:i + 80] for i in range(0, len(text), 80))


# --- the subset -------------------------------------------------------------------------------

def test_the_font_covers_every_character_of_both_catalogs(font):
    """A character that neither the subset nor the plot's own font (DejaVu Sans) has would be a box
    in a Chinese plot: a translation brought it, so the subset must be made again."""
    have = set(font.getBestCmap()) | cmap_of(DEJAVU)
    chars = make_font_subset.catalog_characters()
    assert len(chars) > 1000 and any("\u4e00" <= c <= "\u9fff" for c in chars)
    missing = sorted(c for c in chars if ord(c) not in have)
    assert not missing, (f"the Chinese plot font lacks {''.join(missing)!r} "
                         f"({', '.join(f'U+{ord(c):04X}' for c in missing)}), used by the catalogs: "
                         f"rebuild it with `{REBUILD}` (bertcourse/fonts/ATTRIBUTION.md)")


def test_every_chinese_character_is_in_the_subset_itself(font):
    # DejaVu Sans has no CJK: the full-width punctuation and the ideographs come from the subset.
    cjk = {c for c in make_font_subset.catalog_characters() if ord(c) >= 0x3000}
    assert len(cjk) > 1000
    missing = sorted(c for c in cjk if ord(c) not in font.getBestCmap())
    assert not missing, f"rebuild the font with `{REBUILD}`: it lacks {''.join(missing)!r}"


def test_the_font_is_small_and_holds_what_matplotlib_reads(font):
    size = len(FONTS.joinpath(i18n.FONT_FILE).read_bytes())
    assert size < 1_500_000, size
    assert {"cmap", "CFF ", "hmtx", "hhea", "head", "name", "OS/2", "post", "maxp"} <= set(font.keys())
    assert not {"vmtx", "vhea", "VORG", "GSUB", "GPOS"} & set(font.keys())


def test_the_font_has_a_name_of_its_own(font):
    """The subset is a Modified Version under the OFL: not called Noto (Google's trademark) nor
    Source (the Reserved Font Name of the same design elsewhere); ATTRIBUTION.md says why."""
    name = font["name"]
    assert i18n.FONT_FAMILY == make_font_subset.FAMILY == "Bertcourse Sans SC"
    assert i18n.FONT_FILE == make_font_subset.FONT_FILE
    assert name.getDebugName(1) == name.getDebugName(4) == i18n.FONT_FAMILY
    assert name.getDebugName(6) == "BertcourseSansSC-Regular"
    primary = [r.toUnicode() for r in name.names if r.nameID in (1, 3, 4, 6, 16, 17, 21, 22)]
    cff = font["CFF "].cff
    top = cff.topDictIndex[0]
    primary += [*cff.fontNames, top.FullName, top.FamilyName, *(fd.FontName for fd in top.FDArray)]
    assert primary and not [n for n in primary if "noto" in n.lower() or "source" in n.lower()], primary
    # the notices stay: copyright, trademark, licence and its address
    assert "Adobe" in name.getDebugName(0) and "Noto" in name.getDebugName(7)
    assert "Open Font License" in name.getDebugName(13) and "OFL" in name.getDebugName(14)
    with importlib.resources.as_file(FONTS.joinpath(i18n.FONT_FILE)) as path:   # what matplotlib calls it
        assert font_manager.ttfFontProperty(ft2font.FT2Font(str(path))).name == i18n.FONT_FAMILY


def test_the_licence_ships_with_the_font():
    for name in ("OFL.txt", "ATTRIBUTION.md", i18n.FONT_FILE):
        assert FONTS.joinpath(name).is_file(), name
    licence = FONTS.joinpath("OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence and "Adobe" in licence
    attribution = FONTS.joinpath("ATTRIBUTION.md").read_text(encoding="utf-8")
    for needle in ("Noto Sans CJK SC", "noto-cjk-sans-otc", "OFL", "Reserved Font Name", "trademark",
                   "tools/make_font_subset.py", i18n.FONT_FAMILY):
        assert needle in attribution, needle
    pyproject = ROOT / "pyproject.toml"
    if pyproject.is_file():        # a source checkout: declared as package data and as a licence
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        assert "fonts/*" in project["tool"]["setuptools"]["package-data"]["bertcourse"]
        assert "bertcourse/fonts/OFL.txt" in project["project"]["license-files"]
        assert "OFL-1.1" in project["project"]["license"].split(" AND ")


# --- registration -------------------------------------------------------------------------------

def test_set_language_zh_registers_the_font_once_as_the_last_family():
    matplotlib.rcParams.update(PLAIN)
    i18n.set_language("zh")
    i18n.set_language("zh")
    i18n.register_chinese_font()
    assert matplotlib.rcParams["font.family"] == ["sans-serif", i18n.FONT_FAMILY]
    entries = [e for e in font_manager.fontManager.ttflist if e.name == i18n.FONT_FAMILY]
    # one file, listed once as the regular face and once as the bold one (the subset has one weight)
    assert sorted(e.weight for e in entries) == [400, 700], entries
    assert {pathlib.Path(e.fname).name for e in entries} == {i18n.FONT_FILE}
    i18n.set_language("en")                 # the fallback stays (harmless: it draws only what is missing)
    assert matplotlib.rcParams["font.family"] == ["sans-serif", i18n.FONT_FAMILY]


def test_a_chinese_figure_from_the_catalog_draws_without_a_missing_glyph(caplog):
    matplotlib.rcParams.update(PLAIN)
    i18n.set_language("zh")
    title, xlabel, ylabel, *legend = chinese_texts(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # "Glyph ... missing from font(s) ..."
        pixels = draw(title, xlabel, ylabel, legend, extra=every_catalog_character())
    assert (pixels[..., :3] < 128).any()
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]   # every family found


def test_without_the_fallback_the_same_figure_misses_glyphs():
    """The control: the plot's own font alone has no Chinese, so the test above can fail."""
    matplotlib.rcParams.update(PLAIN)
    title, xlabel, ylabel, *legend = chinese_texts(5)
    with pytest.warns(UserWarning, match=r"Glyph \d+ .* missing from font"):
        draw(title, xlabel, ylabel, legend)


def test_latin_text_is_drawn_exactly_as_before():
    matplotlib.rcParams.update(PLAIN)
    latin = ("Loss per step (train, validation)", "step", "loss = -log p", ["train", "validation ×2"])
    before = draw(*latin)
    i18n.set_language("zh")
    assert font_manager.findfont(font_manager.FontProperties(family=matplotlib.rcParams["font.family"][:1])) \
        == str(DEJAVU)
    assert np.array_equal(draw(*latin), before)


def test_it_works_in_a_kernel_that_drew_a_figure_before_the_switch():
    """pyplot imported and a figure drawn first, then set_language("zh"), as in a notebook; and
    bertcourse.i18n alone imports no matplotlib (English never needs it)."""
    code = """if True:
        import sys, warnings
        from bertcourse import i18n
        i18n.set_language("en"); i18n.gettext("sentence A")
        assert "matplotlib" not in sys.modules, "bertcourse.i18n imported matplotlib"
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(); ax.set_title("before"); fig.canvas.draw()
        i18n.set_language("zh")
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            fig, ax = plt.subplots()
            ax.plot([0, 1], label=i18n.gettext("sentence A")); ax.legend()
            ax.set_title("注意力权重：查询与键（第1章）"); fig.canvas.draw()
        print("drawn")
    """
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "drawn", result.stderr[-2000:]


def test_bold_chinese_text_logs_no_missing_weight(caplog):
    """The subset has one weight: a bold title gets the regular glyphs without matplotlib
    logging "Failed to find font weight bold" into the notebook."""
    matplotlib.rcParams.update(PLAIN)
    i18n.set_language("zh")
    try:
        fig = Figure()
        FigureCanvasAgg(fig)
        fig.add_subplot().set_title("注意力权重", fontweight="bold")
        with caplog.at_level(logging.INFO, logger="matplotlib.font_manager"):
            fig.canvas.draw()
        assert not [r.getMessage() for r in caplog.records if "Failed to find font weight" in r.getMessage()]
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")),
                         ids=lambda path: path.name)
def test_no_chinese_notebook_was_executed_with_a_missing_glyph(notebook):
    """What the Chinese edition's committed outputs say: every figure found its characters (a label
    with $...$ is drawn by mathtext, whose fonts have no Chinese: its translation must do without)."""
    text = notebook.read_text(encoding="utf-8")
    for warning in ("does not have a glyph", "findfont: Font family", "Failed to find font"):
        assert warning not in text, f"{notebook.name}: a figure printed {warning!r}"
