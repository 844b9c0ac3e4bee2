"""Chapter 1 widget: the attention explorer.

Pick a sentence (or type one), a query token, a head and a temperature, and see the
attention weights of every query over every key as a heatmap, plus the chosen query's
weights as a bar chart.

The model is a real :class:`bertcourse.attention.MultiHeadAttention` (``d = 32``,
4 heads of 8 dimensions), but nothing is trained: its word vectors and projection
matrices are built by hand, deterministically, so that each head does one readable job.

Word vectors (32 numbers per token, three blocks):

* dims 0–7, *kind of word*: a one-hot of the word's category (animal, person, thing,
  pronoun, verb, adjective, function word, punctuation). Categories come from a small
  built-in lexicon; an unknown word is guessed from its suffix (``-ed``/``-ing`` → verb,
  ``-ly``/``-ful``/``-ous`` … → adjective) and is otherwise taken to be a noun (thing).
* dims 8–15, *position*: ``cos`` and ``sin`` of ``2π i / L`` for four wavelengths ``L``
  (the idea of chapter 2's sinusoidal encoding).
* dims 16–31, *identity*: a random unit vector seeded by a CRC32 of the word, so the same
  word always gets the same vector (Python's ``hash`` is salted per process; CRC32 is not).

Heads (``W_q`` and ``W_k`` read different blocks; ``W_v`` and ``W_o`` are the identity,
since the explorer only shows the weights):

0. *same kind of word*: queries and keys are both the category one-hot, so a score is
   high when two words are of the same kind (nouns attend to nouns, verbs to verbs).
1. *previous word*: the query is the position vector rotated back by one step (a fixed
   linear map per frequency pair), so ``q_i · k_j`` peaks at ``j = i - 1``.
2. *looks for nouns*: the query maps a category to the categories it "looks for"
   (pronouns, verbs and adjectives look for animals and people; nouns look for verbs;
   ``the``/``on`` … look for things), a toy version of what real heads learn.
3. *untrained*: seeded random ``W_q`` and ``W_k`` over all 32 dimensions: what a head
   looks like before training — diffuse, with no pattern.

Temperature ``τ``: the weights are ``softmax(Q K^T / (sqrt(d_head) · τ))``, i.e. the scores
are **divided** by ``τ``. ``τ > 1`` flattens the weights (more uniform, higher entropy),
``τ < 1`` sharpens them towards the single best key; ``τ = 1`` is ordinary attention.

Pure functions (tested directly): :func:`tokenize`, :func:`word_vectors`,
:func:`attention_for_sentence`, :func:`entropy`. Draw function: :func:`draw_attention`.
Widget: :class:`AttentionExplorer`.
"""
from __future__ import annotations

import math
import re
import zlib

import ipywidgets as W
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .._checks import check_finite_number, check_int, check_tensor
from ..attention import MultiHeadAttention, dot_product_attention, entropy
from ..i18n import gettext as _, gettext_noop as N_
from . import FigureWidget
from .drawing import draw_heatmap, draw_message

__all__ = ["SENTENCES", "HEAD_NAMES", "MAX_TOKENS", "tokenize", "word_vectors", "explorer_model",
           "attention_for_sentence", "entropy", "draw_attention",
           "AttentionExplorer"]

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "She gave the dog a bone and it was happy.",
    "The animal did not cross the street because it was too wide.",
    "The teacher read a book to the children.",
]

NUM_HIDDENS, NUM_HEADS = 32, 4
HEAD_DIM = NUM_HIDDENS // NUM_HEADS
MAX_TOKENS = 24

HEAD_NAMES = [          # translated where shown: the message and the figure's title
    N_("same kind of word"),
    N_("previous word"),
    N_("looks for nouns"),
    N_("untrained (random)"),
]
EMPTY_TEXT = N_("Type at least one word in the text box (it is empty now).")

CATEGORIES = ["animal", "person", "thing", "pronoun", "verb", "adjective", "function", "punctuation"]
_LEXICON = {
    "animal": "cat cats dog dogs animal animals bird birds mouse mice horse fish cow lion",
    "person": "teacher teachers child children man men woman women girl boy people friend mother "
              "father student students doctor mary john",
    "thing": "mat street road river bone book books apple banana ball house car table arrow tree "
             "food water bank city school idea time",
    "pronoun": "it she he they her him them its his their i you we me us this that",
    "verb": "sat sit is was are were be been gave give cross crossed read reads ate eat eats saw "
            "see sees ran run runs chased chase likes like loves love did do does went go goes "
            "flies fly has have had made make said say wrote write found find took take",
    "adjective": "tired happy wide big small red old new hungry fast slow good bad long short "
                 "narrow sad tall young",
    "function": "the a an on in at to of and or but because not too with from by for so very "
                "than as into over under",
}
_CATEGORY_OF = {w: c for c, words in _LEXICON.items() for w in words.split()}

# Wavelengths of the position block, chosen so that sum_f cos(2 pi m / L_f) stays well
# below its peak of 4 for every offset 0 < |m| <= 25: the "previous word" head stays sharp.
_WAVELENGTHS = (2.8, 4.6, 10.5, 31.3)

# Head 2: which categories a word of each category looks for (row -> columns).
_LOOKS_FOR = {
    "pronoun": {"animal": 1.0, "person": 1.0, "thing": 0.5},
    "verb": {"animal": 0.8, "person": 0.8, "pronoun": 0.6},
    "adjective": {"animal": 0.8, "person": 0.8, "thing": 0.6, "pronoun": 0.6},
    "function": {"thing": 0.8, "animal": 0.4, "person": 0.4},
    "animal": {"verb": 0.8},
    "person": {"verb": 0.8},
    "thing": {"verb": 0.6},
}
_GAINS = {"kind": 2.6, "position": 2.2, "nouns": 8.0, "random": 2.5}


def tokenize(text: str) -> list[str]:
    """Lower-case words and punctuation marks: ``"It's late."`` -> ``["it's", "late", "."]``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]", text.lower())


def category(word: str) -> str:
    """The word's category: from the lexicon, else guessed from its form (see module doc)."""
    if word in _CATEGORY_OF:
        return _CATEGORY_OF[word]
    if not re.match(r"[a-z0-9]", word):
        return "punctuation"
    if re.search(r"(ed|ing)$", word):
        return "verb"
    if re.search(r"(ly|ful|ous|ive|able|ish|less)$", word):
        return "adjective"
    return "thing"


def _identity_vector(word: str, size: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(zlib.crc32(word.encode("utf-8")))
    v = torch.randn(size, generator=g)
    return v / v.norm()


def word_vectors(tokens: list[str]) -> torch.Tensor:
    """``(len(tokens), 32)`` word vectors: category one-hot | position | identity."""
    _check_tokens(tokens)
    n = len(tokens)
    x = torch.zeros(n, NUM_HIDDENS)
    for i, word in enumerate(tokens):
        x[i, CATEGORIES.index(category(word))] = 1.0
        x[i, 16:] = _identity_vector(word, 16)
    angles = 2 * math.pi * torch.arange(n, dtype=torch.float32)[:, None] / torch.tensor(_WAVELENGTHS)
    x[:, 8:16:2], x[:, 9:16:2] = torch.cos(angles), torch.sin(angles)
    return x


def _projections() -> tuple[torch.Tensor, torch.Tensor]:
    """``A_q, A_k`` of shape ``(32, 32)`` with ``q = x @ A_q``: head h owns output columns
    ``8h .. 8h+7``."""
    A_q, A_k = torch.zeros(NUM_HIDDENS, NUM_HIDDENS), torch.zeros(NUM_HIDDENS, NUM_HIDDENS)
    cols = [slice(h * HEAD_DIM, (h + 1) * HEAD_DIM) for h in range(NUM_HEADS)]
    # head 0: category one-hot on both sides -> score = gain^2 [same category]
    g = _GAINS["kind"]
    A_q[0:8, cols[0]] = g * torch.eye(8)
    A_k[0:8, cols[0]] = g * torch.eye(8)
    # head 1: key = position vector; query = position rotated back by one step in every
    # (cos, sin) pair, i.e. the position vector of i - 1.
    g = _GAINS["position"]
    rot = torch.zeros(8, 8)
    for f, wavelength in enumerate(_WAVELENGTHS):
        a = 2 * math.pi / wavelength
        c, s = math.cos(a), math.sin(a)
        # (cos θi, sin θi) @ [[c, -s], [s, c]] = (cos θ(i-1), sin θ(i-1))
        rot[2 * f:2 * f + 2, 2 * f:2 * f + 2] = torch.tensor([[c, -s], [s, c]])
    A_q[8:16, cols[1]] = g * rot
    A_k[8:16, cols[1]] = g * torch.eye(8)
    # head 2: query = "categories I look for", key = "my category"
    g = _GAINS["nouns"]
    for src, targets in _LOOKS_FOR.items():
        for dst, w in targets.items():
            A_q[CATEGORIES.index(src), cols[2].start + CATEGORIES.index(dst)] = g * w
    A_k[0:8, cols[2]] = torch.eye(8)
    # head 3: untrained, seeded random projections of everything
    gen = torch.Generator().manual_seed(0)
    g = _GAINS["random"] / math.sqrt(NUM_HIDDENS)
    A_q[:, cols[3]] = g * torch.randn(NUM_HIDDENS, HEAD_DIM, generator=gen)
    A_k[:, cols[3]] = g * torch.randn(NUM_HIDDENS, HEAD_DIM, generator=gen)
    return A_q, A_k


def explorer_model() -> MultiHeadAttention:
    """The explorer's :class:`MultiHeadAttention` (d=32, 4 heads, no biases) with the
    hand-made weights described in the module docstring."""
    model = MultiHeadAttention(NUM_HIDDENS, NUM_HEADS, bias=False).eval()
    A_q, A_k = _projections()
    with torch.no_grad():
        # nn.Linear computes x @ weight.T, so weight = A.T
        model.W_q.weight.copy_(A_q.T)
        model.W_k.weight.copy_(A_k.T)
        model.W_v.weight.copy_(torch.eye(NUM_HIDDENS))
        model.W_o.weight.copy_(torch.eye(NUM_HIDDENS))
    return model


_MODEL = explorer_model()


def _check_tokens(tokens) -> None:
    if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a list of str, got {type(tokens).__name__}")
    if not tokens:
        raise ValueError("tokens must hold at least one token, got an empty list")


def attention_for_sentence(tokens: list[str], head: int | None = None,
                           temperature: float = 1.0) -> torch.Tensor:
    """Attention weights of the explorer model on ``tokens``.

    Returns ``(heads, queries, keys)`` weights when ``head`` is None, else the
    ``(queries, keys)`` weights of that head. Every row sums to 1. ``temperature`` divides
    the scores: ``softmax(q·k / (sqrt(d_head) · temperature))``.
    """
    _check_tokens(tokens)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature must be a number > 0, got {type(temperature).__name__} ({temperature!r})")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if head is not None and (isinstance(head, bool) or not isinstance(head, int)
                             or not 0 <= head < NUM_HEADS):
        raise ValueError(f"head must be an int in [0, {NUM_HEADS - 1}] or None, got {head!r}")
    x = word_vectors(list(tokens)).unsqueeze(0)                  # (1, n, 32)
    m = _MODEL
    with torch.no_grad():
        q, k, v = (m.split_heads(W(x)) for W in (m.W_q, m.W_k, m.W_v))  # (1, heads, n, 8)
        scale = 1.0 / (math.sqrt(HEAD_DIM) * temperature)
        _output, weights = dot_product_attention(q, k, v, scale=scale)     # (1, heads, n, n)
    weights = weights[0]
    return weights if head is None else weights[head]


def draw_attention(tokens: list[str], weights: torch.Tensor, query_index: int,
                   title: str = "") -> Figure:
    """Heatmap of one head's ``(queries, keys)`` weights with the query's row outlined in
    crimson, and a bar chart of that row, its largest weight in orange. ``fig.axes[0].images[0]`` holds the weights;
    ``fig.axes[1].patches`` are the bars (one per key)."""
    _check_tokens(tokens)
    n = len(tokens)
    check_tensor("weights", weights, ndim=2, expected=f"(queries={n}, keys={n})", floating=True)
    check_int("query_index", query_index)
    if tuple(weights.shape) != (n, n):
        raise ValueError(f"weights must have shape (queries={n}, keys={n}), got shape "
                         f"{tuple(weights.shape)}")
    if not 0 <= query_index < n:
        raise ValueError(f"query_index must be in [0, {n - 1}], got {query_index}")
    w = weights.detach().cpu().numpy()
    labels = [f"{t}" for t in tokens]
    fig = Figure(figsize=(11, 4.4))
    ax_map, ax_bar = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.25]})

    draw_heatmap(ax_map, weights, labels, labels, title=_("weights: rows = queries"))
    ax_map.add_patch(Rectangle((-0.5, query_index - 0.5), n, 1, fill=False,
                               edgecolor="crimson", linewidth=2))

    row = w[query_index]
    # the largest weight in its own colour: crimson already marks the chosen query's row
    colors = ["darkorange" if j == row.argmax() else "steelblue" for j in range(n)]
    ax_bar.bar(range(n), row, color=colors)
    ax_bar.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=8)
    ax_bar.set_ylim(0, 1)
    ax_bar.set_ylabel(_("attention weight"))
    ax_bar.set_title(_("query {i}: '{token}' (weights sum to 1)").format(i=query_index, token=tokens[query_index]))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def _default_query(tokens: list[str]) -> int:
    """The first pronoun if there is one (the interesting query), else the first token."""
    return next((i for i, t in enumerate(tokens) if category(t) == "pronoun"), 0)


class AttentionExplorer(FigureWidget):
    """Sentence / free text, query token, head and temperature -> heatmap + bar chart.

    ``state`` keys: ``tokens``, ``head``, ``query`` (index or None), ``temperature``,
    ``weights`` (``(queries, keys)`` tensor of the chosen head, or None), ``row``
    (the query's weights), ``message``.
    """

    def __init__(self, sentence: str = SENTENCES[0], head: int = 2, temperature: float = 1.0):
        check_int("head", head, low=0, high=NUM_HEADS - 1)
        check_finite_number("temperature", temperature, low=0.1, high=5.0)     # the slider's range
        style = {"description_width": "90px"}
        wide = W.Layout(width="640px")
        self.sentence = W.Dropdown(options=SENTENCES, value=sentence if sentence in SENTENCES else SENTENCES[0],
                                   description=_("sentence"), style=style, layout=wide)
        self.text = W.Text(value=sentence, description=_("or type"), continuous_update=False,
                           style=style, layout=wide)
        self.query = W.Dropdown(options=[], description=_("query"), style=style)
        self.head = W.IntSlider(value=head, min=0, max=NUM_HEADS - 1, description=_("head"), style=style)
        self.temperature = W.FloatSlider(value=temperature, min=0.1, max=5.0, step=0.1,
                                         description=_("temperature"), style=style)
        self.info = W.HTML()
        self._refresh_queries(reset=True)
        super().__init__([self.sentence, self.text, self.query, self.head, self.temperature])
        self.widget = W.VBox([self.sentence, self.text,
                              W.HBox([self.query, self.head, self.temperature]),
                              self.info, self.output])

    @property
    def tokens(self) -> list[str]:
        return tokenize(self.text.value)[:MAX_TOKENS]

    def _refresh_queries(self, reset: bool) -> None:
        tokens = self.tokens
        old = self.query.value
        self.query.options = [(f"{i}: {t}", i) for i, t in enumerate(tokens)]
        if not tokens:
            self.query.value = None
        elif reset or old is None or old >= len(tokens):
            self.query.value = _default_query(tokens)
        else:
            self.query.value = old

    def link(self, change) -> None:
        if change["owner"] is self.sentence:
            self.text.value = change["new"]
            self._refresh_queries(reset=True)
        elif change["owner"] is self.text:
            self._refresh_queries(reset=False)

    def compute(self) -> dict:
        all_tokens = tokenize(self.text.value)
        tokens = all_tokens[:MAX_TOKENS]
        h, tau = self.head.value, self.temperature.value
        state = {"tokens": tokens, "head": h, "temperature": tau, "query": self.query.value,
                 "weights": None, "row": None}
        if not tokens:
            state["message"] = _(EMPTY_TEXT)
            return state
        weights = attention_for_sentence(tokens, h, tau)        # (queries, keys)
        i = state["query"] if state["query"] is not None else _default_query(tokens)
        state.update(query=i, weights=weights, row=weights[i])
        j = int(weights[i].argmax())
        message = _("head {h} ({name}), temperature {tau:.1f}: query '{query}' attends most to '{key}' "
                    "(weight {weight:.2f}).").format(h=h, name=_(HEAD_NAMES[h]), tau=tau, query=tokens[i],
                                                    key=tokens[j], weight=float(weights[i, j]))
        if len(all_tokens) > MAX_TOKENS:
            message += _(" Showing the first {shown} of {n} tokens.").format(shown=MAX_TOKENS, n=len(all_tokens))
        state["message"] = message
        return state

    def draw(self, state: dict) -> Figure:
        if state["weights"] is None:
            return draw_message(_(EMPTY_TEXT))
        return draw_attention(state["tokens"], state["weights"], state["query"],
                              title=_("head {h}: {name}").format(h=state["head"], name=_(HEAD_NAMES[state["head"]])))

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{self.state['message']}</b>"
