"""Binder and conda readiness, and the README's Colab / Binder badges.

One list says what the course needs: pyproject.toml's ``dependencies`` and its extras, each
with a lower bound. From it:

* environment.yml (conda users) lists the dependencies and the [pretrained], [test] and [lab]
  extras, binder/environment.yml only what the notebooks need at run time (the dependencies
  and [pretrained]; Binder brings JupyterLab, IPython and the kernel); both with exactly
  pyproject's lower bounds and nothing pinned, so that conda-forge can solve them with
  whatever versions it carries (it cannot be queried from here);
* requirements.txt (CI) pins every package of that list to a version the bound admits;
* both environments ask for the supported Pythons (pyproject's classifiers) and the CPU-only
  PyTorch;
* binder/postBuild installs the course package, without dependencies;
* every badge in README.md opens a notebook that exists, and every notebook has both badges
  (tests/test_publishing.py checks that they name the repository and reference of pyproject's
  [tool.bertcourse]).
"""
from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import sys
import tomllib
import urllib.parse

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV_FILES = ["environment.yml", "binder/environment.yml"]
# Which groups of pyproject's one list each environment installs.
ENV_GROUPS = {"environment.yml": ["dependencies", "pretrained", "test", "lab"],
              "binder/environment.yml": ["dependencies", "pretrained"]}
# Provided by Binder itself (repo2docker's environment runs JupyterLab and the kernel).
BINDER_PROVIDES = {"ipython", "ipykernel", "jupyterlab"}

# conda-forge name -> pip name, where they differ. pytorch-cpu is the CPU-only build;
# matplotlib-base is matplotlib without Qt.
CONDA_TO_PIP = {"pytorch-cpu": "torch", "pytorch": "torch", "matplotlib-base": "matplotlib"}
NOT_PACKAGES = {"python", "pip"}       # the environment itself, not requirements


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _needed(groups: list[str]) -> dict[str, SpecifierSet]:
    """{pip name: specifier} of pyproject's one list, for the given groups ("dependencies" or
    an extra's name). A package in two groups must have the same bound in both."""
    project = _project()
    needed: dict[str, SpecifierSet] = {}
    for group in groups:
        lines = project["dependencies"] if group == "dependencies" else project["optional-dependencies"][group]
        for req in map(Requirement, lines):
            name = canonicalize_name(req.name)
            assert needed.get(name, req.specifier) == req.specifier, \
                f"pyproject.toml: {name} has two bounds, {needed[name]} and {req.specifier}"
            needed[name] = req.specifier
    return needed


def _supported_pythons() -> list[Version]:
    """The Python versions pyproject's classifiers name (3.11, 3.12, ...), sorted."""
    found = [Version(m[1]) for c in _project().get("classifiers", [])
             if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))]
    assert found, "pyproject.toml: no 'Programming Language :: Python :: 3.N' classifier says what is supported"
    return sorted(found)


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


def _conda_spec(entry: str) -> tuple[str, SpecifierSet]:
    """'numpy >=2.1' -> ('numpy', SpecifierSet('>=2.1')); a bare name has an empty set."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(\S*)", entry.strip())
    assert match, f"cannot read the conda spec {entry!r}"
    name, spec = match.groups()
    assert not re.match(r"=[^=]|==", spec), \
        f"{entry!r}: a pin; lower bounds only (conda-forge may not carry that version)"
    return name.lower(), SpecifierSet(spec)


def _environment(path: str) -> dict:
    env = yaml.safe_load((ROOT / path).read_text())
    conda, pip = {}, []
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            pip += entry["pip"]
            continue
        name, spec = _conda_spec(entry)
        assert name not in conda, f"{path}: {name} listed twice"
        conda[name] = spec
    return {"channels": env.get("channels", []), "conda": conda, "pip": pip}


@pytest.mark.parametrize("path", ENV_FILES)
def test_environment_has_pyprojects_lower_bounds_and_nothing_else(path):
    needed = _needed(ENV_GROUPS[path])
    if path.startswith("binder/"):
        needed = {n: s for n, s in needed.items() if n not in BINDER_PROVIDES}
    env = _environment(path)
    listed: dict[str, tuple[str, SpecifierSet]] = {}        # pip name -> (where, specifier)
    for name, spec in env["conda"].items():
        if name not in NOT_PACKAGES:
            listed[canonicalize_name(CONDA_TO_PIP.get(name, name))] = (f"conda {name} {spec}", spec)
    for line in env["pip"]:
        if line.startswith("-"):
            continue
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name not in listed, f"{path}: {name} listed twice ({listed[name][0]} and pip {line})"
        listed[name] = (f"pip {line}", req.specifier)
    problems = [f"{where}: pyproject.toml says {needed[name] or 'no bound'}"
                for name, (where, spec) in listed.items() if name in needed and spec != needed[name]]
    missing = sorted(set(needed) - set(listed))
    extra = sorted(listed[n][0] for n in set(listed) - set(needed))
    assert not missing, f"{path} lacks {missing} (pyproject.toml: {ENV_GROUPS[path]})"
    assert not extra, f"{path} has {extra}, which pyproject.toml's {ENV_GROUPS[path]} do not list"
    assert not problems, f"{path}, with other bounds than the one list:\n" + "\n".join(problems)


def test_requirements_pin_every_package_of_the_list_within_its_bound():
    """CI installs requirements.txt: it must test every package the course needs, at a version
    the lower bound admits (else the bound would be a promise nobody checks)."""
    pins = _requirements()
    needed = _needed(["dependencies", *_project()["optional-dependencies"]])
    needed.pop("datasets")      # [wikitext]: optional and online only (pyproject says why)
    problems = [f"{name}: requirements.txt lacks it" for name in needed if name not in pins]
    problems += [f"{name}=={pins[name]}: outside pyproject's {spec}" for name, spec in needed.items()
                 if name in pins and not spec.contains(pins[name], prereleases=True)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", ENV_FILES)
def test_environment_is_conda_forge_supported_python_cpu_torch(path):
    env = _environment(path)
    assert env["channels"][0] == "conda-forge" and "defaults" not in env["channels"], env["channels"]
    supported = _supported_pythons()
    upper = Version(f"{supported[-1].major}.{supported[-1].minor + 1}")
    assert env["conda"].get("python") == SpecifierSet(f">={supported[0]},<{upper}"), (
        f"{path}: python {env['conda'].get('python')}; the supported Pythons are {[str(v) for v in supported]}")
    requires = _project()["requires-python"]
    assert SpecifierSet(requires) == SpecifierSet(f">={supported[0]}"), (
        f"requires-python {requires} does not start at the oldest supported Python {supported[0]}")
    # The CPU-only PyTorch: a plain `pytorch` may resolve to a multi-GB CUDA build.
    assert "pytorch-cpu" in env["conda"] and "pytorch" not in env["conda"], env["conda"]


def test_the_checks_catch_a_pin_a_missing_package_and_another_bound(tmp_path, monkeypatch):
    """The environment test fails on what it is there to catch (in a fake repository root)."""
    original = (ROOT / "environment.yml").read_text()
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    cases = [(original.replace("numpy >=2.1", "numpy =2.4"), r"'numpy =2.4': a pin; lower bounds only"),
             (original.replace("  - tqdm >=4.67\n", ""), r"lacks \['tqdm'\]"),
             (original.replace("tqdm >=4.67", "tqdm >=4.60"), "conda tqdm >=4.60: pyproject.toml says >=4.67"),
             (original.replace("  - hypothesis", "  - pyyaml\n  - hypothesis"), r"has \['conda pyyaml '\]")]
    for text, message in cases:
        (tmp_path / "environment.yml").write_text(text)
        with pytest.raises(AssertionError, match=message):
            test_environment_has_pyprojects_lower_bounds_and_nothing_else("environment.yml")
    (tmp_path / "environment.yml").write_text(original)
    test_environment_has_pyprojects_lower_bounds_and_nothing_else("environment.yml")


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
    if run_notebooks.REPO is None:       # unpublished ([tool.bertcourse] repository unset): no badge at all
        assert not colab and not binder, "README.md shows badges while the course is unpublished"
        return
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


def test_every_notebook_has_both_badges(course_notebook, run_notebooks):
    if run_notebooks.REPO is None:
        pytest.skip("unpublished: [tool.bertcourse] repository is unset, so the README has no badges")
    colab, binder = _badges()
    path = f"notebooks/{course_notebook.name}"
    assert path in {p for _, p in colab}, f"README.md has no Colab badge for {path}"
    assert path in {p for _, p in binder}, f"README.md has no Binder badge for {path}"
