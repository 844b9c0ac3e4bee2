"""tools/kernel_sweep.py: it runs a notebook under each CPU kernel setting, proves the setting
took effect, and lists the compared output lines that differ (CONTRIBUTING.md, "Outputs that hold
on every CPU").

The end-to-end test uses a tiny notebook whose first output *is* the kernel setting (PyTorch's
reported CPU capability) and whose second is exact: the sweep must list the first under every
setting other than the one it was executed with, and never the second.
"""
from __future__ import annotations

import json
import pathlib

import nbformat
import pytest
import torch
from nbclient import NotebookClient

import kernel_sweep  # tools/kernel_sweep.py (conftest.py puts tools/ on the path)
from colab_check import CellResult, NbvalRun

CURRENT = torch.backends.cpu.get_cpu_capability()
ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_differing_lines_name_the_committed_and_the_fresh_output():
    message = ("Cell 3: Cell outputs differ\n mismatch 'stdout'\n\n assert reference_output == "
               "test_output failed:\n\n  'loss 29.9420\\n' == 'loss 29.9419\\n'\n  \n"
               "  - loss 29.9419\n  ?          ^^\n  + loss 29.9420\n  ?          ^^\n")
    assert kernel_sweep.differing_lines(message) == ["this run:  loss 29.9419", "committed: loss 29.9420"]
    raised = "Cell 4: Error\nTraceback:\nAssertionError: accuracy 0.61 below 0.62\n"
    assert kernel_sweep.differing_lines(raised) == ["AssertionError: accuracy 0.61 below 0.62"]


def test_notebooks_selects_editions_and_chapters():
    both = kernel_sweep.notebooks(["05"], "both")
    assert [kernel_sweep._label(p) for p in both] == ["05_masked_language_modeling.ipynb",
                                                      "zh/05_masked_language_modeling.ipynb"]
    assert len(kernel_sweep.notebooks([], "en")) == len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    with pytest.raises(ValueError, match="edition must be 'en', 'zh' or 'both', got 'fr'"):
        kernel_sweep.notebooks([], "fr")
    with pytest.raises(ValueError, match=r"no zh notebook's name starts with any of \['99'\]"):
        kernel_sweep.notebooks(["99"], "zh")


def test_a_setting_that_is_this_cpus_own_is_not_run_twice():
    assert kernel_sweep.settings_for_this_cpu(["native", "avx2", "default"], "AVX2") == ["native", "default"]
    assert kernel_sweep.settings_for_this_cpu(["native", "avx2", "default"], "AVX512") == ["native", "avx2", "default"]
    assert kernel_sweep.settings_for_this_cpu(list(kernel_sweep.SETTINGS), "AVX2") == [
        "native", "default", "native-2-threads"]
    with pytest.raises(ValueError, match=r"settings must be among \['avx2', 'avx2-2-threads', 'default', 'native', "
                                         r"'native-2-threads'\], got \['sse'\]"):
        kernel_sweep.settings_for_this_cpu(["sse"], "AVX2")


def test_kernel_settings_run_one_thread_and_the_thread_settings_two():
    for name, (env, _) in kernel_sweep.SETTINGS.items():
        assert env["BERTCOURSE_THREADS"] == ("2" if name.endswith("-2-threads") else "1"), name
    assert kernel_sweep.SETTINGS["avx2-2-threads"][0]["ATEN_CPU_CAPABILITY"] == "avx2"


def test_a_setting_that_did_not_take_effect_is_a_problem(tmp_path):
    path = tmp_path / "x.ipynb"

    def run(python, paths, env, probe, args):     # stands in for colab_check.run_nbval
        assert env["ATEN_CPU_CAPABILITY"] == "default" and env["CI"] == ""
        return NbvalRun(0, 1.0, {"x.ipynb": [CellResult("x.ipynb", "Cell 0", "passed")]},
                        {"x.ipynb": {"stdout": json.dumps({"capability": "AVX2"}) + "\n"}})
    finding = kernel_sweep.sweep_one(path, "default", run=run)
    assert finding.capability == "AVX2" and "ran with AVX2, not DEFAULT" in finding.problem


@pytest.fixture(scope="module")
def tiny_notebook(tmp_path_factory) -> pathlib.Path:
    """Executed here, natively: its first and third outputs depend on the kernel setting (0.6 for
    AVX512, 0.4 for AVX2, 0.7 for DEFAULT), the second and the 0.125 are exact."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import torch\nprint(torch.backends.cpu.get_cpu_capability())"),
                nbformat.v4.new_code_cell("print(sum(range(10)))"),
                nbformat.v4.new_code_cell("print(f'{len(torch.backends.cpu.get_cpu_capability()) / 10:.2f}', "
                                          "round(1 / 8, 4))")]
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    path = tmp_path_factory.mktemp("sweep") / "tiny.ipynb"
    nbformat.write(nb, path)
    return path


def _other_settings() -> list[str]:
    settings = kernel_sweep.settings_for_this_cpu(list(kernel_sweep.KERNEL_SETTINGS), CURRENT)
    if settings == ["native"]:
        pytest.skip(f"this CPU ({CURRENT}) has no other kernel setting")
    return settings[1:]


@pytest.mark.slow
def test_the_sweep_lists_the_outputs_that_depend_on_the_kernels(tiny_notebook):
    # native is where the notebook was just executed: the other settings are the test
    findings = kernel_sweep.sweep([tiny_notebook], _other_settings(), report=lambda *a, **k: None)
    for finding in findings:
        assert not finding.problem, finding.problem
        assert finding.capability == kernel_sweep.SETTINGS[finding.setting][1] and finding.cells == 3
        value = f"{len(finding.capability) / 10:.2f}"
        assert finding.differences == {
            "Cell 0": [f"this run:  {finding.capability}", f"committed: {CURRENT}"],
            "Cell 2": [f"this run:  {value} 0.125", f"committed: {len(CURRENT) / 10:.2f} 0.125"]}, finding
    report = kernel_sweep.summary(findings)
    assert f"tiny.ipynb Cell 0 [{findings[0].setting}, {findings[0].capability}]:" in report
    assert "Cell 1" not in report


@pytest.mark.slow
def test_margins_measures_a_number_that_depends_on_the_kernels(tiny_notebook):
    found, unaligned = kernel_sweep.margins(tiny_notebook, ["native", _other_settings()[-1]], jobs=2)
    assert unaligned == ["Cell 0"]     # the capability's name is text that differs: left to the sweep
    (varying,) = found          # 0.125 prints alike when widened: exact, so not measured
    assert varying.cell == "Cell 2" and varying.values["native"] == len(CURRENT) / 10
    assert varying.spread >= 0.09 and varying.margin < 1 and not varying.review


# --------------------------------------------------------------------------- the printed digits' margins

@pytest.mark.parametrize("source, widened", [
    ('print(f"loss {x:.4f}, {y:7.3g}, {z:.1%}, {n:,} {w:,.2f}")',
     'print(f"loss {x:.12f}, {y:7.12g}, {z:.12%}, {n:,} {w:,.12f}")'),
    ('table.round(3).set_index("d")', 'table.round(12).set_index("d")'),
    ("print(round(v.item(), 4), round(f(a, b), 2), round(n))", "print(round(v.item(), 12), round(f(a, b), 12), round(n))"),
    ("torch.set_printoptions(precision=4, sci_mode=False)", "torch.set_printoptions(precision=12, sci_mode=False)"),
    ('x = {"a": 1, "b": [1, 2][:1]}', 'x = {"a": 1, "b": [1, 2][:1]}'),
])
def test_widen_raises_every_print_precision(source, widened):
    assert kernel_sweep.widen(source) == widened


def test_numbers_are_split_from_the_text_they_sit_in():
    skeleton, numbers = kernel_sweep.split_numbers("tensor([[1.0000, 2.5],\n        [3, -4.25e-05]])  1,234 x1 (4, 32)")
    assert skeleton == "tensor([[#, #], [#, #]]) # x1 (#, #)"
    assert numbers == ["1.0000", "2.5", "3", "-4.25e-05", "1,234", "4", "32"]
    assert [kernel_sweep._unit(n) for n in numbers] == [1e-4, 0.1, None, pytest.approx(1e-7), None, None, None]


def test_a_number_near_a_rounding_boundary_has_a_small_margin(tmp_path, monkeypatch):
    committed = nbformat.v4.new_notebook()
    committed.cells = [nbformat.v4.new_code_cell("print(f'{a:.4f} {b:.2f}')", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="29.9420 0.12\n")])]
    path = tmp_path / "n.ipynb"
    nbformat.write(committed, path)
    widened = {"native": "29.941950300000 0.123000000000\n", "default": "29.941949700000 0.123000000000\n"}

    def execute(p, setting):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output("stream", name="stdout",
                                                                                    text=widened[setting])])]
        return nb
    monkeypatch.setattr(kernel_sweep, "execute_widened", execute)
    found, unaligned = kernel_sweep.margins(path, ["native", "default"], jobs=1)
    assert unaligned == []
    near, far = found
    assert near.committed == "29.9420" and near.spread == pytest.approx(6e-7)
    assert near.boundary == pytest.approx(3e-7, abs=1e-9) and near.margin < 1     # 29.94195 is the boundary
    assert far.committed == "0.12" and far.spread == 0 and far.margin == float("inf")   # 0.123: 0.002 away
    assert not near.review and not far.review
    widened["native"] = widened["default"] = "29.941950300000 0.125000010000\n"   # alike, 1e-8 from 0.125
    near, close = kernel_sweep.margins(path, ["native", "default"], jobs=1)[0]
    assert close.spread == 0 and close.margin == float("inf") and close.review
    widened["default"] = "29.941950300000 0.125000010000 and more\n"
    assert kernel_sweep.margins(path, ["native", "default"], jobs=1)[1] == ["Cell 0"]
