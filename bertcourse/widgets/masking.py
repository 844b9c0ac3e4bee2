"""Chapter 5 widget: the masking explorer.

Pick a sentence of the course corpus (or type one), a mask probability and a seed, and
see what BERT's masking rule (:func:`bertcourse.data.mask_tokens`) does to every token:

* **[MASK]** — chosen, replaced by ``[MASK]`` (80 % of the chosen tokens);
* **random** — chosen, replaced by a random token (10 %);
* **kept** — chosen, left as it was (10 %): the model must still predict it;
* **not chosen** — the other 85 %; the loss ignores them;
* **special** — ``[CLS]``, ``[SEP]`` (and ``[UNK]``) are never chosen.

Each press of *re-sample* draws the masks again (draw 0, 1, 2, … of the chosen seed), and
the running counts over all draws so far show the 80 / 10 / 10 shares emerging. Changing
the text, the probability or the seed starts the count again.

A random replacement is drawn uniformly from the non-special vocabulary, so it can by
chance be the original token (probability ``1 / (vocab - 5)``, 1 in 2,995 here). Such a
position *looks* kept, and it is classified by what the model sees: **kept**.

Pure functions (tested directly): :func:`corpus_sentences`, :func:`encode_text`,
:func:`bertcourse.data.draw_generator`, :func:`classify_masking`, :func:`mask_once`,
:func:`count_outcomes`, :func:`running_counts`, :func:`chosen_shares`.
Draw function: :func:`draw_masking`. Widget: :class:`MaskingExplorer`.
"""
from __future__ import annotations

import ipywidgets as W
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .._checks import check_finite_number, check_int, check_int_list, check_keys, check_positive_int
from ..bert import get_tokens_and_segments
from ..data import Vocab, WordPieceTokenizer, draw_generator, generate_corpus, get_tokenizer, mask_tokens
from ..i18n import gettext as _, gettext_noop as N_
from . import RepeatedDraws
from .drawing import ROW_WIDTH, draw_message, draw_tally, token_layout

NOTHING_TO_MASK = N_("Type at least one word: the text has no token that can be masked "
                     "([CLS], [SEP] and [UNK] never are).")

__all__ = ["OUTCOMES", "CHOSEN", "COLOURS", "MAX_TOKENS", "corpus_sentences", "encode_text",
           "classify_masking", "mask_once", "count_outcomes", "running_counts",
           "chosen_shares", "draw_masking", "MaskingExplorer"]

OUTCOMES = ("[MASK]", "random", "kept", "not chosen", "special")
"""What can happen to a token, in the order the legend shows them."""
OUTCOME_NAMES = {"[MASK]": "[MASK]", "random": N_("random"), "kept": N_("kept"), "not chosen": N_("not chosen"),
                 "special": N_("special")}
"""How the figure names each outcome (translated where drawn; the token [MASK] stays as it is)."""
CHOSEN = OUTCOMES[:3]
"""The outcomes of a *chosen* token: the shares should be 80 / 10 / 10 %."""
EXPECTED_SHARES = {"[MASK]": 0.8, "random": 0.1, "kept": 0.1}
COLOURS = {"[MASK]": "#d62728", "random": "#ff7f0e", "kept": "#2ca02c",
           "not chosen": "#f0f0f0", "special": "#c6dbef"}
MAX_TOKENS = 48           # [CLS] + up to 46 tokens + [SEP]; longer text is truncated

# one draw = one seed for torch.Generator; distinct for draw < 1_000_003


def corpus_sentences(num: int = 8, seed: int = 0, min_words: int = 8) -> list[str]:
    """``num`` held-out sentences of ``generate_corpus(seed)`` with at least ``min_words``
    words (the first ones, so the list is always the same), one per paragraph."""
    check_positive_int("num", num)
    check_positive_int("seed", seed, allow_zero=True)
    check_positive_int("min_words", min_words, allow_zero=True)
    out = []
    for paragraph in generate_corpus(seed).held_out:
        long = [s for s in paragraph if len(s.split()) >= min_words]
        if long:
            out.append(long[0])
        if len(out) == num:
            break
    return out


def encode_text(text: str, tokenizer: WordPieceTokenizer, max_tokens: int = MAX_TOKENS):
    """``[CLS] text [SEP]`` as WordPiece tokens and ids.

    Returns ``(tokens, ids, num_text_tokens)``; at most ``max_tokens`` tokens in all (the
    text is truncated), ``num_text_tokens`` is the length before truncation.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise TypeError(f"tokenizer must be a WordPieceTokenizer, got {type(tokenizer).__name__}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 3:
        raise ValueError(f"max_tokens must be an int >= 3, got {max_tokens!r}")
    pieces = tokenizer.tokenize(text)
    tokens, _ = get_tokens_and_segments(pieces[:max_tokens - 2])
    return tokens, tokenizer.vocab.to_ids(tokens), len(pieces)


def classify_masking(original_ids, masked_ids, pred_positions, vocab: Vocab) -> list[str]:
    """What happened to every position: one of :data:`OUTCOMES`.

    ``original_ids`` and ``masked_ids`` are ``(seq,)`` (lists or 1-D tensors),
    ``pred_positions`` the chosen positions. A chosen position is ``[MASK]`` when it holds
    the ``[MASK]`` id afterwards, ``kept`` when it holds its original id, else ``random``.
    A position that was not chosen is ``special`` for special tokens, else ``not chosen``.
    """
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a Vocab, got {type(vocab).__name__}")
    original = check_int_list("original_ids", original_ids)
    masked = check_int_list("masked_ids", masked_ids)
    if len(original) != len(masked):
        raise ValueError(f"original_ids and masked_ids must have the same length (seq,), got "
                         f"{len(original)} and {len(masked)}")
    chosen = set(check_int_list("pred_positions", pred_positions))
    if chosen and not (min(chosen) >= 0 and max(chosen) < len(original)):
        raise ValueError(f"pred_positions must lie in [0, seq={len(original)}), got {sorted(chosen)}")
    out = []
    for i, (before, after) in enumerate(zip(original, masked)):
        if i in chosen:
            out.append("[MASK]" if after == vocab.mask_id else "kept" if after == before else "random")
        else:
            if after != before:
                raise ValueError(f"position {i} was not chosen but changed from {before} to {after}")
            out.append("special" if before in vocab.special_ids else "not chosen")
    return out


def mask_once(ids, vocab: Vocab, mask_prob: float, seed: int, draw: int) -> dict:
    """Mask ``ids`` with draw ``draw`` of ``seed``: ``{"ids", "pred_positions", "outcomes"}``."""
    m = mask_tokens(ids, vocab, mask_prob, generator=draw_generator(seed, draw))
    return {"ids": m.ids.tolist(), "pred_positions": m.pred_positions.tolist(),
            "outcomes": classify_masking(ids, m.ids, m.pred_positions, vocab)}


def count_outcomes(outcomes) -> dict:
    """``{outcome: count}`` for every outcome in :data:`OUTCOMES` (zeros included)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for o in outcomes:
        if o not in counts:
            raise ValueError(f"unknown outcome {o!r}; expected one of {OUTCOMES}")
        counts[o] += 1
    return counts


def running_counts(ids, vocab: Vocab, mask_prob: float, seed: int, num_draws: int) -> dict:
    """The counts of :func:`count_outcomes` summed over draws ``0 .. num_draws - 1``."""
    check_positive_int("num_draws", num_draws, allow_zero=True)
    total = dict.fromkeys(OUTCOMES, 0)
    for d in range(num_draws):
        for k, v in count_outcomes(mask_once(ids, vocab, mask_prob, seed, d)["outcomes"]).items():
            total[k] += v
    return total


def chosen_shares(counts: dict) -> dict:
    """Shares of ``[MASK]`` / random / kept among the chosen tokens (zeros if none)."""
    check_keys("counts", counts, CHOSEN, "count_outcomes")
    n = sum(counts[o] for o in CHOSEN)
    return {o: (counts[o] / n if n else 0.0) for o in CHOSEN}


def draw_masking(tokens: list[str], masked_tokens: list[str], outcomes: list[str],
                 running: dict | None = None, title: str = "") -> Figure:
    """Left: the tokens, each as "original" over "what the model sees", the latter in a box
    coloured by its outcome. Right: the running shares of ``[MASK]`` / random / kept
    among the chosen tokens, against 80 / 10 / 10 %.

    ``fig.axes[0].texts``: for every position, the original token then the box with the
    token the model sees (``get_bbox_patch().get_facecolor()`` is the outcome's colour);
    ``fig.axes[1].patches``: the three bars.
    """
    n = len(tokens)
    if not (len(masked_tokens) == len(outcomes) == n) or n == 0:
        raise ValueError(f"tokens, masked_tokens and outcomes must have the same length > 0, got "
                         f"{n}, {len(masked_tokens)}, {len(outcomes)}")
    layout = token_layout([max(len(a), len(b), 3) for a, b in zip(tokens, masked_tokens)])
    rows = layout[-1][0] + 1
    fig = Figure(figsize=(12.5, 1.6 + 0.95 * rows))
    ax, ax_bar = fig.subplots(1, 2, gridspec_kw={"width_ratios": [4.2, 1]})
    for (r, c), before, after, what in zip(layout, tokens, masked_tokens, outcomes):
        y = -r * 1.0
        changed = what in ("[MASK]", "random")
        ax.text(c, y + 0.28, before, ha="center", va="center", fontsize=8,
                color="#555555" if changed else "#999999")
        ax.text(c, y - 0.12, after, ha="center", va="center", fontsize=9,
                fontweight="bold" if what in CHOSEN else "normal",
                color="white" if what in ("[MASK]", "kept") else "black",
                bbox=dict(boxstyle="round,pad=0.3", facecolor=COLOURS[what],
                          edgecolor="#333333" if what in CHOSEN else "#bbbbbb"))
    ax.set_xlim(0, ROW_WIDTH)
    ax.set_ylim(-rows + 0.35, 0.65)
    ax.axis("off")
    counts = count_outcomes(outcomes)
    handles = [Patch(facecolor=COLOURS[o], edgecolor="#333333", label=f"{_(OUTCOME_NAMES[o])}: {counts[o]}")
               for o in OUTCOMES]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=5,
              fontsize=8, frameon=False, title=_("this draw (small grey text: the original token)"),
              title_fontsize=8)
    if title:
        ax.set_title(title, fontsize=10, loc="left")

    running = running if running is not None else counts
    shares = chosen_shares(running)
    n_chosen = sum(running[o] for o in CHOSEN)
    draw_tally(ax_bar, [_(OUTCOME_NAMES[o]) for o in CHOSEN], [shares[o] for o in CHOSEN],
               [running[o] for o in CHOSEN], [EXPECTED_SHARES[o] for o in CHOSEN], [COLOURS[o] for o in CHOSEN],
               _("share of chosen tokens"),
               _("running: {n} chosen\n(dashed: 80 / 10 / 10 %)").format(n=n_chosen), top=1.18)
    fig.tight_layout()
    return fig


class MaskingExplorer(RepeatedDraws):
    """Corpus sentence / typed text, mask probability, seed and re-sample buttons ->
    the masked tokens coloured by outcome, and running counts.

    ``state`` keys: ``tokens``, ``ids``, ``mask_prob``, ``seed``, ``num_draws`` (draws
    counted so far: the one shown is draw ``num_draws - 1``), ``masked_tokens``,
    ``pred_positions``, ``outcomes``, ``counts`` (this draw), ``running`` (summed over
    draws ``0 .. num_draws - 1``), ``shares`` (running shares of the chosen tokens),
    ``message``. With no maskable token, everything but ``tokens`` and ``message`` is None.
    """

    def __init__(self, tokenizer: WordPieceTokenizer | None = None, sentence: str | None = None,
                 mask_prob: float = 0.15, seed: int = 0):
        check_finite_number("mask_prob", mask_prob, low=0.05, high=0.5)     # the slider's range
        check_int("seed", seed, low=0, high=99)
        self.tokenizer = tokenizer if tokenizer is not None else get_tokenizer(0)
        self.sentences = corpus_sentences()
        style = {"description_width": "110px"}
        wide = W.Layout(width="680px")
        start = sentence if sentence is not None else self.sentences[0]
        self.sentence = W.Dropdown(options=self.sentences,
                                   value=start if start in self.sentences else self.sentences[0],
                                   description=_("corpus sentence"), style=style, layout=wide)
        self.text = W.Text(value=start, description=_("or type"), continuous_update=False,
                           style=style, layout=wide)
        self.mask_prob = W.FloatSlider(value=mask_prob, min=0.05, max=0.5, step=0.01,
                                       description=_("mask probability"), style=style, readout_format=".2f")
        self.seed = W.IntSlider(value=seed, min=0, max=99, description=_("seed"), style=style)
        self.resample = W.Button(description=_("re-sample"), tooltip=_("draw the masks again"))
        self.resample_many = W.Button(description=_("re-sample × 100"),
                                      tooltip=_("draw 100 more times (the counts grow)"))
        self.info = W.HTML()
        self._key = None                 # (ids, mask_prob, seed) the counts belong to
        self._running = dict.fromkeys(OUTCOMES, 0)
        self._counted = 0
        self.resample.on_click(lambda _: self.draw_more(1))
        self.resample_many.on_click(lambda _: self.draw_more(100))
        super().__init__([self.sentence, self.text, self.mask_prob, self.seed,
                          self.resample, self.resample_many])
        self.widget = W.VBox([self.sentence, self.text,
                              W.HBox([self.mask_prob, self.seed]),
                              W.HBox([self.resample, self.resample_many]),
                              self.info, self.output])

    def link(self, change) -> None:
        if change["owner"] is self.sentence:
            self.text.value = change["new"]
        self._draws = 1                  # a new setting: start counting again

    def compute(self) -> dict:
        tokens, ids, n_text = encode_text(self.text.value, self.tokenizer)
        vocab = self.tokenizer.vocab
        p, seed = round(float(self.mask_prob.value), 4), int(self.seed.value)
        state = {"tokens": tokens, "ids": ids, "mask_prob": p, "seed": seed, "num_draws": None,
                 "masked_tokens": None, "pred_positions": None, "outcomes": None, "counts": None,
                 "running": None, "shares": None}
        if not any(i not in vocab.special_ids for i in ids):
            state["message"] = _(NOTHING_TO_MASK)
            self._key = None
            return state
        key = (tuple(ids), p, seed)
        if key != self._key:             # start the running counts again
            self._key, self._running, self._counted = key, dict.fromkeys(OUTCOMES, 0), 0
        if self._counted > self._draws:  # cannot happen through the controls; be safe
            self._running, self._counted = dict.fromkeys(OUTCOMES, 0), 0
        last = None
        for d in range(self._counted, self._draws):
            last = mask_once(ids, vocab, p, seed, d)
            for k, v in count_outcomes(last["outcomes"]).items():
                self._running[k] += v
        self._counted = self._draws
        if last is None:
            last = mask_once(ids, vocab, p, seed, self._draws - 1)
        counts = count_outcomes(last["outcomes"])
        shares = chosen_shares(self._running)
        n_chosen = sum(self._running[o] for o in CHOSEN)
        state.update(num_draws=self._draws, masked_tokens=vocab.to_tokens(last["ids"]),
                     pred_positions=last["pred_positions"], outcomes=last["outcomes"],
                     counts=counts, running=dict(self._running), shares=shares)
        message = _("draw {draw} of seed {seed}, mask probability {p:.2f}: {chosen} of {n} tokens chosen "
                    "({masked} [MASK], {random} random, {kept} kept). ").format(
            draw=self._draws - 1, seed=seed, p=p, chosen=len(last["pred_positions"]),
            n=sum(i not in vocab.special_ids for i in ids), masked=counts["[MASK]"], random=counts["random"],
            kept=counts["kept"])
        message += (_("Running over {draws} draws: {chosen} chosen, {shares} [MASK] / random / kept.")
                    if self._draws > 1 else
                    _("Running over {draws} draw: {chosen} chosen, {shares} [MASK] / random / kept.")).format(
            draws=self._draws, chosen=n_chosen, shares=" / ".join(f"{100 * shares[o]:.1f}%" for o in CHOSEN))
        if n_text > MAX_TOKENS - 2:
            message += _(" Showing the first {shown} of {n} tokens.").format(shown=MAX_TOKENS - 2, n=n_text)
        state["message"] = message
        return state

    def draw(self, state: dict) -> Figure:
        if state["outcomes"] is None:
            return draw_message(_(NOTHING_TO_MASK))
        return draw_masking(state["tokens"], state["masked_tokens"], state["outcomes"],
                            state["running"],
                            title=_("mask probability {p:.2f}, seed {seed}, draw {draw}").format(
                                p=state["mask_prob"], seed=state["seed"], draw=state["num_draws"] - 1))

    def update(self) -> None:
        super().update()
        self.info.value = f"<b>{self.state['message']}</b>"
