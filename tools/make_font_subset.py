"""Write the Chinese plot font: a subset of Noto Sans CJK SC Regular, renamed, in bertcourse/fonts.

    python tools/make_font_subset.py SOURCE        # (re)write bertcourse/fonts/
    python tools/make_font_subset.py SOURCE --check   # exit 1 if the font lacks a character it would get

SOURCE is the Noto Sans CJK collection: PyPI's ``noto-cjk-sans-otc`` wheel (a ``.whl``, read
as a zip: the ``.ttc`` and its ``LICENSE`` inside), or the collection file itself
(``NotoSansCJK-Regular.ttc``, e.g. Debian's ``fonts-noto-cjk``:
``/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc``; then give the licence text with
``--licence``, e.g. the OFL.txt of https://github.com/notofonts/noto-cjk).

Why: the Chinese edition's plots have Chinese titles, axes and legends, and Colab and Binder
have no Chinese font. ``bertcourse.i18n.set_language("zh")`` registers this font with
matplotlib as a fallback after the plot's own font, so it draws only the characters that font
lacks (the Chinese ones); Latin text is drawn as before.

What the subset holds: printable ASCII, Latin-1, the general punctuation, the CJK symbols and
punctuation and the full-width forms, and every character of the msgstrs of both kinds of
catalogs (``bertcourse/locale/zh/LC_MESSAGES/bertcourse.po``, ``locale/zh/*.po``) and of the
string literals of the Chinese notebooks' code cells -- those the source has (a few signs,
such as the superscript digits, are not in Noto Sans CJK; the plot's own font, DejaVu Sans,
draws them). tests/test_fonts.py fails when a translation brings a character that neither
this font nor DejaVu Sans has: run this script again.

What it keeps: the outlines (CFF) with their hints, the horizontal metrics, the character map
and the name table (copyright, licence). It drops the vertical metrics (VORG, vhea, vmtx),
the baseline table (BASE) and the OpenType layout tables (GSUB, GPOS, GDEF): matplotlib
writes horizontally, the Chinese characters need no shaping, and Latin text is drawn by
the plot's own font.

The name: the subset is a Modified Version under the SIL OFL 1.1, so it gets a name of its
own, FAMILY (see ATTRIBUTION.md for why). The output keeps the source's timestamps, so running
the script twice on the same source and catalogs writes the same bytes.

This script is run by hand when a translation adds characters; CI never runs it (it needs the
19 MB source). It needs fontTools (matplotlib brings it) and polib.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import pathlib
import sys
import zipfile

import polib
from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "bertcourse" / "fonts"
CATALOGS = [ROOT / "bertcourse" / "locale" / "zh" / "LC_MESSAGES" / "bertcourse.po",
            *sorted((ROOT / "locale" / "zh").glob("*.po"))]
NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))

SOURCE_FAMILY = "Noto Sans CJK SC"       # the Simplified Chinese face of the collection
SOURCE_STYLE = "Regular"
FAMILY = "Bertcourse Sans SC"           # the subset's own name (OFL: a Modified Version)
POSTSCRIPT = "BertcourseSansSC-Regular"
FONT_FILE = f"{POSTSCRIPT}.otf"          # bertcourse.i18n reads this name
LICENCE_FILE = "OFL.txt"

# Blocks kept whole (those of their characters the source has): what any course text may use.
BLOCKS = [(0x0020, 0x007E),   # printable ASCII
          (0x00A0, 0x00FF),   # Latin-1 supplement: × · ± ° é ...
          (0x2010, 0x205E),   # general punctuation: – — ‘ ’ “ ” … ‰ ′
          (0x3000, 0x303F),   # CJK symbols and punctuation: 、。《》「」【】
          (0xFF01, 0xFF65)]   # full-width forms: ，：；！？（）
# Tables matplotlib does not read for horizontal Chinese text (see the docstring).
DROPPED = ["VORG", "vhea", "vmtx", "BASE", "GSUB", "GPOS", "GDEF"]


def catalog_characters(paths=CATALOGS) -> set[str]:
    """Every printable character of the msgstrs (obsolete entries excepted) of ``paths``."""
    chars = set()
    for path in paths:
        for entry in polib.pofile(str(path)):
            if not entry.obsolete:
                chars.update(entry.msgstr, *entry.msgstr_plural.values())
    return {c for c in chars if c.isprintable()}


def notebook_characters(paths=NOTEBOOKS) -> set[str]:
    """Every printable character of the string literals of the code cells of ``paths``
    (IPython's ``%magic`` and ``!shell`` lines are skipped)."""
    chars = set()
    for path in paths:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
            try:
                tree = ast.parse("\n".join(lines))
            except SyntaxError:
                print(f"  skipped a cell of {path.name} that is not Python", file=sys.stderr)
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    chars.update(node.value)
    return {c for c in chars if c.isprintable()}


def wanted_characters() -> tuple[set[str], set[str]]:
    """``(the characters of the blocks, the characters of the course's texts)``."""
    blocks = {chr(i) for lo, hi in BLOCKS for i in range(lo, hi + 1)}
    return blocks, catalog_characters() | notebook_characters()


def read_source(source: pathlib.Path, licence: pathlib.Path | None):
    """``(the SC Regular face as a TTFont, the licence text as shipped, a description of the
    source)`` from a wheel or a collection file."""
    data, licence_text = None, None
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            names = wheel.namelist()
            font_names = [n for n in names if n.lower().endswith((".ttc", ".otc"))]
            if len(font_names) != 1:
                raise SystemExit(f"{source.name}: expected one .ttc/.otc inside, found {font_names}")
            data = wheel.read(font_names[0])
            licences = [n for n in names if ".dist-info/" in n and n.rsplit("/", 1)[-1].upper().startswith(("LICENSE", "OFL"))]
            if licences:
                licence_text = wheel.read(licences[0]).decode("utf-8")
            inner = font_names[0]
    else:
        data = source.read_bytes()
        inner = None
    if licence is not None:
        licence_text = licence.read_text(encoding="utf-8")
    if not licence_text or "SIL OPEN FONT LICENSE" not in licence_text.upper():
        raise SystemExit("no SIL OFL text: give the source's licence file with --licence")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    collection = TTCollection(io.BytesIO(data))
    faces = [f for f in collection.fonts
             if f["name"].getDebugName(1) == SOURCE_FAMILY and f["name"].getDebugName(2) == SOURCE_STYLE]
    if len(faces) != 1:
        found = [(f["name"].getDebugName(1), f["name"].getDebugName(2)) for f in collection.fonts]
        raise SystemExit(f"{source.name}: expected one face {SOURCE_FAMILY} {SOURCE_STYLE}, found {found}")
    described = f"`{source.name}`" + (f" (its `{inner}`)" if inner else "") + f", SHA-256 `{digest}`"
    return faces[0], licence_text, described


def make_subset(face: TTFont, chars: set[str]) -> tuple[TTFont, list[str]]:
    """The subset of ``face`` to the characters of ``chars`` it has, and those it lacks."""
    cmap = face.getBestCmap()
    kept = sorted(ord(c) for c in chars if ord(c) in cmap)
    lacking = sorted(c for c in chars if ord(c) not in cmap)
    options = subset.Options()
    options.drop_tables += DROPPED
    options.layout_features = []
    options.hinting = True                 # the CFF hints stay (text.hinting="native" uses them)
    options.name_IDs = ["*"]               # copyright, trademark, designers, licence and its URL
    options.name_languages = ["*"]
    options.name_legacy = True
    options.notdef_outline = True          # a missing character shows a box, not nothing
    options.glyph_names = False
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=kept)
    subsetter.subset(face)
    return face, lacking


def rename(font: TTFont, version: str) -> None:
    """Give the subset its own family name in the name table and in the CFF table."""
    name = font["name"]
    for record in list(name.names):
        if record.nameID in (16, 17, 21, 22):     # typographic names: the family/style below say it
            name.removeNames(nameID=record.nameID)
    new = {1: FAMILY, 2: "Regular", 3: f"{version};{POSTSCRIPT};bertcourse subset", 4: FAMILY,
           6: POSTSCRIPT}
    for record in name.names:
        if record.nameID in new:
            record.string = new[record.nameID]
    cff = font["CFF "].cff
    old = cff.fontNames[0]
    cff.fontNames[0] = POSTSCRIPT
    top = cff.topDictIndex[0]
    top.FullName, top.FamilyName = f"{FAMILY} Regular", FAMILY
    for fd in getattr(top, "FDArray", []):
        if getattr(fd, "FontName", "").startswith(old):
            fd.FontName = POSTSCRIPT + fd.FontName[len(old):]


def attribution(face_version: str, described: str, n_chars: int, lacking: list[str], size: int,
                copyright_notice: str, trademark: str) -> str:
    lacking_text = " ".join(f"{c} (U+{ord(c):04X})" for c in lacking) or "none"
    return f"""# The Chinese plot font: {FAMILY}

`{FONT_FILE}` is a subset of **Noto Sans CJK SC Regular** (the Simplified Chinese face of the
Noto Sans CJK collection, font version {face_version}), renamed **{FAMILY}**. The Chinese
edition's plots need a Chinese font and Colab and Binder have none, so it ships with the
package; `bertcourse.i18n.set_language("zh")` registers it with matplotlib as a fallback
after the plot's own font (DejaVu Sans), which keeps drawing the Latin text.

- **Source:** PyPI's `noto-cjk-sans-otc` (0.0.1), which carries Google's and Adobe's
  `NotoSansCJK-Regular.ttc` unchanged: {described}. Upstream: https://github.com/notofonts/noto-cjk
- **Copyright:** {copyright_notice} {trademark} (the font's name table; designers and credits are
  kept in its name table, IDs 8 to 12).
- **Licence:** SIL Open Font License 1.1, in `{LICENCE_FILE}` (the source's licence text, with the
  font's copyright notice above it). The subset, like the original, is under the OFL only; it may
  be bundled with software but not sold by itself.

## The name

The OFL forbids a Modified Version (a subset is one) to use a *Reserved Font Name*. The font's
own copyright notice (name ID 0 and the CFF notice) and the licence text shipped with the source
declare none. But "Noto" is a trademark of Google (name ID 7), and the licence files of the same
design elsewhere (Adobe's Source Han Sans; Google Fonts' Noto Sans SC) declare the Reserved Font
Name "Source". So the subset carries neither name: it is **{FAMILY}** (PostScript name
`{POSTSCRIPT}`) in the name table (IDs 1, 3, 4, 6; the typographic names 16 and 17 are removed)
and in the CFF table. A name of its own also keeps it apart from a full Noto Sans CJK SC that a
learner may have installed. The trademark notice and the credits stay, as the OFL asks.

## How it was made

    python tools/make_font_subset.py noto_cjk_sans_otc-0.0.1-py3-none-any.whl

`tools/make_font_subset.py` (fontTools' subsetter) keeps {n_chars} characters: printable ASCII,
Latin-1, general punctuation, CJK symbols and punctuation, the full-width forms, and every
character of the msgstrs of the catalogs (`bertcourse/locale/zh/LC_MESSAGES/bertcourse.po`,
`locale/zh/*.po`) and of the string literals of `notebooks/zh/*.ipynb`'s code cells. It keeps
the CFF outlines with their hints, the horizontal metrics, the character map and the name table,
and drops the vertical metrics (VORG, vhea, vmtx), BASE and the OpenType layout tables (GSUB,
GPOS, GDEF), which matplotlib's horizontal Chinese text does not need. The file is {size:,}
bytes; nearly all of it is the outlines of the Chinese characters (about {size / n_chars / 1000:.2f} KB
a character on average), so it grows by about that much per new character.

Characters of the course's texts that Noto Sans CJK does not have (the plot's own font draws
those it has; DejaVu Sans has all but the emoji): {lacking_text}.

Rebuild it when a translation adds characters (tests/test_fonts.py names them): run the
command above with the source wheel (or `--licence` and Debian's
`/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc`).
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=pathlib.Path, help="the noto-cjk-sans-otc wheel, or a .ttc/.otc")
    parser.add_argument("--licence", type=pathlib.Path, help="the licence text (needed for a .ttc)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the shipped font lacks a character it would get")
    args = parser.parse_args(argv)
    face, licence_text, described = read_source(args.source, args.licence)
    blocks, texts = wanted_characters()
    chars = blocks | texts
    if args.check:
        have = TTFont(OUT / FONT_FILE).getBestCmap()
        source_cmap = face.getBestCmap()
        missing = sorted(c for c in chars if ord(c) in source_cmap and ord(c) not in have)
        print("missing:", "".join(missing) if missing else "none")
        return 1 if missing else 0
    name = face["name"]
    version = name.getDebugName(5).split(";")[0].removeprefix("Version ")
    copyright_notice, trademark = name.getDebugName(0), name.getDebugName(7) or ""
    font, lacking = make_subset(face, chars)
    n_chars = len(chars) - len(lacking)
    lacking = [c for c in lacking if c in texts]        # a block's gaps are no news
    rename(font, version)
    font.recalcTimestamp = False
    OUT.mkdir(exist_ok=True)
    font.save(OUT / FONT_FILE)
    size = (OUT / FONT_FILE).stat().st_size
    (OUT / LICENCE_FILE).write_text(f"{copyright_notice} {trademark}\n\n{licence_text.strip()}\n",
                                    encoding="utf-8")
    (OUT / "ATTRIBUTION.md").write_text(
        attribution(version, described, n_chars, lacking, size, copyright_notice, trademark),
        encoding="utf-8")
    print(f"wrote {OUT / FONT_FILE} ({size:,} bytes, {n_chars} characters); "
          f"the course's characters not in the source: {''.join(lacking) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
