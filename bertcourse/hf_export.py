"""Chapter 13: from this course to Hugging Face, the way back of chapter 8's loader.

:mod:`bertcourse.pretrained_bert` reads a Hugging Face BERT folder into the course's model. This
module writes one: the course's encoder in the format of ``transformers``' ``BertModel``, so
that ``AutoModel.from_pretrained(folder)`` and ``AutoTokenizer.from_pretrained(folder)`` load
it offline, and :func:`~bertcourse.pretrained_bert.load_pretrained` reads it back exactly.

* :func:`hf_name` is :data:`~bertcourse.pretrained_bert.NAME_MAP` read backwards (course name ->
  Hugging Face name); there is no second table.
* :func:`config_to_hf` is :func:`~bertcourse.pretrained_bert.config_from_hf` backwards.
* :func:`save_hf_checkpoint` writes ``config.json``, ``model.safetensors``, ``tokenizer.json``
  and ``tokenizer_config.json``: the encoder (and the pooler, when the model has one), never a
  task head, because ``BertModel`` has none.
* :func:`save_hf_classifier` writes a ``BertForSequenceClassification`` folder. Only a
  classifier with ``pooling="cls"`` maps onto that class: Hugging Face classifies the pooler's
  output (the ``[CLS]`` state through dense + tanh), dropout, then one linear layer; a
  mean-pooling head has no place in it.
* :func:`save_hf_token_classifier` and :func:`save_hf_question_answering` write the heads of
  :mod:`bertcourse.task_heads` as ``BertForTokenClassification`` and
  ``BertForQuestionAnswering`` (both without a pooler, as Hugging Face builds them).

Chapter 13 saves a fine-tuned classifier's encoder with :func:`save_hf_checkpoint` and maps the
course's training settings to the names of ``transformers.TrainingArguments``
(``tests/test_hf_export.py`` checks every name it gives).
"""
from __future__ import annotations

import os
import re

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer
from tokenizers.processors import TemplateProcessing
from torch import nn

from ._checks import check_instance, check_int, check_path, check_str_list, check_tokenizer_fits
from .bert import BERTConfig, BERTEncoder, BERTModel, Pooler
from .checkpoints import write_files, write_json
from .finetune import BERTClassifier
from .task_heads import SpanPredictor, TokenTagger
from .pretrained_bert import ACTIVATION_NAMES, CONFIG_FIELDS, NAME_MAP, course_name
from .wordpiece import hf_tokenizer

__all__ = ["HF_ACTIVATION", "hf_name", "config_to_hf", "save_hf_checkpoint", "save_hf_classifier",
           "save_hf_token_classifier", "save_hf_question_answering"]

# The course's activation -> config.json's hidden_act: ACTIVATION_NAMES read backwards. The tanh
# GELU has two Hugging Face names; "gelu_pytorch_tanh" is torch's gelu(approximate="tanh"), the very
# function the course calls ("gelu_new" writes the formula out, equal up to rounding).
HF_ACTIVATION = {course: hf for hf, course in ACTIVATION_NAMES.items() if hf != "gelu_new"}

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# (course pattern as a regex, Hugging Face pattern) for every row of NAME_MAP
_BACKWARDS = [(re.compile("^" + re.escape(course).replace(r"\{i\}", r"(?P<i>\d+)")
                          + r"(?P<suffix>\.weight|\.bias|)$"), hf) for hf, course in NAME_MAP]


def hf_name(name: str) -> str:
    """The Hugging Face (``BertModel``) name of a course parameter, by :data:`NAME_MAP` backwards:
    ``"encoder.blks.3.attention.W_q.weight"`` -> ``"encoder.layer.3.attention.self.query.weight"``.

    Raises ``KeyError`` for a name no row maps (as :func:`~bertcourse.pretrained_bert.course_name`)."""
    check_instance("name", name, str, "a course parameter name")
    for regex, hf in _BACKWARDS:
        m = regex.match(name)
        if m:
            return (hf.replace("{i}", m.group("i")) if m.groupdict().get("i") else hf) + m.group("suffix")
    raise KeyError(f"no row of NAME_MAP maps the course parameter {name!r}")


def config_to_hf(config: BERTConfig, pad_token_id: int = 0) -> dict:
    """``config.json`` of a ``BertModel`` with the sizes of ``config`` (a :class:`BERTConfig`):
    :data:`~bertcourse.pretrained_bert.CONFIG_FIELDS` backwards, so ``config_from_hf(config_to_hf(c)) == c``.

    The course has one dropout rate; Hugging Face's two (hidden states, attention weights) both get it."""
    check_instance("config", config, BERTConfig)
    check_int("pad_token_id", pad_token_id, low=0, high=config.vocab_size - 1)
    hf = {"architectures": ["BertModel"], "model_type": "bert"}
    hf.update({entry: getattr(config, field) for field, (entry, _) in CONFIG_FIELDS.items()})
    hf["hidden_act"] = HF_ACTIVATION[config.activation]
    hf.update(attention_probs_dropout_prob=config.dropout, position_embedding_type="absolute",
              initializer_range=0.02, pad_token_id=pad_token_id, dtype="float32")
    return hf


# ----------------------------------------------------------------------------------------
# Writing a folder
# ----------------------------------------------------------------------------------------

def _parts(model) -> tuple[BERTEncoder, Pooler | None]:
    """The encoder and pooler of a BERTEncoder, BERTModel or BERTClassifier."""
    if isinstance(model, BERTEncoder):
        return model, None
    if isinstance(model, (BERTModel, BERTClassifier)):
        return model.encoder, model.pooler
    if isinstance(model, (TokenTagger, SpanPredictor)):
        return model.encoder, None
    raise TypeError(f"model must be a BERTEncoder, BERTModel, BERTClassifier, TokenTagger or SpanPredictor, "
                    f"got {type(model).__name__}")


def _tensors(encoder: BERTEncoder, pooler: Pooler | None, prefix: str = "") -> dict[str, torch.Tensor]:
    """``{Hugging Face name: float32 tensor}`` of the encoder and pooler. Every name is checked
    against the forward mapping, so the two directions cannot drift apart."""
    named = [("encoder." + n, p) for n, p in encoder.named_parameters()]
    if pooler is not None:
        named += [("pooler." + n, p) for n, p in pooler.named_parameters()]
    tensors = {}
    for name, p in named:
        hf = hf_name(name)
        assert course_name(hf) == name, f"NAME_MAP does not map {hf!r} back to {name!r}"
        # safetensors writes contiguous CPU tensors; a float32 CPU parameter is written as it is (no copy)
        tensors[prefix + hf] = p.detach().to("cpu", torch.float32).contiguous()
    return tensors


def _tokenizer_for_hf(tokenizer, max_len: int) -> tuple[Tokenizer, dict]:
    """A copy of the tokenizer for ``AutoTokenizer``, and its ``tokenizer_config.json``.

    Padding and truncation are switched off in the copy (``transformers`` sets them per call, up
    to ``model_max_length``); a tokenizer without a post-processor (chapter 7's WordPiece) gets
    BERT's template, ``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]`` with segment ids 0 and 1."""
    tok = Tokenizer.from_str(hf_tokenizer(tokenizer).to_str())
    missing = [t for t in SPECIAL_TOKENS if tok.token_to_id(t) is None]
    if missing:
        raise ValueError(f"tokenizer must have BERT's special tokens {list(SPECIAL_TOKENS)}; it lacks {missing}")
    tok.no_padding()
    tok.no_truncation()
    if tok.post_processor is None:
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    # PreTrainedTokenizerFast runs tokenizer.json as it is; BertTokenizer would rebuild the normaliser
    # from tokenizer_config.json's do_lower_case (transformers 5), which could disagree with ours
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_len,
              "model_input_names": ["input_ids", "token_type_ids", "attention_mask"],
              "pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
              "mask_token": "[MASK]"}
    return tok, config


def _pad_id(tokenizer) -> int:
    return hf_tokenizer(tokenizer).token_to_id("[PAD]") or 0


def _check_folder(folder) -> str:
    return check_path("folder", folder, kind="folder", what="folder for the Hugging Face checkpoint")


def _write(folder: str, tensors: dict, config: dict, tokenizer, max_len: int) -> str:
    """Write the four files through temporary names, so an interrupted save leaves no half file."""
    tok, tok_config = _tokenizer_for_hf(tokenizer, max_len)
    os.makedirs(folder, exist_ok=True)
    write_files(folder, [("model.safetensors", lambda p: save_file(tensors, p, metadata={"format": "pt"})),
                         ("config.json", lambda p: write_json(p, config)),
                         ("tokenizer.json", tok.save),
                         ("tokenizer_config.json", lambda p: write_json(p, tok_config))])
    return folder


def save_hf_checkpoint(model: nn.Module, tokenizer, folder) -> str:
    """Save the course's BERT encoder in ``transformers``' ``BertModel`` format. Returns ``folder``.

    ``model``: a :class:`~bertcourse.bert.BERTEncoder`, a :class:`~bertcourse.bert.BERTModel`,
    a :class:`~bertcourse.finetune.BERTClassifier` or a head of :mod:`bertcourse.task_heads`;
    its encoder is written, with its pooler
    when it has one (a ``BERTModel``'s, or a classifier's with ``pooling="cls"``). Task heads
    (MLM, NSP, a classifier's ``head``) are not: ``BertModel`` has none (for a ``"cls"``
    classifier, :func:`save_hf_classifier` writes the head too). ``tokenizer``: the model's
    tokenizer (a ``tokenizers.Tokenizer`` or chapter 7's ``WordPieceTokenizer``). ``folder`` is
    created if needed; files of the same names in it are replaced.

    Load it with ``transformers.AutoModel.from_pretrained(folder)`` — pass
    ``add_pooling_layer=False`` when the model had no pooler, or Hugging Face adds a randomly
    initialised one (and says so) — and ``AutoTokenizer.from_pretrained(folder)``, or with the
    course's ``load_pretrained(folder)``.
    """
    folder = _check_folder(folder)
    encoder, pooler = _parts(model)
    check_tokenizer_fits(tokenizer, encoder)
    config = config_to_hf(encoder.config, pad_token_id=_pad_id(tokenizer))
    return _write(folder, _tensors(encoder, pooler), config, tokenizer, encoder.config.max_len)


def save_hf_classifier(model: BERTClassifier, tokenizer, folder, labels=None) -> str:
    """Save a ``pooling="cls"`` classifier as a ``transformers`` ``BertForSequenceClassification``
    (``AutoModelForSequenceClassification.from_pretrained(folder)`` gives the same logits).
    Returns ``folder``.

    The two compute the same function: encoder, the ``[CLS]`` state through the pooler (dense +
    tanh), dropout, one linear layer (``head`` -> ``classifier``). A ``pooling="mean"`` classifier
    does not fit that class (``ValueError``): save its encoder with :func:`save_hf_checkpoint`
    and keep the mean pooling and the head in your own code. ``labels``: optional class names
    (``config.json``'s ``id2label``), one per class.
    """
    folder = _check_folder(folder)
    check_instance("model", model, BERTClassifier)
    if model.config.pooling != "cls":
        raise ValueError(f"model must have pooling='cls' to become a BertForSequenceClassification, which "
                         f"classifies the [CLS] pooler output; got pooling={model.config.pooling!r}: save the "
                         f"encoder with save_hf_checkpoint and keep the mean pooling and the head yourself")
    labels = _class_names(labels, model.config.num_classes)
    check_tokenizer_fits(tokenizer, model)
    config = config_to_hf(model.config.bert, pad_token_id=_pad_id(tokenizer))
    config.update(architectures=["BertForSequenceClassification"], classifier_dropout=model.config.dropout,
                  id2label={str(i): name for i, name in enumerate(labels)},
                  label2id={name: i for i, name in enumerate(labels)},
                  problem_type="single_label_classification")
    tensors = _tensors(model.encoder, model.pooler, prefix="bert.") | _head_tensors(model.head, "classifier")
    return _write(folder, tensors, config, tokenizer, model.config.bert.max_len)


def _head_tensors(head: nn.Linear, name: str) -> dict[str, torch.Tensor]:
    return {f"{name}.{n}": p.detach().to("cpu", torch.float32).contiguous() for n, p in head.named_parameters()}


def _class_names(labels, n: int) -> list[str]:
    labels = [f"LABEL_{i}" for i in range(n)] if labels is None else labels
    check_str_list("labels", labels, what="class names")
    if len(labels) != n:
        raise ValueError(f"labels must name the {n} classes of the model, got {len(labels)} names")
    return list(labels)


def save_hf_token_classifier(model: TokenTagger, tokenizer, folder, labels=None) -> str:
    """Save a :class:`~bertcourse.task_heads.TokenTagger` as a ``transformers``
    ``BertForTokenClassification`` (``AutoModelForTokenClassification.from_pretrained(folder)``
    gives the same logits at every position). Returns ``folder``.

    The two compute the same function: the encoder's final hidden states, dropout, one linear
    layer (``head`` -> ``classifier``); neither has a pooler. ``labels``: optional tag names
    (``config.json``'s ``id2label``), one per tag, e.g. :data:`~bertcourse.token_tags.TAGS`."""
    folder = _check_folder(folder)
    check_instance("model", model, TokenTagger)
    labels = _class_names(labels, model.num_tags)
    check_tokenizer_fits(tokenizer, model.encoder)
    config = config_to_hf(model.config, pad_token_id=_pad_id(tokenizer))
    config.update(architectures=["BertForTokenClassification"], classifier_dropout=model.dropout.p,
                  id2label={str(i): name for i, name in enumerate(labels)},
                  label2id={name: i for i, name in enumerate(labels)})
    tensors = _tensors(model.encoder, None, prefix="bert.") | _head_tensors(model.head, "classifier")
    return _write(folder, tensors, config, tokenizer, model.config.max_len)


def save_hf_question_answering(model: SpanPredictor, tokenizer, folder) -> str:
    """Save a :class:`~bertcourse.task_heads.SpanPredictor` as a ``transformers``
    ``BertForQuestionAnswering`` (``AutoModelForQuestionAnswering.from_pretrained(folder)`` gives
    the same start and end logits). Returns ``folder``.

    The two compute the same function: the encoder's final hidden states and one linear layer to
    two numbers per position (``head`` -> ``qa_outputs``; column 0 the start, 1 the end)."""
    folder = _check_folder(folder)
    check_instance("model", model, SpanPredictor)
    check_tokenizer_fits(tokenizer, model.encoder)
    config = config_to_hf(model.config, pad_token_id=_pad_id(tokenizer))
    config.update(architectures=["BertForQuestionAnswering"])
    tensors = _tensors(model.encoder, None, prefix="bert.") | _head_tensors(model.head, "qa_outputs")
    return _write(folder, tensors, config, tokenizer, model.config.max_len)
