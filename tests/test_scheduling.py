"""CI's scheduling (the root conftest.py): every group it names exists, and the groups go out
longest first, then the notebooks, then the other test files."""
import importlib.util
import pathlib

from ci import COLAB_NBVAL_SHARDS

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)


def test_every_group_named_for_the_schedule_exists():
    shards = {f"colab-nbval-{i}" for i in range(1, len(COLAB_NBVAL_SHARDS))}
    for group in [*root_conftest.LONGEST_FIRST, *root_conftest.SAME_WORKER.values()]:
        assert group in shards or (ROOT / group).is_file(), group
    assert len(set(root_conftest.LONGEST_FIRST)) == len(root_conftest.LONGEST_FIRST)


def test_groups_go_out_longest_first_then_notebooks_then_the_other_files():
    rank = root_conftest._rank
    named = [rank(g) for g in root_conftest.LONGEST_FIRST]
    assert named == sorted(named) == list(range(len(named)))
    notebook, other = rank("notebooks/08_pretrained_bert.ipynb"), rank("tests/test_attention.py")
    assert max(named) < notebook < other
    # the Colab-stack shard that needs test_colab.py's environment goes out after that file
    assert rank("tests/test_colab.py") < rank("tests/test_browser.py") < rank("colab-nbval-1")


def test_a_file_sharing_a_cache_runs_with_the_file_it_names():
    group = root_conftest.group_of_nodeid
    for path, with_ in root_conftest.SAME_WORKER.items():
        assert group(f"{path}::test_x") == group(f"{with_}::test_y") == with_
    assert group("tests/test_attention.py::test_x[1]") == "tests/test_attention.py"
