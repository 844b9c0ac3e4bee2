"""Tests for bertcourse._checks: every message names the argument and the shapes."""
import pytest
import torch

from bertcourse._checks import (check_betas, check_bool, check_choice, check_dim, check_finite_number,
                                check_floating_dtype, check_ids, check_instance, check_int, check_int_list,
                                check_keys, check_nonempty, check_optimizer, check_path, check_positive_int,
                                check_probability, check_str_list, check_tensor, check_tokenizer_fits,
                                read_json, shape_str, vocab_size_of)


def test_shape_str_looks_like_a_tuple():
    assert shape_str(torch.zeros(2, 5, 16)) == "(2, 5, 16)"
    assert shape_str(torch.zeros(10)) == "(10,)"
    assert shape_str(torch.tensor(3.0)) == "()"


def test_check_tensor_accepts_good_input():
    check_tensor("x", torch.zeros(2, 3), ndim=2, expected="(batch, d)", floating=True)
    check_tensor("x", torch.zeros(2, 3, 4), ndim=(3, 4))
    check_tensor("lens", torch.zeros(2, dtype=torch.long), ndim=1, floating=False)


def test_check_tensor_rejects_non_tensor():
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor of shape \(batch, d\), got list"):
        check_tensor("x", [[1.0]], expected="(batch, d)")


def test_check_tensor_rejects_wrong_rank():
    with pytest.raises(ValueError, match=r"x must have shape \(batch, d\) \(2-D\), got shape \(2, 3, 4\)"):
        check_tensor("x", torch.zeros(2, 3, 4), ndim=2, expected="(batch, d)")
    with pytest.raises(ValueError, match=r"\(3 or 4-D\), got shape \(5,\)"):
        check_tensor("x", torch.zeros(5), ndim=(3, 4), expected="(batch, q, k)")


def test_check_tensor_dtype():
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor of shape \(n\), got dtype torch.int64"):
        check_tensor("x", torch.zeros(3, dtype=torch.long), expected="(n)", floating=True)
    for bad in (torch.zeros(3), torch.zeros(3, dtype=torch.bool)):
        with pytest.raises(TypeError, match=rf"ids must be an integer tensor of shape \(n\), got dtype {bad.dtype}"):
            check_tensor("ids", bad, expected="(n)", floating=False)


def test_check_dim():
    check_dim("x", torch.zeros(2, 8), -1, 8, "(batch, 8)")
    with pytest.raises(ValueError, match=r"x must have shape \(batch, d=8\), got shape \(2, 6\)"):
        check_dim("x", torch.zeros(2, 6), -1, 8, "(batch, d=8)")


def test_check_positive_int():
    check_positive_int("n", 3)
    check_positive_int("n", 0, allow_zero=True)
    with pytest.raises(ValueError, match=r"n must be > 0, got 0"):
        check_positive_int("n", 0)
    with pytest.raises(ValueError, match=r"n must be >= 0, got -1"):
        check_positive_int("n", -1, allow_zero=True)
    for bad, kind in ((2.0, "float"), (True, "bool"), ("3", "str")):
        with pytest.raises(TypeError, match=rf"n must be an int, got {kind}"):
            check_positive_int("n", bad)


def test_check_probability():
    check_probability("p", 0.0)
    check_probability("p", 0.5)
    for bad in (1.0, -0.1):
        with pytest.raises(ValueError, match=rf"p must be in \[0, 1\), got {bad}"):
            check_probability("p", bad)
    with pytest.raises(TypeError, match=r"p must be a float in \[0, 1\), got str"):
        check_probability("p", "0.1")


def test_check_int_and_bool():
    check_int("n", 3, low=0, high=3)
    with pytest.raises(TypeError, match=r"n must be an int, got bool \(True\)"):
        check_int("n", True)
    with pytest.raises(TypeError, match=r"n must be an int, got float \(1.5\)"):
        check_int("n", 1.5)
    with pytest.raises(ValueError, match=r"n must be an int with 0 <= n <= 3, got 4"):
        check_int("n", 4, low=0, high=3)
    with pytest.raises(ValueError, match=r"n must be an int with 2 <= n, got 1"):
        check_int("n", 1, low=2)
    check_bool("flag", False)
    for bad in ("no", 0, None):
        with pytest.raises(TypeError, match="flag must be True or False"):
            check_bool("flag", bad)


def test_check_choice_and_instance():
    check_choice("activation", "relu", {"relu": 1, "gelu": 2})
    with pytest.raises(ValueError, match=r"activation must be one of \['gelu', 'relu'\], got 'swish'"):
        check_choice("activation", "swish", {"relu": 1, "gelu": 2})
    with pytest.raises(TypeError, match=r"activation must be one of .*got list"):
        check_choice("activation", ["relu"], {"relu": 1})
    check_instance("model", torch.nn.Linear(1, 1), torch.nn.Module)
    with pytest.raises(TypeError, match=r"model must be a Module \(a hint\), got str"):
        check_instance("model", "m", torch.nn.Module, hint="a hint")
    check_instance("model", torch.nn.ReLU(), (torch.nn.Linear, torch.nn.ReLU))
    with pytest.raises(TypeError, match=r"^model must be a Linear or ReLU, got Tanh$"):
        check_instance("model", torch.nn.Tanh(), (torch.nn.Linear, torch.nn.ReLU))


def test_check_str_list_and_int_list():
    check_str_list("tokens", ["a", "b"])
    with pytest.raises(TypeError, match=r"tokens must be a list of strings, got a str \('ab'\): split it first"):
        check_str_list("tokens", "ab")
    with pytest.raises(TypeError, match=r"tokens must be a list of strings, got an element of type int \(7\)"):
        check_str_list("tokens", ["a", 7])
    with pytest.raises(ValueError, match="tokens must hold at least one"):
        check_str_list("tokens", [], allow_empty=False)
    assert check_int_list("ids", (3, 1)) == [3, 1]
    assert check_int_list("ids", torch.tensor([2, 0]), low=0, high=2) == [2, 0]
    with pytest.raises(TypeError, match="ids must hold ints, got float"):
        check_int_list("ids", [1, 2.0])
    with pytest.raises(TypeError, match="ids must be a list of ints"):
        check_int_list("ids", "12")
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        check_int_list("ids", torch.tensor([1.0]))
    with pytest.raises(ValueError, match=r"ids must hold ints in \[0, 9\], got values from 0 to 10"):
        check_int_list("ids", [0, 10], low=0, high=9)


def test_check_keys_dtype_and_nonempty():
    check_keys("counts", {"a": 1, "b": 2}, ("a",), "count")
    with pytest.raises(TypeError, match="counts must be the dict returned by count, got list"):
        check_keys("counts", [], ("a",), "count")
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        check_keys("counts", {"a": 1}, ("a", "b"), "count")
    check_floating_dtype("dtype", torch.float64)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype .*got torch.int64"):
        check_floating_dtype("dtype", torch.long)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype .*got str"):
        check_floating_dtype("dtype", "float32")
    with pytest.raises(ValueError, match=r"X must not be empty: expected shape \(batch, seq\) with every size >= 1, "
                                         r"got shape \(2, 0\)"):
        check_nonempty("X", torch.zeros(2, 0), "(batch, seq)")


def test_check_ids():
    check_ids("tokens", torch.tensor([[0, 9]]), 10)
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        check_ids("tokens", torch.tensor([[0.0]]), 10)
    with pytest.raises(ValueError, match=r"tokens must have shape \(batch, seq\) of integer token ids \(2-D\)"):
        check_ids("tokens", torch.tensor([1]), 10)
    with pytest.raises(ValueError, match="tokens must not be empty"):
        check_ids("tokens", torch.zeros(1, 0, dtype=torch.long), 10)
    with pytest.raises(ValueError, match=r"tokens must hold ids in \[0, vocab_size=10\), got values from -1 to 10"):
        check_ids("tokens", torch.tensor([[-1, 10]]), 10)


def test_check_path_and_read_json(tmp_path):
    check_path("path", tmp_path)
    with pytest.raises(TypeError, match="path must be a path"):
        check_path("path", 3)
    (tmp_path / "good.json").write_text('{"a": 1}')
    assert read_json(tmp_path / "good.json") == {"a": 1}
    with pytest.raises(FileNotFoundError, match="config .*missing.json' does not exist"):
        read_json(tmp_path / "missing.json", "config")
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(ValueError, match="config .*bad.json' is not valid JSON"):
        read_json(tmp_path / "bad.json", "config")


def test_check_finite_number_and_probability_reject_nan_and_inf():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="eps must be a finite number"):
            check_finite_number("eps", bad, low=0, low_open=True)
        with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
            check_probability("p", bad)


def test_check_path_kinds(tmp_path):
    file = tmp_path / "f.txt"
    file.write_text("x")
    assert check_path("path", tmp_path, kind="folder", must_exist=True) == str(tmp_path)
    assert check_path("path", file, kind="file", must_exist=True) == str(file)
    assert check_path("out", tmp_path / "new", kind="folder") == str(tmp_path / "new")   # to be created
    for empty in ("", "  "):
        with pytest.raises(ValueError, match="out must be the path of the output folder, got an empty string"):
            check_path("out", empty, kind="folder", what="output folder")
    with pytest.raises(ValueError, match=r"out .*f.txt' is a file, but out must be a folder .*pass the path of a folder"):
        check_path("out", file, kind="folder")
    with pytest.raises(ValueError, match=r"src .* is a folder, but src must be a file"):
        check_path("src", tmp_path, kind="file")
    with pytest.raises(FileNotFoundError, match=r"src .*nope' does not exist \(expected the checkpoint folder\)"):
        check_path("src", tmp_path / "nope", kind="folder", must_exist=True, what="checkpoint folder")
    with pytest.raises(TypeError, match="src must be a str path"):
        check_path("src", _BytesPath())


class _BytesPath:
    def __fspath__(self):
        return b"x"


def test_check_betas_and_optimizer():
    assert check_betas("betas", [0.9, 0.999]) == (0.9, 0.999)
    assert check_betas("betas", (0, 0.5)) == (0.0, 0.5)
    for bad, match in (((0.9, 1.0), r"betas\[1\] must be < 1"), ((-0.1, 0.9), r"betas\[0\] must be >= 0"),
                       ((float("nan"), 0.9), r"betas\[0\] must be a finite number")):
        with pytest.raises(ValueError, match=match):
            check_betas("betas", bad)
    for bad in (0.9, "ab", (0.9,), (0.1, 0.2, 0.3), None):
        with pytest.raises(TypeError, match=r"betas must be a pair \(beta1, beta2\)"):
            check_betas("betas", bad)
    with pytest.raises(TypeError, match=r"betas\[1\] must be a number, got str"):
        check_betas("betas", (0.9, "0.99"))
    check_optimizer("optimizer", torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1))
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer .*make_optimizer.*got NoneType"):
        check_optimizer("optimizer", None)


def test_check_tokenizer_fits():
    from types import SimpleNamespace
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    tok = Tokenizer(WordLevel({f"t{i}": i for i in range(10)}, unk_token="t0"))
    model = SimpleNamespace(config=SimpleNamespace(vocab_size=10, max_len=8))
    assert vocab_size_of(tok) == 10
    check_tokenizer_fits(tok, model)
    check_tokenizer_fits(tok, SimpleNamespace(config=SimpleNamespace(vocab_size=12, max_len=8)))  # spare rows: fine
    with pytest.raises(ValueError, match="the tokenizer has 10 tokens but the model's token embedding has "
                                         "vocab_size=9 rows"):
        check_tokenizer_fits(tok, SimpleNamespace(config=SimpleNamespace(vocab_size=9, max_len=8)))
    tok.enable_truncation(max_length=9)
    with pytest.raises(ValueError, match="keeps up to 9 tokens but the model has max_len=8 positions"):
        check_tokenizer_fits(tok, model)
    with pytest.raises(TypeError, match="model must be a bertcourse BERTModel"):
        check_tokenizer_fits(tok, "model")
    with pytest.raises(TypeError, match="tokenizer must be a WordPieceTokenizer"):
        check_tokenizer_fits("tok", model)


def test_optional_settings_accept_none_only_where_allowed():
    check_positive_int("eval_every", None, allow_none=True)
    check_finite_number("clip", None, low=0, low_open=True, allow_none=True)
    check_bool("amp", None, allow_none=True)
    with pytest.raises(TypeError, match="eval_every must be an int, got NoneType"):
        check_positive_int("eval_every", None)
    with pytest.raises(TypeError, match="clip must be a number, got NoneType"):
        check_finite_number("clip", None)
    with pytest.raises(TypeError, match=r"amp must be True or False, or None, got str \('yes'\)"):
        check_bool("amp", "yes", allow_none=True)
    with pytest.raises(ValueError, match="clip must be > 0, got -1"):
        check_finite_number("clip", -1, low=0, low_open=True, allow_none=True)
