"""Tests for the chapter 5 exercises (bertcourse.exercises.ch05).

The wrong answers below are written the way a learner would write them (not imported
from the module), so the tests check that real mistakes get a message naming them.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from bertcourse import i18n
from bertcourse.bert import MaskLM
from bertcourse.data import SPECIAL_TOKENS, Vocab, mask_tokens, num_mlm_preds
from bertcourse.pretrain import mlm_loss
from bertcourse.exercises import ch05
from bertcourse.exercises.ch05 import q1, q2, q3, q4, q5
from test_exercises import assert_fails_with, assert_leaves_global_rng_alone, assert_passes_with

EXERCISES = [q1, q2, q3, q4]


# --- references and solutions pass -------------------------------------------------------

def test_reference_implementations_pass_their_own_check():
    assert q1.check(ch05._ref_num_predictions)
    assert q2.check(ch05._ref_apply)
    assert q3.check(ch05._ref_loss)
    assert q4.check(ch05._ref_gather)


def test_q1_reference_is_the_package_rule():
    assert [ch05._ref_num_predictions(n, p) for n, p in ch05.Q1_CASES] == \
        [num_mlm_preds(n, p) for n, p in ch05.Q1_CASES]
    # the cases contain halves (where round() differs) and a case that needs "at least one"
    assert any(round(p * n) != num_mlm_preds(n, p) for n, p in ch05.Q1_CASES)
    assert any(math.floor(p * n + 0.5) == 0 for n, p in ch05.Q1_CASES)


def test_q2_reference_is_the_rule_inside_mask_tokens():
    """Replay mask_tokens' random draws (positions, then u, then the random ids) and check
    that the exercise's rule gives exactly what mask_tokens wrote at the chosen positions."""
    vocab = Vocab(list(SPECIAL_TOKENS) + [f"w{i}" for i in range(5, 60)])
    seq = [2] + list(range(5, 45)) + [3]
    pool = torch.arange(5, 60)
    for seed in range(200):
        m = mask_tokens(seq, vocab, generator=torch.Generator().manual_seed(seed))
        g = torch.Generator().manual_seed(seed)
        k = num_mlm_preds(40)
        positions = (torch.arange(1, 41)[torch.randperm(40, generator=g)[:k]]).sort().values
        u = torch.rand(k, generator=g)
        random_ids = pool[torch.randint(len(pool), (k,), generator=g)]
        assert torch.equal(positions, m.pred_positions)
        assert torch.equal(ch05._ref_apply(m.labels, u, random_ids, vocab.mask_id), m.ids[m.pred_positions])


def test_q3_q4_references_are_the_package():
    args = ch05.Q3_CASES[0][1]
    assert torch.equal(ch05._ref_loss(*args), mlm_loss(*args))
    X, pos = ch05.Q4_CASES[0][1]
    assert torch.equal(ch05._ref_gather(X, pos), MaskLM.gather(X, pos))
    assert torch.equal(ch05._ref_gather(X, pos)[1, 2], X[1, pos[1, 2]])


def test_cases_include_edge_cases():
    u = ch05.Q2_CASES[0][1][1]
    assert bool((u == 0.8).any()) and bool((u == 0.9).any())     # exactly on the thresholds (float32)
    assert any(float(args[2].sum()) == 0 for _, args in ch05.Q3_CASES)              # no prediction
    assert any(((args[2] > 0) & (args[2] < 1)).any() for _, args in ch05.Q3_CASES)  # fractional
    assert any(args[0].shape[0] == 1 for _, args in ch05.Q4_CASES)


# --- typical mistakes get a message naming them ------------------------------------------

def test_q1_mistakes():
    assert_fails_with(q1, lambda n, p=0.15: max(1, round(p * n)), "rounds halves to the nearest EVEN")
    assert_fails_with(q1, lambda n, p=0.15: math.floor(p * n + 0.5), "at least one prediction")
    assert_fails_with(q1, lambda n, p=0.15: max(1, int(p * n)), "int() cuts the fraction off")
    assert_fails_with(q1, lambda n, p=0.15: max(1, math.ceil(p * n)), "ceil() always rounds up")
    assert_fails_with(q1, lambda n, p=0.15: 0.15 * n, "expected a whole number")
    assert_fails_with(q1, lambda n, p=0.15: 3, "expected 15, got 3")
    assert_fails_with(q1, 3, "must be a function")


def test_q2_token_ids_as_floats_fail():
    # the right ids in a float tensor: nn.Embedding would refuse them at the next step
    def into_float_zeros(labels, u, random_ids, mask_id):
        out = torch.zeros(len(u))
        for i in range(len(u)):
            out[i] = mask_id if u[i] < 0.8 else (random_ids[i] if u[i] < 0.9 else labels[i])
        return out

    assert_fails_with(q2, into_float_zeros, "expected an integer tensor (dtype torch.int64), got the "
                                            "floating-point dtype torch.float32")
    assert_passes_with(q2, lambda *args: into_float_zeros(*args).long())


def test_q2_mistakes():
    def pitfall(labels, u, random_ids, mask_id):
        out = labels.clone()
        for i in range(len(u)):
            if u[i] < 0.8:
                out[i] = mask_id
            elif u[i] < 0.1:           # "10 % random" tested on the same u
                out[i] = random_ids[i]
        return out

    def swapped(labels, u, random_ids, mask_id):
        return torch.where(u < 0.8, mask_id, torch.where(u < 0.9, labels, random_ids))

    def inclusive(labels, u, random_ids, mask_id):
        return torch.where(u <= 0.8, mask_id, torch.where(u <= 0.9, random_ids, labels))

    assert_fails_with(q2, pitfall, "no token ever becomes a random one")
    assert_fails_with(q2, swapped, "swapped the last two bands")
    assert_fails_with(q2, inclusive, "check the boundaries")
    assert_fails_with(q2, lambda labels, u, r, m: torch.full_like(labels, m), "every chosen token became [MASK]")
    assert_fails_with(q2, lambda labels, u, r, m: labels, "first difference")


def _bands(mask_below, random_below):
    def apply(labels, u, random_ids, mask_id):
        return torch.where(u < mask_below, torch.full_like(labels, mask_id),
                           torch.where(u < random_below, random_ids, labels))
    return apply


@pytest.mark.parametrize("mask_below, random_below, nudge", [
    (0.85, 0.9, "the [MASK] band is too wide: u = 0.8 fell in it"),
    (0.75, 0.9, "the [MASK] band is too narrow: u = 0.7999 belongs to it"),
    (0.8, 0.95, "the random-token band is too wide: u = 0.9 fell in it"),
    (0.8, 0.88, "the random-token band is too narrow: u = 0.8999 belongs to it"),
])
def test_q2_a_near_miss_of_a_threshold_gets_a_nudge_without_the_answer(mask_below, random_below, nudge):
    result = assert_fails_with(q2, _bands(mask_below, random_below), "first difference", nudge,
                               "Check the threshold where the")
    assert "0.8)" not in result.message and "u < 0.8" not in result.message and "u < 0.9" not in result.message


def test_q2_no_nudge_when_it_is_not_a_matter_of_thresholds():
    # the bands out of order ([MASK] from 0.2 on), or one band missing: numbers only
    upside_down = lambda labels, u, r, m: torch.where(u >= 0.2, torch.full_like(labels, m), torch.where(u < 0.1, r, labels))
    for wrong in (upside_down, lambda labels, u, r, m: labels, lambda labels, u, r, m: labels + 1):
        result = assert_fails_with(q2, wrong, "first difference")
        assert " — " not in result.message


@pytest.mark.parametrize("wrong, phrases", [
    # the swapped bands with u > 0.9 for the random token: not the same as u >= 0.9 at u = 0.9 exactly
    (lambda labels, u, r, m: torch.where(u < 0.8, m, torch.where(u > 0.9, r, labels)),
     ["you swapped the last two bands", "u = 0.9 exactly belongs to the kept band"]),
    (lambda labels, u, r, m: torch.where(u < 0.1, m, torch.where(u <= 0.9, r, labels)),
     ["only u < 0.8 becomes [MASK]", "u = 0.9 exactly belongs to the kept band"]),
    (lambda labels, u, r, m: torch.where(u <= 0.8, m, torch.where(u < 0.1, r, labels)),
     ["no token ever becomes a random one", "u = 0.8 exactly belongs to the random-token band"]),
])
def test_q2_a_named_mistake_but_on_a_threshold_is_named_with_a_nudge_about_the_boundary(wrong, phrases):
    assert_fails_with(q2, wrong, "first difference", *phrases, "Mind the boundary as well: each band includes its "
                      "lower end")


def test_q2_nudge_in_chinese():
    i18n.set_language("zh")
    try:
        result = q2.check(_bands(0.85, 0.9))
    finally:
        i18n.set_language("en")
    assert "[MASK]区间太宽了：u = 0.8落在了它里面" in result.message


def q3_not_flattened(logits, labels, weights):
    """fails: F.cross_entropy reads the classes from axis 1"""
    per_slot = F.cross_entropy(logits, labels, reduction="none")            # (batch, max_preds, vocab) as is
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def q3_labels_not_flat(logits, labels, weights):
    """fails: you flattened the logits to (batch · max_preds, vocab) rows but not the labels"""
    per_slot = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels, reduction="none")
    return (per_slot * weights).sum() / weights.sum()


def q3_weights_not_flat(logits, labels, weights):
    """fails: flatten the weights too, weights.reshape(-1)"""
    per_slot = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    return (per_slot * weights).sum() / weights.sum().clamp(min=1e-8)


def q3_weights_column(logits, labels, weights):
    """fails: broadcasts to a (8, 8) table, every loss times every weight"""
    per_slot = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), reduction="none")
    return (per_slot * weights.reshape(-1, 1)).sum() / (weights.sum() + 1e-8)


def q3_labels_flat_only(logits, labels, weights):
    """fails: (or the labels but not the logits): flatten both alike"""
    per_slot = F.cross_entropy(logits, labels.reshape(-1), reduction="none")
    return (per_slot * weights.reshape(-1)).sum() / weights.sum().clamp(min=1e-8)


@pytest.mark.parametrize("wrong, error", [
    (q3_not_flattened, "RuntimeError: Expected target size [2, 7], got [2, 4]"),
    (q3_labels_not_flat, "ValueError: Expected input batch_size (8) to match target batch_size (2)."),
    (q3_weights_not_flat, "RuntimeError: The size of tensor a (8) must match the size of tensor b (4)"),
    (q3_labels_flat_only, "ValueError: Expected input batch_size (2) to match target batch_size (8)."),
])
def test_q3_a_missing_reshape_is_named_with_the_shapes(wrong, error):
    assert_fails_with(q3, wrong, "the shapes or dtypes in your code do not fit together. Your function got logits: "
                      "shape (2, 4, 7), float32; labels: shape (2, 4), int64; weights: shape (2, 4), float32. It must "
                      "return a single number, a tensor of shape (), float32.", f"(The error: {error}", ") — ")


def q4_arange_row(X, pred_positions):
    """fails: Make it a column of shape (batch, 1)"""
    return X[torch.arange(X.shape[0]), pred_positions]


def q4_positions_only(X, pred_positions):
    """fails: X[pred_positions] indexes the first axis, the batch"""
    return X[pred_positions]


def q4_gather_flat_index(X, pred_positions):
    """fails: torch.gather(X, 1, index) needs an index with as many axes as X"""
    return torch.gather(X, 1, pred_positions)


def test_q4_an_indexing_mistake_is_named_with_the_shapes():
    assert_fails_with(q4, q4_arange_row,
                      "the shapes or dtypes in your code do not fit together. Your function got X: shape (2, 6, 4), "
                      "float32; pred_positions: shape (2, 3), int64. It must return a tensor of shape (2, 3, 4), float32.",
                      "(The error: IndexError: shape mismatch: indexing tensors could not be broadcast together with "
                      "shapes [2], [2, 3]) — torch.arange(batch) is a row of shape (batch,)")
    # the same mistake where it broadcasts without an error: the wrong shape, and the same name
    one_each = [case for case in ch05.Q4_CASES if case[1][1].shape[1] == 1]
    with pytest.raises(ch05.CheckFailed, match=r"expected shape \(4, 1, 5\), got \(4, 4, 5\) — torch.arange"):
        ch05.run_cases(q4_arange_row, ch05._ref_gather, one_each, ch05.Q4_DIAGNOSES)
    i18n.set_language("zh")
    try:
        chinese = q4.check(q4_arange_row)
    finally:
        i18n.set_language("en")
    assert "你的函数收到的是X：形状(2, 6, 4)，float32；pred_positions：形状(2, 3)，int64" in chinese.message
    assert "它对齐的是num_preds轴，而不是批量轴" in chinese.message


Q4_GOT = ("Your function got X: shape (2, 6, 4), float32; pred_positions: shape (2, 3), int64. It must return a "
          "tensor of shape (2, 3, 4), float32.")


def q4_positions_as_mask(X, pred_positions):
    """fails: pred_positions holds positions, numbers from 0 to seq-1, not a mask"""
    return X[pred_positions.bool()]


def q4_flat_positions(X, pred_positions):
    """fails: every position needs its own: torch.arange(batch).repeat_interleave(num_preds)"""
    # d2l's flat recipe, without its repeat_interleave
    batch, num_preds = pred_positions.shape
    return X[torch.arange(batch), pred_positions.reshape(-1)].reshape(batch, num_preds, -1)


def q4_counted_predictions(X, pred_positions):
    """fails: the column of batch indices counts the sequences"""
    return X[torch.arange(len(pred_positions[0]))[:, None], pred_positions]


def q4_gather_along_batch(X, pred_positions):
    """fails: the positions index the seq axis"""
    index = pred_positions.unsqueeze(-1).expand(-1, -1, X.shape[-1])
    return torch.gather(X, 0, index)


def q4_gather_along_hidden(X, pred_positions):
    """fails: torch.gather(X, dim, index) picks along the axis dim"""
    index = pred_positions.unsqueeze(-1).expand(-1, -1, X.shape[-1])
    return X.gather(-1, index)


def q4_index_select(X, pred_positions):
    """fails: X.index_select(1, index) takes one 1-D list of positions for the whole batch"""
    return X.index_select(1, pred_positions)


def q4_row_of_batch_indices(X, pred_positions):
    """fails: torch.arange(batch)[None, :] (or .unsqueeze(0)) is a row, (1, batch) = (1, 2)"""
    return X[torch.arange(X.shape[0])[None, :], pred_positions]


def q4_transposed_positions(X, pred_positions):
    """fails: no transpose"""
    return X[torch.arange(X.shape[0]).unsqueeze(1), pred_positions.T]


@pytest.mark.parametrize("wrong, phrases", [
    (q4_positions_as_mask, ["The shape of the mask [2, 3] at index 1 does not match",
                            "(batch, seq) = (2, 6), not (batch, num_preds) = (2, 3)"]),
    (q4_flat_positions, ["with shapes [2], [6]", "(batch · num_preds,) = (6,)", "torch.arange(batch), (2,)",
                         "repeat_interleave(num_preds), (6,)"]),
    (q4_counted_predictions, ["with shapes [3, 1], [2, 3]", "X.shape[0] = 2, shape (2, 1)", "num_preds = 3"]),
    (q4_gather_along_batch, ["index 2 is out of bounds for dimension 0", "(batch, seq, hidden) = (2, 6, 4): dim=1"]),
    (q4_gather_along_hidden, ["index 4 is out of bounds for dimension 2", "(batch, seq, hidden) = (2, 6, 4): dim=1"]),
    (q4_index_select, ["Index is supposed to be a vector", "(batch, num_preds) = (2, 3)"]),
    (q4_transposed_positions, ["with shapes [2, 1], [3, 2]", "already (batch, num_preds) = (2, 3)"]),
    (q4_row_of_batch_indices, ["with shapes [1, 2], [2, 3]", "lines it up with the num_preds axis, not the batch axis",
                               "Make it a column, (batch, 1) = (2, 1): torch.arange(batch)[:, None]"]),
    (lambda X, p: X[torch.arange(X.shape[0]).unsqueeze(0), p], ["with shapes [1, 2], [2, 3]", "is a row, (1, batch)"]),
])
def test_q4_indexing_slips_are_named_with_the_sizes(wrong, phrases):
    result = assert_fails_with(q4, wrong, *phrases, " — ")
    # a row of batch indices raises with the numbers of the transposed positions, in another order: not named so
    assert (wrong is q4_transposed_positions) == ("no transpose" in result.message)
    if wrong is not q4_index_select:            # torch's message names no shape: told as raised, without them
        assert Q4_GOT in result.message


def q4_repeat_not_interleave(X, pred_positions):
    """fails: repeat_interleave(num_preds)"""
    batch, num_preds = pred_positions.shape
    batch_idx = torch.arange(batch).repeat(num_preds)
    return X[batch_idx, pred_positions.reshape(-1)].reshape(batch, num_preds, -1)


def q4_index_not_expanded(X, pred_positions):
    """fails: expand it along the hidden axis"""
    return torch.gather(X, 1, pred_positions.unsqueeze(-1))


def q4_boolean_mask(X, pred_positions):
    """fails: it loses the batch axis, the order of pred_positions and its repeats"""
    mask = torch.zeros(X.shape[0], X.shape[1], dtype=torch.bool)
    for b in range(X.shape[0]):
        mask[b, pred_positions[b]] = True
    return X[mask]


def q4_loop_cat(X, pred_positions):
    """fails: the numbers are right, in the right order, but laid out as (6, 4)"""
    return torch.cat([X[b, pred_positions[b]] for b in range(X.shape[0])])


def q4_flat_without_reshape(X, pred_positions):
    """fails: laid out as (6, 4)"""
    batch, num_preds = pred_positions.shape
    return X[torch.arange(batch).repeat_interleave(num_preds), pred_positions.reshape(-1)]


def test_q4_near_misses_get_a_nudge_with_the_shapes():
    assert_fails_with(q4, q4_index_not_expanded, "expected shape (2, 3, 4), got (2, 3, 1) — your index is (batch, "
                      "num_preds, 1)", "(2, 3, 4)")
    assert_fails_with(q4, q4_boolean_mask, "expected shape (2, 3, 4), got (5, 4) — X[mask]",
                      "(batch, num_preds, hidden) = (2, 3, 4)")
    assert_fails_with(q4, q4_loop_cat, "expected shape (2, 3, 4), got (6, 4) — the numbers are right",
                      "torch.stack the rows")
    assert_fails_with(q4, lambda X, p: X[torch.arange(X.shape[0])[:, None], p].reshape(X.shape[0], -1),
                      "got (2, 12) — the numbers are right, in the right order, but laid out as (2, 12)")
    assert_fails_with(q4, q4_repeat_not_interleave, "first difference", "gives 0 1 0 1")
    # values that are merely wrong get no nudge about their layout
    result = assert_fails_with(q4, lambda X, p: X[:, :p.shape[1]].reshape(-1, X.shape[-1]), "got (6, 4)")
    assert " — " not in result.message


def test_q3_names_both_one_sided_flattenings_and_the_weights_column():
    assert_fails_with(q3, q3_labels_flat_only, "but not the labels (or the labels but not the logits)")
    assert_fails_with(q3, q3_labels_not_flat, "but not the labels (or the labels but not the logits)")
    assert_fails_with(q3, q3_weights_column, "first difference", "weights.reshape(-1, 1) is a column, (8, 1)",
                      "a (8, 8) table")


def test_q3_mistakes():
    def mean_then_weights(logits, labels, weights):
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))  # 'mean'
        w = weights.reshape(-1)
        return (loss * w).sum() / w.sum()

    def plain_mean(logits, labels, weights):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    def per_slot(logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                               reduction="none").reshape(labels.shape)

    def no_guard(logits, labels, weights):
        return (per_slot(logits, labels) * weights).sum() / weights.sum()

    def by_slots(logits, labels, weights):
        return (per_slot(logits, labels) * weights).sum() / weights.numel()

    def by_sequence(logits, labels, weights):
        return ((per_slot(logits, labels) * weights).sum(1) / weights.sum(1)).mean()

    assert_fails_with(q3, mean_then_weights, "plain mean over every slot, padding included")
    assert_fails_with(q3, plain_mean, "plain mean over every slot, padding included")
    assert_fails_with(q3, lambda lo, la, w: (per_slot(lo, la) * w).sum(), "did not divide")
    assert_fails_with(q3, by_slots, "not by the number of slots")
    assert_fails_with(q3, by_sequence, "averaged each sequence first")
    assert_fails_with(q3, no_guard, "every weight 0", "NaN")


def test_q4_mistakes():
    assert_fails_with(q4, lambda X, pos: X[:, pos], "own row pred_positions[b]", "(batch, batch, num_preds, hidden)")
    assert_fails_with(q4, lambda X, pos: X[:, pos[0]], "first sequence's positions")
    assert_fails_with(q4, lambda X, pos: X[:, :pos.shape[1]], "first difference")


def test_hints_and_solutions_exist():
    for ex in EXERCISES:
        assert len(ex.hints) >= 2 and ex.var in ex.solution()


# --- Q5: predict the context left at a 40 % masking rate ------------------------------------

def test_q5_experiment_uses_mask_tokens_and_tells_the_story():
    shares = [ch05.both_neighbours_visible(p) for p in (0.15, 0.25, 0.4, 0.6)]
    assert shares == sorted(shares, reverse=True) and shares[0] > 0.85 and 0.45 < shares[2] < 0.65
    # by hand on the first pairs, with the same seeded draws
    pairs = ch05._held_out_pairs(0)
    vocab = ch05.get_tokenizer(0).vocab
    g = torch.Generator().manual_seed(0)
    seen = total = 0
    for seq in pairs:
        m = mask_tokens(list(seq), vocab, 0.4, generator=g)
        for p in m.pred_positions.tolist():
            total += 1
            seen += m.ids[p - 1] != vocab.mask_id and m.ids[p + 1] != vocab.mask_id
    assert seen / total == ch05.both_neighbours_visible(0.4)
    assert len(pairs) > 500 and all(s[0] == vocab.cls_id and s[-1] == vocab.sep_id for s in pairs)


def test_q5_right_predictions_pass():
    truth = ch05.both_neighbours_visible(ch05.Q5_MASK_PROB)
    for guess in (truth, truth - 0.095, truth + 0.095, 0.46, 0.5, torch.tensor(0.6)):
        assert_passes_with(q5, guess, "BERT's 15 %")


def test_q5_wrong_predictions_explain_without_the_number():
    truth = ch05.both_neighbours_visible(ch05.Q5_MASK_PROB)
    high, low = q5.check(0.85), q5.check(0.2)
    assert high.status == low.status == "fail"
    assert "too high" in high.message and "80 %" in high.message
    assert "too low" in low.message and "never chosen" in low.message
    assert f"{truth:.2f}" not in high.message + low.message


@pytest.mark.parametrize("bad, phrase", [
    ("0.5", "must be a share"), (None, ""), (True, "must be a share"), (55, "between 0 and 1"),
    (float("nan"), "expected a finite number, got nan"), (-0.1, "between 0 and 1"),
])
def test_q5_refuses_what_is_not_a_share(bad, phrase):
    if bad is None:
        assert q5.check(bad).status == "not attempted"
    else:
        assert_fails_with(q5, bad, phrase)


def test_q5_experiment_leaves_the_global_rng_alone():
    assert assert_leaves_global_rng_alone(lambda: q5.check(0.5), ch05.both_neighbours_visible)


def test_q3_and_q4_refuse_the_packages_own_functions():
    from bertcourse.bert import MaskLM
    from bertcourse.pretrain import mlm_loss
    result = q3.check(lambda logits, labels, weights: mlm_loss(logits, labels, weights))
    assert result.status == "fail" and "without mlm_loss" in result.message
    result = q4.check(lambda X, pred_positions: MaskLM.gather(X, pred_positions))
    assert result.status == "fail" and "without MaskLM.gather" in result.message


def test_q1_names_a_share_fixed_at_0_15():
    import math
    result = q1.check(lambda num_candidates, mask_prob=0.15: max(1, math.floor(0.15 * num_candidates + 0.5)))
    assert "you used 0.15 whatever mask_prob is" in result.message, result.message
    result = q1.check(lambda num_candidates, mask_prob=0.15: max(1, round(mask_prob * num_candidates)))
    assert "rounds halves to the nearest EVEN number" in result.message, result.message
