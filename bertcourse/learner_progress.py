"""Where you stand: which exercises of which chapter are done, tried or not started.

Nothing is recorded until the learner turns it on, in each kernel::

    import bertcourse
    bertcourse.track_progress()        # records into ./bertcourse-progress.json from now on
    ...                                # every q1.check() records its result
    bertcourse.progress()              # a table: every chapter, every exercise, where to go back to

A kernel that restarts records nothing until ``track_progress()`` runs again (the file keeps
what it recorded). A passed check records the exercise as *done*, a failed one as *tried*;
an answer not attempted yet records nothing, and a *done* stays done. The record is one small
JSON file beside the notebooks, written atomically (a temporary file in the same folder,
flushed to disk, then renamed over the old one), so a kernel killed while writing leaves the
old file readable. Colab and Binder lose their files when the session ends:
:func:`export_progress` writes a copy to download, and :func:`import_progress` merges one back.

The chapters' exercises are read from the chapter modules' source (``exercises/chNN.py``) with
:mod:`ast`, without importing them, so :func:`progress` lists every chapter, also those not
opened in this kernel. It is a foundation (it imports the standard library, the course's checks
and :mod:`bertcourse.i18n`), so the package's ``__init__`` can offer ``bertcourse.progress()``;
the exercise checker (``exercises/core.py``) calls :func:`record`.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import importlib.resources
import json
import os
import re
import stat
import sys
import tempfile
import unicodedata
from dataclasses import dataclass

from ._checks import check_choice, check_path
from .i18n import gettext as _, gettext_noop as N_

__all__ = ["DEFAULT_PATH", "Chapter", "ExerciseProgress", "Progress", "ProgressFileError", "chapters",
           "export_progress", "import_progress", "progress", "record", "reset_progress", "track_progress"]

DEFAULT_PATH = "bertcourse-progress.json"
"""The progress file's default name: visible, in the current folder (beside the notebooks)."""
FORMAT, VERSION = "bertcourse-progress", 1
STATUSES = ("done", "tried")            # what the file holds, best first ("not started": no entry)
CHECK_STATUS = {"pass": "done", "fail": "tried", "not attempted": None}     # CheckResult.status ->
MARKS = {"done": "✓", "tried": "~", "not started": "·"}
CHAPTER_MODULE = re.compile(r"ch(\d\d)")
TITLES = {      # as in the README's chapter table
    1: N_("Self-attention"), 2: N_("Positional encoding"), 3: N_("The Transformer"),
    4: N_("BERT's input"), 5: N_("Masked language modelling"), 6: N_("Next sentence prediction"),
    7: N_("Pretraining a tiny BERT"), 8: N_("A real pretrained BERT"), 9: N_("Fine-tuning BERT"),
    10: N_("Sentence pairs: natural language inference"), 11: N_("Token tags: named entities"),
    12: N_("Answer spans: question answering"),
    13: N_("BERT in practice"), 14: N_("Scaling up (appendix)"),
}

_tracked: str | None = None       # the absolute path this kernel records into (None: not recording)


class ProgressFileError(ValueError):
    """A progress file that cannot be read as one (not JSON, wrong shape, unknown version):
    the message names the file and how to start over."""


# --- the chapters' exercises, read from their source ---

@dataclass(frozen=True)
class Chapter:
    """One chapter's exercises: ``names`` (``("q1", "q2", ...)``, in the module's order) and
    their display ``labels`` (English msgids such as ``"Q1 (add & norm)"``, translated when shown)."""
    number: int
    module: str             # "ch01"
    title: str              # English msgid
    names: tuple
    labels: tuple


def _label(call: ast.Call) -> str | None:
    """An ``Exercise(...)`` call's display name: its first argument or ``name=``, a string
    literal, possibly marked ``N_("...")``."""
    node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "name"), None)
    marked = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("N_", "_")
    if marked and node.args:
        node = node.args[0]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _exercises_in(source: str) -> list[tuple[str, str]]:
    """``[(name, label)]`` of the module-level names that ``source`` binds to ``Exercise(...)`` or
    ``Quiz(...)``."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        func = value.func if isinstance(value, ast.Call) else None
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if isinstance(target, ast.Name) and called in ("Exercise", "Quiz"):
            found.append((target.id, _label(value) or target.id))
    return found


@functools.lru_cache(maxsize=None)
def chapters() -> tuple[Chapter, ...]:
    """Every chapter that has exercises (``bertcourse/exercises/chNN.py``), in order, read as
    text: no chapter module is imported."""
    folder = importlib.resources.files("bertcourse").joinpath("exercises")
    out = []
    for file in sorted(folder.iterdir(), key=lambda f: f.name):
        match = CHAPTER_MODULE.fullmatch(file.name.removesuffix(".py"))
        if match and file.name.endswith(".py"):
            found = _exercises_in(file.read_text(encoding="utf-8"))
            number = int(match.group(1))
            out.append(Chapter(number, match.group(0), TITLES.get(number, f"ch{number:02d}"),
                               tuple(n for n, _l in found), tuple(label for _n, label in found)))
    return tuple(out)


# --- the file ---

def _path(name: str, value, *, must_exist: bool = False) -> str:
    """``value`` as an absolute str path of a ``.json`` file whose folder exists (the course's one
    path check, :func:`bertcourse._checks.check_path`, and what a progress file needs besides)."""
    path = check_path(name, value, kind="file", must_exist=must_exist, what="progress file")
    if not path.lower().endswith(".json"):
        raise ValueError(f"{name} must name a .json file (the progress file is JSON), got {path!r}")
    path = os.path.abspath(path)
    if not os.path.isdir(os.path.dirname(path)):
        raise FileNotFoundError(f"{name} {value!r}: the folder {os.path.dirname(path)!r} does not exist "
                                f"(create it first, or choose a file in an existing folder)")
    return path


def _damaged(path: str, why: str) -> ProgressFileError:
    return ProgressFileError(
        f"progress file {path!r} {why}. To start over, run bertcourse.reset_progress({path!r}) (it deletes "
        f"the file: what it recorded is lost) or move the file away, then turn recording on again "
        f"(bertcourse.track_progress)")


def _parse(text: str, path: str) -> dict:
    """The ``{chapter: {exercise: status}}`` of a progress file's text; ProgressFileError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise _damaged(path, f"is damaged: it is not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:      # not ours: never suggest deleting it
        other = "my-progress.json" if os.path.basename(path) == DEFAULT_PATH else DEFAULT_PATH
        raise ProgressFileError(
            f"progress file {path!r} is JSON but not a bertcourse progress file (no \"format\": \"{FORMAT}\" in "
            f"it), so it is left alone: record into another file, e.g. bertcourse.track_progress({other!r}); if it "
            f"is a damaged progress file, move it away or delete it yourself")
    if data.get("version") != VERSION:
        raise _damaged(path, f"has format version {data.get('version')!r}, and this bertcourse reads version "
                             f"{VERSION}: update bertcourse (or the file was edited)")
    record = data.get("exercises")
    good = isinstance(record, dict) and all(
        isinstance(chapter, str) and isinstance(done, dict)
        and all(isinstance(name, str) and status in STATUSES for name, status in done.items())
        for chapter, done in record.items())
    if not good:
        raise _damaged(path, f"is damaged: \"exercises\" must map each chapter to {{exercise: one of "
                             f"{list(STATUSES)}}}")
    return {c: dict(d) for c, d in record.items() if d}


def _read(path: str) -> dict:
    """The record in ``path`` (empty if there is no file)."""
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise _damaged(path, "is damaged: it is not text") from None
    return _parse(text, path)


def _write(path: str, record: dict) -> None:
    """Write ``record`` to ``path`` atomically: a temporary file in the same folder, flushed and
    synced to disk, then renamed over ``path``; a crash before the rename leaves the old file."""
    data = {"format": FORMAT, "version": VERSION,
            "exercises": {c: dict(sorted(d.items())) for c, d in sorted(record.items()) if d}}
    folder = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    with contextlib.suppress(OSError, AttributeError):     # the rename itself, on disk (POSIX)
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)


def _merge(into: dict, other: dict) -> dict:
    """``into`` updated with ``other``: for each exercise the better status (a done stays done)."""
    out = {c: dict(d) for c, d in into.items()}
    for chapter, done in other.items():
        for name, status in done.items():
            old = out.setdefault(chapter, {}).get(name)
            if old is None or STATUSES.index(status) < STATUSES.index(old):
                out[chapter][name] = status
    return out


def _count(record: dict) -> int:
    return sum(len(d) for d in record.values())


def _shown_file() -> str | None:
    """The file :func:`progress` and :func:`export_progress` read: the one this kernel records
    into, else ``bertcourse-progress.json`` in the current folder if there is one."""
    if _tracked is not None:
        return _tracked
    default = os.path.abspath(DEFAULT_PATH)
    return default if os.path.isfile(default) else None


# --- the learner's functions ---

def track_progress(path: str | os.PathLike = DEFAULT_PATH) -> None:
    """Record every exercise check of this kernel from now on into ``path`` (a JSON file, by
    default ``bertcourse-progress.json`` in the current folder: beside the notebooks). What
    the file already holds is kept. A restarted kernel records nothing until this runs again."""
    path, given = _path("path", path), os.fspath(path)
    record = _read(path)                    # a damaged file: ProgressFileError, and no recording
    if not os.path.isfile(path):
        _write(path, record)
    global _tracked
    _tracked = path
    again = f"bertcourse.track_progress({'' if given == DEFAULT_PATH else repr(given)})"
    print(_("Recording your progress in {path} ({n} results so far). After a kernel restart nothing is "
            "recorded until you run {again} again; see where you stand with bertcourse.progress().").format(
        path=path, n=_count(record), again=again))


def record(exercise: object, status: str) -> None:
    """Record a check's result for ``exercise`` (an ``Exercise`` of a chapter module) when this
    kernel records progress: ``status`` is ``CheckResult.status`` ("pass" -> done, "fail" ->
    tried, "not attempted" -> nothing). Called by ``Exercise.check()``; a file that cannot be
    written or read is reported in one line, and the check goes on."""
    check_choice("status", status, CHECK_STATUS)
    if _tracked is None or CHECK_STATUS[status] is None:
        return
    where = _chapter_of(exercise)
    if where is None:                       # an exercise made outside the chapter modules
        return
    try:
        old = _read(_tracked)
        new = _merge(old, {where[0]: {where[1]: CHECK_STATUS[status]}})
        if new != old or not os.path.isfile(_tracked):
            _write(_tracked, new)
    except (OSError, ValueError) as e:
        print(_("(progress not recorded: {error})").format(error=e))


def _chapter_of(exercise) -> tuple[str, str] | None:
    """``("ch01", "q1")``: the loaded chapter module that binds ``exercise`` to one of its exercises."""
    for chapter in chapters():
        module = sys.modules.get(f"bertcourse.exercises.{chapter.module}")
        namespace = vars(module) if module is not None else {}
        for name in chapter.names:
            if namespace.get(name) is exercise:
                return chapter.module, name
    return None


def reset_progress(path: str | os.PathLike | None = None) -> None:
    """Start over: delete the progress file ``path`` (default: the file this kernel records into,
    else ``bertcourse-progress.json`` in the current folder). A kernel recording into it goes on
    recording, into a fresh file. Only a progress file, or a damaged one, is deleted."""
    if path is None:
        path = _tracked if _tracked is not None else DEFAULT_PATH
    path = _path("path", path)
    if not os.path.isfile(path):
        print(_("Nothing to reset: {path} does not exist.").format(path=path))
        return
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = {"format": FORMAT}           # damaged: what reset_progress is for
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"reset_progress: path {path!r} is JSON but not a bertcourse progress file (no "
                         f"\"format\": \"{FORMAT}\" in it), so it is not deleted; delete it yourself if "
                         f"you are sure")
    if path == _tracked:
        _write(path, {})
        print(_("Started over: {path} is empty now, and recording goes on.").format(path=path))
    else:
        os.remove(path)
        print(_("Deleted {path}: nothing it recorded is kept.").format(path=path))


def export_progress(path: str | os.PathLike) -> None:
    """Write what is recorded (see :func:`progress`) to the JSON file ``path``, to download from
    Colab or Binder before the session ends; :func:`import_progress` reads it back. An existing
    file is overwritten only if it is a progress file."""
    target = _path("path", path)
    source = _shown_file()
    if source is None:
        raise ValueError(f"export_progress: nothing is recorded yet, so there is nothing to write to {target!r}: "
                         f"turn recording on with bertcourse.track_progress() and check some exercises first")
    record = _read(source)
    if os.path.isfile(target) and target != source:
        try:
            _read(target)
        except ProgressFileError:
            raise ValueError(f"export_progress: path {target!r} exists and is not a progress file: choose "
                             f"another name (it is not overwritten)") from None
    _write(target, record)
    name = os.path.basename(target)
    print(_("Saved {n} results to {path}. Download it before the session ends (Colab: the Files panel, or "
            "`from google.colab import files; files.download({name!r})`; Binder: right-click it in the file "
            "browser, Download). In a new session upload it, then run bertcourse.track_progress() and "
            "bertcourse.import_progress({name!r}).").format(n=_count(record), path=target, name=name))


def import_progress(path: str | os.PathLike, replace: bool = False) -> None:
    """Read the progress file ``path`` (from :func:`export_progress`) into the file this kernel
    records into. By default the two are merged, exercise by exercise, keeping the better status
    (a done stays done); ``replace=True`` keeps only what ``path`` holds."""
    if not isinstance(replace, bool):
        raise TypeError(f"import_progress: replace must be True or False, got {type(replace).__name__} "
                        f"({replace!r:.40})")
    source = _path("path", path, must_exist=True)
    if _tracked is None:
        raise ValueError(f"import_progress: this kernel does not record progress, so there is nowhere to import "
                         f"{source!r} into: run bertcourse.track_progress() first, then import again")
    imported = _read(source)
    record = imported if replace else _merge(_read(_tracked), imported)
    _write(_tracked, record)
    if replace:
        print(_("Replaced what {path} recorded with the {n} results of {source}.").format(
            path=_tracked, n=_count(imported), source=source))
    else:
        print(_("Merged the {n} results of {source} into {path} (a done stays done): {total} results now.").format(
            n=_count(imported), source=source, path=_tracked, total=_count(record)))


# --- what progress() shows ---

@dataclass(frozen=True)
class ExerciseProgress:
    """One exercise's line in :class:`Progress`: ``status`` is "done", "tried" or "not started"."""
    chapter: int
    name: str               # "q1"
    label: str              # English msgid, e.g. "Q1 (add & norm)"
    status: str


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal or a notebook's output: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@dataclass(frozen=True, repr=False)
class Progress:
    """What :func:`progress` returns: every chapter's exercises with their status. Its ``str``
    (and ``repr``) is the table, in the current language."""
    exercises: tuple
    path: str | None        # the file read (None: nothing was recorded)
    recording: bool         # whether this kernel records into ``path``

    @property
    def go_back_to(self) -> int | None:
        """The first chapter with an exercise not done (None when every one is done)."""
        return next((e.chapter for e in self.exercises if e.status != "done"), None)

    def __str__(self) -> str:
        titles = {c.number: _(c.title) for c in chapters()}
        if self.recording:
            head = _("Your progress, recorded in {path}:").format(path=self.path)
        elif self.path is not None:
            head = _("Not recording in this kernel; this is what {path} recorded. To go on recording, run "
                     "bertcourse.track_progress().").format(path=self.path)
        else:
            head = _("Nothing is recorded: progress is recorded only once you turn it on, in every new kernel, "
                     "with bertcourse.track_progress() (it writes {file} beside your notebooks).").format(
                file=DEFAULT_PATH)
        width = max(map(_width, titles.values()), default=0)
        lines = [head]
        for number, title in titles.items():
            marks = "  ".join(f"{e.name} {MARKS[e.status]}" for e in self.exercises if e.chapter == number)
            lines.append(f"{number:>3} {title}{' ' * (width - _width(title))}   {marks}")
        lines.append(_("✓ done   ~ tried   · not started"))
        chapter = self.go_back_to
        if chapter is None:
            lines.append(_("Every exercise of every chapter is done."))
        elif any(e.status != "not started" for e in self.exercises):
            todo = [_(e.label) for e in self.exercises if e.chapter == chapter and e.status != "done"]
            lines.append(_("Go back to chapter {n} ({title}); not done yet: {exercises}.").format(
                n=chapter, title=titles[chapter], exercises=_(", ").join(todo)))
        elif self.path is not None:
            lines.append(_("Start with chapter {n} ({title}).").format(n=chapter, title=titles[chapter]))
        return "\n".join(lines)

    __repr__ = __str__

    def _ipython_display_(self) -> None:
        pass            # progress() has printed the table; a cell ending in progress() would show it twice


def progress() -> Progress:
    """Print where you stand: one line per chapter (every chapter of the course), each exercise
    marked ✓ done, ~ tried or · not started, and the chapter to go back to. Reads the file this
    kernel records into (:func:`track_progress`), else ``bertcourse-progress.json`` in the current
    folder if there is one; returns the table as a :class:`Progress`."""
    path = _shown_file()
    recorded = _read(path) if path is not None else {}
    rows = tuple(ExerciseProgress(c.number, name, label, recorded.get(c.module, {}).get(name, "not started"))
                 for c in chapters() for name, label in zip(c.names, c.labels))
    report = Progress(rows, path, _tracked is not None)
    print(report)
    return report
