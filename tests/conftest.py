"""Shared test helpers: the lists of course notebooks and tools/run_notebooks.py as a module.
(How CI spreads the tests over its cores: the repository's root conftest.py.)"""
from __future__ import annotations

import importlib
import pathlib
import sys

import pytest

# Fixtures of the tiny BERT world (tests/tiny_bert.py) for the pretraining tests.
pytest_plugins = ["tiny_bert"]

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))


def pytest_generate_tests(metafunc):
    # A test that takes `course_notebook` runs once per chapter, so it grows as chapters land;
    # `zh_notebook`: once per chapter of the Chinese edition.
    if "course_notebook" in metafunc.fixturenames:
        metafunc.parametrize("course_notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
    if "zh_notebook" in metafunc.fixturenames:
        metafunc.parametrize("zh_notebook", ZH_NOTEBOOKS, ids=[f"zh/{p.name}" for p in ZH_NOTEBOOKS])


@pytest.fixture(scope="session")
def asked_for(request):
    """`asked_for(test, parameter)`: the values of `parameter` that this session will run `test`
    with, so a session fixture can do one batch of work (one nbval run) for exactly those.
    Only test functions have `originalname`: nbval's notebook cells, collected in the same
    session, do not, and must be passed over."""
    def values(test_name: str, parameter: str) -> list:
        return sorted({item.callspec.params[parameter] for item in request.session.items
                       if isinstance(item, pytest.Function) and item.originalname == test_name
                       and hasattr(item, "callspec")})
    return values


# The scripts in tools/ are imported by the tests that check them (`import colab_check`).
sys.path.insert(0, str(ROOT / "tools"))


@pytest.fixture(scope="session")
def run_notebooks():
    """tools/run_notebooks.py (REPO, REF, colab_cell, ...) as a module."""
    return importlib.import_module("run_notebooks")


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
