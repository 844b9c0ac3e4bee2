"""Tests for bertcourse.hf_export: the course's BERT saved in Hugging Face's format.

The oracle is ``transformers`` itself: every folder written here is loaded with
``AutoModel`` / ``AutoModelForSequenceClassification`` / ``AutoTokenizer`` (offline, from the
local folder) and must compute what the course computes; and ``load_pretrained`` must read it
back exactly. Small random models are built in memory (every weight perturbed, so a swapped
name would show); the real model is all-MiniLM-L6-v2 (offline, from its package).
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
import torch
import transformers   # the oracle: a test dependency (pyproject [test], requirements.txt)
from safetensors.torch import load_file
from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from transformers import (AutoModel, AutoModelForQuestionAnswering, AutoModelForSequenceClassification,
                          AutoModelForTokenClassification, AutoTokenizer, TrainingArguments)

from bertcourse.bert import BERTConfig, BERTModel
from bertcourse.data import train_wordpiece
import bertcourse.finetune as finetune_module
from bertcourse import training
from bertcourse.finetune import RECIPE, BERTClassifier, ClassifierConfig, finetune
from bertcourse.hf_export import (HF_ACTIVATION, config_to_hf, hf_name, save_hf_checkpoint, save_hf_classifier,
                                  save_hf_question_answering, save_hf_token_classifier)
from bertcourse.task_heads import SpanPredictor, TokenTagger
from bertcourse.bert import mean_pool
from bertcourse.pretrained_bert import NAME_MAP, config_from_hf, course_name, load_pretrained
from bertcourse.training import TrainConfig
from bertcourse.transformer import ACTIVATIONS
from bertcourse.wordpiece import hf_tokenizer

TOL = 1e-5
SENTENCES = ["The battery died after two days.", "Great phone, great price!", "the screen is gorgeous",
             "Not good at all; the food was cold.", "I would buy it again."]
PAIRS = (["Great phone!", "The screen cracked after two days, sadly."], ["Would buy again.", "No."])

transformers.utils.logging.disable_progress_bar()     # no "Loading weights" bars in the test log


def max_diff(a, b) -> float:
    return float((a - b).detach().abs().max())


@pytest.fixture(scope="module")
def tok():
    """Chapter 7's kind of tokenizer: trained here, no [CLS]/[SEP] template of its own."""
    return train_wordpiece(SENTENCES * 3, vocab_size=120, min_frequency=1)


def perturbed(module, seed=0):
    """Every weight moved by a different random amount: a name mapped to the wrong tensor
    (or a layer norm's weight taken for its bias) changes the outputs."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return module.eval()


def small_config(tok, **kw):
    fields = dict(vocab_size=len(tok), num_hiddens=32, ffn_num_hiddens=64, num_heads=4, num_blks=2, max_len=40,
                  dropout=0.1, norm_eps=1e-12)
    return BERTConfig(**{**fields, **kw})


def batch(tok):
    """A padded batch of sentence pairs, encoded the course's way: ids, segments, mask."""
    raw = hf_tokenizer(tok)
    cls, sep, pad = (raw.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    rows = [([cls] + raw.encode(a, add_special_tokens=False).ids + [sep],
             raw.encode(b, add_special_tokens=False).ids + [sep]) for a, b in zip(*PAIRS)]
    n = max(len(a) + len(b) for a, b in rows)
    ids = torch.full((len(rows), n), pad)
    segments = torch.zeros(len(rows), n, dtype=torch.long)
    mask = torch.zeros(len(rows), n, dtype=torch.bool)
    for r, (a, b) in enumerate(rows):
        ids[r, :len(a) + len(b)] = torch.tensor(a + b)
        segments[r, len(a):len(a) + len(b)] = 1
        mask[r, :len(a) + len(b)] = True
    return ids, segments, mask


# ----------------------------------------------------------------------------------------
# The name mapping and the configuration, backwards
# ----------------------------------------------------------------------------------------

def test_hf_name_is_course_name_backwards_for_every_parameter(tok):
    model = BERTModel(small_config(tok), with_heads=True)
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    assert len(names) > 30
    for name in names:
        assert course_name(hf_name(name)) == name
    assert hf_name("encoder.blks.3.attention.W_q.weight") == "encoder.layer.3.attention.self.query.weight"
    assert {hf_name(c.replace("{i}", "0") + ".weight").removesuffix(".weight") for _, c in NAME_MAP
            if c != "mlm.decoder.bias"} == {h.replace("{i}", "0") for h, c in NAME_MAP if c != "mlm.decoder.bias"}
    with pytest.raises(KeyError, match="no row of NAME_MAP"):
        hf_name("head.weight")
    with pytest.raises(TypeError, match="name must be a str"):
        hf_name(3)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_config_round_trip_and_the_activation_is_the_same_function(tok, activation):
    config = small_config(tok, activation=activation, dropout=0.2, norm_eps=1e-5, num_segments=3)
    hf = config_to_hf(config, pad_token_id=0)
    assert config_from_hf(hf) == config
    assert (hf["architectures"], hf["hidden_dropout_prob"], hf["attention_probs_dropout_prob"]) == (["BertModel"], 0.2, 0.2)
    x = torch.linspace(-6, 6, 1001)
    assert torch.equal(transformers.activations.ACT2FN[HF_ACTIVATION[activation]](x), ACTIVATIONS[activation](x))
    with pytest.raises(ValueError, match="pad_token_id"):
        config_to_hf(config, pad_token_id=config.vocab_size)
    with pytest.raises(TypeError, match="config must be a BERTConfig"):
        config_to_hf(hf)


# ----------------------------------------------------------------------------------------
# AutoModel and AutoTokenizer read what the course wrote
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_automodel_computes_the_course_encoder_and_pooler(tok, tmp_path, activation):
    model = perturbed(BERTModel(small_config(tok, activation=activation), with_heads=False))
    save_hf_checkpoint(model, tok, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json",
                                                          "tokenizer_config.json"]
    hf = AutoModel.from_pretrained(tmp_path).eval()
    assert type(hf).__name__ == "BertModel" and not hf.training
    ids, segments, mask = batch(tok)
    with torch.no_grad():
        out = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask.long())
        hidden = model.encoder(ids, segments, mask)
    assert max_diff(out.last_hidden_state[mask], hidden[mask]) <= TOL
    assert max_diff(out.pooler_output, model.pooler(hidden)) <= TOL


def test_autotokenizer_encodes_like_the_course(tok, tmp_path):
    model = BERTModel(small_config(tok), with_heads=False)
    save_hf_checkpoint(model, tok, tmp_path)
    hf_tok = AutoTokenizer.from_pretrained(tmp_path)
    enc = hf_tok(*PAIRS, padding=True, return_tensors="pt")
    ids, segments, mask = batch(tok)
    assert torch.equal(enc["input_ids"], ids) and torch.equal(enc["token_type_ids"], segments)
    assert torch.equal(enc["attention_mask"].bool(), mask)
    assert hf_tok.model_max_length == model.config.max_len and hf_tok.pad_token_id == tok.vocab["[PAD]"]
    # the saved copy keeps no padding or truncation of its own; the course's tokenizer is unchanged
    saved = json.loads((tmp_path / "tokenizer.json").read_text())
    assert saved["padding"] is None and saved["truncation"] is None
    assert hf_tokenizer(tok).post_processor is None


def test_classifier_head_on_hf_hidden_states_gives_the_course_logits(tok, tmp_path):
    for pooling in ("mean", "cls"):
        clf = perturbed(BERTClassifier(ClassifierConfig(small_config(tok), num_classes=3, pooling=pooling)))
        folder = tmp_path / pooling
        save_hf_checkpoint(clf, tok, folder)
        names = load_file(str(folder / "model.safetensors")).keys()
        assert any(n.startswith("pooler.") for n in names) == (pooling == "cls")
        assert not any(n.startswith(("head", "classifier")) for n in names)
        hf = AutoModel.from_pretrained(folder, add_pooling_layer=(pooling == "cls")).eval()
        ids, segments, mask = batch(tok)
        with torch.no_grad():
            hidden = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask.long()).last_hidden_state
            logits = clf.head(clf.pool(hidden, mask))
            if pooling == "mean":
                assert torch.equal(clf.pool(hidden, mask), mean_pool(hidden, mask))
            assert max_diff(logits, clf(ids, segments=segments, valid_lens=mask)) <= TOL
        # what chapter 13 says: AutoModelForSequenceClassification finds no classifier (nor, after mean
        # pooling, a pooler) in the folder and initialises them at random
        _, info = AutoModelForSequenceClassification.from_pretrained(folder, output_loading_info=True)
        new = {"classifier.weight", "classifier.bias"} | ({"bert.pooler.dense.weight", "bert.pooler.dense.bias"}
                                                          if pooling == "mean" else set())
        assert set(info["missing_keys"]) == new and not info["unexpected_keys"]


def test_cls_classifier_is_a_bert_for_sequence_classification(tok, tmp_path):
    clf = perturbed(BERTClassifier(ClassifierConfig(small_config(tok), num_classes=2, pooling="cls", dropout=0.2)))
    save_hf_classifier(clf, tok, tmp_path, labels=["negative", "positive"])
    hf = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert type(hf).__name__ == "BertForSequenceClassification"
    assert hf.config.id2label == {0: "negative", 1: "positive"} and hf.config.classifier_dropout == 0.2
    ids, segments, mask = batch(tok)
    with torch.no_grad():
        hf_logits = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask.long()).logits
        assert max_diff(hf_logits, clf(ids, segments=segments, valid_lens=mask)) <= TOL
    # its encoder part is an ordinary BertModel
    base = AutoModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        hidden = base(input_ids=ids, token_type_ids=segments, attention_mask=mask.long()).last_hidden_state
        assert max_diff(hidden[mask], clf.encoder(ids, segments, mask)[mask]) <= TOL
    mean = BERTClassifier(ClassifierConfig(small_config(tok), pooling="mean"))
    with pytest.raises(ValueError, match="pooling='cls'.*save_hf_checkpoint"):
        save_hf_classifier(mean, tok, tmp_path / "mean")
    with pytest.raises(ValueError, match="labels must name the 2 classes"):
        save_hf_classifier(clf, tok, tmp_path / "x", labels=["only one"])


def test_tagger_is_a_bert_for_token_classification(tok, tmp_path):
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
    tagger = perturbed(TokenTagger(small_config(tok), num_tags=7, dropout=0.2))
    save_hf_token_classifier(tagger, tok, tmp_path, labels=tags)
    hf = AutoModelForTokenClassification.from_pretrained(tmp_path).eval()
    assert type(hf).__name__ == "BertForTokenClassification" and hf.bert.pooler is None
    assert hf.config.id2label == dict(enumerate(tags)) and hf.config.classifier_dropout == 0.2
    ids, segments, mask = batch(tok)
    with torch.no_grad():
        hf_logits = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask.long()).logits
        mine = tagger(ids, segments=segments, valid_lens=mask)
    assert hf_logits.shape == mine.shape == (*ids.shape, 7)
    assert max_diff(hf_logits[mask], mine[mask]) <= TOL          # every real position (padding is not read)
    with pytest.raises(ValueError, match="labels must name the 7 classes"):
        save_hf_token_classifier(tagger, tok, tmp_path / "x", labels=tags[:3])


def test_span_predictor_is_a_bert_for_question_answering(tok, tmp_path):
    model = perturbed(SpanPredictor(small_config(tok)))
    save_hf_question_answering(model, tok, tmp_path)
    hf = AutoModelForQuestionAnswering.from_pretrained(tmp_path).eval()
    assert type(hf).__name__ == "BertForQuestionAnswering" and hf.bert.pooler is None
    ids, segments, mask = batch(tok)
    with torch.no_grad():
        out = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask.long())
        start, end = model(ids, segments=segments, valid_lens=mask)
    assert max_diff(out.start_logits[mask], start[mask]) <= TOL and max_diff(out.end_logits[mask], end[mask]) <= TOL
    with pytest.raises(TypeError, match="model must be a SpanPredictor"):
        save_hf_question_answering(TokenTagger(small_config(tok), 3), tok, tmp_path / "y")


def test_round_trip_through_load_pretrained_is_exact(tok, tmp_path):
    model = perturbed(BERTModel(small_config(tok, activation="gelu_tanh"), with_heads=False))
    save_hf_checkpoint(model, tok, tmp_path)
    back = load_pretrained(tmp_path)
    assert back.config == model.config
    assert back.report.heads == {"pooler": True, "mlm": False, "nsp": False}
    mine = dict(model.named_parameters())
    theirs = dict(back.model.named_parameters())
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[n], theirs[n]) for n in mine)
    ids, _, mask = batch(tok)
    assert back.tokenizer.encode(*[p[0] for p in PAIRS]).ids == ids[0][mask[0]].tolist()


def test_minilm_saved_and_loaded_by_transformers(tmp_path):
    start = time.perf_counter()
    minilm = load_pretrained("minilm")
    save_hf_checkpoint(minilm.model, minilm.tokenizer, tmp_path)
    hf = AutoModel.from_pretrained(tmp_path).eval()
    hf_tok = AutoTokenizer.from_pretrained(tmp_path)
    texts = ["Great phone!", "The battery died after two days, but the screen is GORGEOUS."]
    enc = hf_tok(texts, padding=True, return_tensors="pt")
    ours = minilm.encode(texts)
    assert torch.equal(enc["input_ids"], ours.tokens) and torch.equal(enc["attention_mask"].bool(), ours.mask)
    with torch.no_grad():
        out = hf(**enc)
        hidden = minilm.model.encoder(ours.tokens, ours.segments, ours.mask)
    assert max_diff(out.last_hidden_state[ours.mask], hidden[ours.mask]) <= TOL
    assert max_diff(out.pooler_output, minilm.model.pooler(hidden)) <= TOL
    back = load_pretrained(tmp_path)
    assert all(torch.equal(p, q) for p, q in zip(minilm.model.parameters(), back.model.parameters()))
    assert time.perf_counter() - start < 30      # about 5 s here; a generous bound for busy machines


# ----------------------------------------------------------------------------------------
# Wrong inputs
# ----------------------------------------------------------------------------------------

def test_wrong_inputs_are_named(tok, tmp_path):
    model = BERTModel(small_config(tok), with_heads=False)
    file = tmp_path / "a_file"
    file.write_text("x")
    with pytest.raises(ValueError, match="folder .* is a file"):
        save_hf_checkpoint(model, tok, file)
    with pytest.raises(TypeError, match="model must be a BERTEncoder, BERTModel, BERTClassifier, TokenTagger or SpanPredictor"):
        save_hf_checkpoint(torch.nn.Linear(2, 2), tok, tmp_path / "x")
    with pytest.raises(TypeError, match="tokenizer must be"):
        save_hf_checkpoint(model, "bert-base-uncased", tmp_path / "x")
    small = BERTModel(small_config(tok, vocab_size=len(tok) - 1), with_heads=False)
    with pytest.raises(ValueError, match="tokenizer and model do not fit"):
        save_hf_checkpoint(small, tok, tmp_path / "x")
    no_sep = Tokenizer(WordPiece({"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[MASK]": 3, "a": 4}, unk_token="[UNK]"))
    with pytest.raises(ValueError, match=r"special tokens.*lacks \['\[SEP\]'\]"):
        save_hf_checkpoint(model, no_sep, tmp_path / "x")
    with pytest.raises(TypeError, match="model must be a BERTClassifier"):
        save_hf_classifier(model, tok, tmp_path / "x")
    assert not (tmp_path / "x").exists()          # nothing was written by a refused call


# ----------------------------------------------------------------------------------------
# Chapter 9's table: the course's training settings in TrainingArguments' words
# ----------------------------------------------------------------------------------------

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def training_arguments_table(path: Path) -> list[tuple[str, str, str]]:
    """The rows (course, TrainingArguments, note) of chapter 13's table in the notebook at ``path``."""
    nb = nbformat.read(path, as_version=4)
    # the table goes on over consecutive cells (short cells), each starting with the same header
    cells = [c.source for c in nb.cells if c.cell_type == "markdown" and "| `TrainingArguments` |" in c.source]
    assert cells, f"{path.name}: expected a markdown cell with the TrainingArguments table"
    rows = [tuple(col.strip() for col in line.strip("|").split(" | "))
            for cell in cells for line in [x for x in cell.splitlines() if x.startswith("|")][2:]]
    assert all(len(r) == 3 for r in rows), rows
    return rows


def test_every_training_argument_in_chapter_13s_table_exists():
    fields = {f.name: f for f in dataclasses.fields(TrainingArguments)}
    rows = training_arguments_table(NOTEBOOKS / "13_bert_in_practice.ipynb")
    names = [n for _, hf, _ in rows for n in re.findall(r"`(\w+)`", hf)]
    assert len(rows) >= 15 and len(names) >= 20 and len(set(names)) == len(names)
    assert [n for n in names if n not in fields] == []
    assert [hf for _, hf, _ in rows if not re.findall(r"`(\w+)`", hf)] == ["—"]     # the one without an argument
    # the Chinese edition shows the same names (only the words around them are translated)
    zh = training_arguments_table(NOTEBOOKS / "zh" / "13_bert_in_practice.ipynb")
    assert [re.findall(r"`(\w+)`", hf) for _, hf, _ in zh] == [re.findall(r"`(\w+)`", hf) for _, hf, _ in rows]
    # the course's side: every `name=value` is an argument of finetune() at chapter 9's value, or a
    # TrainConfig field at its default; every other name is a function of the package
    finetune_args = inspect.signature(finetune).parameters
    for course, _, _ in rows:
        for code in re.findall(r"`([^`]+)`", course):
            if code.startswith("TrainConfig("):
                settings = eval("dict" + code.removeprefix("TrainConfig"))
                assert {k: TrainConfig.__dataclass_fields__[k].default for k in settings} == settings, code
            elif "=" in code:
                name, value = code.split("=", 1)
                assert name in finetune_args, code
                if name in RECIPE:
                    assert float(value) == RECIPE[name], code
            else:
                assert callable(getattr(training, code, None) or getattr(finetune_module, code, None)), code
    # what the notes say about transformers
    assert "warmup_ratio" not in fields
    assert fields["adam_epsilon"].default == 1e-8 and fields["seed"].default == 42
    assert fields["max_grad_norm"].default == 1.0 and fields["bf16"].default is False
    assert fields["lr_scheduler_type"].default == "linear"
    schedule = transformers.optimization.TYPE_TO_SCHEDULER_FUNCTION["linear"]
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    lambdas = schedule(optimizer, num_warmup_steps=10, num_training_steps=100).lr_lambdas[0]
    assert [lambdas(s) for s in (0, 5, 10, 55, 100)] == [0.0, 0.5, 1.0, 0.5, 0.0]


def test_trainer_decays_what_the_course_decays_and_resumes_as_the_table_says(tmp_path):
    from transformers import Trainer     # slow to import (seconds): only this test needs it
    assert "resume_from_checkpoint" in inspect.signature(Trainer.train).parameters
    # a BertModel from a course folder: Trainer decays the same tensors as the course's make_optimizer
    model = perturbed(BERTModel(BERTConfig(vocab_size=30, num_hiddens=16, ffn_num_hiddens=32, num_heads=2,
                                           num_blks=2, max_len=8), with_heads=False))
    tok = Tokenizer(WordPiece({t: i for i, t in enumerate(("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))},
                              unk_token="[UNK]"))
    save_hf_checkpoint(model, tok, tmp_path)
    hf = AutoModel.from_pretrained(tmp_path)
    theirs = set(Trainer.get_decay_parameter_names(None, hf))      # the method does not use self
    ours = {hf_name(n) for n, p in model.named_parameters() if p.dim() >= 2}   # make_optimizer's rule
    assert theirs == ours and len(ours) == 3 + 2 * 6 + 1        # 3 embedding tables, 6 matrices a block, the pooler
