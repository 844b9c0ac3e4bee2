"""What the learner reads in figures, widget controls and printed lines goes through the
translation helper (issue 44, item 5).

The catalog is replaced by one that turns every msgid into ``‹msgid›``, the language is set to
"zh", and each widget and each plotting or printing function of the package is run on small
inputs. Every text it shows (titles, axis labels, legends, tick labels, annotations, the
controls' labels, the lines it prints) must then be marked, except for what stays as it is:
numbers, the data (token strings, the caller's names, label names of a data set) and the
identifiers and units of :data:`ALLOWED`. A label added without ``_()`` fails here.
"""
from __future__ import annotations

import pathlib
import re

import matplotlib
import pytest
import torch
from matplotlib.figure import Figure
from matplotlib.text import Text

matplotlib.use("Agg")

from tiny_bert import PARAGRAPHS, loader, small_model  # noqa: E402

from bertcourse import i18n, widgets  # noqa: E402
from bertcourse.bert import BERTConfig, BERTEncoder, get_config  # noqa: E402
from bertcourse.finetune import BERTClassifier, ClassifierConfig, finetune  # noqa: E402
from bertcourse.inspection import attention_maps, head_statistics  # noqa: E402
from bertcourse.pretrain import pretrain  # noqa: E402
from bertcourse.pretrained_bert import LoadReport, Pretrained  # noqa: E402
from bertcourse.reviews import LABELS as SENTIMENT_LABELS, Review  # noqa: E402
from bertcourse.sentence_pairs import LABELS as PAIR_LABELS, Pair  # noqa: E402
from bertcourse.task_heads import SpanPredictor, TokenTagger  # noqa: E402
from bertcourse.token_tags import TAGS  # noqa: E402
from bertcourse.seq2seq import make_date_dataset  # noqa: E402
from bertcourse.training import TrainConfig, Trainer, plot_history  # noqa: E402
from bertcourse.transformer import EncoderDecoder, TransformerDecoder, TransformerEncoder  # noqa: E402
from bertcourse.widgets import attention as w_attention  # noqa: E402
from bertcourse.widgets import bert_input as w_input  # noqa: E402
from bertcourse.widgets import fill_mask as w_fill  # noqa: E402
from bertcourse.widgets import finetune as w_finetune  # noqa: E402
from bertcourse.widgets import head_view as w_head  # noqa: E402
from bertcourse.widgets import masking as w_masking  # noqa: E402
from bertcourse.widgets import memory as w_memory  # noqa: E402
from bertcourse.widgets import nsp as w_nsp  # noqa: E402
from bertcourse.widgets import pairs as w_pairs  # noqa: E402
from bertcourse.widgets import positional as w_pos  # noqa: E402
from bertcourse.widgets import scaling as w_scaling  # noqa: E402
from bertcourse.widgets import spans as w_spans  # noqa: E402
from bertcourse.widgets import tags as w_tags  # noqa: E402
from bertcourse.widgets import transformer as w_transformer  # noqa: E402

OPEN, CLOSE = "‹", "›"

# What may stay English in a figure or a printed line without being marked: identifiers and
# units, never words of a sentence. The data a figure shows (its tokens, the caller's names)
# are allowed per case, by the `data` argument of `unmarked`.
ALLOWED = {
    "CLS", "SEP", "MASK", "UNK", "PAD",     # the special tokens, written [CLS], [SEP], [MASK], ...
    "IsNext", "NotNext",                    # the NSP labels' names (Hugging Face's), as the code reads them
    "MB",                                   # a unit (the memory widget's bars)
    "max_len",                              # a parameter's name (the NSP widget's slider)
}

WORD = re.compile(r"[#A-Za-z_][#A-Za-z0-9_]*")
LETTERS = re.compile(r"[A-Za-z]{2,}")
INNERMOST_MARK = re.compile(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}")


class MarkedCatalog:
    """Stands in for the catalog's {msgid: msgstr}: every msgid has the msgstr ‹msgid›."""

    def get(self, msgid: str, default: str | None = None) -> str:
        return f"{OPEN}{msgid}{CLOSE}"


@pytest.fixture
def zh(monkeypatch):
    """The language "zh" with the marking catalog; "en" and matplotlib's settings restored after."""
    monkeypatch.setattr(i18n, "_translations", lambda lang: MarkedCatalog())
    # the widgets' PNG is not read here, only their figure: skip the slow rendering
    monkeypatch.setattr(widgets, "figure_html", lambda fig, dpi=90: "")
    with matplotlib.rc_context():          # set_language("zh") adds the Chinese font to rcParams
        i18n.set_language("zh")
        try:
            yield
        finally:
            i18n.set_language("en")


@pytest.fixture(scope="module")
def classifier(tokenizer):
    def make(num_classes: int = 2) -> BERTClassifier:
        torch.manual_seed(0)
        cfg = BERTConfig(vocab_size=len(tokenizer.vocab), num_hiddens=16, ffn_num_hiddens=32, num_heads=2,
                         num_blks=1, max_len=64)
        clf = BERTClassifier(ClassifierConfig(cfg, num_classes=num_classes))
        with torch.no_grad():
            clf.head.weight.normal_(0.0, 0.5)
        clf.trained_steps += 1              # a random head, marked as trained so that it may predict
        return clf.eval()
    return make


def words_of(*texts) -> set[str]:
    """The words of `texts` (strings or lists of strings): the data a figure may show as it is."""
    out = set()
    for t in texts:
        for s in ([t] if isinstance(t, str) else t):
            out.update(WORD.findall(str(s)))
    return out


def strip_marks(text: str) -> str:
    """`text` without its marked parts (nested marks included)."""
    while True:
        shorter = INNERMOST_MARK.sub("\n", text)
        if shorter == text:
            return text
        text = shorter


def unmarked(texts: dict[str, str], data: set[str] = frozenset()) -> dict[str, list[str]]:
    """{where: [word, ...]} of the English words left unmarked in `texts` ({where: text}) that
    are neither allowed identifiers and units nor the case's `data`."""
    bad = {}
    for where, text in texts.items():
        words = [w for w in WORD.findall(strip_marks(text))
                 if LETTERS.search(w) and w not in ALLOWED and w not in data]
        if words:
            bad[where] = words
    return bad


def figure_texts(fig: Figure) -> dict[str, str]:
    """Every non-empty text artist of `fig`: titles, axis labels, tick labels, legends (and their
    titles), annotations and the figure's own texts, keyed by where it is."""
    assert isinstance(fig, Figure)
    out = {}
    for k, t in enumerate(fig.findobj(Text)):
        if t.get_text().strip():
            out[f"text {k} ({type(t.axes).__name__ if t.axes else 'figure'}): {t.get_text()!r:.60}"] = t.get_text()
    return out


def control_texts(widget) -> dict[str, str]:
    """The learner-facing labels of a widget's controls: descriptions, tooltips, placeholders,
    the buttons of a ToggleButtons and the "(...)" entries of a dropdown (its other entries are data)."""
    out = {}
    for c in widget.controls:
        name = type(c).__name__
        for attr in ("description", "tooltip", "placeholder"):
            value = getattr(c, attr, None)
            if value:
                out[f"{name}.{attr}"] = value
        for k, label in enumerate(getattr(c, "_options_labels", ())):
            if name == "ToggleButtons" or label.startswith(("(", OPEN + "(")):
                out[f"{name} option {k}"] = label
    return out


def check(texts: dict[str, str], data: set[str] = frozenset()) -> None:
    assert texts, "nothing to check"
    assert any(OPEN in t for t in texts.values()), f"no text is translated: {texts}"
    bad = unmarked(texts, data)
    assert not bad, f"English words not wrapped in _(): {bad}"


def check_figure(fig: Figure, data: set[str] = frozenset()) -> None:
    check(figure_texts(fig), data)


# ---------------------------------------------------------------------------------------
# The checker itself
# ---------------------------------------------------------------------------------------

def test_the_checker_finds_an_unwrapped_label_and_passes_marked_ones_data_and_identifiers():
    fig = Figure()
    ax = fig.add_subplot()
    ax.set_title(f"{OPEN}share of {OPEN}previous token{CLOSE}{CLOSE}")
    ax.set_xlabel("position")                       # not wrapped
    ax.set_xticks([0, 1], ["[CLS]", "velora"])      # a special token, and a token of the data
    ax.legend(handles=ax.plot([0, 1], label="mlm_loss"), title=f"{OPEN}loss{CLOSE}")
    bad = unmarked(figure_texts(fig), data={"velora", "mlm_loss"})
    assert list(bad.values()) == [["position"]]
    assert unmarked({"x": f"{OPEN}blank{CLOSE}: 12 MB, max_len 32, [SEP]"}) == {}
    assert unmarked({"x": "l'attention"}) == {"x": ["attention"]}


# ---------------------------------------------------------------------------------------
# The widgets
# ---------------------------------------------------------------------------------------

def test_attention_explorer(zh):
    w = w_attention.AttentionExplorer()
    check(control_texts(w))
    check_figure(w.figure, words_of(w.state["tokens"]))
    w.text.value = ""
    check_figure(w.figure)


def test_bert_input_explorer_and_embedding_sum(zh, tokenizer):
    w = w_input.InputExplorer("velora is a country in the north.", "its capital is tarnum.", tokenizer=tokenizer)
    check(control_texts(w))
    check_figure(w.figure, words_of(w.state["tokens"]))
    encoder = BERTEncoder(get_config("tiny", vocab_size=len(tokenizer.vocab))).eval()
    parts = w_input.embedding_parts(encoder, torch.tensor(w.state["ids"]), torch.tensor(w.state["segments"]))
    check_figure(w_input.draw_embedding_sum(w.state["tokens"], parts), words_of(w.state["tokens"]))
    w.text_a.value = ""
    check_figure(w.figure)


def test_fill_mask_playground_and_attention_grid(zh, tokenizer):
    model = small_model(tokenizer).eval()
    vocab = words_of(list(tokenizer.vocab.tokens))       # the guesses may be any token
    w = w_fill.FillMaskPlayground(model, tokenizer, text="[MASK] is a [MASK] in the [MASK] , [MASK] [MASK].")
    assert len(w.state["predictions"]) > w_fill.MAX_MASKS_DRAWN          # "(+1 more blanks)" is shown
    check(control_texts(w))
    check_figure(w.figure, vocab)
    pieces, _segments, weights = attention_maps(model, tokenizer, "the fox is red.")
    check_figure(w_fill.draw_attention_grid(pieces, weights), words_of(pieces))
    w.text.value = "no blank here."
    check_figure(w.figure)


def test_why_did_it_say_that_comparison_and_learning_curves(zh, tokenizer, classifier):
    text = "the fox is a small animal."
    reviews = [Review(text, 0, "amazon"), Review(text, 1, "amazon")]   # one of the two is a mistake
    w = w_finetune.WhyDidItSayThat(classifier(), tokenizer, reviews, text="it eats mice at night.")
    check(control_texts(w))
    labels = words_of(list(SENTIMENT_LABELS))                          # the data set's label names
    check_figure(w.figure, words_of(w.state["pieces"]) | labels)
    w.example.value = 0                                                # shows the data set's label too
    check_figure(w.figure, words_of(w.state["pieces"]) | labels)
    w.text.value = ""
    check_figure(w.figure)
    methods = ["bag of words", "probe"]                                # the caller's names
    results = {m: {"test accuracy": 0.8, "training time (s)": 3.0} for m in methods}
    check_figure(w_finetune.draw_comparison(results), words_of(methods))
    curves = {100: dict.fromkeys(methods, 0.7), 2400: dict.fromkeys(methods, 0.8)}
    check_figure(w_finetune.draw_learning_curves(curves), words_of(methods))


def test_head_view_and_head_survey(zh, tokenizer):
    model = small_model(tokenizer).eval()
    report = LoadReport("tiny", ".", "model.safetensors", 1, 1, ["float32"], {"pooler": True})
    pretrained = Pretrained(model, tokenizer, model.config, report, pathlib.Path("."))
    v = w_head.HeadView(pretrained, "velora is a country.", "its capital is tarnum.")
    check(control_texts(v))
    check_figure(v.figure, words_of(v.state["pieces"]))
    v.token.value, v.pair.value = 2, "A→B"
    check_figure(v.figure, words_of(v.state["pieces"]))
    maps = [attention_maps(model, tokenizer, "the fox is red.", "it eats mice.")]
    check_figure(w_head.draw_head_survey(head_statistics(maps)))


def test_masking_explorer(zh, tokenizer):
    w = w_masking.MaskingExplorer(tokenizer, sentence="the fox is a small animal and it lives in the forest.")
    check(control_texts(w))
    check_figure(w.figure, words_of(w.state["tokens"], w.state["masked_tokens"]))
    w.text.value = ""
    check_figure(w.figure)


def test_memory_budget(zh):
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=300, num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1, max_len=512)
    w = w_memory.MemoryBudget(BERTClassifier(ClassifierConfig(cfg, pooling="mean")), batch_size=1, seq_len=16)
    check(control_texts(w))
    check_figure(w.figure)


def test_pair_sampler(zh, tokenizer):
    w = w_nsp.PairSampler(tokenizer, PARAGRAPHS)
    check(control_texts(w))
    check_figure(w.figure, words_of(w.state["tokens"]))          # a tally over 1 pair
    w.draw_more(1)
    check_figure(w.figure, words_of(w.state["tokens"]))          # over 2 pairs


def test_inference_explorer(zh, tokenizer, classifier):
    examples = [Pair("the bear is a big animal.", "it is brown.", 1)]
    w = w_pairs.InferenceExplorer(classifier(3), tokenizer, examples, premise="the fox is red.",
                                  hypothesis="it is an animal.")
    check(control_texts(w))
    labels = words_of(list(PAIR_LABELS))                               # the data set's label names
    check_figure(w.figure, words_of(w.state["pieces"]) | labels)
    w.premise.value = ""
    check_figure(w.figure)


def test_tag_explorer(zh, tokenizer):
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tokenizer.vocab), num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1,
                     max_len=64)
    tagger = TokenTagger(cfg, num_tags=len(TAGS))
    with torch.no_grad():
        tagger.head.weight.normal_(0.0, 0.5)     # a random head: entities, and words tagged O
    w = w_tags.TagExplorer(tagger.eval(), tokenizer, ["the fox is red."], text="velora is a country in the north.")
    assert w.state["entities"] and not all(w.state["first_piece"][1:-1])     # entities, and later pieces
    check(control_texts(w))
    tags = words_of(list(TAGS))                                # the tag names, as the data set writes them
    check_figure(w.figure, words_of(w.state["pieces"]) | tags)
    w.text.value = ""
    check_figure(w.figure)


def test_positional_encoding_figures(zh):
    w = w_pos.PositionalEncodingExplorer(num_hiddens=32, position=5, max_len=60)
    check(control_texts(w))
    check_figure(w.figure)
    P = w.state["P"]
    check_figure(w_pos.draw_sinusoids(P, [0, 1, 6, 7]))
    check_figure(w_pos.draw_heatmap(P))
    check_figure(w_pos.draw_binary_analogy(16, 4, 16))
    check_figure(w_pos.draw_similarity({"sinusoidal": P, "learned": P}), {"sinusoidal", "learned"})


def test_data_parallel_figures(zh):
    w = w_scaling.DataParallelPlanner(num_pairs=28606, world_size=3, batch_size=128)
    assert w.state["steps_per_epoch"] > 40 and w.state["left_out"]    # "(first 40 shown)" and "left out"
    check(control_texts(w))
    check_figure(w.figure)
    w.world_size.value = 1
    check_figure(w.figure)
    check_figure(w_scaling.draw_data_parallelism(3))


def test_transformer_attention_explorer(zh):
    ds = make_date_dataset(num_train=40, num_valid=4)
    torch.manual_seed(0)
    model = EncoderDecoder(TransformerEncoder(len(ds.src_vocab), 16, 32, 2, 1, max_len=32),
                           TransformerDecoder(len(ds.tgt_vocab), 16, 32, 2, 1, max_len=32))
    w = w_transformer.TransformerAttentionExplorer(model, [s for s, _ in ds.valid[:2]], ds.src_vocab, ds.tgt_vocab)
    check(control_texts(w))
    for kind in w_transformer.KINDS:
        w.kind.value = kind
        check_figure(w.figure, words_of(w.state["row_labels"], w.state["col_labels"]))


# ---------------------------------------------------------------------------------------
# Training: the progress bar, the evaluation lines and the loss plot; the load report
# ---------------------------------------------------------------------------------------

def printed_lines(captured) -> dict[str, str]:
    text = (captured.out + captured.err).replace("\r", "\n")
    return {f"line {k}: {line!r:.60}": line for k, line in enumerate(text.splitlines()) if line.strip()}


def test_trainer_progress_eval_lines_and_plot(zh, capsys):
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    batches = [torch.randn(4, 2) for _ in range(2)]
    trainer = Trainer(model, batches, lambda m, x: {"loss": m(x).pow(2).mean()},
                      TrainConfig(steps=4, eval_every=2, amp=False, warmup_steps=0),
                      eval_loader=batches[:1], eval_fn=lambda m, loader: {"acc": 0.5})
    history = trainer.fit(progress=True, plot=True)          # not in a notebook: text lines, no live plot
    lines = printed_lines(capsys.readouterr())
    assert any(f"{OPEN}training{CLOSE}" in line for line in lines.values()), lines    # the bar's label
    assert any(line.startswith(f"{OPEN}step 2: acc 0.500") for line in lines.values()), lines
    check(lines, data={"loss", "acc"})                       # the metrics' names, as the step function returns them
    check_figure(plot_history(history), data={"loss", "acc"})


def test_finetune_and_pretrain_label_their_progress_bars(zh, capsys, tokenizer, dataset, classifier):
    reviews = [Review("the fox is red.", 1, "amazon"), Review("the bear eats fish.", 0, "yelp")]
    finetune(classifier(), tokenizer, reviews, epochs=1, batch_size=2, progress=True, plot=False, amp=False)
    pretrain(small_model(tokenizer), loader(dataset), cfg=TrainConfig(steps=1, eval_every=None, amp=False),
             progress=True, plot=False)
    lines = printed_lines(capsys.readouterr())
    assert any(f"{OPEN}fine-tuning{CLOSE}" in line for line in lines.values()), lines
    assert any(f"{OPEN}pretraining{CLOSE}" in line for line in lines.values()), lines
    check(lines, data={"loss", "mlm_loss", "nsp_loss"})


def test_load_report(zh):
    report = LoadReport("minilm", "folder", "model.safetensors", 104, 22_713_216, ["float32"],
                        {"pooler": True, "mlm": False, "nsp": False}, ignored=["embeddings.position_ids"],
                        renamed=[("gamma", "weight")], overrides={"norm_eps": 1e-5})
    text = str(report)
    assert len(text.splitlines()) == 5 and repr(report) == text
    check({f"line {k}": line for k, line in enumerate(text.splitlines())},
          words_of("minilm model.safetensors float32 embeddings.position_ids norm_eps"))


def test_span_explorer(zh, tokenizer):
    torch.manual_seed(0)
    cfg = BERTConfig(vocab_size=len(tokenizer.vocab), num_hiddens=16, ffn_num_hiddens=32, num_heads=2, num_blks=1,
                     max_len=128)
    model = SpanPredictor(cfg)
    with torch.no_grad():
        model.head.weight.normal_(0.0, 0.5)      # a random head: starts and ends spread over the pieces
    context = " ".join(s for p in PARAGRAPHS for s in p)
    w = w_spans.SpanExplorer(model.eval(), tokenizer, [("what is the capital of velora?", context)], max_len=48,
                             stride=8)
    assert len(w.state["windows"]) > 1
    check(control_texts(w))
    # the data: the pieces, and the candidates' texts (cut from the paragraph at pieces: "th" of "north")
    data = words_of([p for win in w.state["windows"] for p in win.pieces],
                    [c[3] for window in w.state["candidates"] for c in window])
    check_figure(w.figure, data)
    w.window.value = (w.state["answer"].window + 1) % len(w.state["windows"])    # "this window's best span"
    check_figure(w.figure, data)
    w.question.value = ""
    check_figure(w.figure)
