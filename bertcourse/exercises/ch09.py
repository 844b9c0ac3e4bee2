"""Chapter 9 exercises: fine-tuning BERT.

In the notebook::

    from bertcourse.exercises.ch09 import q1, q2, q3, q4, quiz

* ``q1`` — ``prediction``: *before* running the experiment, predict the test accuracy of the
  bag of words and of the MiniLM probe when they get only 100 training sentences (section 7).
* ``q2`` — ``learning_rate(step, steps, warmup_steps, peak)``: the fine-tuning schedule,
  linear warm-up times linear decay (the course's :func:`bertcourse.training.lr_factor`).
* ``q3`` — ``bag_of_words(texts, vocab)``: the 0/1 word-presence matrix of the baseline.
* ``q4`` — ``evaluate_accuracy(model, loader)``: accuracy in eval mode, without gradients,
  putting the model's mode back.
* ``quiz`` — four questions on what the chapter measured, and why (answers in
  ``quiz_answers``, a letter or a number each; see :mod:`bertcourse.exercises.quiz`).

Every check gives the learner's code fresh copies of its inputs (the core's rule), so an
answer that changes its arguments in place cannot spoil the next case, and is told so.
"""
from __future__ import annotations

import torch
from torch import nn

from .. import finetune, finetuning_baselines

from ..finetuning_baselines import bag_of_words as _ref_bag_of_words
from ..finetuning_baselines import few_shot_accuracies, words
from ..training import lr_factor
from ..i18n import gettext as _, gettext_noop as N_
from .core import CheckFailed, Exercise, as_number, call_answer, message_of, run_cases
from .guesses import judge_guesses, predicted_shares
from .quiz import Option, Question, Quiz

__all__ = ["q1", "q2", "q3", "q4", "quiz", "Q1_SIZE"]


# ---------------------------------------------------------------------------------------
# Q1: predict, then run the experiment
# ---------------------------------------------------------------------------------------

Q1_SIZE = 100
"""How many training sentences the experiment of q1 uses."""
Q1_TOLERANCE = 0.10
Q1_KEYS = ("bag of words", "probe")


def _q1_reasons(guess: dict, measured: dict, off: list) -> list:
    # why each key that is off is off (judge_guesses puts these after the report)
    why = []
    if "probe" in off and guess["probe"] < measured["probe"]:
        why.append(_("the probe only fits one linear layer (770 numbers) on top of features that already "
                     "separate positive from negative: 100 sentences are plenty"))
    if "bag of words" in off and guess["bag of words"] > measured["bag of words"]:
        why.append(_("the bag of words only knows the words of its 100 sentences: most test sentences "
                     "share few of them"))
    if "bag of words" in off and guess["bag of words"] < measured["bag of words"]:
        why.append(_("a handful of very common words (great, bad, not, love) already carry much of the signal"))
    if "probe" in off and guess["probe"] > measured["probe"]:
        why.append(_("even good features need some data: the probe loses a few points"))
    return why


def _check_q1(answer) -> str:
    guess = predicted_shares(answer, Q1_KEYS, _("test accuracies between 0 and 1"),
                             _("a test accuracy (a number between 0 and 1)"))
    measured = few_shot_accuracies(Q1_SIZE)
    report = judge_guesses(guess, measured, Q1_TOLERANCE, _q1_reasons)
    # Both guesses within the tolerance can still say "no advantage" (0.72 and 0.72 when 0.62 and
    # 0.82 are measured): the prediction is about the gap, so it must have at least half of it.
    gap, measured_gap = guess["probe"] - guess["bag of words"], measured["probe"] - measured["bag of words"]
    if gap < measured_gap / 2:
        raise CheckFailed(_("{report}: each is within {tolerance:.2f}, but you put the probe {gap:+.2f} ahead of the "
                            "bag of words and it is {measured_gap:+.2f} ahead. The gap is the point: pretrained "
                            "features need far fewer labelled sentences.").format(
            report=report, tolerance=Q1_TOLERANCE, gap=gap, measured_gap=measured_gap))
    return _("{report}: both within {tolerance:.2f}. Pretrained features need far fewer labelled sentences.").format(
        report=report, tolerance=Q1_TOLERANCE)


q1 = Exercise(
    name=N_("Q1 (predict: 100 training sentences instead of 2,400)"),
    var="prediction",
    checker=_check_q1,
    hints=[
        N_("With 2,400 sentences the bag of words reached about 0.8 and the probe about 0.9 (the table above). "
           "Which of the two needs the data more: the one that learns every word from the training set, or "
           "the one whose features come from pretraining on a billion sentence pairs?"),
        N_("Chance is 0.5. A bag of words trained on 100 sentences has seen only a few hundred distinct words."),
        N_("The probe drops only a few points; the bag of words drops much more."),
    ],
    solution=N_('''
# a prediction, not a computation; the check then runs the experiment (few_shot_accuracies(100))
prediction = {"bag of words": 0.6, "probe": 0.83}
'''),
)


# ---------------------------------------------------------------------------------------
# Q2: the learning-rate schedule
# ---------------------------------------------------------------------------------------

def _ref_lr(step, steps, warmup_steps, peak):
    return peak * lr_factor(step, step / steps, warmup_steps)


def _lr_no_plus_one(step, steps, warmup_steps, peak):
    """your warm-up starts at 0: with step counted from 0, the first step must already use (0
    + 1) / warmup_steps of the peak, otherwise step 0 does nothing."""
    warm = 1.0 if warmup_steps == 0 else min(1.0, step / warmup_steps)
    return peak * warm * (1 - step / steps)


def _lr_no_warmup(step, steps, warmup_steps, peak):
    """you left out the warm-up factor min(1, (step + 1) / warmup_steps)."""
    return peak * (1 - step / steps)


def _lr_no_decay(step, steps, warmup_steps, peak):
    """you left out the decay factor (1 - step / steps): the learning rate must fall to 0 at
    the end."""
    return peak * (1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps))


def _lr_hf(step, steps, warmup_steps, peak):
    """that is Hugging Face's get_linear_schedule_with_warmup (decay starts after the
    warm-up); the course's schedule multiplies the warm-up ramp by a decay over the whole
    run, 1 - step/steps."""
    if step < warmup_steps:
        return peak * step / max(1, warmup_steps)
    return peak * max(0.0, (steps - step) / max(1, steps - warmup_steps))


def _lr_hf_plus_one(step, steps, warmup_steps, peak):
    """a warm-up ramp, then a decay that starts only after it (as Hugging Face's
    get_linear_schedule_with_warmup does); the course's schedule multiplies the ramp by a decay
    over the whole run, 1 - step/steps, which already runs during the warm-up."""
    if step < warmup_steps:
        return peak * (step + 1) / warmup_steps
    return peak * max(0.0, (steps - step) / max(1, steps - warmup_steps))


def _lr_min(step, steps, warmup_steps, peak):
    """you took the smaller of the two factors, min(warm-up, decay); the schedule is their
    product: peak * warm-up * (1 - step / steps)."""
    warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps)
    return peak * min(warm, 1 - step / steps)


Q2_CASES = [(s, 75, 8, 5e-5) for s in (0, 1, 3, 7, 8, 20, 40, 74)] + \
           [(0, 10, 0, 1e-3), (5, 10, 0, 1e-3), (0, 300, 30, 3e-5), (29, 300, 30, 3e-5), (150, 300, 30, 3e-5),
            (299, 300, 30, 3e-5)]

Q2_DIAGNOSES = [_lr_no_plus_one, _lr_hf, _lr_hf_plus_one, _lr_min, _lr_no_warmup, _lr_no_decay]


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 + 1e-6 * abs(b)


def _check_q2(answer) -> str:
    if not callable(answer):
        raise CheckFailed(_("learning_rate must be a function, got {type}").format(type=type(answer).__name__))
    where = ["learning_rate(step={}, steps={}, warmup_steps={}, peak={:g})".format(*case) for case in Q2_CASES]
    got = []
    for case, w in zip(Q2_CASES, where):
        try:
            got.append(as_number(call_answer(answer, case, w), w))
        except CheckFailed as failure:
            if case[2] == 0 and "ZeroDivisionError" in str(failure):
                raise CheckFailed(_("on {where}: your code divided by warmup_steps = 0. No warm-up means a warm-up "
                                    "factor of 1 from the first step: warm = 1.0 if warmup_steps == 0 else "
                                    "min(1.0, (step + 1) / warmup_steps).").format(where=w)) from None
            raise
    wrong = [k for k, case in enumerate(Q2_CASES) if not _close(got[k], _ref_lr(*case))]
    if not wrong:
        return _("correct on all {n} cases (first step, end of warm-up, decay, last step, no warm-up)").format(
            n=len(Q2_CASES))
    k = wrong[0]
    failure = _("on {where}: expected {expected:.4g}, got {got:.4g}").format(
        where=where[k], expected=_ref_lr(*Q2_CASES[k]), got=got[k])
    # the mistake that explains every case first, else one that explains this case
    for everywhere in (True, False):
        for mistake in Q2_DIAGNOSES:
            cases = range(len(Q2_CASES)) if everywhere else [k]
            if all(_close(got[j], mistake(*Q2_CASES[j])) for j in cases):
                raise CheckFailed(_("{failure} — {why}").format(failure=failure, why=message_of(mistake)))
    raise CheckFailed(failure)


q2 = Exercise(
    name=N_("Q2 (the learning-rate schedule)"),
    var="learning_rate",
    checker=_check_q2,
    hints=[
        N_("Two factors multiply the peak: a warm-up ramp that reaches 1 after warmup_steps steps, and a "
           "decay that goes from 1 at step 0 to 0 at step = steps."),
        N_("warm-up: min(1, (step + 1) / warmup_steps) (1 when warmup_steps is 0); decay: 1 - step / steps."),
        N_("warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps); "
           "return peak * warm * (1 - step / steps)"),
    ],
    solution=N_('''
def learning_rate(step, steps, warmup_steps, peak):
    warm = 1.0 if warmup_steps == 0 else min(1.0, (step + 1) / warmup_steps)   # linear warm-up
    return peak * warm * (1 - step / steps)                                     # linear decay to 0
'''),
)


# ---------------------------------------------------------------------------------------
# Q3: bag of words
# ---------------------------------------------------------------------------------------

def _bow_counts(texts, vocab):
    """you counted how often each word occurs; the features here are 0/1 (present or not)."""
    X = torch.zeros(len(texts), len(vocab))
    for r, t in enumerate(texts):
        for w in words(t):
            if w in vocab:
                X[r, vocab[w]] += 1
    return X


def _bow_split(texts, vocab):
    """you split on spaces; use words(text) from bertcourse.finetuning_baselines, which lower-cases and
    separates punctuation ('phone!' is the word 'phone')."""
    X = torch.zeros(len(texts), len(vocab))
    for r, t in enumerate(texts):
        for w in t.split():
            if w in vocab:
                X[r, vocab[w]] = 1.0
    return X


def _bow_no_membership(texts, vocab):
    """you looked up every word in vocab, also the words it does not have: skip them (if w in
    vocab), they are words the training sentences never had."""
    X = torch.zeros(len(texts), len(vocab))
    for r, t in enumerate(texts):
        for w in words(t):
            X[r, vocab[w]] = 1.0
    return X


def _bow_lower_split(texts, vocab):
    """you lower-cased and split on spaces; punctuation then stays on the words ('phone!' is not
    'phone'): use words(text) from bertcourse.finetuning_baselines, which separates it."""
    X = torch.zeros(len(texts), len(vocab))
    for r, t in enumerate(texts):
        for w in t.lower().split():
            if w in vocab:
                X[r, vocab[w]] = 1.0
    return X


_VOCAB = {"great": 0, "phone": 1, "not": 2, "good": 3, "the": 4, "don't": 5, "buy": 6}
Q3_CASES = [
    (N_("three short reviews"), (["Great phone!", "Not good.", "The phone is not great, not good."], _VOCAB)),
    (N_("repeated words count once"), (["great great GREAT phone"], _VOCAB)),
    (N_("unknown words and an empty text"), (["Absolutely terrible service.", ""], _VOCAB)),
    (N_("an apostrophe inside a word"), (["Don't buy the phone."], _VOCAB)),
    (N_("a larger vocabulary"), ([f"word{i} word{(i * 7) % 30}" for i in range(12)],
                             {f"word{i}": (i * 11) % 30 for i in range(30)})),
]
Q3_DIAGNOSES = [_bow_counts, _bow_split, _bow_lower_split, _bow_no_membership]


def _check_q3(answer) -> str:
    return run_cases(answer, _ref_bag_of_words, Q3_CASES, Q3_DIAGNOSES)


q3 = Exercise(
    name=N_("Q3 (bag-of-words features)"),
    var="bag_of_words",
    checker=_check_q3,
    forbidden=[(finetuning_baselines, "bag_of_words", N_("the package's bag_of_words"))],
    hints=[
        N_("The result is a (len(texts), len(vocab)) float tensor of zeros; row r gets a 1 in column "
           "vocab[w] for every word w of texts[r] that is in vocab."),
        N_("Use words(text) (from bertcourse.finetuning_baselines) to get the lower-cased words; a word that occurs "
           "twice still gives 1, and words not in vocab are skipped."),
        N_("X = torch.zeros(len(texts), len(vocab)); for r, t in enumerate(texts): for w in words(t): "
           "if w in vocab: X[r, vocab[w]] = 1.0"),
    ],
    solution=N_('''
from bertcourse.finetuning_baselines import words

def bag_of_words(texts, vocab):
    X = torch.zeros(len(texts), len(vocab))
    for r, text in enumerate(texts):
        for w in words(text):
            if w in vocab:
                X[r, vocab[w]] = 1.0          # presence, not a count
    return X
'''),
)


# ---------------------------------------------------------------------------------------
# Q4: evaluation in eval mode, without gradients
# ---------------------------------------------------------------------------------------

_RECORDS: dict = {}       # spy tag -> [(training, grad enabled)] of every forward call
_RECORDING = [True]


class _Spy(nn.Module):
    """A tiny sentence classifier with dropout. Every forward call is recorded (was the
    model in training mode? were gradients on?) under the spy's ``tag``, which deep copies
    share: the learner's code runs on a copy."""

    def __init__(self, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.tag = seed
        self.embedding = nn.Embedding(30, 16)
        self.dropout = nn.Dropout(0.5)
        self.out = nn.Linear(16, 2)
        with torch.no_grad():
            self.embedding.weight.copy_(torch.randn(30, 16, generator=g))
            self.out.weight.copy_(torch.randn(2, 16, generator=g))
            self.out.bias.zero_()

    def forward(self, tokens, *args, segments=None, valid_lens=None):
        if args:      # as BERTClassifier: a second positional argument would be the segment ids
            raise TypeError("pass the mask by name: model(tokens, valid_lens=mask); a second positional "
                            "argument is taken as segment ids")
        if _RECORDING[0]:
            _RECORDS.setdefault(self.tag, []).append((self.training, torch.is_grad_enabled()))
        m = (torch.ones_like(tokens, dtype=torch.bool) if valid_lens is None else valid_lens).unsqueeze(-1).float()
        h = (self.embedding(tokens) * m).sum(1) / m.sum(1)
        return self.out(self.dropout(h))


def _q4_batches(seed: int, n_batches: int, batch: int = 8, seq: int = 6, last: int | None = None) -> list:
    """``n_batches`` batches of ``batch`` sentences, the last of ``last`` (as a DataLoader's last batch
    is: then the mean of the batches' accuracies is not the accuracy)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n_batches):
        size = last if last is not None and i == n_batches - 1 else batch
        lengths = torch.randint(2, seq + 1, (size,), generator=g)
        out.append({"tokens": torch.randint(0, 30, (size, seq), generator=g),
                    "mask": torch.arange(seq) < lengths[:, None],
                    "labels": torch.randint(0, 2, (size,), generator=g)})
    return out


def _ref_eval_accuracy(model, loader) -> float:
    """The reference: eval mode, no gradients (not recorded: only the learner's calls are)."""
    _RECORDING[0] = False
    try:
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for b in loader:
                correct += int((model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).sum())
                total += len(b["labels"])
        return correct / total
    finally:
        _RECORDING[0] = True


def _q4_case(seed: int, n_batches: int, training: bool, last: int | None = None) -> tuple:
    return (_Spy(seed).train(training), _q4_batches(seed, n_batches, last=last))


# the last batch of cases 1 and 3 is smaller, so that a mean of the batches' accuracies fails
# (tests/test_exercises_ch09.py checks that it differs from the accuracy in both)
Q4_CASES = [(N_("3 batches, the model in training mode"), _q4_case(1, 3, True, last=3)),
            (N_("1 batch, the model already in eval mode"), _q4_case(2, 1, False)),
            (N_("5 batches of other sentences, the model in training mode"), _q4_case(3, 5, True, last=2))]


def _q4_prepare(got, where, model, loader):
    calls = _RECORDS.get(model.tag, [])
    if not calls:
        raise CheckFailed(_("on {where}: your function never called the model").format(where=where))
    if any(training for training, _grad in calls):
        raise CheckFailed(_("on {where}: the model ran in training mode, so dropout was on and the accuracy is "
                            "random (the pitfall \"evaluating with dropout on\"). Call model.eval() "
                            "first.").format(where=where))
    if any(grad for _training, grad in calls):
        raise CheckFailed(_("on {where}: gradients were on during evaluation; run the loop inside "
                            "`with torch.no_grad():` (no graph is kept: less memory, less time).").format(where=where))
    return as_number(got, where)


def _q4_compare(got, expected, where):
    # a float32 division (a tensor count / n) is exact to about 1e-7; one sentence is at least 1/40
    if abs(got - expected) > 1e-6:
        raise CheckFailed(_("on {where}: expected accuracy {expected:.4f}, got {got:.4f} (the share of sentences "
                            "whose largest logit is at their label, over all batches)").format(
            where=where, expected=expected, got=got))


def _mask_as_second_argument(model, loader):
    """you passed the mask as the second positional argument, model(b["tokens"], b["mask"]): the
    course's models (and d2l's) take (tokens, segments, valid_lens), so the mask would be read as
    segment ids and the padding would not be masked (the pitfall "the attention mask passed where
    the segment ids go"). Pass it by name: model(b["tokens"], valid_lens=b["mask"])."""
    for b in loader:
        model(b["tokens"], b["mask"])


def _batch_unpacked(model, loader):
    """each batch is a dict ({"tokens", "mask", "labels"}): `for tokens, mask, labels in loader`
    unpacks its keys, the strings 'tokens', 'mask' and 'labels'. Read b["tokens"], b["mask"] and
    b["labels"] of each batch b."""
    for tokens, mask, labels in loader:
        model(tokens, valid_lens=mask)


def _mean_of_batch_accuracies(model, loader):
    """you averaged the accuracies of the batches: the last batch is usually smaller (in the first case,
    3 sentences after two batches of 8), so each of its sentences counts for more than the others. Count
    the correct sentences and the sentences over all batches, and divide once at the end."""
    was = model.training
    model.eval()
    with torch.no_grad():
        accs = [float((model(b["tokens"], valid_lens=b["mask"]).argmax(-1) == b["labels"]).float().mean())
                for b in loader]
    model.train(was)
    return sum(accs) / len(accs)


Q4_DIAGNOSES = [_mask_as_second_argument, _batch_unpacked, _mean_of_batch_accuracies]


def _check_q4(answer) -> str:
    _RECORDS.clear()
    return run_cases(answer, _ref_eval_accuracy, Q4_CASES, compare=_q4_compare, prepare=_q4_prepare,
                     diagnoses=Q4_DIAGNOSES,
                     in_place=N_("on {where}: the accuracy is right, but your function changed its arguments: "
                                 "the model (its train/eval mode or its weights) or the list of batches is not "
                                 "as it was. Remember "
                                 "was_training = model.training before model.eval(), and call "
                                 "model.train(was_training) at the end."))


q4 = Exercise(
    name=N_("Q4 (evaluate without dropout and without gradients)"),
    var="evaluate_accuracy",
    checker=_check_q4,
    forbidden=[(finetune, "evaluate_classifier", N_("the package's evaluate_classifier"))],
    hints=[
        N_("Remember whether the model was training (model.training), switch to model.eval(), and run "
           "every batch inside `with torch.no_grad():`."),
        N_("For a batch b: logits = model(b['tokens'], valid_lens=b['mask']); count "
           "(logits.argmax(-1) == b['labels']).sum() and the number of labels; divide at the end."),
        N_("Put the mode back at the end with model.train(was_training) (a try/finally makes it survive "
           "an error)."),
    ],
    solution=N_('''
def evaluate_accuracy(model, loader):
    was_training = model.training
    model.eval()                                   # dropout off
    correct = total = 0
    try:
        with torch.no_grad():                      # no graph, no gradients
            for b in loader:
                logits = model(b["tokens"], valid_lens=b["mask"])
                correct += int((logits.argmax(-1) == b["labels"]).sum())
                total += len(b["labels"])
    finally:
        model.train(was_training)                  # leave the model as we found it
    return correct / total
'''),
)


# ---------------------------------------------------------------------------------------
# The quiz: what the chapter measured, and why
# ---------------------------------------------------------------------------------------

quiz = Quiz(N_("Quiz (chapter 9)"), [
    Question(
        N_("A linear probe on MiniLM's mean-pooled vector beat a probe on its [CLS] pooler output on validation. "
           "Why did the chapter expect mean pooling to suit all-MiniLM-L6-v2?"),
        options=(
            Option(N_("Its checkpoint says it was trained as encoder -> mean over the tokens -> normalise; its "
                      "pooler was never trained for that objective."),
                   why=N_("Right: the sentence-transformers pipeline in its folder is Transformer -> Pooling -> "
                          "Normalize, with the mean mode on and the [CLS] mode off; the pooler's weights were "
                          "carried along from the base checkpoint."), correct=True),
            Option(N_("Mean pooling gives the probe more features to fit."),
                   why=N_("No: both probes are the same logistic regression on 384 features (770 parameters); only "
                          "the vector it reads differs.")),
            Option(N_("BERT's paper classifies from the mean of the tokens' states, not from [CLS]."),
                   why=N_("The other way round: BERT's paper reads the final [CLS] state, and Google's code puts "
                          "the pooler in between. What suits this model is how it was trained, which its own "
                          "configuration states.")),
        )),
    Question(
        N_("Fine-tuned from the pretrained weights, the MiniLM network reached 0.923 on test; the same network "
           "from random weights 0.670, below even the bag of words (0.793). Why is the network from scratch so "
           "weak?"),
        options=(
            Option(N_("Its learning rate was too small: it needed 1e-3."),
                   why=N_("No: of 1e-4, 3e-4 and 1e-3, 1e-3 diverged to chance; 3e-4, the rate used, was the best "
                          "on validation when the word-embedding table trained too.")),
            Option(N_("It trained on other batches, for fewer steps, than the fine-tuned network."),
                   why=N_("No: the two share the sentences and their batches (16 sentences, 150 steps), the trained "
                          "parameters, the optimiser and the schedule's shape; they differ only in the start and "
                          "the learning rate.")),
            Option(N_("11 million trained parameters and 2,400 sentences are a bad match: from random weights, "
                      "these sentences are all it learns from."),
                   why=N_("Right: the pretrained network starts from weights that already place similar sentences "
                          "close together; the random one has one epoch of 2,400 sentences. Pretraining was worth "
                          "more than 0.10 on the same network in every run measured."), correct=True),
        )),
    Question(
        N_("Fine-tuning ended 0.013 to 0.030 above the linear probe on frozen features, in every run measured. Why "
           "does the chapter still call the two within noise?"),
        options=(
            Option(N_("Fine-tuning was behind the probe in some of the runs."),
                   why=N_("No: it was ahead in every run measured. The question is whether a lead of 4 to 9 test "
                          "sentences would hold on other sentences, and a gap under two standard errors of the "
                          "difference cannot tell.")),
            Option(N_("The gap is 4 to 9 of the 300 test sentences: less than two standard errors of the "
                      "difference (0.024 here)."),
                   why=N_("Right: ahead on these 300 sentences every time, but by too little to tell whether it "
                          "would be on others. So little, because MiniLM's mean-pooled vector was itself trained "
                          "to place similar sentences close together."), correct=True),
            Option(N_("The probe trains only 770 parameters, so its accuracy cannot be compared with fine-tuning's."),
                   why=N_("The number of trained parameters does not decide whether a gap is noise; the test set "
                          "does: one sentence is 0.0033, and the standard error of an accuracy near 0.9 on 300 "
                          "sentences is about 0.02.")),
        )),
    Question(
        N_("Section 4's schedule multiplies a linear warm-up (W = 15 of T = 150 steps) by a linear decay that "
           "starts at step 0. Its highest learning rate is what fraction of lr? (a number, e.g. 0.5)"),
        answer=0.907, tolerance=0.01,
        why=N_("Right: the decay already runs during the warm-up, so the rate peaks at the warm-up's last step, "
               "t = W - 1 = 14, at lr * (1 - 14/150), about 0.91 * lr."),
        why_low=N_("Too low: the peak comes at the end of the warm-up, step 14, when the decay has taken off only "
                   "14/150, about 9%: lr * (1 - 14/150), about 0.91 * lr."),
        why_high=N_("Too high: 1 would be Hugging Face's get_linear_schedule_with_warmup, which starts the decay only "
                    "after the warm-up. Ours decays from step 0, during the warm-up too: the peak, at step 14, is "
                    "lr * (1 - 14/150), about 0.91 * lr."),
    ),
])
