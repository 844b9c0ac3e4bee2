"""python -m bertcourse.pretrain (bertcourse/pretrain/__main__.py, on bertcourse.cli) (one-line errors, exit codes, resume)."""
import json
import subprocess
import sys

import pytest
import torch
from tiny_bert import command_in_this_process, interrupt_cli

from bertcourse.checkpoints import load_checkpoint
from bertcourse.pretrain.__main__ import main


def run_main(capsys, *argv):
    with command_in_this_process():
        code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err

@pytest.mark.parametrize("argv,message", [
    (["--config", "huge"], "--config must be one of tiny, d2l-small, base, large, got 'huge'"),
    (["--seconds", "0"], "--seconds must be > 0, got 0"),
    (["--seconds", "-5"], "--seconds must be > 0, got -5"),
    (["--seconds", "soon"], "--seconds must be a number, got 'soon'"),
    (["--steps", "0"], "--steps must be > 0, got 0"),
    (["--batch-size", "2.5"], "--batch-size must be a whole number, got '2.5'"),
    (["--amp", "fp8"], "argument --amp: invalid choice: 'fp8'"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["--device", "gpu"], "--device must be auto, cpu, cuda or cuda:N, got 'gpu'"),
    # negative numbers in every spelling are values (argparse alone says "expected one argument")
    (["--lr", "-1e-3"], "--lr must be > 0, got -1e-3"),
    (["--lr", "-1E+2"], "--lr must be > 0, got -1E+2"),
    (["--lr", "-.5"], "--lr must be > 0, got -.5"),
    (["--lr=-1e-3"], "--lr must be > 0, got -1e-3"),
    (["--weight-decay", "-0.01"], "--weight-decay must be >= 0, got -0.01"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--clip", "-inf"], "--clip must be > 0, got -inf"),
    (["--out", ""], "--out must be the path of the output folder, got an empty string"),
])
def test_bad_options_give_one_line_and_exit_code_2(capsys, tmp_path, argv, message):
    code, out, err = run_main(capsys, "--out", str(tmp_path / "run"), *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert out == ""

def test_unwritable_output_folder_and_missing_resume_state(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run_main(capsys, "--out", str(blocker / "run"))
    assert code == 2 and err.startswith("error: --out") and "not a writable folder" in err
    assert err.count("\n") == 1
    code, _, err = run_main(capsys, "--out", str(tmp_path / "empty"), "--resume")
    assert code == 2 and "--resume: no complete saved run in" in err
    code, _, err = run_main(capsys)
    assert code == 2 and err == "error: the following arguments are required: --out\n"

def test_an_existing_file_as_output_folder_says_what_to_pass(capsys, tmp_path):
    file = tmp_path / "model.pt"
    file.write_text("x")
    code, _, err = run_main(capsys, "--out", str(file))
    assert code == 2 and err.count("\n") == 1
    assert "is a file, but --out must be a folder" in err and "pass the path of a folder instead" in err


def test_a_non_number_starting_with_a_dash_is_still_not_a_value(capsys, tmp_path):
    code, _, err = run_main(capsys, "--out", str(tmp_path / "run"), "--lr", "-x")
    assert code == 2 and err == "error: argument --lr: expected one argument\n"


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--config", "--seconds", "--steps", "--out", "--resume", "--batch-size", "--max-len",
                   "--lr", "--warmup-steps", "--weight-decay", "--clip", "--eval-every", "--seed",
                   "--num-paragraphs", "--amp", "--threads", "--quiet", "--device", "torchrun"):
        assert option in text

CLI = [sys.executable, "-m", "bertcourse.pretrain"]

def test_cli_error_is_not_a_traceback():
    r = subprocess.run(CLI + ["--config", "huge", "--out", "runs/never"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: --config must be one of tiny, d2l-small, base, large, got 'huge'"]
    assert "Traceback" not in r.stderr

def test_cli_ctrl_c_saves_a_checkpoint_and_resume_continues(tmp_path):
    out = tmp_path / "run"
    args = CLI + ["--config", "tiny", "--out", str(out), "--num-paragraphs", "60", "--batch-size", "8",
                  "--eval-every", "100000", "--quiet", "--amp", "off", "--threads", "1"]
    returncode, out_text, err = interrupt_cli(args + ["--steps", "100000"], "training a tiny BERT", 1.5)
    assert returncode == 130, (out_text, err)
    assert "Traceback" not in err
    assert "interrupted at step" in out_text and "--resume" in out_text
    with open(out / "trainer_state.json") as f:
        step = json.load(f)["step"]
    assert step > 0
    model, tok, state = load_checkpoint(out)
    assert state["info"]["history"]["stopped_by"] == "interrupt"

    r = subprocess.run(args + ["--steps", str(step + 3), "--resume"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"resuming from step {step}" in r.stdout and f"done: {step + 3} steps" in r.stdout
    model2, _, state2 = load_checkpoint(out)
    assert state2["info"]["step"] == step + 3
    assert len(state2["info"]["history"]["metrics"]["loss"]) == step + 3
    assert not all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), model2.state_dict().values()))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without a GPU")
def test_asking_for_a_gpu_without_one_is_one_line(capsys, tmp_path):
    code, out, err = run_main(capsys, "--out", str(tmp_path / "run"), "--device", "cuda")
    assert code == 2 and err.count("\n") == 1
    assert "asked for a GPU, but torch.cuda.is_available() is False" in err and "use 'cpu' or 'auto'" in err


def test_input_errors_are_reported_by_rank_0_only(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")          # as torchrun's second process: the same error, said once by rank 0
    code, out, err = run_main(capsys, "--out", str(tmp_path / "run"), "--seconds", "0")
    assert code == 2 and err == "" and out == ""


@pytest.mark.parametrize("argv, message", [
    (["--lr", "-1e-3"], "--lr must be > 0, got -1e-3"),
    (["--warmup-ratio", "-0.1"], "--warmup-ratio must be >= 0, got -0.1"),
    (["--epochs", "-2"], "--epochs must be > 0, got -2"),
])
def test_the_finetune_command_reads_negative_numbers_as_values(capsys, tmp_path, argv, message):
    from bertcourse.finetune.__main__ import main as finetune_main
    code = finetune_main(["--out", str(tmp_path / "run"), *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err == f"error: {message}\n"


@pytest.mark.parametrize("argv,lr", [(["--config", "tiny"], 5e-3), (["--config", "d2l-small"], 5e-3),
                                     (["--config", "base"], 1e-4), (["--config", "large"], 1e-4),
                                     (["--config", "base", "--lr", "3e-4"], 3e-4)])
def test_the_default_learning_rate_follows_the_model_size(monkeypatch, tmp_path, argv, lr):
    """5e-3 (chapter 7's) for the small models; BERT's 1e-4 for base and large, which learned
    nothing at 5e-3 (an H200 run: the MLM accuracy stayed at the most frequent token's)."""
    import bertcourse.pretrain.__main__ as command
    seen = []
    monkeypatch.setattr(command, "run_process", lambda args, *rest: seen.append(args.lr) or 0)
    assert main([*argv, "--out", str(tmp_path / "run"), "--device", "cpu", "--quiet"]) == 0
    assert seen == [lr]


def test_the_command_speaks_the_language_the_kernel_speaks(capsys, tmp_path):
    """set_language("zh") in a notebook reaches the commands it starts (BERTCOURSE_LANG): the
    progress lines are Chinese, the numbers and the options' names the same."""
    from bertcourse import i18n
    i18n.set_language("zh")
    try:
        code, out, err = run_main(capsys, "--config", "tiny", "--steps", "2", "--batch-size", "8", "--eval-every",
                                  "100000", "--num-paragraphs", "40", "--device", "cpu", "--quiet",
                                  "--out", str(tmp_path / "run"))
    finally:
        i18n.set_language("en")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "正在加载语料库和词元分析器（种子0）……"
    assert lines[1].startswith("在") and "个句子对上训练一个tiny BERT（" in lines[1]
    assert lines[-1].startswith("完成：2步，用时") and lines[-1].endswith("检查点已保存到" + str(tmp_path / "run"))
