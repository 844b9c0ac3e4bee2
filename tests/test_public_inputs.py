"""Every public entry point answers a wrong number, flag, string or path with a named error.

The package's public names are every callable in the ``__all__`` of every module (found with
``pkgutil.walk_packages``, widgets and exercises included). ``TABLE`` maps each of them, by
``module.qualname`` (where the object is defined), to either

* ``Fuzz(...)``: how to build valid values for its required arguments; its numeric, flag,
  string and path parameters are read from the signature (annotation or default), and
  Hypothesis feeds each of them wrong values of its kind (wrong types, NaN and infinities,
  negative numbers, empty strings), one parameter at a time, the others valid; or
* ``Exempt(reason)``: nothing a learner passes to fuzz (an exception class, a record that
  functions return, a function without arguments, or one that takes only objects, whose
  wrong inputs are rows of ``tests/test_bad_inputs.py``).

A call must raise ``TypeError``, ``ValueError`` or ``FileNotFoundError`` whose message names
the parameter: never another exception, never a silent result. ``test_every_public_name_is_in_the_table``
fails for a public name missing from the table (add the new function) or a table key that is
no longer public (a renamed or moved function: update its key).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import signal
from dataclasses import dataclass, field
from typing import Callable

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import bertcourse
from test_bad_inputs import Env

NAN, INF = float("nan"), float("inf")
NAMED = (TypeError, ValueError, FileNotFoundError)


# ----------------------------------------------------------------------------------------
# The public names
# ----------------------------------------------------------------------------------------

def public_callables() -> dict:
    """``{"module.qualname": object}`` for every callable in a public module's ``__all__``
    (a name re-exported by several modules appears once, under the module defining it)."""
    found = {}
    for info in pkgutil.walk_packages(bertcourse.__path__, "bertcourse."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)       # a missing name: test_every_name_in_all_exists
            if callable(obj) and not isinstance(obj, type(torch.float32)):
                where = getattr(obj, "__module__", info.name)
                key = f"{where}.{getattr(obj, '__qualname__', name)}".removeprefix("bertcourse.")
                found.setdefault(key, obj)
    return found


# ----------------------------------------------------------------------------------------
# Kinds of parameters and their wrong values
# ----------------------------------------------------------------------------------------

INT, FLOAT, BOOL, STR, PATH = "int", "float", "bool", "str", "path"
PATH_NAMES = {"path", "folder", "source", "cache_dir"}


def kind_of(param: inspect.Parameter) -> str | None:
    """The kind of a parameter from its annotation (or its default): None for tensors,
    models and other objects, which are not fuzzed here."""
    if param.name in PATH_NAMES:
        return PATH
    ann = param.annotation if isinstance(param.annotation, str) else getattr(param.annotation, "__name__", "")
    ann = ann.replace(" ", "")
    words = set(ann.replace("|", " ").replace("[", " ").replace("]", " ").split())
    if ann and not words <= {"int", "float", "bool", "str", "None"}:
        return None                     # a tensor, a model, a list, a dict ...
    if not ann:
        d = param.default
        words = {type(d).__name__} if d is not param.empty and d is not None else set()
    for kind in (BOOL, FLOAT, INT, STR):
        if kind in words:
            return kind
    return None


def wrong_values(kind: str, optional: bool, negative_ok: bool):
    """A strategy of values that are wrong for every parameter of ``kind``."""
    text = st.text(max_size=4)
    none = [] if optional else [st.none()]
    if kind == INT:
        bad = [st.floats().filter(lambda x: not float(x).is_integer()), st.sampled_from([NAN, INF, -INF]),
               text, st.booleans(), st.lists(st.integers(), max_size=2)]
        if not negative_ok:
            bad.append(st.integers(max_value=-1, min_value=-10**12))
        return st.one_of(*bad, *none)
    if kind == FLOAT:
        return st.one_of(st.sampled_from([NAN, INF, -INF]), text, st.booleans(), st.lists(st.floats(), max_size=2),
                         *none)
    if kind == BOOL:
        return st.one_of(text, st.integers(), st.floats(allow_nan=False), *none)
    if kind == STR:
        return st.one_of(st.integers(), st.floats(allow_nan=False), st.lists(text, max_size=2), *none)
    if kind == PATH:
        return st.one_of(st.integers(), st.just(""), st.just("   "), st.lists(text, max_size=2), *none)
    raise AssertionError(kind)


# ----------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------

@dataclass
class Fuzz:
    """``given``: parameter -> ``lambda env: value`` (valid) for every required parameter
    without a default in ``VALUES``; ``skip``: parameters not fuzzed, with why;
    ``negative_ok``: int parameters for which a negative value is documented as valid
    (e.g. ``-1`` = none); ``kinds``: kinds the signature does not say."""
    given: dict = field(default_factory=dict)
    skip: dict = field(default_factory=dict)
    negative_ok: tuple = ()
    kinds: dict = field(default_factory=dict)
    errors: tuple = ()          # documented error types besides NAMED (e.g. the CLI's UsageError)
    says: dict = field(default_factory=dict)    # parameter -> the name its messages use instead
    positional: Callable = lambda e: ()         # values for *args (e.g. randn's *shape)


@dataclass
class Exempt:
    reason: str


RECORD = Exempt("a record (dataclass) that a function returns; learners read it, they do not build it")
ERROR = Exempt("an exception class")
NO_ARGS = Exempt("takes no argument")
OBJECTS = Exempt("takes only objects (models, loaders, tensors, callables): their wrong inputs are rows of "
                 "tests/test_bad_inputs.py")


class PublicEnv(Env):
    """The objects of tests/test_bad_inputs.py, plus a [CLS]-pooled classifier, a three-class one and a loader."""

    @functools.cached_property
    def clf_cls(self):
        from bertcourse.finetune import BERTClassifier, ClassifierConfig
        torch.manual_seed(0)
        return BERTClassifier(ClassifierConfig(self.cfg_tok, pooling="cls", dropout=0.0)).eval()

    @functools.cached_property
    def clf_nli(self):
        """A three-class (entailment, neutral, contradiction) classifier, marked as trained."""
        from bertcourse.finetune import BERTClassifier, ClassifierConfig
        torch.manual_seed(0)
        model = BERTClassifier(ClassifierConfig(self.cfg_tok, num_classes=3, dropout=0.0)).eval()
        model.trained_steps.fill_(1)
        return model

    @functools.cached_property
    def loader(self):
        from bertcourse.data import PretrainDataset
        ds = PretrainDataset(self.paragraphs, self.tok, max_len=24)
        return torch.utils.data.DataLoader(ds, batch_size=4)

    @functools.cached_property
    def reviews_dataset(self):
        from bertcourse.reviews import SentimentDataset
        return SentimentDataset(self.reviews, self.tok, max_len=24)

    @functools.cached_property
    def batch(self):
        return next(iter(self.loader))


# Valid values for required parameters, by name; an entry's `given` overrides them.
VALUES: dict[str, Callable] = {
    "num_hiddens": lambda e: 16, "ffn_num_hiddens": lambda e: 32, "num_heads": lambda e: 2,
    "num_blks": lambda e: 1, "vocab_size": lambda e: 50, "max_len": lambda e: 12, "seed": lambda e: 0,
    "draw": lambda e: 0, "name": lambda e: "x", "tokenizer": lambda e: e.tok, "text": lambda e: "the cat sat",
    "text_a": lambda e: "the cat", "text_b": lambda e: "the dog", "texts": lambda e: ["the cat", "a dog"],
    "vocab": lambda e: e.vocab, "src_vocab": lambda e: e.src_vocab, "tgt_vocab": lambda e: e.tgt_vocab,
    "config": lambda e: e.cfg, "batch_size": lambda e: 4, "world_size": lambda e: 2, "rank": lambda e: 0,
    "mask_prob": lambda e: 0.15, "n": lambda e: 4, "index": lambda e: 0, "step": lambda e: 0,
    "device": lambda e: torch.device("cpu"), "reviews": lambda e: e.reviews, "model": lambda e: e.bert,
    "where": lambda e: "the case", "paragraphs": lambda e: e.paragraphs, "corpus": lambda e: e.corpus,
    "tokens": lambda e: ["the", "cat"], "ids": lambda e: [5, 6, 7, 8], "path": lambda e: e.tmp / "out",
    "folder": lambda e: e.ckpt, "source": lambda e: e.ckpt, "sentences": lambda e: ["the cat sat", "a dog ran"],
    "num_queries": lambda e: 3, "label": lambda e: 0, "segments": lambda e: [0, 0, 1, 1, 1],
    "title": lambda e: "", "seq_len": lambda e: 5,
}
FORMULA = {"per_token": 10, "per_pair": 2, "per_sequence": 5, "fixed": 4}     # an activation_formula result
TEXT_FREE = {"title": "any text is a title", "text": "any text is valid", "text_a": "any text is valid",
             "text_b": "any text (or None) is valid", "name": "any name", "message": "any text"}

TAG_LISTS = Exempt("takes only lists of tags or of words: their wrong inputs are tested in tests/test_token_tags.py")


def TAGGED(e):
    from bertcourse.token_tags import TaggedSentence
    return [TaggedSentence(["Anna", "ran"], ["B-PER", "O"], "d1", "d1-1"),
            TaggedSentence(["in", "Oslo"], ["O", "B-LOC"], "d2", "d2-1")]


def PAIRS(e):
    from bertcourse.sentence_pairs import Pair
    return [Pair(a, b, y) for a, b, y in (("the cat sat", "a dog ran", 0), ("the dog sat", "the cat ran", 1),
                                          ("a cat", "no dog", 2))] * 2


def QA_QUESTIONS(e):
    from bertcourse.answer_spans import Question
    return [Question("q1", "who sat?", "the cat sat", (("cat", 4),))]


def QA_WINDOW(e):
    from bertcourse.answer_spans import make_windows
    return make_windows(e.tok, "who sat", "the cat sat")[0]


TABLE: dict[str, Fuzz | Exempt] = {
    # analysis
    "inspection.check_mlm_model": OBJECTS,
    "inspection.encode_words": Fuzz(skip=TEXT_FREE),
    "inspection.mask_word": Fuzz(given={"tokens": lambda e: ["a", "b"], "words": lambda e: [("a", 0, 0), ("b", 1, 1)]}),
    "inspection.fill_mask_tokens": Fuzz(given={"model": lambda e: e.bert_tok, "tokens": lambda e: ["[MASK]"]}),
    "inspection.fill_mask": Fuzz(given={"model": lambda e: e.bert_tok, "text": lambda e: "the [MASK] sat"},
                               skip=TEXT_FREE),
    "inspection.attention_maps": Fuzz(given={"model": lambda e: e.bert_tok}, skip=TEXT_FREE),
    # attention
    "attention.causal_mask": Fuzz(),
    "attention.key_mask": Fuzz(given={"valid_lens": lambda e: torch.tensor([1, 2]),
                                      "scores_shape": lambda e: torch.Size([2, 3, 4])}),
    "attention.masked_softmax": Fuzz(given={"scores": lambda e: torch.zeros(2, 3, 4)}),
    "attention.dot_product_attention": Fuzz(given={n: lambda e: torch.zeros(2, 3, 4)
                                                   for n in ("queries", "keys", "values")}),
    "attention.DotProductAttention": Fuzz(),
    "attention.MultiHeadAttention": Fuzz(),
    "attention.store_attention_weights": Fuzz(),
    "attention.inspect_attention": Fuzz(),
    "attention.entropy": OBJECTS,
    "attention.additive_mask": Fuzz(given={"valid_lens": lambda e: torch.tensor([1, 2]), "num_keys": lambda e: 3}),
    # baselines
    "pretraining_baselines.most_frequent_token_accuracy": OBJECTS,
    "pretraining_baselines.count_based_accuracy": Fuzz(given={"train_loader": lambda e: e.loader, "eval_loader": lambda e: e.loader}),
    "pretraining_baselines.nsp_chance_accuracy": OBJECTS,
    "pretraining_baselines.baselines": OBJECTS,
    "pretraining_baselines.nsp_cues": Fuzz(given={"pairs": lambda e: []}),
    # bert
    "bert.get_tokens_and_segments": OBJECTS,
    "bert.BERTConfig": Fuzz(),
    "bert.get_config": Fuzz(given={"name": lambda e: "tiny"}, says={"name": "config"}),
    "bert.BERTEncoder": OBJECTS,
    "bert.MaskLM": Fuzz(),
    "bert.Pooler": Fuzz(),
    "bert.NextSentencePred": Fuzz(),
    "bert.BERTModel": Fuzz(),
    "bert.num_parameters": OBJECTS,
    # checkpoints
    "checkpoints.save_checkpoint": Fuzz(),
    "checkpoints.read_config": Fuzz(),
    "checkpoints.load_weights": Fuzz(),
    "checkpoints.load_trainer_state": Fuzz(),
    "checkpoints.load_checkpoint": Fuzz(),
    "checkpoints.SafetensorsFile": Fuzz(given={"file": lambda e: e.ckpt / "model.safetensors"}, kinds={"file": PATH}),
    # cli: the command lines' options are tested through argv in tests/test_cli.py
    "cli.UsageError": ERROR,
    "cli.Parser": Exempt("argparse.ArgumentParser with one-line errors: its options are tested in test_cli.py"),
    "cli.positive_int": Fuzz(skip={"name": "the option's name in messages"}),
    "cli.nonnegative_int": Fuzz(skip={"name": "the option's name in messages"}),
    "cli.positive_float": Fuzz(skip={"name": "the option's name in messages"}),
    "cli.nonnegative_float": Fuzz(skip={"name": "the option's name in messages"}),
    "cli.check_writable": Fuzz(given={"folder": lambda e: str(e.tmp / "out")}, kinds={"folder": PATH},
                               skip={"option": "the option's name in messages"},
                               errors=(__import__("bertcourse.cli", fromlist=["x"]).UsageError,),
                               says={"folder": "--out"}),
    "cli.add_device_option": OBJECTS,
    "cli.say": Exempt("print() on rank 0: takes what print takes"),
    "cli.run_cli": Exempt("runs a command line; its argv is tested in test_cli.py and test_bad_inputs.py"),
    # corpus
    "corpus.Fact": RECORD, "corpus.Country": RECORD, "corpus.Town": RECORD, "corpus.Animal": RECORD,
    "corpus.Person": RECORD, "corpus.World": RECORD, "corpus.ParagraphInfo": RECORD, "corpus.Corpus": RECORD,
    "corpus.ClozeItem": RECORD,
    "corpus.generate_world": Fuzz(),
    "corpus.generate_corpus": Fuzz(),
    "corpus.cloze_items": Fuzz(),
    # wordpiece and data
    "wordpiece.Vocab": OBJECTS,
    "wordpiece.WordPieceTokenizer": OBJECTS,
    "wordpiece.hf_tokenizer": OBJECTS,
    "wordpiece.train_wordpiece": Fuzz(),
    "wordpiece.get_tokenizer": Fuzz(),
    "wordpiece.bert_pre_tokenize": Fuzz(),
    "wordpiece.wordpiece_encode_word": Fuzz(given={"word": lambda e: "w5"}),
    "wordpiece.wordpiece_tokenize": Fuzz(),
    "wordpiece.train_wordpiece_by_hand": Fuzz(),
    "wordpiece.compare_vocabularies": Fuzz(given={"train_sentences": lambda e: ["the cat sat", "a dog ran"],
                                                  "test_sentences": lambda e: ["the dog sat"]}),
    "data.MaskedTokens": RECORD,
    "data.num_mlm_preds": Fuzz(given={"num_candidates": lambda e: 10}),
    "data.mask_tokens": Fuzz(given={"token_ids": lambda e: [5, 6, 7, 8]}),
    "data.make_nsp_pair": Fuzz(given={"paragraph": lambda e: e.paragraphs[0],
                                      "rng": lambda e: __import__("random").Random(0)}),
    "data.sample_pair": Fuzz(),
    "data.truncate_pair": Fuzz(given={"tokens_a": lambda e: ["a", "b"], "tokens_b": lambda e: ["c"], "max_len": lambda e: 8}),
    "data.draw_generator": Fuzz(),
    "data.draw_rng": Fuzz(),
    "data.PretrainDataset": Fuzz(given={"max_len": lambda e: 24}),
    "data.check_batch": OBJECTS,
    "data.load_pretrain_data": Fuzz(),
    "data.parse_wikitext_lines": OBJECTS,
    "data.read_wikitext": Fuzz(kinds={"path": PATH}),
    "data.load_wikitext2": Fuzz(),
    # ddp_example: chapter 14's standard DDP script
    "ddp_example.toy_data": Fuzz(given={"num_examples": lambda e: 10}),
    "ddp_example.toy_model": Fuzz(),
    "ddp_example.train": Exempt("one rank of the script, given its parsed options: run under torchrun in "
                                "test_ddp_example.py"),
    "ddp_example.main": Exempt("a command line: tested through argv and under torchrun in test_ddp_example.py"),
    # distributed
    "distributed.backend_for": Exempt("takes a torch.device: its wrong input is tested in test_ddp_example.py"),
    "distributed.resolve_device": Fuzz(skip={"device": "a str or a torch.device: tested in test_distributed.py"}),
    "distributed.device_of": OBJECTS,
    "distributed.move_to": OBJECTS,
    "distributed.launched_by_torchrun": NO_ARGS,
    "distributed.init_distributed": Fuzz(),
    "distributed.world": NO_ARGS,
    "distributed.is_main_process": NO_ARGS,
    "distributed.shutdown_distributed": Fuzz(),
    "distributed.StepModule": OBJECTS,
    "distributed.data_parallel": OBJECTS,
    "distributed.agree": Fuzz(given={"flag": lambda e: 1}, negative_ok=("flag",)),
    "distributed.step_seed": Fuzz(),
    "distributed.data_parallel_plan": Fuzz(given={"num_examples": lambda e: 100}),
    "distributed.global_mean_loss": OBJECTS,
    "distributed.launch": Fuzz(given={"command": lambda e: ["true"], "cwd": lambda e: e.tmp}, kinds={"cwd": PATH}),
    "distributed.platform_notes": Fuzz(kinds={"system": STR}),
    "distributed.allreduce_seconds": Fuzz(given={"num_params": lambda e: 1000, "gbytes_per_s": lambda e: 1.0}),
    # exercises: the helpers exercises are built on (exercises' answers: test_exercises.py)
    "exercises.core.CheckFailed": ERROR,
    "exercises.core.NotAttempted": ERROR,
    "exercises.core.CheckResult": RECORD,
    "exercises.core.Exercise": Exempt("built once per question by the course, with a checker function"),
    "exercises.core.Symptom": Fuzz(given={"predicate": lambda e: (lambda got, *args: True)}),
    "exercises.learner_code.argument_names": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.code_of": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.describe_error": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.error_note": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.innermost_frame": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.is_shape_error": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.own_assert": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.is_stub": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.raised_alike": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.raised_message": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.learner_code.shape_message": Exempt("the checker's own helper: exercises.core calls it with what it built and caught"),
    "exercises.quiz.Option": Exempt("a record the course's chapters write; tested in test_quiz.py"),
    "exercises.quiz.Question": Exempt("checked when written (exactly one right option; a numeric question's reasons): "
                                      "test_quiz.py"),
    "exercises.quiz.Quiz": Exempt("built once per chapter by the course; its answers are tested in test_quiz.py"),
    "exercises.core.as_number": Fuzz(given={"got": lambda e: 1.0}, skip={"where": "any text"}),
    "exercises.core.call_answer": Exempt("calls the learner's answer: tested in test_exercises.py"),
    "exercises.core.compare_tensors": Fuzz(given={"got": lambda e: torch.zeros(2), "expected": lambda e: torch.zeros(2),
                                                  "what": lambda e: "x"}),
    "exercises.core.equal_values": OBJECTS,
    "exercises.core.expect_raises": Exempt("calls the learner's answer: tested in test_exercises.py"),
    "exercises.authoring.randn": Fuzz(given={"seed": lambda e: 0}, positional=lambda e: (2, 3)),
    "exercises.core.run_cases": Fuzz(given={"answer": lambda e: (lambda x: x), "reference": lambda e: (lambda x: x),
                                            "cases": lambda e: [("a vector", (torch.ones(2),))]}),
    "exercises.authoring.seeded": Fuzz(kinds={"seed": INT}),
    "exercises.core.message_of": OBJECTS,
    "exercises.authoring.need": Exempt("an argument check for the course's authors: raising the TypeError it names is its job"),
    "exercises.authoring.need_where": Exempt("an argument check for the course's authors: raising the TypeError it names is its job"),
    "exercises.authoring.need_args": Exempt("an argument check for the course's authors: raising the TypeError it names is its job"),
    "exercises.authoring.need_tolerance": Exempt("an argument check for the course's authors: raising the error it names is its job"),
    "exercises.forbidden.check_forbidden": Exempt("a predicate on any value: it answers False, it does not raise"),
    "exercises.forbidden.forbidding": OBJECTS,
    "exercises.guesses.predicted_choice": Fuzz(given={"answer": lambda e: "A", "choices": lambda e: {"a": "one"}}),
    "exercises.guesses.predicted_shares": Exempt("reads the learner's prediction: tested in test_exercises.py"),
    "exercises.guesses.judge_guesses": Exempt("a checker's own helper, given what predicted_shares read and the "
                                              "measurement: tested in test_exercises.py"),
    "exercises.guesses.predicted_dict": Exempt("reads the learner's prediction: tested in test_exercises.py"),
    "exercises.guesses.predicted_number": Exempt("reads the learner's prediction; its message parts come "
                                                 "translated from the checker: tested in test_exercises.py"),
    "exercises.mutation.changed_arguments": OBJECTS,
    "exercises.mutation.in_place_detail": OBJECTS,
    "exercises.values.is_plain": OBJECTS,
    "exercises.values.plain_equal": OBJECTS,
    "exercises.ch01.mean_attention_entropy": Fuzz(given={"d": lambda e: 4}),
    "exercises.ch02.distinct_outputs": Fuzz(given={"readout": lambda e: "mean"}),
    "exercises.ch03.changed_positions": Fuzz(),
    "exercises.ch04.encoder_parameter_split": OBJECTS,
    "exercises.ch05.both_neighbours_visible": Fuzz(),
    "exercises.ch06.q1_pairs": NO_ARGS,
    "exercises.ch06.nsp_gradient_positions": Fuzz(),
    "exercises.ch07.first_mlm_loss": Fuzz(given={"bert_init": lambda e: True}),
    "exercises.ch08.sentence_cosine": Fuzz(skip=TEXT_FREE),
    "exercises.ch10.one_side_accuracies": NO_ARGS,
    "exercises.ch11.all_o_scores": NO_ARGS,
    "exercises.ch12.overlap_baseline_scores": NO_ARGS,
    "exercises.ch13.activation_mb": NO_ARGS,
    # finetune, probing, reviews
    "finetune.ClassifierConfig": Fuzz(given={"bert": lambda e: e.cfg_tok}),
    "finetune.BERTClassifier": OBJECTS,
    "finetune.UntrainedClassifierError": ERROR,
    "pretrained_bert.starting_model": Fuzz(given={"source": lambda e: "scratch"}),
    "finetune.build_classifier": Fuzz(given={"source": lambda e: "scratch"}),
    "finetune.save_classifier": Fuzz(given={"model": lambda e: e.clf}),
    "finetune.load_classifier": Fuzz(),
    "finetune.classification_loss": Fuzz(given={"logits": lambda e: torch.zeros(2, 3),
                                                "labels": lambda e: torch.tensor([0, 2])}),
    "finetune.classification_step": OBJECTS,
    "finetune.fit_probe": Fuzz(given={"model": lambda e: e.clf, "train": lambda e: e.reviews,
                                      "validation": lambda e: e.reviews}),
    "finetune.probe_then_finetune": Fuzz(given={"model": lambda e: e.clf, "train": lambda e: e.reviews,
                                                "validation": lambda e: e.reviews}),
    "finetune.evaluate_classifier": Fuzz(given={"model": lambda e: e.clf, "loader": lambda e: __import__(
        "bertcourse.reviews", fromlist=["x"]).review_loader(e.reviews, e.tok, 4)}),
    "finetune.finetune": Fuzz(given={"model": lambda e: e.clf, "train": lambda e: e.reviews}),
    "memory.release_memory": NO_ARGS,
    "memory.unmap_large_blocks": Fuzz(),
    "memory.cap_onednn_kernels": Exempt("sets an environment variable of the test process; its argument checks "
                                        "are tested in test_memory.py (a fresh process each)"),
    "finetune.init_head_from_probe": OBJECTS,
    "finetune.predict_proba": Fuzz(given={"model": lambda e: e.clf}),
    "finetune.token_contributions": Fuzz(given={"model": lambda e: e.clf}, skip=TEXT_FREE),
    "finetune.misclassified": OBJECTS,
    "finetune.weights_moved": OBJECTS,
    "finetune.model_family_table": NO_ARGS,
    "finetune.encoder_parameters": Fuzz(given={"hidden": lambda e: 16, "layers": lambda e: 1}),
    "measured_bounds.standard_error": Fuzz(given={"accuracy": lambda e: 0.8}),
    "measured_bounds.in_range": Fuzz(given={"name": lambda e: "a. bag of words", "value": lambda e: 0.8}),
    "measured_bounds.gap_holds": Fuzz(given={"values": lambda e: {"b. frozen MiniLM + probe": 0.9, "a. bag of words": 0.8},
                                    "better": lambda e: "b. frozen MiniLM + probe",
                                    "worse": lambda e: "a. bag of words"}),
    "measured_bounds.unmet": Fuzz(given={"values": lambda e: {"a. bag of words": 0.8}}),
    "finetuning_baselines.words": Fuzz(skip=TEXT_FREE),
    "finetuning_baselines.build_vocabulary": Fuzz(),
    "finetuning_baselines.bag_of_words": OBJECTS,
    "finetuning_baselines.LogisticRegression": Fuzz(given={"num_features": lambda e: 4}),
    "finetuning_baselines.fit_logistic_regression": Fuzz(given={"X": lambda e: torch.randn(6, 4),
                                                   "y": lambda e: torch.tensor([0, 1] * 3)}),
    "finetuning_baselines.select_weight_decay": OBJECTS,
    "inspection.sentence_vectors": Fuzz(given={"model": lambda e: e.clf}),
    "finetuning_baselines.FrozenFeatures": Fuzz(given={"mean": lambda e: {}, "cls": lambda e: {}, "labels": lambda e: {},
                                          "seconds": lambda e: 1.0}),
    "finetuning_baselines.frozen_features": Fuzz(),
    "finetuning_baselines.few_shot_accuracies": Fuzz(),
    "finetuning_baselines.one_side_baselines": OBJECTS,
    "reviews.Review": Fuzz(given={"site": lambda e: "amazon"}),
    "reviews.read_reviews": NO_ARGS,
    "reviews.text_key": Fuzz(skip=TEXT_FREE),
    "reviews.Splits": Fuzz(given={"train": lambda e: e.reviews, "validation": lambda e: e.reviews[:2],
                                  "test": lambda e: e.reviews[2:4]}),
    "reviews.SentimentSplits": Fuzz(given={"train": lambda e: e.reviews, "validation": lambda e: e.reviews[:2],
                                           "test": lambda e: e.reviews[2:4]}),
    "reviews.split_reviews": Fuzz(),
    "reviews.load_sentiment": Fuzz(),
    "reviews.stratified_indices": Fuzz(),
    "reviews.stratified_subset": Fuzz(),
    "reviews.special_ids": OBJECTS,
    "reviews.encode_texts": Fuzz(),
    "reviews.SentimentDataset": Fuzz(),
    "reviews.collate_reviews": Fuzz(given={"examples": lambda e: [(torch.tensor([2, 5, 3]), 0)]}),
    "reviews.review_loader": Fuzz(),
    # pretrained_bert
    "pretrained_bert.CheckpointError": ERROR,
    "pretrained_bert.LoadReport": RECORD, "pretrained_bert.Encoded": RECORD, "pretrained_bert.Pretrained": RECORD,
    "pretrained_bert.course_name": Fuzz(given={"hf_name": lambda e: "bert.pooler.dense.weight"}),
    "pretrained_bert.mapping_table": NO_ARGS,
    "pretrained_bert.config_from_hf": OBJECTS,
    "pretrained_bert.read_checkpoint": Fuzz(),
    "pretrained_bert.minilm_folder": NO_ARGS,
    "pretrained_bert.load_pretrained": Fuzz(),
    "bert.mean_pool": OBJECTS,
    "inspection.head_statistics": OBJECTS,
    "inspection.typical_heads": OBJECTS,
    # hf_export
    "hf_export.hf_name": Fuzz(given={"name": lambda e: "encoder.token_embedding.weight"}),
    "hf_export.config_to_hf": Fuzz(),
    "hf_export.save_hf_checkpoint": Fuzz(given={"model": lambda e: e.bert_tok, "folder": lambda e: e.tmp / "hf"}),
    "hf_export.save_hf_classifier": Fuzz(given={"model": lambda e: e.clf_cls, "folder": lambda e: e.tmp / "hf"}),
    "hf_export.save_hf_token_classifier": Fuzz(given={
        "model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"]).TokenTagger(e.cfg_tok, 3),
        "folder": lambda e: e.tmp / "hf"}),
    "hf_export.save_hf_question_answering": Fuzz(given={
        "model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"]).SpanPredictor(e.cfg_tok),
        "folder": lambda e: e.tmp / "hf"}),
    "memory.saved_for_backward": OBJECTS,
    "memory.activation_formula": OBJECTS,
    "memory.activation_bytes": Fuzz(given={"formula": lambda e: FORMULA}),
    # positional
    "positional.sinusoidal_encoding": Fuzz(),
    "positional.frequencies": Fuzz(),
    "positional.relative_rotation": Fuzz(given={"offset": lambda e: 1}, negative_ok=("offset",)),
    "positional.PositionalEncoding": Fuzz(),
    "positional.LearnedPositionalEmbedding": Fuzz(),
    # pretrain and training
    "bert.mlm_loss": Fuzz(given={"mlm_logits": lambda e: torch.zeros(1, 2, 5), "mlm_labels": lambda e: torch.zeros(1, 2, dtype=torch.long),
                             "mlm_weights": lambda e: torch.ones(1, 2)}),
    "bert.nsp_loss": Fuzz(given={"nsp_logits": lambda e: torch.zeros(2, 2), "nsp_labels": lambda e: torch.tensor([0, 1])}),
    "bert.mlm_accuracy": Fuzz(given={"mlm_logits": lambda e: torch.zeros(1, 2, 5), "mlm_labels": lambda e: torch.zeros(1, 2, dtype=torch.long),
                             "mlm_weights": lambda e: torch.ones(1, 2)}),
    "pretrain.pretraining_losses": Fuzz(given={"model": lambda e: e.bert_tok, "batch": lambda e: e.batch}),
    "pretrain.init_bert_weights": Fuzz(given={"model": lambda e: torch.nn.Linear(2, 2)}),
    "pretrain.training_step": Fuzz(given={"model": lambda e: e.bert_tok, "batch": lambda e: e.batch,
                                          "optimizer": lambda e: torch.optim.SGD(e.bert_tok.parameters(), lr=0.0)}),
    "pretrain.pretraining_step": Fuzz(),
    "pretrain.evaluate": Fuzz(given={"model": lambda e: e.bert_tok, "loader": lambda e: e.loader}),
    "pretrain.nsp_predictions": OBJECTS,
    "pretrain.pretrain": Fuzz(given={"model": lambda e: e.bert_tok, "train_loader": lambda e: e.loader}),
    "training.TrainConfig": Fuzz(),
    "training.Trainer": Fuzz(given={"model": lambda e: e.bert_tok, "train_loader": lambda e: e.loader,
                                    "step_fn": lambda e: (lambda model, batch: {"loss": torch.zeros(())})},
                        skip={"desc": "any label for the progress bar (printed with str)"}),
    "training.History": RECORD,
    "training.make_optimizer": Fuzz(),
    "training.lr_factor": Fuzz(given={"progress": lambda e: 0.5, "warmup_steps": lambda e: 2}),
    "training.optimizer_step": Fuzz(given={"optimizer": lambda e: torch.optim.SGD([torch.zeros(1, requires_grad=True)]),
                                           "loss": lambda e: torch.zeros((), requires_grad=True)}),
    "training.plot_history": Fuzz(given={"history": lambda e: __import__("bertcourse.training", fromlist=["x"]).History()}),
    "precision.cpu_has_fast_bf16": NO_ARGS,
    "precision.cpu_supports_bf16": NO_ARGS,
    "precision.bf16_speedup": NO_ARGS,
    "bert.accuracy": Fuzz(given={"logits": lambda e: torch.zeros(2, 3), "labels": lambda e: torch.tensor([0, 2])}),
    "bert.confusion_matrix": Fuzz(given={"labels": lambda e: torch.tensor([0, 2]), "predictions": lambda e: torch.tensor([1, 2]),
                                         "num_classes": lambda e: 3}),
    "training.evaluation_batches": Fuzz(given={"model": lambda e: e.bert_tok, "loader": lambda e: e.loader}),
    "precision.autocast": Fuzz(given={"amp": lambda e: False}),
    # seq2seq and transformer
    "seq2seq.DateVocab": OBJECTS,
    "seq2seq.spell_number": Fuzz(given={"n": lambda e: 5}),
    "seq2seq.spell_day": Fuzz(given={"day": lambda e: 5}),
    "seq2seq.spell_year": Fuzz(given={"year": lambda e: 1999}),
    "seq2seq.spell_date": Fuzz(given={"date": lambda e: __import__("datetime").date(1999, 3, 21)}),
    "seq2seq.iso_date": OBJECTS,
    "seq2seq.make_date_dataset": Fuzz(),
    "seq2seq.DateDataset": RECORD,
    "seq2seq.src_vocab_for_dates": NO_ARGS,
    "seq2seq.tgt_vocab_for_dates": NO_ARGS,
    "seq2seq.Batch": RECORD,
    "seq2seq.make_batch": OBJECTS,
    "seq2seq.sequence_loss": OBJECTS,
    "seq2seq.seq2seq_step": OBJECTS,
    "seq2seq.train_seq2seq": Fuzz(given={"model": lambda e: e.seq2seq, "pairs": lambda e: [e.pair] * 4,
                                         "num_steps": lambda e: 1}),
    "seq2seq.translate": Fuzz(given={"model": lambda e: e.seq2seq, "sources": lambda e: [e.pair[0]]}),
    "seq2seq.exact_match": Fuzz(given={"model": lambda e: e.seq2seq, "pairs": lambda e: [e.pair]}),
    "transformer.get_activation": Fuzz(given={"name": lambda e: "relu"}, says={"name": "activation"}),
    "transformer.PositionWiseFFN": Fuzz(),
    "transformer.AddNorm": Fuzz(),
    "transformer.EncoderBlock": Fuzz(),
    "transformer.DecoderBlock": Fuzz(),
    "transformer.TransformerEmbedding": Fuzz(),
    "transformer.TransformerEncoder": Fuzz(),
    "transformer.TransformerDecoder": Fuzz(),
    "transformer.DecoderCache": Fuzz(),
    "transformer.EncoderDecoder": OBJECTS,
    "transformer.greedy_decode": Fuzz(given={"model": lambda e: e.seq2seq, "src": lambda e: torch.ones(1, 3, dtype=torch.long),
                                             "bos_id": lambda e: 1, "eos_id": lambda e: 2, "max_len": lambda e: 3}),
    # batching and kernels
    "batching.trim_batch": OBJECTS,
    "batching.shard_batches": Fuzz(given={"batches": lambda e: [[0], [1]]}),
    "batching.LengthBucketSampler": Fuzz(given={"lengths": lambda e: [3, 4, 5, 6]}),
    "batching.length_loader": Fuzz(given={"dataset": lambda e: e.reviews_dataset, "collate": lambda e: list}),
    "batching.bucketed_loader": Fuzz(given={"dataset": lambda e: e.loader.dataset}),
    "fast_paths.add_dropout": Fuzz(given={"X": lambda e: torch.zeros(2, 3), "Y": lambda e: torch.zeros(2, 3),
                                       "p": lambda e: 0.1, "training": lambda e: True}),
    "fast_paths.dropout": Fuzz(given={"x": lambda e: torch.zeros(2, 3), "p": lambda e: 0.1, "training": lambda e: True}),
    "fast_paths.dropout_mask": Fuzz(given={"shape": lambda e: (2, 3), "p": lambda e: 0.1}),
    "fast_paths.fast_path": OBJECTS,
    "fast_paths.linear": OBJECTS,
    "fast_paths.onednn_enabled": NO_ARGS,
    "fast_paths.onednn_for": OBJECTS,
    "fast_paths.onednn_mm_t": OBJECTS,
    "fast_paths.onednn_shapes": NO_ARGS,
    "fast_paths.use_onednn": Exempt("switches a global setting of torch: tested in test_fast_paths.py"),
    # i18n: the learner's language switch
    # (the catalogs' upkeep is tools/i18n.py's, not the package's: tested in test_i18n_tool.py)
    "i18n.get_language": NO_ARGS,
    "i18n.register_chinese_font": NO_ARGS,
    "i18n.gettext": Fuzz(given={"msgid": lambda e: "x"}),
    "i18n.tr": Fuzz(given={"msgid": lambda e: "x"}),
    "i18n.tr_table": Fuzz(given={"table": lambda e: __import__("pandas").DataFrame({"a": [1]})},
                          positional=lambda e: ("a",)),
    "i18n.display_width": Fuzz(),
    "i18n.Text": Exempt("a str that pads by display width: its constructor is str's, which takes any object"),
    "i18n.gettext_noop": Exempt("marks a message for extraction; returns its argument unchanged"),
    "i18n.set_language": Exempt("switches the language of every message (global state): tested in its own tests"),
    # learner_progress: where the learner stands (its files: tests/test_learner_progress.py)
    "learner_progress.ProgressFileError": ERROR,
    "learner_progress.Chapter": RECORD,
    "learner_progress.ExerciseProgress": RECORD,
    "learner_progress.Progress": RECORD,
    "learner_progress.chapters": NO_ARGS,
    "learner_progress.progress": NO_ARGS,
    "learner_progress.track_progress": Fuzz(),
    "learner_progress.reset_progress": Fuzz(),
    "learner_progress.export_progress": Fuzz(),
    "learner_progress.import_progress": Fuzz(),
    "learner_progress.record": Fuzz(given={"exercise": lambda e: None, "status": lambda e: "pass"}),
    # utils
    # sentence_pairs
    "sentence_pairs.Pair": Fuzz(given={"premise": lambda e: "the cat sat", "hypothesis": lambda e: "a dog ran"}),
    "sentence_pairs.read_pairs": Fuzz(given={"split": lambda e: "test"}),
    "sentence_pairs.PairSplits": Fuzz(given={"train": PAIRS, "validation": lambda e: PAIRS(e)[:2],
                                             "test": lambda e: PAIRS(e)[2:4]}),
    "sentence_pairs.load_snli": Fuzz(),
    "sentence_pairs.stratified_pairs": Fuzz(given={"pairs": PAIRS}),
    "sentence_pairs.label_counts": OBJECTS,
    "sentence_pairs.majority_class_accuracy": OBJECTS,
    "sentence_pairs.word_cue": OBJECTS,
    "sentence_pairs.EncodedPairs": RECORD,
    "sentence_pairs.encode_pairs": Fuzz(given={"pairs": PAIRS}),
    "sentence_pairs.PairDataset": Fuzz(given={"pairs": PAIRS}),
    "sentence_pairs.collate_pairs": Fuzz(given={"examples": lambda e: [(torch.tensor([2, 5, 3]),
                                                                        torch.tensor([0, 0, 1]), 0)]}),
    "sentence_pairs.pair_loader": Fuzz(given={"pairs": PAIRS}),
    # token_tags
    "token_tags.TaggedSentence": Fuzz(given={"words": lambda e: ["Anna", "ran"], "tags": lambda e: ["B-PER", "O"],
                                             "doc_id": lambda e: "d1", "sent_id": lambda e: "d1-1"}),
    "token_tags.read_named_entities": NO_ARGS,
    "token_tags.split_by_document": Fuzz(given={"sentences": TAGGED}),
    "token_tags.tag_ids": TAG_LISTS,
    "token_tags.align_labels": Fuzz(given={"word_ids": lambda e: [None, 0, 0, 1, None],
                                           "word_labels": lambda e: [1, 0]}, negative_ok=("ignore_index",)),
    "token_tags.encode_tagged": Fuzz(given={"sentences": TAGGED}, negative_ok=("ignore_index",)),
    "token_tags.word_tags": Fuzz(given={"word_ids": lambda e: [None, 0, 1, None], "piece_tags": lambda e: [0, 1, 0, 0],
                                        "num_words": lambda e: 2}),
    "token_tags.TaggedDataset": Fuzz(given={"sentences": TAGGED}),
    "token_tags.collate_tagged": Fuzz(given={"examples": lambda e: [(torch.tensor([2, 5, 3]), torch.tensor([-100, 1, -100]))]},
                                      negative_ok=("ignore_index",)),
    "token_tags.tagged_loader": Fuzz(given={"sentences": TAGGED}),
    "token_tags.bio_entities": TAG_LISTS,
    "token_tags.entity_scores": TAG_LISTS,
    "token_tags.entity_f1_se": Fuzz(given={"gold": lambda e: [["B-PER", "O"]], "predicted": lambda e: [["B-PER", "O"]],
                                           "baseline": lambda e: [["O", "O"]]}),
    "token_tags.token_accuracy": TAG_LISTS,
    "token_tags.all_o_tagger": TAG_LISTS,
    "token_tags.most_frequent_tag": Fuzz(given={"train": TAGGED, "word_lists": lambda e: [["Anna", "ran"]]}),
    # answer_spans
    "answer_spans.Question": Fuzz(given={"id": lambda e: "q1", "question": lambda e: "Who sat?",
                                         "context": lambda e: "Ann sat.", "answers": lambda e: (("Ann", 0),)}),
    "answer_spans.read_questions": Fuzz(given={"name": lambda e: "xquad_en"}),
    "answer_spans.QuestionSplits": Fuzz(given={"train": QA_QUESTIONS, "validation": QA_QUESTIONS,
                                               "test": QA_QUESTIONS}),
    "answer_spans.load_questions": Fuzz(given={"train_size": lambda e: 20, "test_size": lambda e: 10,
                                               "validation_size": lambda e: 10}),
    "answer_spans.normalize_answer": Fuzz(),
    "answer_spans.exact_match": Fuzz(given={"prediction": lambda e: "Ann", "references": lambda e: ["Ann", "Bob"]}),
    "answer_spans.f1": Fuzz(given={"prediction": lambda e: "Ann", "references": lambda e: ["Ann", "Bob"]}),
    "answer_spans.squad_scores": OBJECTS,
    "answer_spans.bootstrap_se": Fuzz(given={"values": lambda e: [0.0, 1.0, 1.0]}),
    "answer_spans.Window": RECORD, "answer_spans.Prediction": RECORD,
    "answer_spans.make_windows": Fuzz(given={"question": lambda e: "who sat", "context": lambda e: "the cat sat"}),
    "answer_spans.answer_positions": Fuzz(given={"window": QA_WINDOW, "answer_text": lambda e: "cat",
                                                 "answer_start": lambda e: 4}),
    "answer_spans.best_span": Fuzz(given={"start_logits": lambda e: torch.zeros(len(QA_WINDOW(e))),
                                          "end_logits": lambda e: torch.zeros(len(QA_WINDOW(e))), "window": QA_WINDOW}),
    "answer_spans.best_spans": Fuzz(given={"start_logits": lambda e: torch.zeros(len(QA_WINDOW(e))),
                                           "end_logits": lambda e: torch.zeros(len(QA_WINDOW(e))),
                                           "window": QA_WINDOW}),
    "answer_spans.span_text": Fuzz(given={"window": QA_WINDOW, "context": lambda e: "the cat sat",
                                          "start": lambda e: QA_WINDOW(e).context_start,
                                          "end": lambda e: QA_WINDOW(e).context_start}),
    "answer_spans.best_answer": Fuzz(given={"windows": lambda e: [QA_WINDOW(e)],
                                            "start_logits_list": lambda e: [torch.zeros(len(QA_WINDOW(e)))],
                                            "end_logits_list": lambda e: [torch.zeros(len(QA_WINDOW(e)))],
                                            "context": lambda e: "the cat sat"}),
    "answer_spans.WindowDataset": Fuzz(given={"questions": QA_QUESTIONS}),
    "answer_spans.collate_windows": Fuzz(given={"examples": lambda e: [(torch.tensor([2, 5, 3]), torch.tensor([0, 1, 1]), 0, 0)]}),
    "answer_spans.window_loader": Fuzz(given={"questions": QA_QUESTIONS}),
    "answer_spans.split_sentences": Fuzz(given={"context": lambda e: "Ann sat. Bob ran."}),
    "answer_spans.sentence_overlap_answers": Fuzz(given={"questions": QA_QUESTIONS}),
    "answer_spans.sentence_overlap_baseline": Fuzz(given={"question": lambda e: "Who sat?",
                                                          "context": lambda e: "Ann sat. Bob ran."}),
    # task_heads
    "task_heads.TokenTagger": Fuzz(given={"config": lambda e: e.cfg, "num_tags": lambda e: 3}),
    "task_heads.SpanPredictor": Fuzz(given={"config": lambda e: e.cfg}),
    "task_heads.build_tagger": Fuzz(given={"source": lambda e: "scratch"}),
    "task_heads.build_span_predictor": Fuzz(given={"source": lambda e: "scratch"}),
    "task_heads.tagging_loss": Fuzz(given={"logits": lambda e: torch.randn(1, 4, 3),
                                           "labels": lambda e: torch.tensor([[-100, 1, 2, -100]])}),
    "task_heads.span_loss": Fuzz(given={"start_logits": lambda e: torch.randn(2, 5), "end_logits": lambda e: torch.randn(2, 5),
                                        "starts": lambda e: torch.tensor([0, 1]), "ends": lambda e: torch.tensor([0, 3])}),
    "task_heads.predict_piece_tags": Fuzz(given={
        "model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"]).TokenTagger(e.cfg_tok, 7),
        "dataset": lambda e: __import__("bertcourse.token_tags", fromlist=["x"]).TaggedDataset(TAGGED(e), e.tok)}),
    "task_heads.predict_tags": Fuzz(given={
        "model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"]).TokenTagger(e.cfg_tok, 7),
        "dataset": lambda e: __import__("bertcourse.token_tags", fromlist=["x"]).TaggedDataset(TAGGED(e), e.tok)}),
    "task_heads.predict_answers": Fuzz(given={
        "model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"]).SpanPredictor(e.cfg_tok),
        "dataset": lambda e: __import__("bertcourse.answer_spans", fromlist=["x"]).WindowDataset(QA_QUESTIONS(e), e.tok)}),
    "task_heads.tagging_step": OBJECTS,
    "task_heads.span_step": OBJECTS,
    "task_heads.evaluate_tagger": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                              .TokenTagger(e.cfg, 3), "loader": lambda e: []}),
    "task_heads.evaluate_spans": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                             .SpanPredictor(e.cfg), "loader": lambda e: []}),
    "utils.stable_order_key": Fuzz(),
    "utils.hash_sample": Fuzz(given={"items": lambda e: ["a", "b", "c"], "n": lambda e: 2, "key": lambda e: str.upper}),
    "utils.set_seed": Fuzz(),
    "utils.set_threads": Fuzz(),
    "utils.available_cores": NO_ARGS,
    "utils.show_source": Fuzz(given={"obj": lambda e: len}),
    "utils.hide_input_checks": Fuzz(given={"source": lambda e: "x = 1"}, kinds={"source": STR}),
    "utils.SourceCode": Fuzz(given={"source": lambda e: "x = 1"}, kinds={"source": STR}, skip={"name": "any name"}),
    "utils.cached": OBJECTS,
    "utils.evaluation_mode": OBJECTS,
    "utils.hide_fast_paths": Fuzz(given={"source": lambda e: "x = 1"}, kinds={"source": STR}),
    # widgets
    "widgets.FigureWidget": OBJECTS,
    "widgets.RepeatedDraws": OBJECTS,
    "widgets.attention.tokenize": Fuzz(skip=TEXT_FREE),
    "widgets.attention.word_vectors": OBJECTS,
    "widgets.attention.explorer_model": NO_ARGS,
    "widgets.attention.attention_for_sentence": Fuzz(given={"tokens": lambda e: ["the", "cat"]}),
    "widgets.attention.draw_attention": Fuzz(given={"tokens": lambda e: ["a", "b"], "weights": lambda e: torch.eye(2),
                                                    "query_index": lambda e: 0}, skip=TEXT_FREE),
    "widgets.attention.AttentionExplorer": Fuzz(skip={"sentence": "any text"}),
    "widgets.bert_input.describe_input": Fuzz(skip=TEXT_FREE),
    "widgets.bert_input.embedding_shapes": Fuzz(),
    "widgets.bert_input.embedding_parts": OBJECTS,
    "widgets.bert_input.draw_input_table": Fuzz(given={"desc": lambda e: __import__("bertcourse.widgets.bert_input",
                                                fromlist=["x"]).describe_input(e.tok, "the cat")}, skip=TEXT_FREE),
    "widgets.bert_input.draw_embedding_sum": OBJECTS,
    "widgets.bert_input.InputExplorer": Fuzz(skip=TEXT_FREE),
    "widgets.drawing.draw_message": Fuzz(given={"message": lambda e: "hello"}, skip=TEXT_FREE),
    "widgets.drawing.draw_heatmap": Exempt("draws into a matplotlib Axes for the widgets: tested in test_widgets_attention.py"),
    "widgets.drawing.draw_tally": Exempt("draws into a matplotlib Axes for the widgets: tested in test_bad_inputs.py"),
    "widgets.drawing.token_layout": Fuzz(given={"widths": lambda e: [3, 4]}),
    "widgets.fill_mask.draw_fill_mask": Fuzz(given={"tokens": lambda e: ["[MASK]"], "predictions": lambda e: [(1, [("a", 0.5)])]},
                                             skip=TEXT_FREE),
    "widgets.fill_mask.FillMaskPlayground": Fuzz(given={"model": lambda e: e.bert_tok}, skip=TEXT_FREE),
    "widgets.fill_mask.draw_attention_grid": Fuzz(given={"pieces": lambda e: ["a", "b"], "weights": lambda e: torch.ones(1, 1, 2, 2) / 2},
                                                  skip=TEXT_FREE),
    "widgets.finetune.contribution_data": Fuzz(given={"model": lambda e: e.clf}, skip=TEXT_FREE),
    "widgets.finetune.draw_contributions": Fuzz(given={"data": lambda e: __import__("bertcourse.widgets.finetune", fromlist=["x"])
                                                       .contribution_data(e.clf, e.tok, "the cat")}, skip=TEXT_FREE),
    "widgets.finetune.WhyDidItSayThat": Fuzz(given={"model": lambda e: e.clf}, skip=TEXT_FREE),
    "widgets.finetune.draw_comparison": OBJECTS,
    "widgets.finetune.draw_learning_curves": OBJECTS,
    "widgets.head_view.pair_mask": Fuzz(given={"which": lambda e: "all"}),
    "widgets.head_view.head_view_data": Fuzz(given={"weights": lambda e: e.weights(), "segments": lambda e: [0] * 5,
                                                    "layer": lambda e: 1, "head": lambda e: 1}, negative_ok=("token",)),
    "widgets.head_view.draw_head_view": Fuzz(given={"pieces": lambda e: ["a"] * 5, "data": lambda e: __import__(
        "bertcourse.widgets.head_view", fromlist=["x"]).head_view_data(e.weights(), [0] * 5, 1, 1)},
        negative_ok=("token",), skip=TEXT_FREE),
    "widgets.head_view.draw_head_survey": OBJECTS,
    "widgets.head_view.HeadView": Fuzz(given={"pretrained": lambda e: e.pretrained, "text_a": lambda e: "w5 w6",
                                              "text_b": lambda e: "w7"}, skip=TEXT_FREE, negative_ok=("token",)),
    "widgets.masking.corpus_sentences": Fuzz(),
    "widgets.masking.encode_text": Fuzz(skip=TEXT_FREE),
    "widgets.masking.classify_masking": OBJECTS,
    "widgets.masking.mask_once": Fuzz(),
    "widgets.masking.count_outcomes": OBJECTS,
    "widgets.masking.running_counts": Fuzz(given={"num_draws": lambda e: 2}),
    "widgets.masking.chosen_shares": OBJECTS,
    "widgets.masking.draw_masking": Fuzz(given={"tokens": lambda e: ["a"], "masked_tokens": lambda e: ["[MASK]"],
                                                "outcomes": lambda e: ["mask"]}, skip=TEXT_FREE),
    "widgets.masking.MaskingExplorer": Fuzz(skip={"sentence": "any text (or None)"}),
    "widgets.nsp.pair_tokens": Fuzz(given={"sentence_a": lambda e: "the cat", "sentence_b": lambda e: "a dog"},
                                    skip={"sentence_a": "any text", "sentence_b": "any text"}),
    "widgets.nsp.label_name": Fuzz(),
    "widgets.nsp.tally": OBJECTS,
    "widgets.nsp.draw_pair": Fuzz(given={"tokens": lambda e: ["[CLS]", "a", "[SEP]"], "segments": lambda e: [0, 0, 0]},
                                  skip=TEXT_FREE),
    "widgets.nsp.PairSampler": Fuzz(),
    "widgets.pairs.inference_data": Fuzz(given={"model": lambda e: e.clf_nli, "premise": lambda e: "the cat sat",
                                                "hypothesis": lambda e: "a dog ran"}),
    "widgets.pairs.draw_inference": Exempt("takes only the dict inference_data returns: its wrong inputs are tested "
                                           "in tests/test_widgets_pairs.py"),
    "widgets.pairs.InferenceExplorer": Fuzz(given={"model": lambda e: e.clf_nli, "examples": PAIRS}),
    "widgets.tags.tag_data": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                         .TokenTagger(e.cfg_tok, 7).eval()}),
    "widgets.tags.draw_tags": Exempt("takes only the dict tag_data returns: its wrong inputs are tested "
                                     "in tests/test_widgets_tags.py"),
    "widgets.tags.TagExplorer": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                            .TokenTagger(e.cfg_tok, 7).eval(),
                                            "examples": lambda e: ["Anna ran to Oslo ."]}),
    "widgets.spans.span_data": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                           .SpanPredictor(e.cfg_tok).eval(), "question": lambda e: "who sat?",
                                           "context": lambda e: "the cat sat on the mat.", "max_len": lambda e: 64}),
    "widgets.spans.draw_spans": Fuzz(given={"data": lambda e: __import__("bertcourse.widgets.spans", fromlist=["x"])
                                            .span_data(__import__("bertcourse.task_heads", fromlist=["x"])
                                                       .SpanPredictor(e.cfg_tok).eval(), e.tok, "who sat?",
                                                       "the cat sat on the mat.", max_len=64)}),
    "widgets.spans.SpanExplorer": Fuzz(given={"model": lambda e: __import__("bertcourse.task_heads", fromlist=["x"])
                                              .SpanPredictor(e.cfg_tok).eval(),
                                              "examples": lambda e: [("who sat?", "the cat sat on the mat.")],
                                              "max_len": lambda e: 64}),
    "widgets.positional.encoding_view": Fuzz(given={"position": lambda e: 3, "dims": lambda e: (0, 1)}),
    "widgets.positional.binary_table": Fuzz(given={"num_positions": lambda e: 4, "num_bits": lambda e: 3}),
    "widgets.positional.draw_explorer": OBJECTS,
    "widgets.positional.draw_sinusoids": OBJECTS,
    "widgets.positional.draw_heatmap": Fuzz(given={"P": lambda e: torch.zeros(4, 8)}, skip=TEXT_FREE),
    "widgets.positional.draw_binary_analogy": Fuzz(),
    "widgets.positional.draw_similarity": OBJECTS,
    "widgets.positional.PositionalEncodingExplorer": Fuzz(),
    "widgets.memory.step_memory": Fuzz(given={"model": lambda e: e.clf, "formulas": lambda e: {False: FORMULA, True: FORMULA},
                                              "checkpointing": lambda e: False, "train_word_embeddings": lambda e: True}),
    "widgets.memory.draw_step_memory": Fuzz(given={"state": lambda e: __import__("bertcourse.widgets.memory", fromlist=["x"])
                                                   .step_memory(e.clf, {False: FORMULA, True: FORMULA}, 2, 8, False, True)}),
    "widgets.memory.MemoryBudget": Fuzz(given={"model": lambda e: e.clf}),
    "widgets.scaling.epoch_layout": Fuzz(given={"num_pairs": lambda e: 100}),
    "widgets.scaling.draw_epoch": Fuzz(given={"layout": lambda e: __import__("bertcourse.widgets.scaling", fromlist=["x"])
                                              .epoch_layout(100, 8, 2)}),
    "widgets.scaling.draw_data_parallelism": Fuzz(),
    "widgets.scaling.DataParallelPlanner": Fuzz(),
    "widgets.transformer.example_attention": Fuzz(given={"model": lambda e: e.seq2seq, "source": lambda e: e.pair[0]}),
    "widgets.transformer.draw_attention_map": Fuzz(given={"weights": lambda e: torch.eye(2), "row_labels": lambda e: ["a", "b"],
                                                         "col_labels": lambda e: ["a", "b"]}, skip=TEXT_FREE),
    "widgets.transformer.TransformerAttentionExplorer": Fuzz(given={"model": lambda e: e.seq2seq,
                                                                    "sources": lambda e: [e.pair[0]]}),
}


# ----------------------------------------------------------------------------------------
# The tests
# ----------------------------------------------------------------------------------------

PUBLIC = public_callables()
ENV = PublicEnv()


@pytest.fixture(scope="module", autouse=True)
def _module_tmp(tmp_path_factory):
    """A folder for what ENV builds once per module (the tiny checkpoint of test_bad_inputs' Env)."""
    ENV.module_tmp = tmp_path_factory.mktemp("public_inputs")


def fuzz_targets():
    """``(key, parameter, kind)`` for every fuzzed parameter of the table."""
    out = []
    for key, entry in TABLE.items():
        if not isinstance(entry, Fuzz) or key not in PUBLIC:
            continue
        for p in inspect.signature(PUBLIC[key]).parameters.values():
            kind = entry.kinds.get(p.name) or kind_of(p)
            if kind and p.name not in entry.skip and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                out.append(pytest.param(key, p.name, kind, id=f"{key}-{p.name}"))
    return out


def test_every_public_name_is_in_the_table():
    missing = sorted(set(PUBLIC) - set(TABLE))
    stale = sorted(set(TABLE) - set(PUBLIC))
    assert not missing, f"public callables without a row in TABLE (add them): {missing}"
    assert not stale, f"TABLE rows that are no longer public names (renamed or moved?): {stale}"


def test_every_name_in_all_exists():
    missing = []
    for info in pkgutil.walk_packages(bertcourse.__path__, "bertcourse."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            module = importlib.import_module(info.name)
            missing += [f"{info.name}.{n}" for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing, f"names in __all__ that the module does not define: {missing}"


def test_objects_only_exemptions_are_true():
    """An entry exempt as "takes only objects" has no parameter of a fuzzable kind."""
    for key, entry in TABLE.items():
        if entry is OBJECTS and key in PUBLIC:
            kinds = {p.name: kind_of(p) for p in inspect.signature(PUBLIC[key]).parameters.values()}
            assert not any(kinds.values()), f"{key} has parameters to fuzz: {kinds}"


def arguments(key: str, env) -> dict:
    """Valid values for the required parameters of ``key``."""
    entry, fn = TABLE[key], PUBLIC[key]
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name in entry.given:
            out[p.name] = entry.given[p.name](env)
        elif p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            if p.name not in VALUES:
                raise AssertionError(f"TABLE[{key!r}] needs a valid value for its required parameter {p.name!r}")
            out[p.name] = VALUES[p.name](env)
    return out


class TookTooLong(Exception):
    pass


def _alarm(signum, frame):
    raise TookTooLong("no answer within 20 s: the wrong value was not checked before the work started")


@pytest.mark.slow
@pytest.mark.parametrize("key, param, kind", fuzz_targets())
def test_wrong_values_get_a_named_error(key, param, kind, tmp_path):
    ENV.tmp = tmp_path
    entry, fn = TABLE[key], PUBLIC[key]
    p = inspect.signature(fn).parameters[param]
    ann = p.annotation if isinstance(p.annotation, str) else ""
    optional = p.default is None or "None" in ann
    strategy = wrong_values(kind, optional, param in entry.negative_ok)

    # no shrinking: a failing value is reported as drawn (shrinking would re-run slow calls)
    @settings(max_examples=10, deadline=None, derandomize=True, database=None,
              phases=(Phase.explicit, Phase.reuse, Phase.generate), suppress_health_check=list(HealthCheck))
    @given(value=strategy)
    def check(value):
        kwargs = {**arguments(key, ENV), param: value}
        args = entry.positional(ENV)
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(20)
        name = entry.says.get(param, param)
        try:
            result = fn(*args, **kwargs)
        except NAMED + entry.errors as e:
            assert name in str(e), f"{key}({param}={value!r}): {type(e).__name__} does not name {name!r}: {e}"
        except TookTooLong:
            raise
        except Exception as e:      # anything else is a raw error from deep inside
            raise AssertionError(f"{key}({param}={value!r}) raised {type(e).__name__}: {e}") from e
        else:
            try:
                if hasattr(result, "__enter__"):     # a context manager checks on entry
                    with result:
                        pass
                elif inspect.isgenerator(result):    # a generator checks on its first step
                    next(result, None)
            except NAMED as e:
                assert param in str(e), f"{key}({param}={value!r}): {e}"
                return
            raise AssertionError(f"{key}({param}={value!r}) returned {type(result).__name__} instead of "
                                 f"a named error")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)

    check()
