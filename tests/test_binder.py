"""Binder and conda readiness, and the README's Colab / Binder badges.

* environment.yml lists the same packages as requirements.txt (conda names mapped to pip
  names), with versions that admit requirements.txt's pins;
* binder/environment.yml lists only what the notebooks need at run time (pyproject's
  dependencies and [pretrained] extra; Binder brings JupyterLab, IPython and the kernel),
  each pinned to a major.minor that pyproject admits, with a comment saying why;
* binder/postBuild installs the course package, without dependencies;
* every badge in README.md opens a notebook that exists, and every notebook has both badges.
"""
from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import tomllib
import urllib.parse

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV_FILES = ["environment.yml", "binder/environment.yml"]

# conda-forge name -> pip name, where they differ. pytorch-cpu pins the CPU-only build;
# matplotlib-base and nbconvert-core are the same packages without Qt and pandoc.
CONDA_TO_PIP = {"pytorch-cpu": "torch", "pytorch": "torch", "matplotlib-base": "matplotlib",
                "nbconvert-core": "nbconvert"}
NOT_PACKAGES = {"python", "pip"}       # the environment itself, not requirements


def _requirements() -> dict[str, Version]:
    """requirements.txt as {pip name: pinned version}; every line must be an exact pin."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        # -r requirements-book.txt: the book's builder (Sphinx), which Binder does not need
        if not line or line == "-e ." or line.startswith("-r "):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"requirements.txt: {line} is not an exact pin"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def _conda_spec(entry: str) -> tuple[str, str, str]:
    """'numpy=2.4' -> ('numpy', '=', '2.4'); also '==' and a bare name ('', '')."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(==|=)?\s*([0-9][0-9A-Za-z.*]*)?", entry.strip())
    assert match, f"cannot read the conda spec {entry!r}"
    name, op, version = match.groups()
    return name.lower(), op or "", version or ""


def _conda_admits(op: str, version: str, pinned: Version) -> bool:
    """conda's '=2.4' matches 2.4.*, '==2.4.1' exactly that version."""
    if op == "==":
        return Version(version) == pinned
    parts = version.rstrip(".*").split(".")
    return [int(p) for p in parts] == list(pinned.release[:len(parts)])


def _environment(path: str) -> dict:
    env = yaml.safe_load((ROOT / path).read_text())
    conda, pip = {}, {}
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            for line in entry["pip"]:
                pip[line] = None
            continue
        name, op, version = _conda_spec(entry)
        conda[name] = (op, version)
    return {"channels": env.get("channels", []), "conda": conda, "pip": list(pip)}


# Provided by Binder itself (repo2docker's environment runs JupyterLab and the kernel).
BINDER_PROVIDES = {"ipython", "ipykernel", "jupyterlab"}


def test_binder_environment_has_what_the_notebooks_need_pinned_and_argued():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {canonicalize_name(r.name): r for r in map(
        Requirement, project["dependencies"] + project["optional-dependencies"]["pretrained"])}
    text = (ROOT / "binder/environment.yml").read_text()
    env = _environment("binder/environment.yml")
    listed, problems = set(), []
    for name, (op, version) in env["conda"].items():
        if name in NOT_PACKAGES:
            continue
        pip_name = canonicalize_name(CONDA_TO_PIP.get(name, name))
        listed.add(pip_name)
        line = next((l for l in text.splitlines() if l.strip().startswith(f"- {name}=")), "")
        if pip_name not in needed:
            problems.append(f"{name}: not a run-time requirement of the course (pyproject)")
        elif len(version.split(".")) < 2:
            problems.append(f"{name}{op}{version}: pin major.minor")
        elif not needed[pip_name].specifier.contains(Version(version.rstrip(".*")), prereleases=True):
            problems.append(f"{name}{op}{version}: pyproject requires {needed[pip_name]}")
        if "#" not in line:
            problems.append(f"{name}: say in a comment on its line why this version")
    listed |= {canonicalize_name(Requirement(l).name) for l in env["pip"] if not l.startswith("-")}
    missing = sorted(set(needed) - listed - BINDER_PROVIDES)
    assert not missing, f"binder/environment.yml lacks {missing}: postBuild installs with --no-deps"
    assert not problems, "binder/environment.yml:\n" + "\n".join(problems)


def test_environment_lists_the_same_packages_as_requirements(path="environment.yml"):
    pins = _requirements()
    env = _environment(path)
    listed: dict[str, str] = {}                       # pip name -> where it is listed
    problems = []
    for name, (op, version) in env["conda"].items():
        if name in NOT_PACKAGES:
            continue
        pip_name = canonicalize_name(CONDA_TO_PIP.get(name, name))
        assert pip_name not in listed, f"{path}: {pip_name} listed twice"
        listed[pip_name] = f"conda {name}{op}{version}"
        if pip_name not in pins:
            continue
        if op != "==" and len(version.split(".")) < 2:
            problems.append(f"{name}{op}{version}: pin at least major.minor (requirements: {pins[pip_name]})")
        elif not _conda_admits(op, version, pins[pip_name]):
            problems.append(f"{name}{op}{version} does not admit requirements.txt's {pins[pip_name]}")
    for line in env["pip"]:
        if line.startswith("-e"):
            continue
        req = Requirement(line)
        pip_name = canonicalize_name(req.name)
        assert pip_name not in listed, f"{path}: {pip_name} listed twice"
        listed[pip_name] = f"pip {line}"
        if pip_name in pins and str(req.specifier) != f"=={pins[pip_name]}":
            problems.append(f"pip {line}: requirements.txt pins {pip_name}=={pins[pip_name]}")
    missing = sorted(set(pins) - set(listed))
    extra = sorted(set(listed) - set(pins))
    assert not missing, f"{path} lacks {missing} (in requirements.txt)"
    assert not extra, f"{path} has {[listed[e] for e in extra]}, which requirements.txt lacks"
    assert not problems, f"{path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", ENV_FILES)
def test_environment_is_conda_forge_python_311_cpu_torch(path):
    env = _environment(path)
    assert env["channels"][0] == "conda-forge" and "defaults" not in env["channels"], env["channels"]
    assert env["conda"].get("python") == ("=", "3.11"), env["conda"].get("python")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert Requirement(f"python{requires}").specifier.contains("3.11.0"), requires
    # The CPU-only PyTorch: a plain `pytorch` may resolve to a multi-GB CUDA build.
    assert "pytorch-cpu" in env["conda"] and "pytorch" not in env["conda"], env["conda"]


def test_conda_users_get_the_course_package_editable():
    assert "-e ." in _environment("environment.yml")["pip"]


def test_binder_postbuild_installs_the_package_without_dependencies(tmp_path):
    """Run binder/postBuild with a stand-in `python` that records what it was asked to do."""
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    assert "-e ." not in _environment("binder/environment.yml")["pip"], \
        "binder/environment.yml must not install the package: postBuild does"
    log = tmp_path / "calls"
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("python", "python3", "pip", "pip3"):
        (fake / tool).write_text(f'#!/bin/sh\necho "$PWD|{tool} $*" >> "{log}"\n')
        (fake / tool).chmod(0o755)
    result = subprocess.run(["bash", str(post)], cwd=tmp_path, capture_output=True, text=True,
                            env={"PATH": f"{fake}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    calls = [line.split("|", 1) for line in log.read_text().splitlines()]
    installs = [(cwd, shlex.split(cmd)) for cwd, cmd in calls if "install" in cmd.split()]
    assert len(installs) == 1, f"postBuild should run one pip install, ran {calls}"
    cwd, argv = installs[0]
    assert pathlib.Path(cwd).resolve() == ROOT, f"pip ran in {cwd}, not the repository root"
    assert argv[:4] == ["python", "-m", "pip", "install"] or argv[:2] == ["pip", "install"], argv
    args = argv[argv.index("install") + 1:]
    assert "--no-deps" in args, f"postBuild must install without dependencies: {argv}"
    targets = [a for a in args if not a.startswith("-")]
    assert targets == ["."], f"postBuild must install the package (.) and nothing else: {argv}"


# --------------------------------------------------------------------------- README badges

COLAB_LINK = re.compile(r"https://colab\.research\.google\.com/github/([^/\s)]+/[^/\s)]+)/blob/([^/\s)]+)/([^\s)]+)")
BINDER_LINK = re.compile(r"https://mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)/([^?\s)]+)\?([^\s)]+)")


def _badges():
    readme = (ROOT / "README.md").read_text()
    colab = [(m.group(1), m.group(3)) for m in COLAB_LINK.finditer(readme)]
    binder = []
    for repo, _ref, query in BINDER_LINK.findall(readme):
        urlpath = urllib.parse.parse_qs(query).get("urlpath", [""])[0]
        assert urlpath.startswith("lab/tree/"), f"Binder badge should open JupyterLab: {urlpath}"
        binder.append((repo, urlpath[len("lab/tree/"):]))
    return colab, binder


def test_readme_badges_open_notebooks_that_exist(run_notebooks):
    colab, binder = _badges()
    assert colab and binder, "README.md has no Colab or Binder badges"
    problems = []
    for kind, links in (("Colab", colab), ("Binder", binder)):
        for repo, path in links:
            if repo != run_notebooks.REPO:
                problems.append(f"{kind} badge points to {repo}, not tools/run_notebooks.py's REPO "
                                f"{run_notebooks.REPO}")
            if not re.fullmatch(r"notebooks/[0-9][0-9]_\w+\.ipynb", path):
                problems.append(f"{kind} badge opens {path}, not a notebooks/NN_topic.ipynb")
            elif not (ROOT / path).is_file():
                problems.append(f"{kind} badge opens {path}, which does not exist")
    assert not problems, "README.md:\n" + "\n".join(problems)


def test_every_notebook_has_both_badges(course_notebook):
    colab, binder = _badges()
    path = f"notebooks/{course_notebook.name}"
    assert path in {p for _, p in colab}, f"README.md has no Colab badge for {path}"
    assert path in {p for _, p in binder}, f"README.md has no Binder badge for {path}"
