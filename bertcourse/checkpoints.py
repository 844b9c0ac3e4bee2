"""Checkpoints of the course's own models: a folder with safetensors weights and JSON.

Files: ``model.safetensors`` (the weights; a tied weight such as BERT's MLM decoder, which
shares the token embedding, is stored once), ``config.json`` (the model's configuration, the
tied names and ``extra``), ``tokenizer.json`` (when a tokenizer is given) and, with a
:class:`~bertcourse.training.Trainer`, ``trainer_state.safetensors`` + ``trainer_state.json``
(optimizer, step, elapsed time, history, random state, position in the data) to resume.
Nothing is ever unpickled: weights are read with safetensors, the rest is JSON.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from ._checks import check_path
from .bert import BERTConfig, BERTModel
from .data import WordPieceTokenizer

__all__ = ["MODEL_FILE", "CONFIG_FILE", "TOKENIZER_FILE", "STATE_FILE", "STATE_INFO_FILE",
           "save_checkpoint", "read_config", "load_weights", "load_trainer_state", "load_checkpoint",
           "SafetensorsFile"]

MODEL_FILE, CONFIG_FILE, TOKENIZER_FILE = "model.safetensors", "config.json", "tokenizer.json"
STATE_FILE, STATE_INFO_FILE = "trainer_state.safetensors", "trainer_state.json"


def _unique_state_dict(model: nn.Module) -> tuple[dict, dict]:
    """The state dict without the tied copies (safetensors refuses shared tensors):
    ``(tensors, tied)`` where ``tied[name] = name_kept``."""
    tensors, tied, seen = {}, {}, {}
    for name, t in model.state_dict().items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        if key in seen:
            tied[name] = seen[key]
            continue
        seen[key] = name
        tensors[name] = t.detach().contiguous()
    return tensors, tied


def write_json(path: str, obj) -> None:
    """``obj`` as JSON in the file ``path`` (UTF-8)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)


def write_files(folder: str, writes) -> None:
    """Write each ``(name, write)`` of ``writes`` into ``folder``: ``write(path)`` writes to a
    temporary name that is then renamed, so an interrupted save never leaves a half-written file
    (shared by this module's checkpoints and :mod:`bertcourse.hf_export`'s folders)."""
    for name, write in writes:
        tmp = os.path.join(folder, name + ".tmp")
        write(tmp)
        os.replace(tmp, os.path.join(folder, name))


def _model_config(model: nn.Module) -> dict:
    config = getattr(model, "config", None)
    if not dataclasses.is_dataclass(config):
        raise TypeError(f"model must have a `config` dataclass attribute (as BERTModel has) so that it "
                        f"can be rebuilt; {type(model).__name__} has {type(config).__name__}")
    return dataclasses.asdict(config)


def save_checkpoint(path, model: nn.Module, tokenizer=None, trainer=None, extra: dict | None = None) -> str:
    """Save ``model`` (and what is needed to use or resume it) into the folder ``path``.

    ``model`` is a :class:`~bertcourse.bert.BERTModel` or any module with a ``config``
    dataclass; ``tokenizer`` anything with ``save(path)``; ``trainer`` a
    :class:`~bertcourse.training.Trainer` whose state is saved to resume; ``extra`` a
    JSON-friendly dict kept in ``config.json``. Returns ``path``. Files are written to
    temporary names and renamed, so an interrupted save never leaves a half-written
    checkpoint behind.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(f"extra must be a dict or None, got {type(extra).__name__}")
    if tokenizer is not None and not callable(getattr(tokenizer, "save", None)):
        raise TypeError(f"tokenizer must have a save(path) method, got {type(tokenizer).__name__}")
    if trainer is not None and not callable(getattr(trainer, "state_dict", None)):
        raise TypeError(f"trainer must be a bertcourse.training.Trainer, got {type(trainer).__name__}")
    path = check_path("path", path, kind="folder", what="checkpoint folder")
    os.makedirs(path, exist_ok=True)
    tensors, tied = _unique_state_dict(model)
    config = {"model_class": type(model).__name__, "config": _model_config(model), "tied": tied,
              "extra": extra or {}}
    if isinstance(model, BERTModel):
        config["with_heads"] = model.mlm is not None
    writes = [(MODEL_FILE, lambda p: save_file(tensors, p, metadata={"format": "pt"})),
              (CONFIG_FILE, lambda p: write_json(p, config))]
    if tokenizer is not None:
        writes.append((TOKENIZER_FILE, tokenizer.save))
    if trainer is not None:
        state = trainer.state_dict()
        writes.append((STATE_FILE, lambda p: save_file(state["tensors"], p)))
        writes.append((STATE_INFO_FILE, lambda p: write_json(p, state["info"])))
    write_files(path, writes)
    return path


def _file(path, name: str) -> str:
    path = check_path("path", path, kind="folder", must_exist=True, what="checkpoint folder")
    file = os.path.join(path, name)
    if not os.path.isfile(file):
        raise FileNotFoundError(f"no {name} in {path!r}: not a checkpoint written by save_checkpoint")
    return file


def _read_json(file: str) -> dict:
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{file} is not valid JSON ({e}); the checkpoint is damaged") from None
    if not isinstance(data, dict):
        raise ValueError(f"{file} must hold a JSON object, got {type(data).__name__}")
    return data


def _damaged(file: str, e: Exception) -> ValueError:
    return ValueError(f"{file} is not a readable safetensors file ({type(e).__name__}: {e}); "
                      "the checkpoint is damaged")


def _read_tensors(file: str) -> dict:
    try:
        return load_file(file)
    except Exception as e:        # safetensors raises its own error types for damaged files
        raise _damaged(file, e) from None


# safetensors' type names (a file's header) -> torch's
_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
           "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
           "BOOL": torch.bool}


class SafetensorsFile(Mapping):
    """The tensors of one ``.safetensors`` file as a read-only ``{name: tensor}`` mapping that
    reads each tensor from the file when it is asked for and keeps none: a model loaded through
    it holds its own weights and one tensor at a time, not a second copy of every weight (for
    all-MiniLM-L6-v2 87 MB, for BERT-base 440 MB). The names come in the order of
    ``safetensors.torch.load_file``. The file is checked by safetensors when it is opened: a
    damaged one raises ``ValueError`` naming it. ``dtype(name)`` reads the header only.
    """

    def __init__(self, file):
        self.file = check_path("file", file, kind="file", must_exist=True, what="safetensors file")
        try:
            with safe_open(self.file, framework="pt") as f:    # checks the header and the sizes
                self._names = list(f.offset_keys())            # load_file's order
        except Exception as e:
            raise _damaged(self.file, e) from None
        self._known = set(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self):
        return iter(self._names)

    def __contains__(self, name) -> bool:         # from the header: Mapping's own would read the tensor
        return name in self._known

    def _open(self):
        # pread(2) instead of a map of the whole file: every page a map touches stays counted
        # in the process' memory until the file is closed
        return safe_open(self.file, framework="pt", backend="pread")

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self._known:
            raise KeyError(name)
        with self._open() as f:
            return f.get_tensor(name)

    def dtype(self, name: str) -> torch.dtype:
        if name not in self._known:
            raise KeyError(name)
        with self._open() as f:
            kind = f.get_slice(name).get_dtype()
        return _DTYPES[kind] if kind in _DTYPES else self[name].dtype


def read_config(path) -> dict:
    """The ``config.json`` of the checkpoint in the folder ``path``."""
    return _read_json(_file(path, CONFIG_FILE))


def load_weights(path, model: nn.Module) -> dict:
    """Load the checkpoint's weights into ``model`` (built with the same configuration; tied
    weights are restored by the model itself). Returns the checkpoint's ``config.json``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    config = read_config(path)
    tensors = _read_tensors(_file(path, MODEL_FILE))
    tied = config.get("tied", {})
    expected = model.state_dict()
    wrong = sorted(k for k, t in tensors.items() if k in expected and tuple(expected[k].shape) != tuple(t.shape))
    if wrong:
        k = wrong[0]
        raise ValueError(f"checkpoint {os.fspath(path)!r} does not fit the model: {k} has shape "
                         f"{tuple(tensors[k].shape)} in the file but {tuple(expected[k].shape)} in the model "
                         f"({len(wrong)} such tensors)")
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = sorted(set(missing) - set(tied))
    if unexpected or missing:
        raise ValueError(f"checkpoint {os.fspath(path)!r} does not fit the model: missing {missing}, "
                         f"unexpected {sorted(unexpected)}")
    return config


def load_trainer_state(path) -> dict | None:
    """The saved trainer state of the checkpoint (for ``Trainer.load_state_dict``), or
    ``None`` when it has none."""
    if not os.path.isfile(os.path.join(check_path("path", path, kind="folder", must_exist=True,
                                                   what="checkpoint folder"), STATE_FILE)):
        return None
    return {"tensors": _read_tensors(_file(path, STATE_FILE)), "info": _read_json(_file(path, STATE_INFO_FILE))}


def load_checkpoint(path) -> tuple:
    """Load a BERT checkpoint written by :func:`save_checkpoint`: ``(model, tokenizer, state)``.

    ``model`` is a :class:`~bertcourse.bert.BERTModel` in ``eval()`` mode with identical
    weights (ties restored), ``tokenizer`` a :class:`~bertcourse.data.WordPieceTokenizer`
    or ``None``, ``state`` the trainer state (for ``Trainer.load_state_dict``) or ``None``.
    """
    config = read_config(path)
    name = config.get("model_class", "BERTModel")
    if name != "BERTModel":
        raise ValueError(f"checkpoint {os.fspath(path)!r} holds a {name}, not a BERTModel: build the model "
                         "and call load_weights(path, model)")
    try:
        bert_config = BERTConfig(**config.get("config", config.get("bert")))
    except TypeError as e:
        raise ValueError(f"{os.path.join(os.fspath(path), CONFIG_FILE)} does not describe a BERTConfig: {e}") from None
    model = BERTModel(bert_config, with_heads=config.get("with_heads", True))
    load_weights(path, model)
    model.eval()
    tokenizer = None
    if os.path.isfile(os.path.join(os.fspath(path), TOKENIZER_FILE)):
        tokenizer = WordPieceTokenizer.load(os.path.join(os.fspath(path), TOKENIZER_FILE))
    return model, tokenizer, load_trainer_state(path)
