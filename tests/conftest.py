"""Shared test helpers: the list of course notebooks and tools/run_notebooks.py as a module."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def pytest_generate_tests(metafunc):
    # A test that takes `course_notebook` runs once per chapter, so it grows as chapters land.
    if "course_notebook" in metafunc.fixturenames:
        metafunc.parametrize("course_notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])


@pytest.fixture(scope="session")
def run_notebooks():
    """tools/run_notebooks.py (REPO, COLAB_CELL, ...) imported as a module."""
    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "tools" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The course's models are small: one thread is faster than two (no synchronisation), keeps
# results independent of the machine's core count, and leaves a core to the kernels and the
# browser that some tests start.
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def splits():
    """Chapter 9's review sentences, split 2,400 / 300 / 300 (shared by its test files)."""
    from bertcourse.reviews import load_sentiment
    return load_sentiment()
