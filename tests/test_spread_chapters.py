"""The trained numbers that chapters 3, 7 and 10 assert, against their measured spread
(benchmarks/spread_chapters.json, made by benchmarks/spread_chapters.py): every recorded run,
on every machine and configuration, must pass every assertion of the notebooks; the bounds
checked here are the notebooks' own (each check quotes its notebook's assertion, and the test
fails if the notebook no longer says it); and the study runs the notebooks' calls (seed 0 on
the reference machine prints what the committed notebooks print)."""
from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("spread_chapters", ROOT / "benchmarks" / "spread_chapters.py")
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)
# this machine's runs, and any other machine's file beside it (spread_chapters_<machine>.json)
FILES = sorted((ROOT / "benchmarks").glob("spread_chapters*.json"))
DATA = [json.loads(f.read_text()) for f in FILES]
RUNS = [r for data in DATA for r in data["runs"] if r.get("complete")]
NOTEBOOKS = {"3": "03_transformer", "7": "07_pretraining", "10": "10_sentence_pairs", "11": "11_named_entities",
             "12": "12_question_answering",
             "14": "14_scaling_up"}
ASSERTED = [c for c in study.CHECKS if c.slack is not None]
# Assertions that some measured run breaks (issue 22, item 3: benchmarks/README.md, "Trained
# numbers of chapters 3, 5, 7 and 10"). None: the six that did (chapter 3's month in the
# cross-attention, chapter 7's MLM against both neighbours, NSP accuracy, NSP by two cues and
# the least sentence-bound head) were moved to bounds every run meets, or dropped. A future one
# is listed here until its bound moves; test_the_known_broken_assertions_are_still_broken fails
# once one of them holds in every run (then it leaves this list).
BROKEN: set[str] = set()


def notebook(chapter: str) -> dict:
    return json.loads((ROOT / "notebooks" / f"{NOTEBOOKS[chapter]}.ipynb").read_text())


def code(chapter: str) -> str:
    return "\n".join("".join(c["source"]) for c in notebook(chapter)["cells"] if c["cell_type"] == "code")


def printed(chapter: str) -> str:
    """Everything the committed notebook printed (streams and plain-text results)."""
    out = []
    for cell in notebook(chapter)["cells"]:
        for o in cell.get("outputs", []):
            out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


def test_every_chapter_and_configuration_ran_as_it_says():
    """Seeds 0-4 of every chapter in each of its configurations here, complete; one thread, or two in the
    2-thread configurations (not chapter 14's); float32 (the three chapters never use autocast), AVX2
    kernels where the configuration says so."""
    assert FILES[0].name == "spread_chapters.json"
    # this machine's file is complete; another machine's may end with runs its time limit cut
    # short (they count nowhere: RUNS and the tables take complete runs only)
    assert not [r for r in DATA[0]["runs"] if not r.get("complete")], "incomplete runs in spread_chapters.json"
    here = [r for r in DATA[0]["runs"] if r.get("complete")]
    for chapter in study.CHAPTERS:
        for config in study.configs_for(chapter):
            seeds = {r["seed"] for r in here if (r["chapter"], r["config"]) == (chapter, config)}
            assert seeds >= set(study.seeds_for(chapter, config)), (chapter, config, seeds)
    assert "native-2-threads" in study.configs_for("7") and "native-2-threads" not in study.configs_for("14")
    for r in RUNS:
        m = r["machine"]
        threads = 2 if r["config"].endswith("-2-threads") else 1
        assert m["threads"] == threads and m["amp"] is False and m["cpu"] and m["torch"] and m["date"], r["machine"]
        # AVX2 where the configuration limits the kernels to it, the portable ones where it asks for them,
        # else the CPU's best (AVX512 with AVX-512, AVX2 on an AVX2-only CPU such as chapter 10's Zen 3)
        best = "AVX512" if "avx512f" in m.get("cpu_flags", []) else "AVX2"
        expected = {"fp32-avx2": "AVX2", "fp32-default": "DEFAULT"}.get(r["config"].removesuffix("-2-threads"), best)
        assert m["cpu_capability"] == expected, (r["config"], m["cpu_capability"], m.get("cpu_flags"))


@pytest.mark.parametrize("check", study.CHECKS, ids=lambda c: f"{c.chapter}: {c.name}")
def test_every_run_has_the_number(check):
    missing = [(r["config"], r["seed"]) for r in RUNS if r["chapter"] == check.chapter and study.value_of(check, r) is None]
    assert not missing, f"{check.name}: no value in {missing}"


def broken_by(check):
    return [(study.machine_name(r), r["config"], r["seed"], round(study.value_of(check, r), 4))
            for r in RUNS if r["chapter"] == check.chapter and not check.holds(r["values"])]


@pytest.mark.parametrize("check", [c for c in ASSERTED if c.name not in BROKEN], ids=lambda c: f"{c.chapter}: {c.name}")
def test_every_run_passes_the_notebooks_assertion(check):
    assert not broken_by(check), f"{check.name} ({check.asserted}) fails in {broken_by(check)}"


def test_the_known_broken_assertions_are_still_broken():
    """What BROKEN lists is what the runs show: each of them fails in at least one run."""
    names = {c.name for c in ASSERTED}
    assert set(BROKEN) <= names, sorted(set(BROKEN) - names)
    assert [name for name in BROKEN if not broken_by(next(c for c in ASSERTED if c.name == name))] == []


@pytest.mark.parametrize("check", ASSERTED, ids=lambda c: f"{c.chapter}: {c.name}")
def test_the_bound_is_the_notebooks(check):
    """The bounds live in the notebooks: each check quotes its notebook's assertion, so a
    notebook that changes a bound fails here until the study checks the new one."""
    assert check.source in code(check.chapter), f"notebook {NOTEBOOKS[check.chapter]} no longer says {check.source!r}"


def reference(chapter: str) -> dict:
    """Seed 0, native, on the machine that executed the committed notebooks: its runs are in
    spread_chapters.json (another machine's file may hold an "AMD EPYC" of another family too)."""
    (run,) = [r for r in DATA[0]["runs"] if r.get("complete")
              and (r["chapter"], r["config"], r["seed"]) == (chapter, "native", 0)
              and r["machine"]["cpu"] == "AMD EPYC" and r["machine"]["torch"].startswith("2.13.0")]
    return run["values"]


def test_seed_0_prints_what_chapter_3_printed():
    v, out = reference("3"), printed("3")
    lines = [f"exact match on 1,000 unseen validation dates: {v['training']['exact_match']:.0%}",
             f"predicting the character frequencies: {v['norm_order']['frequency_loss']:.2f} nats per character"]
    lines += [f"{name:28s} training loss, mean of steps 31-40: {x:.2f}" for name, x in v["norm_order"]["last10"].items()]
    leaky = v["no_causal_mask"]
    lines += [f"{leaky['masked_teacher_forced_loss']:33.2f}   {v['training']['exact_match']:11.0%}",
              f"{leaky['teacher_forced_loss']:33.2f}   {leaky['exact_match']:11.0%}",
              f"without causal mask  weight on future positions per layer: {leaky['future_weight'][0]:.2f}, "
              f"{leaky['future_weight'][1]:.2f};   prediction at t changed by the input at t+1: {leaky['peeking_rate']:.0%}"]
    cross = v["cross_attention"]
    outputs = list(cross["prediction"]) + ["<eos>"]
    lines += [f"writing {outputs[k]!r} (output {k}) it looks most at {cross['looks_at'][k]!r}" for k in [0, 1, 2, 3, 5, 6, 8, 9]]
    assert [line for line in lines if line not in out] == []


def test_seed_0_prints_what_chapter_7_printed():
    from bertcourse.pretraining_baselines import NSP_CUES

    v, out = reference("7"), printed("7")
    t = v["training"]
    lines = [f"training loss, mean of the first 20 steps: {t['loss_first20']:.1f}, of the last 20: {t['loss_last20']:.1f}",
             f"held-out MLM accuracy: {t['mlm_acc']:.2f}   held-out NSP accuracy: {t['nsp_acc']:.2f}",
             f"MLM: {t['mlm_acc'] / t['baselines']['mlm_most_frequent']:.1f} x the most-frequent-token baseline, "
             f"{t['mlm_acc'] - t['baselines']['mlm_bigram']:+.2f} against the bigram, "
             f"{t['mlm_acc'] - t['baselines']['mlm_both_neighbours']:+.2f} against both neighbours; "
             f"NSP: {t['nsp_acc']:.0%} vs chance",
             f"{v['cloze']['questions']} held-out questions: right kind of word {v['cloze']['right_kind']:.0%}, "
             f"right fact {v['cloze']['right_fact']:.0%}",
             f"MLM accuracy on training pairs, training masks: {v['memorised_masks']['training_masks']:.2f}",
             f"MLM accuracy on training pairs, fresh masks:    {v['memorised_masks']['fresh_masks']:.2f}",
             f"MLM accuracy on held-out pairs:                 {v['memorised_masks']['held_out']:.2f}",
             f"train mode: {[round(a, 3) for a in v['dropout']['train_mode']]}",
             f"eval mode:  {[round(a, 3) for a in v['dropout']['eval_mode']]}",
             "tensor([[{:.4f}, {:.4f}],\n        [{:.4f}, {:.4f}]])".format(*sum(v["own_sentence_attention"], []))]
    assert [line for line in lines if line not in out] == []
    cue_lines = {line.split("  ")[0]: line for line in out.splitlines() if line.startswith(NSP_CUES)}
    assert {cue: cue_lines[cue].split()[-1] for cue in NSP_CUES} == {cue: f"{x:.2f}" for cue, x in v["nsp_by_cue"].items()}
    assert set(NSP_CUES) == set(v["nsp_by_cue"])


def test_seed_0_prints_what_chapter_14_printed():
    v, out = reference("14"), printed("14")
    for n, pairs in ((1, "32,000"), (2, "64,000")):
        assert f"{pairs} pairs seen, held-out MLM accuracy {v[f'processes_{n}']['mlm_acc']:.3f}" in out


def test_the_readme_shows_the_files_tables():
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    assert study.table(DATA) in readme, "benchmarks/README.md: paste `python benchmarks/spread_chapters.py --table`"


def test_seed_0_prints_what_chapter_10_printed():
    v, out = reference("10"), printed("10")
    pair = v["pair"]
    names = ("entailment", "neutral", "contradiction")
    # the bag of words has no seed; its last digit depends on the thread count (0.546 on one, 0.547 on two):
    # the committed notebook prints one of seed 0's runs (executed natively, on every core)
    bows = {f"hypothesis-only bag of words {r['values']['one_side_bow']['hypothesis']:.3f}" for r in RUNS
            if (r["chapter"], r["seed"]) == ("10", 0)}
    assert any(line in out for line in bows), bows
    lines = [f"test accuracy of the pair model: {pair['predicted_acc']:.3f}",
             str({name: round(pair["changed_on_swap"][str(y)], 2) for y, name in enumerate(names)}),
             f"right order {pair['predicted_acc']:.3f}, reversed order {study._reversed(v):.3f}"]
    missing = [line for line in lines if line not in out]
    assert not missing, missing


def test_chapter_10s_quoted_claims_hold_in_every_run():
    """What chapter 10's text says of runs it cannot afford (benchmarks/README.md, chapter 10): the pair
    model beats the hypothesis-only MiniLM by more than three standard errors of the difference; with
    every segment id set to 0 the accuracy moves by 0.03 or less (within noise); MiniLM from random weights stays below
    the hypothesis-only bag of words (seeds 0-2, native kernels: the only runs that train it)."""
    runs = [r["values"] for r in RUNS if r["chapter"] == "10"]
    assert len(runs) >= 11
    for v in runs:
        pair, hyp = v["pair"]["predicted_acc"], v["hypothesis_only"]["test_acc"]
        se = study._se(pair)
        assert pair - hyp > 3 * 2 ** 0.5 * se, (pair, hyp)
        assert abs(v["pair"]["zero_segments_acc"] - v["pair"]["test_acc"]) <= 0.03, v["pair"]    # "0.03 or less"
    scratch = [v["scratch"]["test_acc"] for v in runs if "scratch" in v]
    assert len(scratch) >= 3 and max(scratch) < min(v["one_side_bow"]["hypothesis"] for v in runs)


def test_chapter_10_quotes_the_course_encoder_study():
    """Section 5's comparison of chapter 7's encoder with the same network from random weights
    (benchmarks/course_encoder.py, its committed run): five seeds of each, the accuracy ranges the text
    quotes (rounded to two decimals), and the average gap after three epochs it calls "0.02 better,
    about one run's standard error"."""
    import statistics

    from bertcourse.measured_bounds import standard_error
    spec = importlib.util.spec_from_file_location("course_encoder", ROOT / "benchmarks" / "course_encoder.py")
    encoder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(encoder)
    rows = encoder.summary(json.loads((ROOT / "benchmarks" / "course_encoder.json").read_text()))
    markdown = " ".join("".join(c["source"]) for c in notebook("10")["cells"] if c["cell_type"] == "markdown")
    text = " ".join(markdown.split())           # a range may be cut by a line break
    for (start, epochs), row in rows.items():
        accs = row["test"].values()
        assert len(row["test"]) == 5, (start, epochs)
        assert f"{min(accs):.2f} to {max(accs):.2f}" in text, (start, epochs, min(accs), max(accs))
    gaps = [rows["course", 3]["test"][s] - rows["random", 3]["test"][s] for s in range(5)]
    mean = statistics.mean(rows["course", 3]["test"].values())
    assert round(statistics.mean(gaps), 2) == 0.02 and abs(statistics.mean(gaps) - standard_error(mean, 1000)) < 0.01


def test_seed_0_prints_what_chapter_11_printed():
    """The committed notebook prints one of seed 0's runs: the thread count changes chapter 11's
    digits (0.692 on one thread, 0.693 on two), so the lines must all come from one run, any of them."""
    def lines(v):
        t = v["tagger"]
        return [f"tagger: entity F1 {t['f1']:.3f} ± {t['f1_se']:.3f} (precision {t['precision']:.3f}, "
                f"recall {t['recall']:.3f}), token accuracy {t['token_acc']:.3f}",
                f"over the most frequent tag: {t['f1'] - v['baselines']['most_frequent']['f1']:.3f} ± "
                f"{t['minus_most_frequent_se']:.3f}",
                f"entity F1 read right {t['f1']:.3f}, read one piece late {t['off_by_one_f1']:.3f}"]
    out = printed("11")
    runs = [r["values"] for r in RUNS if (r["chapter"], r["seed"]) == ("11", 0)]
    assert len(runs) >= 3 and any(all(line in out for line in lines(v)) for v in runs), [lines(v) for v in runs]


def test_chapter_11s_quoted_claims_hold_in_every_run():
    """What chapter 11's text says of the spread study: entity F1 0.62 to 0.69 (standard error 0.022 to
    0.023), 0.27 to 0.34 above the most frequent tag (0.026 to 0.030), token accuracy 0.97; persons
    found best and organisations worst (PER 0.76 to 0.81, LOC 0.62 to 0.76, ORG 0.31 to 0.35); read one
    piece late, 0.00 to 0.02; every piece labelled (seeds 0-2, native kernels): 0.68, 0.67, 0.70 against
    0.69, 0.63, 0.67, within the 0.07 the seeds alone move F1; the most frequent tag 0.351 as written,
    0.359 lower-cased."""
    runs = [r["values"] for r in RUNS if r["chapter"] == "11"]
    assert len(runs) >= 10

    def within(x, low, high):       # the text's two decimals
        return low - 0.005 <= x < high + 0.005
    for v in runs:
        t, frequent = v["tagger"], v["baselines"]["most_frequent"]["f1"]
        assert within(t["f1"], 0.62, 0.69) and within(t["f1_se"], 0.022, 0.023), t
        assert within(t["f1"] - frequent, 0.27, 0.34) and within(t["minus_most_frequent_se"], 0.026, 0.030), t
        assert within(t["token_acc"], 0.97, 0.97) and within(t["off_by_one_f1"], 0.0, 0.02), t
        per = t["per_type_f1"]
        assert per["PER"] == max(per.values()) and per["ORG"] == min(per.values()), per
        assert within(per["PER"], 0.76, 0.81) and within(per["LOC"], 0.62, 0.76) and within(per["ORG"], 0.31, 0.35), per
        assert (round(frequent, 3), round(v["baselines"]["most_frequent_lowercase"]["f1"], 3)) == (0.351, 0.359)
    f1s = [v["tagger"]["f1"] for v in runs]
    pieces = {r["seed"]: (round(r["values"]["all_pieces"]["f1"], 2), round(r["values"]["tagger"]["f1"], 2))
              for r in RUNS if r["chapter"] == "11" and r["config"] == "native" and "all_pieces" in r["values"]}
    assert {s: pieces[s] for s in (0, 1, 2)} == {0: (0.68, 0.69), 1: (0.67, 0.63), 2: (0.70, 0.67)}, pieces
    assert all(abs(a - b) < max(f1s) - min(f1s) < 0.07 + 0.005 for a, b in pieces.values())



def test_seed_0_prints_what_chapter_12_printed():
    """Chapter 12's section 4 prints its model's and the baseline's scores: the committed lines are
    those of a seed-0 run of the study (the notebook ran on one thread: the native seed-0 run)."""
    def lines(v):
        m, b = v["model"], v["baseline"]
        return [f"model:    exact match {m['em']:.1f}, F1 {m['f1']:.1f} ± {m['f1_se']:.1f}",
                f"baseline: exact match {b['em']:.1f}, F1 {b['f1']:.1f}",
                f"F1 over the baseline: {m['f1'] - b['f1']:.1f} ± {m['minus_baseline_se']:.1f}"]
    out = printed("12")
    runs = [r["values"] for r in RUNS if (r["chapter"], r["seed"]) == ("12", 0)]
    assert len(runs) >= 3 and any(all(line in out for line in lines(v)) for v in runs), [lines(v) for v in runs]


def test_chapter_12s_quoted_claims_hold_in_every_run():
    """What chapter 12's text says of the spread study: F1 23.2 to 37.6 and exact match 13.3 to 23.3
    over three seeds and three settings (seed 2 learned late); the sentence baseline 0.0 and 14.3; and,
    for seed 0 on native kernels, training on every window no better (33.7 against 37.6, in 754 steps
    against 323), the head on a random encoder 6.5, and 7 of the 300 test answers lost without overlap."""
    runs = [r for r in RUNS if r["chapter"] == "12"]
    assert len(runs) >= 7

    def within(x, low, high):       # the text's one decimal
        return low - 0.05 <= x < high + 0.05
    for r in runs:
        m, b = r["values"]["model"], r["values"]["baseline"]
        assert within(m["f1"], 23.2, 37.6) and within(m["em"], 13.3, 23.3), m
        assert (round(b["em"], 1), round(b["f1"], 1)) == (0.0, 14.3)
        assert m["windows"] == 1292
    f1s = sorted(round(r["values"]["model"]["f1"], 1) for r in runs)
    assert (f1s[0], f1s[-1]) == (23.2, 37.6)
    seed0 = reference("12")
    every, model, scratch = seed0["every_window"], seed0["model"], seed0["scratch"]
    assert (round(every["f1"], 1), round(model["f1"], 1), round(scratch["f1"], 1)) == (33.7, 37.6, 6.5)
    assert every["f1"] <= model["f1"] and -(-every["windows"] // 4) == 754 and -(-model["windows"] // 4) == 323
    assert scratch["f1"] < seed0["baseline"]["f1"]
    assert seed0["whole_somewhere"] == {"0": 293, "32": 300}
