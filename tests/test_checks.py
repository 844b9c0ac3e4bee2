"""Tests for bertcourse._checks: every message names the argument and the shapes."""
import pytest
import torch

from bertcourse._checks import (check_dim, check_positive_int, check_probability, check_tensor,
                                shape_str)


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
