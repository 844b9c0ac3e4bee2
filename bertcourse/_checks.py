"""Input checks shared by every module.

Learners *will* pass tensors of the wrong shape. The error message is part of the
teaching, so every check names the argument, the shape it expected and the shape it got.
"""
from __future__ import annotations

import json
import math
import os
from typing import Sequence

import torch


def shape_str(x) -> str:
    """`(2, 5, 16)` for a tensor (or anything with a `.shape`); `(10,)` for 1-D, like a tuple."""
    return str(tuple(int(s) for s in x.shape))


def check_tensor(name: str, x, *, ndim: int | Sequence[int] | None = None,
                 expected: str = "", floating: bool | None = None, finite: bool = False) -> None:
    """Raise TypeError unless `x` is a tensor, ValueError unless its rank is `ndim`.

    `expected` describes the wanted shape in words, e.g. "(batch, seq, num_hiddens=16)".
    `finite`: ValueError if it holds NaN or an infinity (one `isfinite` over the tensor, no
    Python loop), for features that a model or a fit would turn into NaN without a word.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {expected}, "
                        f"got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            raise ValueError(f"{name} must have shape {expected} ({' or '.join(map(str, allowed))}-D), "
                             f"got shape {shape_str(x)}")
    if floating is True and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor of shape {expected}, "
                        f"got dtype {x.dtype}")
    if floating is False and (x.is_floating_point() or x.is_complex() or x.dtype == torch.bool):
        raise TypeError(f"{name} must be an integer tensor of shape {expected}, got dtype {x.dtype}")
    if finite and x.is_floating_point() and not bool(torch.isfinite(x).all()):
        bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"{name} must hold finite numbers (no NaN or infinity), got {bad} of "
                         f"{x.numel()} values that are not")


def check_dim(name: str, x: torch.Tensor, dim: int, size: int, expected: str) -> None:
    """Raise ValueError unless `x.shape[dim] == size`."""
    if x.shape[dim] != size:
        raise ValueError(f"{name} must have shape {expected}, got shape {shape_str(x)}")


def check_positive_int(name: str, value, *, allow_zero: bool = False, allow_none: bool = False) -> None:
    """Raise TypeError/ValueError unless `value` is a (positive) Python int (or None, where
    ``allow_none``: an optional setting such as ``eval_every=None``)."""
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")


def check_probability(name: str, value) -> None:
    """Raise unless `value` is a float in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(value).__name__}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")


def check_hidden(name: str, X, num_hiddens: int) -> None:
    """``X`` must be a floating-point ``(batch, seq, num_hiddens)`` tensor, not empty."""
    expected = f"(batch, seq, num_hiddens={num_hiddens})"
    check_tensor(name, X, ndim=3, expected=expected, floating=True)
    if X.shape[-1] != num_hiddens:
        raise ValueError(f"{name} must have shape {expected}, got shape {shape_str(X)}")
    check_nonempty(name, X, expected)


def check_finite_number(name: str, value, *, low: float | None = None, high: float | None = None,
                        low_open: bool = False, high_open: bool = False, allow_none: bool = False) -> None:
    """Raise TypeError unless ``value`` is a real number (not a bool), ValueError if it is NaN,
    infinite or outside ``[low, high]`` (``low_open``/``high_open``: the bound itself excluded).
    ``allow_none``: None is accepted too (an optional setting, e.g. ``clip=None``: no clipping)."""
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} ({value!r})")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value}")


# ----------------------------------------------------------------------------------------
# Plain Python arguments: ints, flags, strings, lists
# ----------------------------------------------------------------------------------------

def check_int(name: str, value, *, low: int | None = None, high: int | None = None) -> None:
    """Raise TypeError unless ``value`` is a Python int (a bool is not), ValueError unless
    ``low <= value <= high`` (either bound may be None)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if (low is not None and value < low) or (high is not None and value > high):
        lo = "" if low is None else f"{low} <= "
        hi = "" if high is None else f" <= {high}"
        raise ValueError(f"{name} must be an int with {lo}{name}{hi}, got {value}")


def check_bool(name: str, value, *, allow_none: bool = False) -> None:
    """Raise TypeError unless ``value`` is True or False (``"no"`` would count as true), or
    None where ``allow_none`` (None meaning "decide for me", e.g. ``amp=None``)."""
    if allow_none and value is None:
        return
    if not isinstance(value, bool):
        extra = ", or None" if allow_none else ""
        raise TypeError(f"{name} must be True or False{extra}, got {type(value).__name__} ({value!r})")


def check_choice(name: str, value, choices) -> None:
    """Raise TypeError unless ``value`` is a str, ValueError unless it is one of ``choices``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {sorted(choices)}, got {type(value).__name__} ({value!r})")
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


def check_str_list(name: str, value, *, what: str = "strings", allow_empty: bool = True) -> None:
    """Raise TypeError unless ``value`` is a list (or tuple) of str, and not a str itself;
    ValueError if it is empty and ``allow_empty`` is False."""
    if isinstance(value, str):
        raise TypeError(f"{name} must be a list of {what}, got a str ({value[:40]!r}): split it first")
    check_list_of(name, value, str, what, allow_empty=True)
    if not allow_empty and len(value) == 0:
        raise ValueError(f"{name} must hold at least one of the {what}, got an empty list")


def check_text(name: str, value) -> None:
    """``value`` must be one str with something besides white space in it."""
    check_instance(name, value, str)
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty text, got {value!r}")


def check_length(name: str, value, n: int, expected: str) -> None:
    """``value`` (already checked to be a list or tuple) must have ``n`` entries; ``expected``
    says what they are, e.g. ``"one per window"``."""
    if len(value) != n:
        raise ValueError(f"{name} must have {n} entries ({expected}), got {len(value)}")


def check_texts(name: str, value, *, allow_blank: bool = False) -> None:
    """``value`` must be a non-empty list (or tuple) of texts: TypeError for a single str (wrap
    it in a list) or anything else, ValueError for an empty list or, unless ``allow_blank``, a
    text with nothing but white space in it (it would be encoded as ``[CLS] [SEP]`` alone)."""
    if isinstance(value, str):
        raise TypeError(f"{name} must be a non-empty list of strings, got str ({value[:40]!r}): wrap a "
                        f"single text in a list: [text]")
    check_str_list(name, value, allow_empty=False)
    i = None if allow_blank else next((i for i, v in enumerate(value) if not v.strip()), None)
    if i is not None:
        raise ValueError(f"{name} must be a list of non-empty strings, got {value[i]!r} at index {i}")


def check_list_of(name: str, value, cls: type | tuple, what: str, *, allow_empty: bool = False) -> None:
    """Raise TypeError unless ``value`` is a list (or tuple) of ``cls`` instances (``cls`` may be
    a tuple of classes), ValueError if it is empty and ``allow_empty`` is False. ``what`` names
    the elements and where to get them, e.g. "Review (see load_sentiment())"."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__}")
    i = next((i for i, v in enumerate(value) if not isinstance(v, cls)), None)
    if i is not None:
        raise TypeError(f"{name} must be a list of {what}, got an element of type {type(value[i]).__name__} "
                        f"({repr(value[i])[:40]}) at index {i}")
    if not allow_empty and len(value) == 0:
        raise ValueError(f"{name} must hold at least one {what}, got an empty list")


def check_int_list(name: str, value, *, low: int | None = None, high: int | None = None) -> list:
    """``value`` (a list, tuple or set of ints, or a 1-D integer tensor) as a list of ints, each
    in ``[low, high]``: TypeError for anything else (a str, floats, bools), ValueError out of range."""
    if isinstance(value, torch.Tensor):
        check_tensor(name, value, ndim=1, expected="(n,) of integer ids", floating=False)
        value = value.tolist()
    elif isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset, range)):
        raise TypeError(f"{name} must be a list of ints or a 1-D integer tensor, got "
                        f"{type(value).__name__} ({str(value)[:40]!r})")
    out = list(value)
    i = next((i for i, v in enumerate(out) if isinstance(v, bool) or not isinstance(v, int)), None)
    if i is not None:
        raise TypeError(f"{name} must hold ints, got {type(out[i]).__name__} ({out[i]!r})")
    if out and ((low is not None and min(out) < low) or (high is not None and max(out) > high)):
        raise ValueError(f"{name} must hold ints in [{low}, {high}], got values from {min(out)} to {max(out)}")
    return out


def check_keys(name: str, value, keys, source: str) -> None:
    """Raise TypeError unless ``value`` is a dict, ValueError unless it has all ``keys``;
    ``source`` names the function whose result it should be."""
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be the dict returned by {source}, got {type(value).__name__}")
    missing = [k for k in keys if k not in value]
    if missing:
        raise ValueError(f"{name} must have the keys {list(keys)} (from {source}), missing {missing}")


def check_instance(name: str, value, cls: type | tuple[type, ...], hint: str = "") -> None:
    """Raise TypeError unless ``isinstance(value, cls)`` (``cls``: a class or a tuple of them);
    ``hint`` says where to get one."""
    if not isinstance(value, cls):
        where = f" ({hint})" if hint else ""
        names = " or ".join(c.__name__ for c in cls) if isinstance(cls, tuple) else cls.__name__
        raise TypeError(f"{name} must be a {names}{where}, got {type(value).__name__}")


def check_floating_dtype(name: str, dtype) -> None:
    """Raise TypeError unless ``dtype`` is a floating-point torch dtype (an integer table of
    sines would round every entry to 0 or ±1)."""
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a floating-point torch.dtype such as torch.float32, "
                        f"got {type(dtype).__name__} ({dtype!r})")
    if not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype such as torch.float32, got {dtype}")


# ----------------------------------------------------------------------------------------
# Tensors: emptiness and token ids
# ----------------------------------------------------------------------------------------

def check_nonempty(name: str, x: torch.Tensor, expected: str) -> None:
    """Raise ValueError if any size of ``x`` is 0 (an empty batch or an empty sequence)."""
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty: expected shape {expected} with every size >= 1, "
                         f"got shape {shape_str(x)}")


def check_ids(name: str, ids, vocab_size: int, *, ndim: int = 2,
              expected: str = "(batch, seq)", what: str = "ids") -> None:
    """``ids`` must be a non-empty integer tensor of rank ``ndim`` with values in
    ``[0, vocab_size)``: token ids for an embedding table of ``vocab_size`` rows.

    One ``aminmax`` over the ids, no Python loop: cheap enough for every forward pass.
    """
    check_tensor(name, ids, ndim=ndim, expected=f"{expected} of integer token ids", floating=False)
    check_nonempty(name, ids, expected)
    lo, hi = (int(v) for v in ids.aminmax())
    if lo < 0 or hi >= vocab_size:
        raise ValueError(f"{name} must hold {what} in [0, vocab_size={vocab_size}), got values "
                         f"from {lo} to {hi}")


def check_labels(name: str, y, num_classes: int, n: int | None = None) -> None:
    """``y`` must be a non-empty 1-D integer tensor of class labels in ``[0, num_classes)``,
    with ``n`` entries where ``n`` is given (one per row of the features). One ``aminmax``."""
    expected = "(n,)" if n is None else f"(n={n},)"
    check_tensor(name, y, ndim=1, expected=f"{expected} of integer class labels", floating=False)
    check_nonempty(name, y, expected)
    if n is not None and y.shape[0] != n:
        raise ValueError(f"{name} must have shape {expected} (one label per row), got shape {shape_str(y)}")
    lo, hi = (int(v) for v in y.aminmax())
    if lo < 0 or hi >= num_classes:
        raise ValueError(f"{name} must hold class labels in 0..{num_classes - 1} (num_classes={num_classes}), "
                         f"got values from {lo} to {hi}")


# ----------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------

def check_path(name: str, value, *, kind: str | None = None, must_exist: bool = False,
               what: str = "") -> str:
    """``value`` as a str path, checked once for every function that takes a path.

    TypeError unless it is a str or an ``os.PathLike`` (e.g. ``pathlib.Path``); ValueError
    for an empty string (``Path("")`` is the current folder: never what a learner meant).
    ``kind="folder"``: ValueError if it is an existing *file*; ``kind="file"``: ValueError if
    it is an existing *folder* (both say what to pass instead). ``must_exist``:
    FileNotFoundError if nothing is there. ``what`` names the thing, e.g. "checkpoint folder".
    """
    if kind not in (None, "file", "folder"):
        raise ValueError(f"kind must be None, 'file' or 'folder', got {kind!r}")
    thing = what or kind or "file or folder"
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path) of the {thing}, "
                        f"got {type(value).__name__} ({value!r})")
    path = os.fspath(value)
    if not isinstance(path, str):          # a PathLike of bytes
        raise TypeError(f"{name} must be a str path of the {thing}, got {type(path).__name__} ({path!r})")
    if path.strip() == "":
        raise ValueError(f"{name} must be the path of the {thing}, got an empty string "
                         f"(write '.' if you mean the current folder)")
    if kind == "folder" and os.path.exists(path) and not os.path.isdir(path):
        other = os.path.join(os.path.dirname(path) or ".", "run")
        raise ValueError(f"{name} {path!r} is a file, but {name} must be a folder (the {thing}): pass the "
                         f"path of a folder instead (a new one is created), e.g. {other!r}")
    if kind == "file" and os.path.isdir(path):
        raise ValueError(f"{name} {path!r} is a folder, but {name} must be a file (the {thing}): pass the "
                         f"path of a file in it")
    if must_exist and not os.path.exists(path):
        raise FileNotFoundError(f"{name} {path!r} does not exist (expected the {thing})")
    return path


# ----------------------------------------------------------------------------------------
# Optimizers and models with their tokenizers
# ----------------------------------------------------------------------------------------

def check_betas(name: str, value) -> tuple:
    """``value`` as a pair ``(beta1, beta2)`` of Adam's decay rates, each finite and in
    ``[0, 1)`` (beta = 1 would never forget, and Adam's bias correction divides by 1 - beta)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (beta1, beta2) of numbers in [0, 1), got "
                        f"{type(value).__name__} ({value!r})")
    for i, b in enumerate(value):
        check_finite_number(f"{name}[{i}]", b, low=0, high=1, high_open=True)
    return tuple(float(b) for b in value)


def check_optimizer(name: str, value) -> None:
    """Raise TypeError unless ``value`` is a ``torch.optim.Optimizer``."""
    if not isinstance(value, torch.optim.Optimizer):
        raise TypeError(f"{name} must be a torch.optim.Optimizer (make one with "
                        f"bertcourse.training.make_optimizer(model)), got {type(value).__name__}")


def vocab_size_of(tokenizer) -> int:
    """The number of tokens of a course ``WordPieceTokenizer`` (``len``) or a Hugging Face
    ``tokenizers.Tokenizer`` (``get_vocab_size()``); TypeError for anything else."""
    if callable(getattr(tokenizer, "get_vocab_size", None)):
        return int(tokenizer.get_vocab_size())
    if hasattr(tokenizer, "vocab") and hasattr(tokenizer, "tokenizer"):
        return len(tokenizer)
    raise TypeError(f"tokenizer must be a WordPieceTokenizer (bertcourse.data) or a tokenizers.Tokenizer, "
                    f"got {type(tokenizer).__name__}")


def check_tokenizer_fits(tokenizer, model) -> None:
    """The one check of a tokenizer/model pair: every id the tokenizer can produce must be a
    row of the model's token embedding (``vocab_size``), and a tokenizer that truncates must
    not keep more tokens than the model has positions (``max_len``). A pair that was not
    trained together fails here with both numbers, instead of an index error deep inside."""
    config = getattr(model, "config", None)
    config = getattr(config, "bert", config)     # a classifier's config holds its encoder's
    if not hasattr(config, "vocab_size") or not hasattr(config, "max_len"):
        raise TypeError(f"model must be a bertcourse BERTModel (with a config), got {type(model).__name__}")
    n = vocab_size_of(tokenizer)
    if n > config.vocab_size:
        raise ValueError(f"tokenizer and model do not fit: the tokenizer has {n} tokens but the model's token "
                         f"embedding has vocab_size={config.vocab_size} rows; use the tokenizer the model was "
                         f"trained with")
    truncation = getattr(tokenizer, "truncation", None)
    if isinstance(truncation, dict) and truncation.get("max_length", 0) > config.max_len:
        raise ValueError(f"tokenizer and model do not fit: the tokenizer keeps up to "
                         f"{truncation['max_length']} tokens but the model has max_len={config.max_len} "
                         f"positions")


def read_json(path, what: str = "JSON file"):
    """Parse the JSON file ``path``; FileNotFoundError or ValueError naming the file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what} {path!r} does not exist")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{what} {path!r} is not valid JSON ({e}); the file is damaged or not "
                         f"what it should be") from None
