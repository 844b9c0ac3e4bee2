"""Chapter 13 exercises: BERT in practice — memory, Hugging Face and BERT's successors.

In the notebook::

    from bertcourse.exercises.ch13 import q1, quiz

* ``q1`` — ``prediction``: *before* measuring it, predict how many MB autograd keeps for the
  backward pass of one (16, 64) batch of chapter 9's classifier in float32 (section 1).
* ``quiz`` — three questions on what the chapter measured, and why (answers in
  ``quiz_answers``, a letter each; see :mod:`bertcourse.exercises.quiz`).
"""
from __future__ import annotations

import functools

from ..finetune import build_classifier, classification_step
from ..i18n import gettext as _, gettext_noop as N_
from ..memory import saved_for_backward
from ..reviews import load_sentiment, review_loader
from .core import CheckFailed, Exercise
from .guesses import predicted_number
from .quiz import Option, Question, Quiz

__all__ = ["q1", "quiz", "Q1_FACTOR", "activation_mb"]


# ---------------------------------------------------------------------------------------
# Q1: predict, then measure
# ---------------------------------------------------------------------------------------

Q1_FACTOR = 1.5
"""A guess within this factor of the measurement (either way) passes."""
WEIGHTS_MB = 86
"""What the notebook states before the question: the classifier's weights in float32, in MB."""


@functools.lru_cache(maxsize=None)
def activation_mb() -> float:
    """What autograd keeps for the backward pass of chapter 9's longest training batch (16
    sentences of 64 word pieces) through the MiniLM classifier, in float32, in MB (2**20 bytes):
    the notebook's measurement, repeated (the same classifier, batch and function)."""
    clf, tokenizer = build_classifier("minilm", pooling="mean", seed=0)
    splits = load_sentiment(seed=0)
    longest = next(b for b in review_loader(splits.train, tokenizer, batch_size=16, shuffle=True, seed=0)
                   if b["tokens"].shape[1] == 64)
    return saved_for_backward(clf, classification_step, longest) / 2**20


def _check_q1(answer) -> str:
    guess = predicted_number(answer, "prediction", 0.0, 1e6, _("a number of MB, e.g. 100"),
                             _("a number of MB between 0 and 1,000,000"))
    measured = activation_mb()
    if guess * Q1_FACTOR < measured:
        raise CheckFailed(_(
            "too low: you said {guess:.0f} MB, measured {measured:.0f} MB. The activations grow with the batch: "
            "each of the 6 blocks keeps the input of every linear layer (16 x 64 x 384 numbers each, 1,536 wide "
            "in the feed-forward layer), the GELU's input and the dropout masks, and the attention keeps its "
            "weights, 16 x 12 heads x 64 x 64 numbers per block.").format(guess=guess, measured=measured))
    if guess > measured * Q1_FACTOR:
        raise CheckFailed(_(
            "too high: you said {guess:.0f} MB, measured {measured:.0f} MB. Autograd keeps only what the backward "
            "pass needs, for this one batch of 16 x 64 word pieces; the word-embedding table, half of the "
            "weights, is read at only 1,024 positions.").format(guess=guess, measured=measured))
    return _("you said {guess:.0f} MB; measured {measured:.0f} MB, {ratio:.1f} times the {weights} MB of the "
             "weights: for a long batch the activations, not the model, fill the memory.").format(
        guess=guess, measured=measured, ratio=measured / WEIGHTS_MB, weights=WEIGHTS_MB)


q1 = Exercise(
    name=N_("Q1 (predict: the activations of one batch)"),
    var="prediction",
    checker=_check_q1,
    hints=[
        N_("Count one block: the inputs of its linear layers are 16 x 64 vectors of 384 numbers (1,536 in the "
           "feed-forward layer), 4 bytes each; the attention weights are 16 x 12 x 64 x 64 numbers. Then "
           "there are 6 blocks, and dropout keeps a mask of every tensor it drops from."),
        N_("16 x 64 x 384 float32 numbers are 1.5 MB; a block keeps several such tensors, a few 1,536 wide, "
           "and 3 MB of attention weights, each with a dropout mask: tens of MB per block."),
        N_("More than twice the weights' 86 MB."),
    ],
    solution=N_('''
# a prediction, not a computation; the check then measures it (saved_for_backward)
prediction = 200
'''),
)


quiz = Quiz(N_("Quiz (chapter 13)"), [
    Question(
        N_("Activation checkpointing cut what a (16, 64) batch keeps for the backward pass from 219 MB to 12 MB. "
           "What does it cost?"),
        options=(
            Option(N_("Slightly different gradients: the recomputed activations get new dropout masks."),
                   why=N_("No: PyTorch's checkpoint replays the random state, so dropout drops the same units; a "
                          "test checks that the gradients are equal to the last bit.")),
            Option(N_("The word-embedding table can no longer train."),
                   why=N_("That is the other remedy: freezing the word-embedding table (3 x 45 MB less) is a "
                          "separate switch, train_word_embeddings=False. Checkpointing changes no trained "
                          "parameter.")),
            Option(N_("Time: one more forward pass per step, to get each block's activations back in the backward "
                      "pass."),
                   why=N_("Right: only each block's input is kept, and the backward pass runs the block's forward "
                          "once more. The same computation, the same gradients; with memory to spare, leave it "
                          "off: it is faster."), correct=True),
        )),
    Question(
        N_("The folder written by save_hf_checkpoint loads with AutoModelForSequenceClassification too. Why would "
           "its logits differ from our classifier's?"),
        options=(
            Option(N_("transformers rounds the weights to half precision when it loads them."),
                   why=N_("No: the weights are read as they were saved, in float32; AutoModel gives our hidden "
                          "states to 1e-5.")),
            Option(N_("It classifies the [CLS] state through a pooler and a layer called classifier, neither of "
                      "which the folder holds, so both start at random."),
                   why=N_("Right: BertForSequenceClassification reads the pooler output; our classifier reads "
                          "the mean of the real tokens' states and has no pooler, so transformers initialises "
                          "the missing layers at random and reports them as MISSING."), correct=True),
            Option(N_("Its tokenizer splits the sentences into other word pieces."),
                   why=N_("No: the folder carries our tokenizer, and the chapter checks that AutoTokenizer gives "
                          "the same pieces.")),
        )),
    Question(
        N_("Why does the chapter's table of BERT's successors have no row for MLM accuracy?"),
        options=(
            Option(N_("The successors are all smaller than BERT, so their MLM accuracy would be lower anyway."),
                   why=N_("No: RoBERTa keeps BERT-large's shape; size is not the reason. The numbers would not "
                          "measure the same thing.")),
            Option(N_("MLM accuracy is only defined for models with a next sentence prediction head."),
                   why=N_("No: MLM and NSP are separate heads; RoBERTa has no NSP and does train with MLM.")),
            Option(N_("It would compare different things: ELECTRA's discriminator is not trained with MLM, and the "
                      "others predict pieces of other vocabularies with their own masking rules."),
                   why=N_("Right: a 50K byte-level BPE piece is not a 30K WordPiece piece, and ALBERT masks whole "
                          "n-grams. Compare models on the same downstream task and data."), correct=True),
        )),
])
