"""Where the learner stands (bertcourse.learner_progress): nothing is recorded before the learner
opts in; then every check() records done / tried; the file is written atomically, a damaged one
gets a named error and can be started over, export and import carry it across sessions, and
progress() lists every chapter's exercises.

Every test runs in its own tmp_path (the current folder) and ends with this kernel not recording,
because the other test files run check() too and must never write a file."""
from __future__ import annotations

import importlib
import json
import os
import pathlib
import re

import pytest
import torch

import bertcourse
from bertcourse import i18n, learner_progress as lp
from bertcourse.exercises import Exercise, ch01, run_cases

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = lp.DEFAULT_PATH


@pytest.fixture(autouse=True)
def in_tmp_not_recording(tmp_path, monkeypatch):
    """Each test starts and ends in its own folder, not recording, in English."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lp, "_tracked", None)
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def wrong_weights(Q, K):
    return torch.softmax(Q @ K.transpose(-2, -1), dim=-1)       # the scale forgotten


def wrong_masked_softmax(scores, valid_lens):
    return torch.softmax(scores, dim=-1)                         # the mask forgotten


def recorded(path=DEFAULT) -> dict:
    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    assert (data["format"], data["version"]) == ("bertcourse-progress", 1)
    return data["exercises"]


def status(report: lp.Progress, chapter: int, name: str) -> str:
    return next(e.status for e in report.exercises if (e.chapter, e.name) == (chapter, name))


# --- opting in ----------------------------------------------------------------------------------

def test_nothing_is_written_before_the_learner_opts_in(tmp_path, capsys):
    assert ch01.q1.check(ch01._ref_weights)
    assert not ch01.q2.check(wrong_masked_softmax)
    assert list(tmp_path.iterdir()) == []
    report = bertcourse.progress()
    assert list(tmp_path.iterdir()) == []
    assert (report.path, report.recording) == (None, False)
    assert {e.status for e in report.exercises} == {"not started"}
    shown = capsys.readouterr().out
    assert "bertcourse.track_progress()" in shown and "Nothing is recorded" in shown
    assert "Go back" not in str(report)


def test_opting_in_writes_the_file_where_the_learner_chose(tmp_path, capsys):
    bertcourse.track_progress()
    assert [p.name for p in tmp_path.iterdir()] == [DEFAULT]            # visible, beside the notebooks
    assert recorded() == {}
    assert "bertcourse.track_progress() again" in capsys.readouterr().out
    (tmp_path / "mine").mkdir()
    bertcourse.track_progress(tmp_path / "mine" / "record.json")          # a pathlib.Path, elsewhere
    assert "bertcourse.track_progress(" in capsys.readouterr().out
    ch01.q1.check(ch01._ref_weights)
    assert recorded(tmp_path / "mine" / "record.json") == {"ch01": {"q1": "done"}}
    assert recorded() == {}                                                # the first file is left alone


def test_opting_in_keeps_what_the_file_holds(tmp_path):
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    lp._tracked = None                                                     # a kernel restart
    ch01.q2.check(wrong_masked_softmax)
    assert recorded() == {"ch01": {"q1": "done"}}                          # not recording after it
    report = bertcourse.progress()                                         # ... but it still shows the file
    assert (report.recording, status(report, 1, "q1")) == (False, "done")
    assert "To go on recording, run bertcourse.track_progress()" in str(report)
    bertcourse.track_progress()
    ch01.q2.check(wrong_masked_softmax)
    assert recorded() == {"ch01": {"q1": "done", "q2": "tried"}}


# --- what check() records -------------------------------------------------------------------------

def test_check_records_pass_as_done_fail_as_tried_and_not_attempted_as_nothing():
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    ch01.q2.check(wrong_masked_softmax)
    ch01.q3.check(None)                                                    # the starter placeholder
    assert recorded() == {"ch01": {"q1": "done", "q2": "tried"}}
    ch01.q1.check(wrong_weights)                                           # a done stays done
    ch01.q2.check(ch01._ref_masked_softmax)                                # a tried becomes done
    assert recorded() == {"ch01": {"q1": "done", "q2": "done"}}
    report = bertcourse.progress()
    assert [status(report, 1, q) for q in ("q1", "q2", "q3")] == ["done", "done", "not started"]
    assert report.go_back_to == 1
    assert re.search(r"Go back to chapter 1 \(Self-attention\); not done yet: Q3 \(", str(report))


def test_an_exercise_made_outside_the_chapters_records_nothing():
    bertcourse.track_progress()
    mine = Exercise("Q0 (doubling)", "double_it",
                    lambda answer: run_cases(answer, lambda x: 2 * x, [("a vector", (torch.ones(2),))]),
                    hints=["double it"], solution="def double_it(x):\n    return 2 * x\n")
    assert mine.check(lambda x: 2 * x)
    assert recorded() == {}


def test_a_file_that_cannot_be_written_is_reported_and_the_check_goes_on(monkeypatch, capsys):
    bertcourse.track_progress()

    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")
    monkeypatch.setattr(lp.os, "replace", refuse)
    result = ch01.q1.check(ch01._ref_weights)
    assert result.status == "pass"
    assert "(progress not recorded: read-only file system)" in capsys.readouterr().out


# --- atomic writes --------------------------------------------------------------------------------

def test_a_write_killed_midway_leaves_the_old_file_readable(tmp_path, monkeypatch):
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    before = (tmp_path / DEFAULT).read_text(encoding="utf-8")
    dump = json.dump

    def killed(data, f, **kwargs):                  # half the new file written, then the kernel dies
        f.write(json.dumps(data)[:20])
        f.flush()
        raise KeyboardInterrupt
    monkeypatch.setattr(lp.json, "dump", killed)
    with pytest.raises(KeyboardInterrupt):
        ch01.q2.check(wrong_masked_softmax)
    monkeypatch.setattr(lp.json, "dump", dump)
    assert (tmp_path / DEFAULT).read_text(encoding="utf-8") == before
    assert recorded() == {"ch01": {"q1": "done"}}
    assert [p.name for p in tmp_path.iterdir()] == [DEFAULT]          # the temporary file is gone

    def killed_before_the_rename(src, dst):
        raise SystemExit("killed")
    monkeypatch.setattr(lp.os, "replace", killed_before_the_rename)
    with pytest.raises(SystemExit):
        lp._write(str(tmp_path / DEFAULT), {"ch01": {"q1": "done", "q2": "tried"}})
    assert (tmp_path / DEFAULT).read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == [DEFAULT]


# --- a damaged file ------------------------------------------------------------------------------

DAMAGED = {
    "not-json": ("{\"format\": \"bertcourse-progress\", \"vers", "not JSON"),
    "not-text": (b"\xff\xfe\x00garbage", "not text"),
    "unknown-version": ('{"format": "bertcourse-progress", "version": 9, "exercises": {}}', "format version 9"),
    "wrong-status": ('{"format": "bertcourse-progress", "version": 1, "exercises": {"ch01": {"q1": "great"}}}',
                     "must map each chapter"),
    "no-exercises": ('{"format": "bertcourse-progress", "version": 1}', "must map each chapter"),
}


@pytest.mark.parametrize("content, says", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_file_gets_a_named_error_and_can_be_started_over(tmp_path, content, says, capsys):
    path = tmp_path / DEFAULT
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(lp.ProgressFileError) as error:
        bertcourse.track_progress()
    message = str(error.value)
    assert isinstance(error.value, ValueError)
    assert str(path) in message and says in message
    assert f"bertcourse.reset_progress({str(path)!r})" in message
    assert lp._tracked is None                                  # not recording into a damaged file
    with pytest.raises(lp.ProgressFileError):
        bertcourse.progress()                                   # it shows the file in the current folder
    bertcourse.reset_progress(str(path))                        # the way out the message names
    assert not path.exists() and "Deleted" in capsys.readouterr().out
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    assert recorded() == {"ch01": {"q1": "done"}}


@pytest.mark.parametrize("content", ["[1, 2, 3]", '{"theme": "dark"}'])
def test_a_json_file_of_something_else_is_named_and_never_deleted(tmp_path, content):
    path = tmp_path / DEFAULT
    path.write_text(content)
    with pytest.raises(lp.ProgressFileError) as error:
        bertcourse.track_progress()
    message = str(error.value)
    assert str(path) in message and "not a bertcourse progress file" in message and "left alone" in message
    assert "reset_progress" not in message and "bertcourse.track_progress('my-progress.json')" in message
    with pytest.raises(ValueError, match="not a bertcourse progress file"):
        bertcourse.reset_progress()
    assert path.read_text() == content
    bertcourse.track_progress("my-progress.json")               # the way out the message names
    assert recorded("my-progress.json") == {}


def test_reset_progress_starts_over_and_deletes_only_progress_files(tmp_path, capsys):
    bertcourse.reset_progress()
    assert "Nothing to reset" in capsys.readouterr().out
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    bertcourse.reset_progress()                                 # the file this kernel records into
    assert recorded() == {} and "recording goes on" in capsys.readouterr().out
    ch01.q2.check(wrong_masked_softmax)
    assert recorded() == {"ch01": {"q2": "tried"}}
    (tmp_path / "settings.json").write_text('{"theme": "dark"}')
    with pytest.raises(ValueError, match="not a bertcourse progress file"):
        bertcourse.reset_progress("settings.json")
    assert (tmp_path / "settings.json").exists()
    (tmp_path / "notes.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"\.json file"):
        bertcourse.reset_progress("notes.ipynb")
    assert (tmp_path / "notes.ipynb").exists()


# --- export and import ---------------------------------------------------------------------------

def test_export_and_import_round_trip_and_a_merge_keeps_done(tmp_path, capsys):
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    ch01.q2.check(wrong_masked_softmax)
    bertcourse.export_progress("download.json")
    assert "bertcourse.import_progress('download.json')" in capsys.readouterr().out
    assert recorded("download.json") == {"ch01": {"q1": "done", "q2": "tried"}}

    (tmp_path / "new-session").mkdir()                          # a new session, a new folder
    os.chdir(tmp_path / "new-session")
    lp._tracked = None
    bertcourse.track_progress()
    ch01.q1.check(wrong_weights)                                # tried here, done in the export
    ch01.q2.check(ch01._ref_masked_softmax)                     # done here, tried in the export
    ch01.q3.check(wrong_weights)
    bertcourse.import_progress(tmp_path / "download.json")
    assert "a done stays done" in capsys.readouterr().out
    assert recorded() == {"ch01": {"q1": "done", "q2": "done", "q3": "tried"}}

    bertcourse.import_progress(tmp_path / "download.json", replace=True)
    assert recorded() == recorded(tmp_path / "download.json")   # the round trip: exactly what was exported


def test_a_record_of_a_newer_course_is_kept_through_a_merge(tmp_path):
    other = {"format": "bertcourse-progress", "version": 1, "exercises": {"ch99": {"q9": "done"}}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    bertcourse.track_progress()
    bertcourse.import_progress("other.json")
    ch01.q1.check(ch01._ref_weights)
    assert recorded() == {"ch01": {"q1": "done"}, "ch99": {"q9": "done"}}
    ours = {c.number for c in lp.chapters()}
    assert all(e.chapter in ours for e in bertcourse.progress().exercises)   # shown: this course's chapters


# --- progress() ----------------------------------------------------------------------------------

def test_progress_lists_every_chapters_exercises_also_chapters_not_imported():
    chapters = lp.chapters()
    # every chapter's notebook has its exercises (the numbers may leave a gap for chapters to come)
    assert [c.number for c in chapters] == [int(p.name[:2]) for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    report = bertcourse.progress()
    for chapter in chapters:
        module = importlib.import_module(f"bertcourse.exercises.{chapter.module}")
        defined = {n: v for n, v in vars(module).items() if isinstance(v, Exercise)}
        assert list(chapter.names) == list(defined), chapter.module
        assert list(chapter.labels) == [defined[n].name for n in chapter.names], chapter.module
        assert [e.name for e in report.exercises if e.chapter == chapter.number] == list(chapter.names)
    assert sum(len(c.names) for c in chapters) == len(report.exercises) >= 40


def test_the_chapter_titles_are_the_readmes():
    rows = re.findall(r"^\| (\d+) \| \[([^\]]+)\]\(notebooks/", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    assert {int(n): title for n, title in rows} == lp.TITLES


def test_the_table_has_one_line_per_chapter_and_says_where_to_go_back(capsys):
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    capsys.readouterr()
    report = bertcourse.progress()
    lines = capsys.readouterr().out.splitlines()
    assert lines == str(report).splitlines() and str(report) == repr(report)       # printed and returned
    rows = [line for line in lines if re.match(r"^ *\d+ ", line)]
    assert len(rows) == len(lp.chapters())
    assert rows[0].startswith("  1 Self-attention") and rows[0].endswith("q1 ✓  q2 ·  q3 ·  q4 ·  q5 ·  quiz ·")
    assert all(row.endswith("quiz ·") for row in rows)                  # every chapter has its quiz
    assert rows[-1].startswith(" 14 Scaling up (appendix)")
    assert len({row.index("q1") for row in rows}) == 1          # the marks line up
    assert "✓ done   ~ tried   · not started" in lines


def test_the_table_speaks_chinese_and_lines_up_chinese_titles():
    bertcourse.track_progress()
    ch01.q1.check(ch01._ref_weights)
    i18n.set_language("zh")
    text = str(bertcourse.progress())
    assert "自注意力" in text and "已完成" in text and "回到第1章" in text
    rows = [line for line in text.splitlines() if re.match(r"^ *\d+ ", line)]
    assert len({lp._width(row[:row.index("q1")]) for row in rows}) == 1


def test_every_exercise_done_says_so(monkeypatch):
    bertcourse.track_progress()
    everything = {c.module: {n: "done" for n in c.names} for c in lp.chapters()}
    lp._write(lp._tracked, everything)
    report = bertcourse.progress()
    assert report.go_back_to is None and "Every exercise of every chapter is done." in str(report)


# --- wrong inputs --------------------------------------------------------------------------------

def test_wrong_inputs_get_named_errors(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "settings.json").write_text("[1]")
    cases = [
        (lambda: bertcourse.track_progress(3), TypeError, "path must be a path"),
        (lambda: bertcourse.track_progress(b"p.json"), TypeError, "path must be a path"),
        (lambda: bertcourse.track_progress("  "), ValueError, "empty string"),
        (lambda: bertcourse.track_progress(tmp_path / "folder"), ValueError, "is a folder"),
        (lambda: bertcourse.track_progress("progress.txt"), ValueError, ".json file"),
        (lambda: bertcourse.track_progress("no_such_folder/p.json"), FileNotFoundError, "does not exist"),
        (lambda: bertcourse.import_progress("no_such.json"), FileNotFoundError, "no_such.json"),
        (lambda: bertcourse.import_progress("settings.json", replace="yes"), TypeError, "replace"),
        (lambda: bertcourse.import_progress("settings.json"), ValueError, "track_progress() first"),
        (lambda: bertcourse.export_progress("out.json"), ValueError, "nothing is recorded yet"),
        (lambda: bertcourse.export_progress(None), TypeError, "path"),
        (lambda: bertcourse.reset_progress(["p.json"]), TypeError, "path"),
        (lambda: lp.record(ch01.q1, "passed"), ValueError, "status"),
        (lambda: lp.record(ch01.q1, True), TypeError, "status"),
    ]
    for call, error, says in cases:
        with pytest.raises(error) as e:
            call()
        assert says in str(e.value), str(e.value)
    assert lp._tracked is None and not (tmp_path / DEFAULT).exists()
    bertcourse.track_progress()
    with pytest.raises(ValueError, match="is not a progress file"):
        bertcourse.export_progress("settings.json")               # never overwrites another file
    assert (tmp_path / "settings.json").read_text() == "[1]"
    with pytest.raises(lp.ProgressFileError, match="settings.json"):
        bertcourse.import_progress("settings.json")
