"""The generated small-world corpus (bertcourse.corpus, re-exported by bertcourse.data)."""
import hashlib
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from bertcourse import corpus as corpus_module
from bertcourse.data import (
    ClozeItem,
    Corpus,
    Fact,
    World,
    cloze_items,
    generate_corpus,
    generate_world,
)


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(0)


@pytest.fixture(scope="module")
def world(corpus):
    return corpus.world


def _digest(c: Corpus) -> str:
    h = hashlib.sha256()
    for split in (c.train, c.held_out):
        for par in split:
            h.update("\n".join(par).encode())
            h.update(b"\x00")
        h.update(b"\x01")
    return h.hexdigest()


# -- determinism ---------------------------------------------------------------------------

def test_same_seed_gives_identical_corpus_without_the_cache(corpus):
    fresh = generate_corpus.__wrapped__(0)          # bypass lru_cache: really regenerate
    assert fresh.train == corpus.train and fresh.held_out == corpus.held_out
    assert fresh.train_info == corpus.train_info and fresh.held_out_info == corpus.held_out_info
    assert generate_world.__wrapped__(0) == corpus.world


def test_same_seed_identical_across_processes_and_hash_seeds(corpus):
    # str hashing is randomised per process; the corpus must not depend on it
    code = ("import hashlib; from bertcourse.data import generate_corpus; c = generate_corpus(0); "
            "h = hashlib.sha256()\n"
            "for split in (c.train, c.held_out):\n"
            "    for par in split:\n"
            "        h.update('\\n'.join(par).encode()); h.update(b'\\x00')\n"
            "    h.update(b'\\x01')\n"
            "print(h.hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == _digest(corpus)


def test_generate_corpus_is_cached(corpus):
    assert generate_corpus(0) is corpus
    assert generate_corpus(seed=0, paragraphs_per_town=6, held_out_fraction=0.05) is corpus
    assert generate_world(0) is corpus.world is generate_world(seed=0, num_people=1200)


def test_different_seeds_differ(corpus):
    other = generate_corpus(1)
    assert other.world.countries[0].name != corpus.world.countries[0].name
    assert set(other.train[:50]).isdisjoint(corpus.train[:50])


# -- sizes and format -----------------------------------------------------------------------

def test_sizes_are_in_the_intended_range(corpus):
    n_sentences = sum(map(len, corpus.train)) + sum(map(len, corpus.held_out))
    assert 30_000 <= n_sentences <= 60_000
    n_words = len(corpus.words("train"))
    assert 2_000 <= n_words <= 5_000
    assert all(4 <= len(p) <= 8 for p in corpus.train + corpus.held_out)
    # every paragraph length 4..8 really occurs
    assert set(Counter(map(len, corpus.train))) == {4, 5, 6, 7, 8}
    share = len(corpus.held_out) / (len(corpus.train) + len(corpus.held_out))
    assert 0.02 <= share <= 0.05
    kinds = Counter(info.kind for info in corpus.train_info)
    assert set(kinds) == {"country", "town", "animal", "person"}


def test_text_format_lower_case_one_space_ends_with_period(corpus):
    for s in corpus.sentences("train") + corpus.sentences("held_out"):
        assert s == s.lower() and s.endswith(".") and "  " not in s and s == s.strip()
        assert not re.search(r"[0-9'{}]", s), s          # no digits, apostrophes, template slots


def test_info_aligns_with_text(corpus):
    for paragraphs, infos in ((corpus.train, corpus.train_info), (corpus.held_out, corpus.held_out_info)):
        assert len(paragraphs) == len(infos)
        for par, info in zip(paragraphs, infos):
            assert len(par) == len(info.facts)


# -- facts ------------------------------------------------------------------------------------

def _word_in(value: str, sentence: str) -> bool:
    return re.search(rf"(?<![a-z]){re.escape(value)}(?![a-z])", sentence) is not None


def test_every_annotated_fact_is_the_world_fact_and_is_in_the_sentence(corpus, world):
    n = 0
    for paragraphs, infos in ((corpus.train, corpus.train_info), (corpus.held_out, corpus.held_out_info)):
        for par, info in zip(paragraphs, infos):
            for sentence, facts in zip(par, info.facts):
                for f in facts:
                    assert world.lookup(f.subject, f.relation) == f.value, (sentence, f)
                    assert _word_in(f.value, sentence), (sentence, f)
                    n += 1
    assert n > 25_000


def test_capitals_are_consistent_in_the_text_itself(corpus, world):
    """Independent of the annotations: read the text and check every capital it names."""
    capital_of = {c.name: c.capital for c in world.countries}
    capitals = set(capital_of.values())
    n_named = n_pronoun = 0
    for paragraphs, infos in ((corpus.train, corpus.train_info), (corpus.held_out, corpus.held_out_info)):
        for par, info in zip(paragraphs, infos):
            for s in par:
                if "capital" not in s:
                    continue
                words = set(re.findall(r"[a-z]+", s))
                countries = [c for c in capital_of if c in words]
                named_capitals = words & capitals
                if len(countries) == 1:          # "the capital of X is Y", "Y is the capital of X"
                    assert named_capitals == {capital_of[countries[0]]}, s
                    n_named += 1
                elif not countries and info.kind == "country":   # "its capital is Y"
                    assert named_capitals == {capital_of[info.entity]}, s
                    n_pronoun += 1
    assert n_named > 250 and n_pronoun > 250, (n_named, n_pronoun)   # the check really ran


def test_other_facts_are_consistent_in_the_text(corpus, world):
    """Each country's language and currency: a country paragraph never names another's."""
    languages = {c.language: c.name for c in world.countries}
    currencies = {c.currency: c.name for c in world.countries}
    checked = 0
    for par, info in zip(corpus.train, corpus.train_info):
        if info.kind != "country":
            continue
        for s in par:
            for w in re.findall(r"[a-z]+", s):
                for table in (languages, currencies):
                    if w in table:
                        assert table[w] == info.entity, s
                        checked += 1
    assert checked > 1000


def test_world_is_coherent(world):
    towns = {t.name: t for t in world.towns}
    for c in world.countries:
        assert c.capital == c.towns[0] and towns[c.capital].is_capital
        assert all(towns[t].country == c.name for t in c.towns)
        assert towns[c.capital].location == f"on the river {c.river}"
        assert next(a for a in world.animals if a.name == c.national_animal).origin == c.name
    firsts = [p.first for p in world.people]
    assert len(set(firsts)) == len(firsts)                   # a first name identifies a person
    by_first = {p.first: p for p in world.people}
    siblings = [p for p in world.people if p.sibling]
    assert len(siblings) > 100
    for p in siblings:
        sib = by_first[p.sibling]
        assert sib.sibling == p.first and sib.last == p.last
    # made-up names are unique across kinds and never a word of the templates
    names = list(world.names)
    assert len(world.names) > 2000
    assert not set(names) & corpus_module._words_in_templates()


def test_world_lookup_unknown_fact_is_a_keyerror(world):
    with pytest.raises(KeyError, match="no fact"):
        world.lookup("nowhere", "capital")


# -- the NSP signal ---------------------------------------------------------------------------

def test_first_sentence_names_the_entity(corpus):
    for par, info in zip(corpus.train, corpus.train_info):
        assert _word_in(info.entity, par[0]), (info.entity, par[0])


def test_later_sentences_mostly_use_pronouns(corpus):
    later = [(s, info) for par, info in zip(corpus.train, corpus.train_info) for s in par[1:]]
    with_name = sum(_word_in(info.entity.split()[0], s) for s, info in later)
    assert with_name / len(later) < 0.5


# -- the held-out split -----------------------------------------------------------------------

def test_held_out_is_disjoint_from_train(corpus):
    assert set(corpus.train).isdisjoint(corpus.held_out)
    assert len(set(corpus.train)) == len(corpus.train)       # no duplicate paragraphs either


def test_every_held_out_fact_is_stated_in_train(corpus):
    train_facts = {f for info in corpus.train_info for fs in info.facts for f in fs}
    held_facts = {f for info in corpus.held_out_info for fs in info.facts for f in fs}
    assert len(held_facts) > 300
    assert held_facts <= train_facts
    train_entities = {info.entity for info in corpus.train_info}
    assert {info.entity for info in corpus.held_out_info} <= train_entities


def test_cloze_items(corpus, world):
    items = cloze_items(corpus)                     # held_out, unseen sentences only
    assert len(items) >= 50
    train_sentences = set(corpus.sentences("train"))
    for item in items:
        assert isinstance(item, ClozeItem)
        assert item.masked.count("[MASK]") == 1
        assert item.masked.replace("[MASK]", item.answer) == item.sentence
        assert item.sentence not in train_sentences
        assert world.lookup(item.fact.subject, item.fact.relation) == item.answer
    seen_too = cloze_items(corpus, exclude_seen=False)
    assert len(seen_too) > len(items)
    capitals = cloze_items(corpus, "train", relations={"capital"})
    assert capitals and all(i.fact.relation == "capital" for i in capitals)


# -- errors -----------------------------------------------------------------------------------

def test_bad_arguments_raise_named_errors():
    with pytest.raises(TypeError, match="seed"):
        generate_world(1.5)
    with pytest.raises(ValueError, match="num_animals"):
        generate_world(0, num_countries=10, num_animals=5)
    with pytest.raises(ValueError, match="held_out_fraction"):
        generate_corpus(0, held_out_fraction=0.9)
    with pytest.raises(TypeError, match="held_out_fraction"):
        generate_corpus(0, held_out_fraction="5%")
    with pytest.raises(ValueError, match="paragraphs_per_town"):
        generate_corpus(0, paragraphs_per_town=-1)
    with pytest.raises(ValueError, match="split"):
        generate_corpus(0).split("test")
    with pytest.raises(TypeError, match="corpus"):
        cloze_items(["a sentence."])


def test_small_world_parameters():
    w = generate_world(3, num_countries=3, towns_per_country=2, num_animals=5, num_people=10)
    assert len(w.countries) == 3 and len(w.towns) == 6 and len(w.animals) == 5
    assert len(w.people) == 10
    assert isinstance(w, World) and isinstance(Fact("a", "b", "c"), Fact)


# -- what gives a random NSP sentence away ---------------------------------------------------
