"""The Chinese edition's one upkeep tool: the chapters' catalogs and the package's catalog.

    python tools/i18n.py update [NN ...]   # refresh locale/zh/NN_topic.po after an English edit
    python tools/i18n.py build  [NN ...]   # write notebooks/zh/NN_topic.ipynb from notebook + catalog
    python tools/i18n.py update package    # refresh bertcourse/locale/zh/LC_MESSAGES/bertcourse.po
                                           # after editing the package's learner-facing strings
    python tools/i18n.py check             # exit 1, naming every problem, unless all is in step
    python tools/i18n.py rename 14_scaling_up 15_scaling_up
                                           # renumber a chapter: its notebooks and catalog move,
                                           # every translation kept

(`update` without arguments updates every chapter's catalog, not the package's.) There are two
kinds of catalog, both kept here; the package only reads its own at run time (`bertcourse.i18n`,
the learner's language switch).

The English notebook is the one source of truth; `locale/zh/NN_topic.po` holds only the
Chinese text, and `notebooks/zh/NN_topic.ipynb` is generated. Translators edit the msgstrs of
the `.po` files (any text editor or Poedit), never the Chinese notebooks.

Segmentation. Each markdown cell's source is split into paragraphs at blank lines (lines of
whitespace only), except blank lines inside a ``` (or ~~~) fence or a $$ display-math block,
which stay inside their paragraph. Each paragraph is one catalog entry:

* msgid: the English paragraph, exactly (no trailing newline);
* msgctxt: the id of the cell it comes from, so that equal paragraphs in different cells stay
  separate entries (the same paragraph twice in one cell is one entry, translated once);
* occurrence comment (`#: notebooks/NN_topic.ipynb:7`): the cell's index, to find it quickly.

A paragraph that is display math only (starts and ends with $$) has nothing to translate and
gets no entry: it is copied as it is. The blank lines between paragraphs are kept exactly.

`update` compares the catalog with the English notebook: a new paragraph becomes an
untranslated entry; a changed paragraph (paired with the vanished one of the same cell by
difflib, in order) keeps its old translation, marked fuzzy, with the English it translated in
`#| msgid` (polib's `previous_msgid`) so the translator sees what changed; a paragraph found
unchanged in another cell (the cell was recreated) is moved there, fuzzy too; a vanished
paragraph's translation is kept as an obsolete (`#~`) entry, and a vanished untranslated entry
is dropped (it holds nothing to keep). Re-running `update` changes nothing.

`build` writes the Chinese notebook: the English one with every paragraph replaced by its
msgstr. As gettext's own tools do, an untranslated or fuzzy entry is not used: that paragraph
stays English in the built notebook (so `build` always works and shows what is missing), and
`check` fails on it. Code cells are the English code cells; the first one (the Colab install
cell) gains one line, SWITCH_LINE, that switches the package's exercise feedback and widget
labels to Chinese. Outputs: a code cell whose source is the same as in the existing Chinese
notebook keeps that notebook's outputs; any other code cell gets none until the Chinese
notebooks are executed (`python tools/run_notebooks.py --lang zh`).

`check` exits non-zero naming (file, msgctxt, first words) every paragraph without an entry,
untranslated or fuzzy entry, every entry whose paragraph is gone but that is not obsolete,
every Chinese notebook whose cell sources are not what `build` would write, and the problems
of the package's own catalog (`package_catalog_problems()`).

The package's catalog, `bertcourse/locale/zh/LC_MESSAGES/bertcourse.po` (package data, read by
`bertcourse.i18n`), holds the learner-facing strings of the package's code: exercise feedback,
hints, solutions' comments, widget labels. `extract_messages` finds them with `ast`, without
importing the package: the literal first argument of every `_(...)` / `N_(...)` call and the
docstrings of the functions listed in a module-level `*_DIAGNOSES` list (exercises/core.py).
The same catalog holds the words the notebooks' own code prints or draws: the literal argument
of every `tr(...)` call (`bertcourse.i18n.tr`) and the literal labels of every `tr_table(table, ...)`
in the English notebooks' code cells, so the code
is the same in both editions and the Chinese one prints Chinese (`#: notebooks/NN_x.ipynb:CELL`).
One entry per string (no msgctxt); `update package` adds new strings untranslated, records
where each is used and marks the entries no code uses any more obsolete (kept at the end, so an
edited string's old translation is still there to copy).
"""
from __future__ import annotations

import argparse
import dataclasses
import ast
import copy
import difflib
import io
import pathlib
import re
import subprocess
import sys
import textwrap
import tokenize

try:
    import nbformat
    import polib
except ImportError as missing:     # run by a Python without the course's requirements
    if __name__ != "__main__":
        raise
    print(f"tools/i18n.py: {missing.name} is not installed in {sys.executable}. Run it with the course's "
          f"environment's Python (`pip install -r requirements.txt` installs nbformat and polib), "
          f"e.g. `.venv/bin/python tools/i18n.py check`.", file=sys.stderr)
    sys.exit(2)                    # 1 means "the Chinese edition is not in step"

ROOT = pathlib.Path(__file__).resolve().parents[1]
LANG = "zh"
SWITCH_LINE = 'from bertcourse.i18n import set_language; set_language("zh")  # 中文版：练习反馈和控件标签用中文'
HEADER = """Chinese translation of one chapter of bertcourse, paragraph by paragraph.
Generated by `python tools/i18n.py update`; translate the msgstrs only (CONTRIBUTING.md,
"Translating"). msgctxt is the notebook cell's id; '#:' gives the cell's index.
Style and terms: d2l-zh's STYLE_GUIDE.md and TERMINOLOGY.md."""


# --- segmentation -------------------------------------------------------------------------

def segments(source: str) -> list[tuple[str, bool]]:
    """Split a markdown source into chunks whose concatenation is `source`.

    Each chunk is `(text, is_paragraph)`: paragraphs (without their last newline) alternate
    with the gaps (that newline and the blank lines) between them. Blank lines inside
    ``` / ~~~ fences or $$ blocks do not end a paragraph.
    """
    groups: list[list] = []                 # [is_paragraph, [lines]]
    fence = None                            # the fence marker we are inside, if any
    in_math = False
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        is_paragraph = bool(stripped) or fence is not None or in_math
        if not groups or groups[-1][0] != is_paragraph:
            groups.append([is_paragraph, []])
        groups[-1][1].append(line)
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
        elif not in_math and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif stripped.count("$$") % 2 == 1:
            in_math = not in_math
    chunks: list[tuple[str, bool]] = []
    carry = ""                              # a paragraph's last newline, given to the gap after it
    for is_paragraph, lines in groups:
        text = carry + "".join(lines)
        carry = ""
        if is_paragraph and text.endswith("\n"):
            text, carry = text[:-1], "\n"
        chunks.append((text, is_paragraph))
    if carry:
        chunks.append((carry, False))
    return chunks


# Words inside \text{...} of a formula that stay as they are in Chinese: abbreviations in capitals
# (MLM, NSP, SEP), and the course's English terms (logits) and subscripts (d_ff, b_out).
TEXT_IN_MATH = re.compile(r"\\text\{([^{}]*)\}")
KEPT_IN_MATH = {"logits", "ff", "out", "nsp", "mlm"}


def english_in_math(math: str) -> list[str]:
    """The English words written in ``\\text{...}`` in `math` (abbreviations and KEPT_IN_MATH
    aside): what a Chinese reader should read in Chinese."""
    words = []
    for inside in TEXT_IN_MATH.findall(math):
        words += [w for w in re.findall(r"[A-Za-z]{2,}", inside) if not w.isupper() and w.lower() not in KEPT_IN_MATH]
    return words


def is_display_math(paragraph: str) -> bool:
    text = paragraph.strip()
    return text.startswith("$$") and text.endswith("$$") and len(text) > 2


def needs_translation(paragraph: str) -> bool:
    """False for a paragraph that is display math only and has no English words in its
    ``\\text{...}``: it is copied as it is. (Issue 44: a formula's words are translated.)"""
    return not is_display_math(paragraph) or bool(english_in_math(paragraph))


def paragraphs(nb) -> list[tuple[str, int, str]]:
    """`(cell id, cell index, paragraph)` for every translatable paragraph, in order: the
    markdown paragraphs, then (in a code cell) every comment block (see `comment_blocks`)."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for text, is_paragraph in segments(cell.source):
                if is_paragraph and needs_translation(text):
                    found.append((cell.id, index, text))
        elif cell.cell_type == "code":
            found += [(cell.id, index, block.text) for block in comment_blocks(cell.source)]
    return found


# --- code comments -------------------------------------------------------------------------
# The Chinese edition's code cells are the English ones token for token; only their comments
# differ, and they come from the catalog like the prose (issue 44, as d2l-zh writes them).

# Comments that tools read (nbval's markers, linters' pragmas, the Colab install cell's first
# line, which tools/run_notebooks.py writes and the book and the Colab test look for): never
# translated.
TOOL_COMMENT = re.compile(r"#\s*(NBVAL_|noqa|type:|pragma|fmt:|On Colab only)")


@dataclasses.dataclass
class CommentBlock:
    """A run of whole-line comments on consecutive lines at one indentation, or one comment
    after code. ``places``: ``(row, col)`` of each ``#`` (row from 1); ``text``: the comments
    without their ``#`` and one space after it, one line each, joined by newlines."""
    places: list
    lines: list

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _comment_text(comment: str) -> str:
    return comment[2:] if comment.startswith("# ") else comment[1:]


def comment_blocks(source: str) -> list[CommentBlock]:
    """The translatable comments of a code cell's `source`, in order (a comment without two
    Latin letters in a row, or one that a tool reads, is not translatable)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []                   # not Python (a cell of shell commands): nothing to translate
    blocks: list[CommentBlock] = []
    previous = None                 # (row, col, whole line) of the last comment
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            previous = previous if tok.type == tokenize.NL else None
            continue
        if TOOL_COMMENT.match(tok.string):
            previous = None
            continue
        row, col = tok.start
        whole = not tok.line[:col].strip()
        if not re.search(r"[A-Za-z]{2}", tok.string):
            previous = None
            continue
        if whole and previous and previous[2] and previous[0] == row - 1 and previous[1] == col:
            blocks[-1].places.append((row, col))
            blocks[-1].lines.append(_comment_text(tok.string))
        else:
            blocks.append(CommentBlock([(row, col)], [_comment_text(tok.string)]))
        previous = (row, col, whole)
    return blocks


def code_tokens(source: str) -> list[tuple[int, str]] | str:
    """The code of `source` without its comments, token by token (what both editions share);
    the source itself where it is not Python."""
    try:
        # NL: the end of a line that holds no code (a comment line, a blank line)
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source


def translate_code(source: str, table: dict[str, str], where: str = "code cell") -> str:
    """`source` with each translatable comment block replaced by its translation in `table`
    (English block text -> Chinese), line for line: a translation must have as many lines as
    the English block (ValueError otherwise, naming `where`)."""
    lines = source.splitlines(keepends=True)
    for block in reversed(comment_blocks(source)):
        chinese = table.get(block.text)
        if not chinese:
            continue
        chinese_lines = chinese.split("\n")
        if len(chinese_lines) != len(block.lines):
            raise ValueError(f"{where}: the translation of the comment {first_words(block.text)!r} has "
                             f"{len(chinese_lines)} line(s), the English {len(block.lines)}: keep one line per line")
        for (row, col), line in zip(reversed(block.places), reversed(chinese_lines)):
            old = lines[row - 1]
            end = "\n" if old.endswith("\n") else ""
            lines[row - 1] = old[:col] + "# " + line + end
    return "".join(lines)


# --- catalogs ------------------------------------------------------------------------------

def catalog_path(notebook: pathlib.Path, root: pathlib.Path = ROOT) -> pathlib.Path:
    return root / "locale" / LANG / (notebook.stem + ".po")


def zh_path(notebook: pathlib.Path, root: pathlib.Path = ROOT) -> pathlib.Path:
    return root / "notebooks" / LANG / notebook.name


def load_catalog(path: pathlib.Path) -> polib.POFile:
    if path.exists():
        po = polib.pofile(str(path), wrapwidth=0)
    else:
        po = polib.POFile(wrapwidth=0)
        po.header = HEADER
        po.metadata = {
            "Project-Id-Version": "bertcourse",
            "Language": "zh_CN",
            "MIME-Version": "1.0",
            "Content-Type": "text/plain; charset=UTF-8",
            "Content-Transfer-Encoding": "8bit",
        }
    return po


def is_translated(entry: polib.POEntry) -> bool:
    return bool(entry.msgstr) and "fuzzy" not in entry.flags and not entry.obsolete


def update_catalog(notebook: pathlib.Path, po_path: pathlib.Path, rel: str | None = None) -> polib.POFile:
    """Bring the catalog `po_path` in step with `notebook` (see the module docstring); write it."""
    nb = nbformat.read(str(notebook), as_version=4)
    rel = rel or f"notebooks/{notebook.name}"
    old = load_catalog(po_path)
    active = [e for e in old if not e.obsolete]
    by_key = {(e.msgctxt, e.msgid): e for e in old}
    wanted = paragraphs(nb)
    wanted_keys = {(cid, text) for cid, _, text in wanted}
    vanished = [e for e in active if (e.msgctxt, e.msgid) not in wanted_keys]
    unmatched_new = [(cid, idx, text) for cid, idx, text in wanted if (cid, text) not in by_key]

    # A changed paragraph: pair the new paragraphs of a cell with its vanished ones, in order.
    inherited: dict[tuple[str, str], tuple[polib.POEntry, bool]] = {}
    for cid in dict.fromkeys(c for c, _, _ in unmatched_new):
        gone = [e for e in vanished if e.msgctxt == cid]
        new = [t for c, _, t in unmatched_new if c == cid]
        matcher = difflib.SequenceMatcher(None, [e.msgid for e in gone], new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "replace":
                for e, t in zip(gone[i1:i2], new[j1:j2]):
                    inherited[(cid, t)] = (e, False)
    # A paragraph unchanged but now in another cell (the cell was recreated or split).
    gone_by_text = {}
    for e in vanished:
        gone_by_text.setdefault(e.msgid, e)
    for cid, _, text in unmatched_new:
        if (cid, text) not in inherited and text in gone_by_text:
            inherited[(cid, text)] = (gone_by_text[text], True)

    used = {id(e) for e, _ in inherited.values()}
    po = polib.POFile(wrapwidth=0)
    po.header, po.metadata = old.header, old.metadata
    seen = set()
    for cid, index, text in wanted:
        occurrence = (rel, str(index))
        if (cid, text) in seen:                       # the same paragraph twice in one cell
            continue
        seen.add((cid, text))
        previous = by_key.get((cid, text))
        if previous is not None:
            entry = copy.copy(previous)
            entry.obsolete = False
            entry.occurrences = [occurrence]
            if "fuzzy" not in entry.flags:    # a reviewed entry: the old English is history
                entry.previous_msgid = entry.previous_msgctxt = None
        else:
            entry = polib.POEntry(msgctxt=cid, msgid=text, msgstr="", occurrences=[occurrence])
            source, moved = inherited.get((cid, text), (None, False))
            if source is not None and source.msgstr:
                entry.msgstr = source.msgstr
                entry.flags = ["fuzzy"]
                # keep the English the translation was made for, through several edits
                still_fuzzy = "fuzzy" in source.flags
                entry.previous_msgid = (still_fuzzy and source.previous_msgid) or source.msgid
                if moved:
                    entry.previous_msgctxt = (still_fuzzy and source.previous_msgctxt) or source.msgctxt
        po.append(entry)
    for e in old:
        key = (e.msgctxt, e.msgid)
        if key in seen or id(e) in used or not e.msgstr:
            continue
        gone = copy.copy(e)
        gone.obsolete = True
        gone.occurrences = []
        po.append(gone)
    po_path.parent.mkdir(parents=True, exist_ok=True)
    po.save(str(po_path))
    return po


# --- building ------------------------------------------------------------------------------

def translate_source(cell, po: polib.POFile) -> str:
    table = {(e.msgctxt, e.msgid): e.msgstr for e in po if is_translated(e)}
    out = []
    for text, is_paragraph in segments(cell.source):
        out.append(table.get((cell.id, text), text) if is_paragraph else text)
    return "".join(out)


PREVIEWS = "previews"
"""A markdown cell's metadata key: ``{attachment name: id of the code cell whose figure it shows}``."""


def refresh_previews(nb) -> list[str]:
    """A chapter's static previews (pictures attached to a markdown cell near its start, "where
    this chapter is going") are copies of figures its own code draws later. Each attachment named
    in a markdown cell's metadata ``previews`` (``{name: code cell id}``) becomes the first figure
    (``image/png``) of that code cell's outputs in ``nb``: the preview is always this run's, and in
    the Chinese edition it has the Chinese run's labels. A code cell without a figure (not executed
    yet) leaves the attachment as it is. Changes ``nb`` in place; returns the names it changed."""
    figures = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
            if pngs:
                figures[cell.id] = pngs[0]
    changed = []
    for cell in nb.cells:
        for name, source in cell.get("metadata", {}).get(PREVIEWS, {}).items():
            if cell.cell_type != "markdown" or name not in cell.get("attachments", {}):
                raise ValueError(f"cell {cell.id}: metadata {PREVIEWS!r} names {name!r}, which is not one of its "
                                 f"attachments")
            if source in figures and cell.attachments[name].get("image/png") != figures[source]:
                cell.attachments[name] = {"image/png": figures[source]}
                changed.append(name)
    return changed


def build_notebook(notebook: pathlib.Path, po_path: pathlib.Path, out: pathlib.Path, write: bool = True):
    """The Chinese notebook for `notebook` (written to `out` unless `write` is False)."""
    english = nbformat.read(str(notebook), as_version=4)
    po = load_catalog(po_path)
    existing = nbformat.read(str(out), as_version=4) if out.exists() else None
    old_cells = {c.id: c for c in existing.cells} if existing is not None else {}
    zh = copy.deepcopy(english)
    if existing is not None:
        zh.metadata = existing.metadata           # widget state from the Chinese execution
    else:
        zh.metadata.pop("widgets", None)
    first_code = True
    for cell in zh.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_source(cell, po)
            continue
        if cell.cell_type != "code":
            continue
        comments = {e.msgid: e.msgstr for e in po if is_translated(e) and e.msgctxt == cell.id}
        cell.source = translate_code(cell.source, comments, f"{po_path.name}: msgctxt {cell.id}")
        if first_code:
            cell.source = cell.source.rstrip("\n") + "\n" + SWITCH_LINE
            first_code = False
        old = old_cells.get(cell.id)
        # the outputs stay when only comments changed: the code the kernel ran is the same
        if old is not None and old.cell_type == "code" and code_tokens(old.source) == code_tokens(cell.source):
            cell.outputs, cell.execution_count = old.outputs, old.execution_count
        else:
            cell.outputs, cell.execution_count = [], None
    refresh_previews(zh)                  # the Chinese run's figures, where it has them
    if write:
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(zh, str(out))
    return zh


def cell_sources(nb) -> list[tuple[str, str, str, dict]]:
    return [(c.cell_type, c.get("id", ""), c.source, c.get("attachments", {})) for c in nb.cells]


# --- checking ------------------------------------------------------------------------------

def first_words(text: str, n: int = 8) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def catalog_problems(notebook: pathlib.Path, po_path: pathlib.Path) -> list[str]:
    """What keeps the catalog from being a complete, current translation of `notebook`."""
    rel = po_path.as_posix()
    if not po_path.exists():
        return [f"{rel}: missing (run `python tools/i18n.py update`)"]
    nb = nbformat.read(str(notebook), as_version=4)
    po = load_catalog(po_path)
    entries = {(e.msgctxt, e.msgid): e for e in po if not e.obsolete}
    wanted = {(cid, text) for cid, _, text in paragraphs(nb)}
    problems = []
    for cid, _, text in paragraphs(nb):
        entry = entries.get((cid, text))
        where = f"{rel}: msgctxt {cid}: {first_words(text)!r}"
        if entry is None:
            problems.append(f"{where}: no entry, the catalog is stale (run update)")
        elif "fuzzy" in entry.flags:
            problems.append(f"{where}: fuzzy (the English changed; review the translation)")
        elif not entry.msgstr:
            problems.append(f"{where}: untranslated")
    for (cid, text), entry in entries.items():
        if (cid, text) not in wanted:
            problems.append(f"{rel}: msgctxt {cid}: {first_words(text)!r}: stale, the paragraph "
                            "is gone from the English notebook (run update)")
    return problems


# Text that is not prose: fenced code, math, inline code, link targets, HTML tags, bare URLs.
NOT_PROSE = re.compile(r"```.*?```|~~~.*?~~~|\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]*`|\]\([^)]*\)|<[^>]+>|https?://\S+",
                       re.DOTALL)
MIN_CHINESE_SHARE = 0.6     # issue 24: at least 60 % of the letters of each chapter are Chinese


def is_chinese(char: str) -> bool:
    """A CJK unified ideograph (the basic block or extension A)."""
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf"


def chinese_share(markdown: str) -> float:
    """The share of Chinese characters among the letters of `markdown`'s prose.

    Code (fenced and inline), math ($...$, $$...$$), link targets, HTML tags and URLs are left
    out first: they stay English in any translation. Letters are what `str.isalpha` says
    (Latin letters and CJK ideographs; digits and punctuation are not letters). Text without
    letters has share 0.
    """
    prose = NOT_PROSE.sub(" ", markdown)
    letters = [c for c in prose if c.isalpha()]
    return sum(map(is_chinese, letters)) / len(letters) if letters else 0.0


def markdown_of(nb) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def notebook_problems(notebook: pathlib.Path, po_path: pathlib.Path, out: pathlib.Path) -> list[str]:
    if not out.exists():
        return [f"{out.as_posix()}: missing (run `python tools/i18n.py build`)"]
    expected = build_notebook(notebook, po_path, out, write=False)
    actual = nbformat.read(str(out), as_version=4)
    want, have = cell_sources(expected), cell_sources(actual)
    if want == have:
        share = chinese_share(markdown_of(actual))
        if share < MIN_CHINESE_SHARE:
            return [f"{out.as_posix()}: {share:.0%} of the prose letters are Chinese, "
                    f"at least {MIN_CHINESE_SHARE:.0%} expected"]
        return []
    for i, (w, h) in enumerate(zip(want, have)):
        if w != h:
            return [f"{out.as_posix()}: cell {i} ({w[1]}) is not what build writes (run build)"]
    return [f"{out.as_posix()}: {len(have)} cells, build writes {len(want)} (run build)"]


# --- the package's catalog -------------------------------------------------------------------

PACKAGE = ROOT / "bertcourse"
PACKAGE_DOMAIN = "bertcourse"
# the call names whose arguments are messages (the names modules import the functions as), and which arguments
FIRST, AFTER_FIRST = slice(0, 1), slice(1, None)
MARKERS = {"_": FIRST, "N_": FIRST}
# the notebooks' own: bertcourse.i18n.tr (their gettext: in a notebook, _ is IPython's last result), and
# tr_table(table, "label", ...), whose labels are every literal after the table
NOTEBOOK_MARKERS = {"tr": FIRST, "tr_table": AFTER_FIRST}
# module-level lists whose functions' docstrings are diagnosis messages (see exercises/core.py)
DIAGNOSES_SUFFIX = "_DIAGNOSES"


def package_catalog_path(root: pathlib.Path = ROOT) -> pathlib.Path:
    """The package's Chinese catalog in the source tree under `root` (what `update package` rewrites)."""
    return root / "bertcourse" / "locale" / LANG / "LC_MESSAGES" / f"{PACKAGE_DOMAIN}.po"


def _read_package_catalog(path: pathlib.Path) -> polib.POFile:
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"catalog: no .po file at {path}")
    return polib.pofile(str(path))


def _docstring_message(function: ast.AST) -> str | None:
    doc = ast.get_docstring(function, clean=False)
    return " ".join(doc.split()) if doc else None     # as exercises.core.message_of reads it


def _marked_calls(tree: ast.AST, markers: dict[str, slice]) -> list[tuple[str, int]]:
    """`(literal, line)` of every string literal in the marked arguments of every marker call in
    `tree` (`markers`: call name -> which positional arguments are messages), in reading order."""
    calls = sorted((node for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in markers),
                   key=lambda node: (node.lineno, node.col_offset))
    return [(arg.value, node.lineno) for node in calls for arg in node.args[markers[node.func.id]]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


def _messages_in(tree: ast.Module) -> list[tuple[str, int]]:
    found = _marked_calls(tree, MARKERS)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id.endswith(DIAGNOSES_SUFFIX)
                                                for t in node.targets):
            for name in ast.walk(node.value):
                if isinstance(name, ast.Name) and name.id in functions:
                    message = _docstring_message(functions[name.id])
                    if message:
                        found.append((message, functions[name.id].lineno))
    return found


def python_of_cell(source: str) -> str:
    """A code cell's source as Python: IPython's magics and shell lines (`%...`, `!...`) become
    blank lines, so that line numbers stay the cell's."""
    return "".join("\n" if line.lstrip().startswith(("%", "!")) else line
                   for line in source.splitlines(keepends=True))


def notebook_messages(notebooks: pathlib.Path) -> list[tuple[str, str]]:
    """`(msgid, "notebooks/NN_x.ipynb:CELL")` for every `tr("...")`, and every literal label of a
    `tr_table(table, "...", ...)`, in the code cells of the English notebooks in the folder
    `notebooks` (CELL: the cell's index), in reading order."""
    found = []
    for path in english_notebooks(notebooks.parent):
        nb = nbformat.read(str(path), as_version=4)
        where = path.relative_to(notebooks.parent).as_posix()
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(python_of_cell(cell.source))
            except SyntaxError as error:
                raise SyntaxError(f"{where}, cell {index}: {error.msg} (line {error.lineno})") from None
            found += [(msgid, f"{where}:{index}") for msgid, _line in _marked_calls(tree, NOTEBOOK_MARKERS)]
    return found


def extract_messages(package: pathlib.Path | None = None) -> dict[str, list[str]]:
    """Every learner-facing string of the package in the folder `package` (default: this
    checkout's `bertcourse/`) and of the notebooks beside it (`notebooks/`, when there is one):
    `{msgid: ["path:line", ...]}`, paths from the package's parent. Marked strings are the first
    argument of `_(...)` / `N_(...)` calls when it is a literal, the docstrings of the functions
    listed in a module-level `*_DIAGNOSES` list, and the literal argument of `tr(...)` in the
    English notebooks' code cells ("path:cell index")."""
    package = PACKAGE if package is None else pathlib.Path(package)
    if not package.is_dir():
        raise FileNotFoundError(f"extract_messages: package must be a folder, got {package}")
    messages: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(package.parent).as_posix()
        for msgid, line in _messages_in(tree):
            if msgid:
                messages.setdefault(msgid, []).append(f"{where}:{line}")
    if (package.parent / "notebooks").is_dir():
        for msgid, where in notebook_messages(package.parent / "notebooks"):
            if msgid:
                messages.setdefault(msgid, []).append(where)
    return messages


def package_catalog_problems(path: pathlib.Path | None = None, package: pathlib.Path | None = None) -> list[str]:
    """What keeps the package's Chinese catalog (`path`; default: this checkout's) from covering
    the package (in the folder `package`; default: this checkout's): one line per string that is
    missing, untranslated or fuzzy, and per catalog entry that no code uses any more. An empty
    list means complete."""
    catalog = _read_package_catalog(package_catalog_path() if path is None else path)
    messages = extract_messages(package)
    entries = {e.msgid: e for e in catalog if not e.obsolete}
    problems = []
    for msgid, places in messages.items():
        entry, short = entries.get(msgid), f"{msgid[:70]!r} ({places[0]})"
        if entry is None:
            problems.append(f"missing from the catalog: {short}")
        elif "fuzzy" in entry.flags:
            problems.append(f"fuzzy (the English changed; check the translation): {short}")
        elif not entry.msgstr:
            problems.append(f"untranslated: {short}")
    for msgid in entries:
        if msgid not in messages:
            problems.append(f"stale (no code uses it; run `python tools/i18n.py update package`): {msgid[:70]!r}")
    return problems


def update_package_catalog(path: pathlib.Path | None = None,
                           package: pathlib.Path | None = None) -> tuple[int, int]:
    """Bring the package's catalog at `path` (default: this checkout's) in step with the code of
    `package` (default: this checkout's): add new strings untranslated, record where each is
    used, mark entries that no code uses obsolete (kept at the end of the file, so an edited
    string's old translation is still there to copy). Returns `(added, made_obsolete)`."""
    path = package_catalog_path() if path is None else pathlib.Path(path)
    catalog = _read_package_catalog(path) if path.is_file() else polib.POFile()
    if not path.is_file():
        catalog.metadata = {"Project-Id-Version": PACKAGE_DOMAIN, "Language": "zh_CN", "MIME-Version": "1.0",
                            "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}
    messages = extract_messages(package)
    entries = {e.msgid: e for e in catalog}
    added = obsoleted = 0
    for msgid, places in messages.items():
        entry = entries.get(msgid)
        if entry is None:
            entry = polib.POEntry(msgid=msgid, msgstr="")
            catalog.append(entry)
            added += 1
        entry.obsolete = False
        entry.occurrences = [tuple(p.rsplit(":", 1)) for p in places]
        if "{" in msgid and "python-brace-format" not in entry.flags:
            entry.flags.append("python-brace-format")
    for entry in catalog:
        if entry.msgid not in messages and not entry.obsolete:
            entry.obsolete, entry.occurrences = True, []
            obsoleted += 1
    # in the order of the code (by file, then line), obsolete entries last: what a translator reads
    order = {msgid: (places[0].rsplit(":", 1)[0], int(places[0].rsplit(":", 1)[1]))
             for msgid, places in messages.items()}
    catalog[:] = sorted(catalog, key=lambda e: (e.obsolete, order.get(e.msgid, ("", 0))))
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.wrapwidth = 100
    catalog.save(str(path))
    return added, obsoleted


def package_problems() -> list[str]:
    """The problems of this checkout's package catalog (:func:`package_catalog_problems`), each
    prefixed "package catalog: "; one line if the catalog or the code cannot be read."""
    try:
        problems = package_catalog_problems()
    except (OSError, SyntaxError) as error:
        return [f"package catalog cannot be read, it is unchecked: {error}"]
    return [f"package catalog: {p}" for p in problems]


def english_notebooks(root: pathlib.Path, prefixes: list[str] | None = None) -> list[pathlib.Path]:
    paths = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if prefixes:
        paths = [p for p in paths if any(p.name.startswith(x) for x in prefixes)]
    return paths


CHAPTER_NAME = re.compile(r"[0-9][0-9]_[a-z0-9_]+")


def rename_chapter(old: str, new: str, root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Give chapter ``old`` (a notebook's name without ``.ipynb``, e.g. ``14_scaling_up``) the
    name ``new``: the English notebook, the Chinese one and the catalog move, and the catalog's
    occurrence comments follow, so every translation (msgctxt = cell id, msgid = paragraph) is
    kept as it is. Returns the files written. What else carries the chapter's number
    (``exercises/chNN.py``, CI's shards, the READMEs, ...) is for the caller: see
    :func:`mentions`."""
    for name, value in (("old", old), ("new", new)):
        if not isinstance(value, str) or not CHAPTER_NAME.fullmatch(value):
            raise ValueError(f"{name} must be a chapter's notebook name like 14_scaling_up (two digits, "
                             f"an underscore, lower-case words), got {value!r}")
    if old == new:
        raise ValueError(f"new must differ from old, got {new!r} twice")
    moves = [(root / "notebooks" / f"{old}.ipynb", root / "notebooks" / f"{new}.ipynb"),
             (root / "notebooks" / LANG / f"{old}.ipynb", root / "notebooks" / LANG / f"{new}.ipynb"),
             (root / "locale" / LANG / f"{old}.po", root / "locale" / LANG / f"{new}.po")]
    if not moves[0][0].is_file():
        raise FileNotFoundError(f"old: no English notebook {moves[0][0]}")
    for _src, dest in moves:
        if dest.exists():
            raise ValueError(f"new: {dest} already exists; pick a free name")
    written = []
    for src, dest in moves:
        if not src.exists():
            continue
        if src.suffix == ".po":
            po = polib.pofile(str(src), wrapwidth=0)
            for entry in po:
                entry.occurrences = [(f"notebooks/{new}.ipynb" if where == f"notebooks/{old}.ipynb" else where, line)
                                     for where, line in entry.occurrences]
            po.save(str(dest))
            src.unlink()
        else:
            src.rename(dest)
        written.append(dest)
    return written


def mentions(name: str, root: pathlib.Path = ROOT) -> list[str]:
    """The files git tracks under ``root`` (every file there when it is not a git checkout),
    notebooks aside, that mention ``name`` (a chapter's notebook name or ``chNN``): what a
    renumbering still has to change by hand, CI's shards (``.ci``, ``.github``) included."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True)
        paths = [root / line for line in listed.stdout.splitlines()]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in root.rglob("*") if "__pycache__" not in p.parts]
    found = []
    for path in sorted(paths):
        if not path.is_file() or path.suffix in {".ipynb", ".po", ".json", ".png", ".svg", ".otf", ".ttf"}:
            continue
        try:
            if name in path.read_text(encoding="utf-8"):
                found.append(path.relative_to(root).as_posix())
        except (UnicodeDecodeError, OSError):
            continue
    return found


TERMS = pathlib.Path("locale") / "zh" / "terms.tsv"
# Counts in Chinese prose are written with 万 and 亿 (1.1亿, 2,270万), never with the English
# suffixes K, M and B (110M, 50K): CONTRIBUTING.md, "Translating". Units (MB, GB) are not counts.
# a number that does not continue a name (Flickr30k is a data set, not 30 thousand)
ENGLISH_COUNT = re.compile(r"(?<![A-Za-z\d.,])\d(?:[\d.,]*\d)?(?:\s?[MB]|[kK])(?![A-Za-z])")


@dataclasses.dataclass(frozen=True)
class Term:
    """One row of the term table: the Chinese ``chinese`` for ``english``, never ``variant`` (a
    regular expression), except in an entry whose English matches ``allowed_where``."""
    english: str
    chinese: str
    variant: re.Pattern
    allowed_where: re.Pattern | None = None


def read_terms(path: pathlib.Path) -> list[Term]:
    """The term table (tab-separated; ``#`` starts a comment line)."""
    terms = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) not in (3, 4) or not all(f.strip() for f in fields):
            raise ValueError(f"{path.name} line {number}: expected english<TAB>chinese<TAB>variant"
                             f"[<TAB>allowed where the English says], got {line!r}")
        try:
            terms.append(Term(fields[0], fields[1], re.compile(fields[2]),
                              re.compile(fields[3]) if len(fields) == 4 else None))
        except re.error as error:
            raise ValueError(f"{path.name} line {number}: not a regular expression ({error})") from None
    return terms


def style_problems(root: pathlib.Path = ROOT) -> list[str]:
    """Every catalog entry that names a concept with another term than the term table's, or
    writes a count with an English suffix. Read in the prose a learner sees (``NOT_PROSE`` left
    out). A root without a term table (a test's scratch folder) has nothing to check."""
    if not (root / TERMS).is_file():
        return []
    terms = read_terms(root / TERMS)
    catalogs = sorted((root / "locale" / "zh").glob("*.po")) + [package_catalog_path(root)]
    problems = []
    for path in catalogs:
        if not path.is_file():
            continue
        for entry in polib.pofile(str(path)):
            if entry.obsolete or not entry.msgstr:
                continue
            prose = NOT_PROSE.sub(" ", entry.msgstr)
            where = f"{path.relative_to(root).as_posix()}: {first_words(entry.msgid)!r}"
            for term in terms:
                found = term.variant.search(prose)
                if found and not (term.allowed_where and term.allowed_where.search(entry.msgid)):
                    problems.append(f"{where}: {found.group(0)!r} for {term.english}: write {term.chinese} "
                                    f"(locale/zh/terms.tsv)")
            if is_display_math(entry.msgid) and english_in_math(entry.msgstr):
                problems.append(f"{where}: English in the formula's \\text{{}}: "
                                f"{', '.join(english_in_math(entry.msgstr))} (translate the words)")
            for found in ENGLISH_COUNT.finditer(prose):
                problems.append(f"{where}: {found.group(0)!r}: write counts with 万 or 亿 "
                                f"(e.g. 1.1亿, 2,270万)")
    return problems


def check(root: pathlib.Path = ROOT) -> list[str]:
    """Every problem of the Chinese edition under `root`; empty when all is in step."""
    problems = []
    for nb in english_notebooks(root):
        po = catalog_path(nb, root)
        problems += catalog_problems(nb, po)
        problems += notebook_problems(nb, po, zh_path(nb, root))
    return [p.replace(root.as_posix() + "/", "") for p in problems] + package_problems() + style_problems(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=textwrap.dedent(__doc__.split("\n\n")[1]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "build", "check", "rename"])
    parser.add_argument("chapters", nargs="*", help="notebook name prefixes, e.g. 01 07 (default: all), "
                                                    "or `package` alone after update: the package's catalog")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check(ROOT)
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s)" if problems else "the Chinese edition is in step")
        return 1 if problems else 0
    if args.command == "rename":
        if len(args.chapters) != 2:
            parser.error(f"rename needs OLD and NEW chapter names (e.g. 14_scaling_up 15_scaling_up), "
                         f"got {len(args.chapters)} argument(s)")
        old, new = args.chapters
        try:
            written = rename_chapter(old, new, ROOT)
        except (ValueError, FileNotFoundError) as error:
            parser.error(str(error))
        for path in written:
            print(f"wrote {path.relative_to(ROOT)}")
        left = sorted(set(mentions(old, ROOT)) | set(mentions(f"ch{old[:2]}", ROOT)))
        if left:
            print(f"still naming {old} or ch{old[:2]} (change these by hand, then run update and build):")
            for path in left:
                print(f"  {path}")
        return 0
    if args.command == "update" and "package" in args.chapters:
        if args.chapters != ["package"]:
            parser.error("chapters: `update package` updates the package's catalog alone; "
                         "update the chapters in another call")
        path = package_catalog_path(ROOT)
        added, obsoleted = update_package_catalog(path, ROOT / "bertcourse")
        print(f"{path.relative_to(ROOT)}: {added} new (untranslated), {obsoleted} made obsolete")
        return 0
    notebooks = english_notebooks(ROOT, args.chapters)
    if not notebooks:
        parser.error(f"chapters: no notebook starts with {args.chapters}")
    for nb in notebooks:
        po = catalog_path(nb, ROOT)
        if args.command == "update":
            catalog = update_catalog(nb, po)
            print(f"{po.relative_to(ROOT)}: {len(catalog.translated_entries())} translated, "
                  f"{len(catalog.fuzzy_entries())} fuzzy, {len(catalog.untranslated_entries())} untranslated")
        else:
            out = zh_path(nb, ROOT)
            build_notebook(nb, po, out)
            print(out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
