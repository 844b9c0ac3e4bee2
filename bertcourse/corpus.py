"""The course's own pretraining corpus: a generated "small world" of English paragraphs.

Why generate text instead of downloading it? The course must run offline, on a laptop
CPU, in about a minute of training — and a tiny BERT should visibly *learn something*
there. Real text (WikiText-2, Wikipedia) is far too varied for that. So the course
generates a small, consistent world and writes about it.

What is in it (``generate_world``)
    * **countries** with a capital, a few other towns, a language, a currency, a river,
      a highest mountain, a climate, a main export, a national dish, a national animal,
      a flag and a region of the continent;
    * **towns** with a country, a part of that country, a location (on a river, by the
      sea, ...), a landmark, a market and a favourite sport;
    * **animals** with a size, a colour, a body covering, a habitat, a food, a sound, a
      number of legs, a time of day when they are active and a country of origin;
    * **people** with a job (and the activity and workplace that go with it), a home town,
      a pet animal, a hobby, a favourite food and sometimes a brother or sister.

  All names (countries, towns, languages, currencies, rivers, mountains, animals, people)
  are made up from syllables by a seeded generator, so no fact can come from anywhere
  but this corpus — and the names give WordPiece rare words to split into ``##`` pieces.

Facts versus grammar
    Every fact is fixed once in the :class:`World` and the corpus never contradicts it:
    the capital of a country is the same city in every sentence that mentions it. Each
    fact is written many times, with several phrasings (``the capital of velora is
    tarnum.``, ``tarnum is the capital of velora.``, ``its capital is tarnum.``), so a
    masked-language model can learn both the *grammar* (which kind of word fits the
    blank: a town after "the capital of X is") and, given enough training, the *facts*
    (which town).

The NSP signal
    A paragraph has 4–8 sentences and stays on one entity. Its first sentence always
    names the entity; most later sentences refer to it with a pronoun (``it``, ``she``,
    ``he``) or build on the previous sentence (``its capital is tarnum.`` →
    ``tarnum lies on the river osk.``; a person's day runs from morning to night). So the
    order of sentences carries meaning: a random second sentence usually talks about a
    different entity, uses a pronoun of the wrong kind, or breaks a chain.

Text format
    Lower-case (like ``bert-base-uncased`` and d2l's WikiText-2 loader), words separated
    by single spaces, punctuation attached to the word before it, every sentence ends
    with ``.``. No digits and no apostrophes.

The held-out split
    After all paragraphs are generated and shuffled (seeded), the first
    ``held_out_fraction`` (5 %) of them are *candidates*. A candidate is held out only if
    every fact it states is also stated somewhere in the training paragraphs (usually in
    other words); otherwise it goes back to training. So held-out paragraphs are never
    trained on, but they are about known entities and known facts: a fill-in-the-blank
    question on a held-out sentence is answerable by a model that learned the training
    split. About half the candidates pass — a person's facts are stated only a few times,
    so many person paragraphs go back — and with the defaults 146 paragraphs (838
    sentences, 2.5 %) are held out, of every kind of entity. Short sentences can occur
    verbatim in both splits (the same fact in the same template); :func:`cloze_items`
    leaves those out by default, to test recall of facts rather than of whole sentences.

Everything is deterministic for a given seed and cached, because notebooks call
:func:`generate_corpus` repeatedly.
"""
from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ._checks import check_bool, check_positive_int
from .utils import cached

__all__ = ["Fact", "Country", "Town", "Animal", "Person", "World", "ParagraphInfo", "Corpus",
           "ClozeItem", "generate_world", "generate_corpus", "cloze_items"]


# ---------------------------------------------------------------------------------------
# The world: entities and facts
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fact:
    """One fact: ``subject`` (an entity's name) has ``value`` for ``relation``.

    ``value`` is written exactly as it appears in a sentence, e.g.
    ``Fact("velora", "capital", "tarnum")``.
    """
    subject: str
    relation: str
    value: str


@dataclass(frozen=True)
class Country:
    name: str
    region: str           # where on the continent: "north", "southwest", ...
    capital: str
    towns: tuple          # every town, the capital first
    language: str
    currency: str
    river: str
    mountain: str
    climate: str
    export: str
    dish: str
    national_animal: str
    flag: str             # "red and white"


@dataclass(frozen=True)
class Town:
    name: str
    country: str
    is_capital: bool
    part: str             # the part of its country: "north", "centre", ...
    location: str         # "on the river osk", "by the sea", ...
    landmark: str
    market: str
    sport: str


@dataclass(frozen=True)
class Animal:
    name: str
    size: str
    colour: str
    cover: str            # "thick fur", "soft feathers", ...
    habitat: str
    food: str
    sound: str            # a verb: "hums"
    legs: str             # a number word: "four"
    active: str           # "at night" or "during the day"
    origin: str           # a country


@dataclass(frozen=True)
class Person:
    first: str            # unique among all people, so it can stand for the person
    last: str
    pronoun: str          # "she" or "he"
    job: str
    town: str
    pet: str              # an animal
    hobby: str            # a noun: "chess"
    food: str
    sibling: str | None   # first name of a brother or sister (same last name), or None

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True)
class World:
    """All entities of the small world and a lookup table of every fact.

    ``facts[(subject, relation)]`` is the one value the corpus ever states. Subjects are
    country, town and animal names, a person's full name, and job names (a job's
    ``activity`` and ``workplace`` are world knowledge shared by everyone with that job).
    """
    seed: int
    countries: tuple
    towns: tuple
    animals: tuple
    people: tuple
    facts: Mapping = field(repr=False)

    def lookup(self, subject: str, relation: str) -> str:
        """The value of ``relation`` for ``subject``; KeyError if the world has no such fact."""
        try:
            return self.facts[(subject, relation)]
        except KeyError:
            raise KeyError(f"the world has no fact ({subject!r}, {relation!r})") from None

    @functools.cached_property
    def names(self) -> dict:
        """Every made-up name -> its kind ("country", "town", "language", ...)."""
        out = {}
        for c in self.countries:
            out.update({c.name: "country", c.language: "language", c.currency: "currency",
                        c.river: "river", c.mountain: "mountain"})
        out.update({t.name: "town" for t in self.towns})
        out.update({a.name: "animal" for a in self.animals})
        for p in self.people:
            out[p.first] = "first name"
            out.setdefault(p.last, "last name")
        return out


# Attribute vocabularies. Plain English words; the made-up names come from _NameMaker.
_REGIONS = ("north", "south", "east", "west", "northeast", "northwest", "southeast", "southwest")
_PARTS = ("north", "south", "east", "west", "centre")
_CLIMATES = ("cold", "warm", "hot", "dry", "rainy", "windy", "snowy", "mild", "sunny",
             "foggy", "humid", "stormy")
_EXPORTS = ("wool", "copper", "tea", "salt", "rice", "timber", "glass", "silk", "cotton",
            "coffee", "iron", "gold", "silver", "marble", "cheese", "paper", "leather",
            "sugar", "spices", "tin", "coal", "amber", "honey", "olives")
_DISHES = ("bean soup", "fried fish", "honey cake", "plum dumplings", "rice pudding",
           "lamb stew", "potato pancakes", "cabbage rolls", "mushroom pie", "corn bread",
           "onion soup", "baked apples", "cheese noodles", "fish pie", "lentil stew",
           "pumpkin soup", "roast duck", "berry tart", "egg noodles", "chicken rice",
           "walnut bread", "pea soup", "apple pie", "spiced rice", "pepper stew")
_COLOURS = ("red", "blue", "green", "yellow", "white", "black", "orange", "purple", "gold",
            "silver", "grey", "brown")
_LOCATIONS = ("by the sea", "in the hills", "in a green valley", "on a lake",
              "at the edge of a forest", "on the coast", "in the mountains", "on a wide plain")
_LANDMARKS = ("an old bridge", "a tall tower", "a famous library", "a big harbour",
              "a stone castle", "a green park", "a white temple", "a busy station",
              "a large museum", "an old mill", "a clock tower", "a grand theatre",
              "a famous university", "a lighthouse", "a glass palace", "a flower garden",
              "a great cathedral", "a city wall", "a covered bazaar", "a stone fountain")
_GOODS = ("fish", "fruit", "spices", "cloth", "pottery", "flowers", "horses", "books",
          "cheese", "carpets", "toys", "shoes", "hats", "lamps", "vegetables", "jewels",
          "clocks", "furniture", "baskets", "candles", "knives", "soap")
_SPORTS = ("football", "chess", "rowing", "tennis", "hockey", "cricket", "cycling",
           "wrestling", "basketball", "skiing", "volleyball", "archery", "boxing",
           "sailing", "polo")
_SIZES = ("tiny", "small", "large", "huge")
_ANIMAL_COLOURS = ("red", "brown", "grey", "black", "white", "green", "yellow", "blue",
                   "orange", "spotted", "striped", "golden")
_COVERS = ("thick fur", "soft feathers", "hard scales", "smooth skin", "a hard shell", "curly wool")
_HABITATS = ("forest", "desert", "swamp", "mountains", "grassland", "jungle", "river",
             "lake", "sea", "caves", "tundra", "hills", "marsh", "savanna")
_ANIMAL_FOODS = ("grass", "leaves", "insects", "fish", "seeds", "berries", "roots", "nuts",
                 "beetles", "worms", "fruit", "frogs", "mice", "snails", "moss", "bark",
                 "flowers", "crabs")
_SOUNDS = ("hums", "growls", "whistles", "hisses", "chirps", "barks", "howls", "squeaks",
           "croaks", "roars", "clicks", "purrs", "hoots", "grunts", "bellows", "trills",
           "buzzes", "snorts", "yelps", "quacks")
_LEGS = ("two", "four", "six", "eight")
_ACTIVE = ("at night", "during the day")
# job -> (what they do, where they work)
_JOBS = {
    "baker": ("bakes bread", "the bakery"), "teacher": ("teaches children", "a school"),
    "doctor": ("helps sick people", "the hospital"), "farmer": ("grows vegetables", "a farm"),
    "fisher": ("catches fish", "the harbour"), "pilot": ("flies planes", "the airport"),
    "nurse": ("cares for patients", "the clinic"), "cook": ("makes soup", "a restaurant"),
    "carpenter": ("builds tables", "a workshop"), "librarian": ("sorts books", "the library"),
    "driver": ("drives a bus", "the bus station"), "tailor": ("sews coats", "a small shop"),
    "singer": ("sings songs", "the theatre"), "gardener": ("plants flowers", "the park"),
    "judge": ("hears cases", "the court"), "miner": ("digs for copper", "the mine"),
    "sailor": ("sails ships", "the port"), "potter": ("makes bowls", "a pottery"),
    "vet": ("treats animals", "an animal clinic"), "engineer": ("designs bridges", "an office"),
    "writer": ("writes stories", "a quiet room"), "shepherd": ("looks after sheep", "the hills"),
    "smith": ("makes tools", "a forge"), "clerk": ("counts money", "the bank"),
    "builder": ("builds houses", "building sites"), "dentist": ("fixes teeth", "a surgery"),
    "astronomer": ("studies the stars", "an observatory"), "painter": ("paints pictures", "a studio"),
    "waiter": ("serves food", "a cafe"), "guard": ("watches the gate", "the castle"),
}
# hobby noun -> what someone does
_HOBBIES = {
    "painting": "paints landscapes", "chess": "plays chess", "swimming": "swims in the lake",
    "fishing": "goes fishing", "dancing": "goes dancing", "singing": "sings in a choir",
    "running": "goes running", "cycling": "rides a bike", "reading": "reads novels",
    "gardening": "works in the garden", "knitting": "knits scarves", "climbing": "climbs rocks",
    "cooking": "cooks for friends", "hiking": "walks in the hills", "photography": "takes photos",
    "drawing": "draws birds", "football": "plays football", "tennis": "plays tennis",
    "music": "plays the piano", "woodwork": "carves wood", "poetry": "writes poems",
    "birdwatching": "watches birds", "sewing": "makes clothes", "kites": "flies kites",
}
_FOODS = ("apples", "bread", "cheese", "soup", "rice", "noodles", "fish", "honey", "pears",
          "plums", "beans", "carrots", "potatoes", "dumplings", "pancakes", "cake", "grapes",
          "olives", "nuts", "mushrooms", "eggs", "oranges", "cherries", "tomatoes", "pies",
          "figs", "yogurt", "porridge", "salad", "sausages")


# English words the name generator happened to produce for small seeds (checked against
# the bert-base-uncased vocabulary when the generator was written).
_NOT_NAMES = frozenset({"dates", "indie", "retro", "irish", "prima", "panda", "radar", "sabre",
                        "ligand", "anton"})


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


class _NameMaker:
    """Pronounceable made-up names from syllables; never repeats, never an English word
    of the corpus."""

    ONSETS = ("b", "br", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "kr", "l", "m",
              "n", "p", "pr", "r", "s", "sk", "st", "t", "tr", "v", "z", "sh", "th", "ch", "w")
    VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "a", "ai", "ou", "ei", "y")
    CODAS = ("", "", "", "", "", "", "n", "r", "l", "s", "k", "m", "nd", "rn", "st", "th", "x", "sh")

    def __init__(self, rng: random.Random, forbidden: set):
        self.rng, self.used = rng, set(forbidden)

    def _stem(self, syllables: int) -> str:
        r = self.rng
        parts = [r.choice(self.ONSETS) + r.choice(self.VOWELS) + r.choice(self.CODAS)
                 for _ in range(syllables)]
        if r.random() < 0.2:       # now and then a name starts with a vowel
            parts[0] = parts[0].lstrip("bcdfghjklmnprstvwxz")
        return "".join(parts)

    def make(self, syllables: tuple = (2, 2, 3), suffixes: tuple = ("",)) -> str:
        while True:
            n_syllables, suffix = self.rng.choice(syllables), self.rng.choice(suffixes)
            # at least two syllables and five letters: short one-syllable names are too
            # often English words ("stand", "flour")
            name = self._stem(n_syllables if suffix else max(2, n_syllables)) + suffix
            if (5 <= len(name) <= 10 and not re.search(r"(.)\1\1|ii|uu|yy|[aeiouy]{3}", name)
                    and name not in self.used and name not in _NOT_NAMES):
                self.used.add(name)
                return name


def _words_in_templates() -> set:
    """Every plain English word the generator can write (made-up names must avoid them)."""
    words = set()
    texts = [*_REGIONS, *_PARTS, *_CLIMATES, *_EXPORTS, *_DISHES, *_COLOURS, *_LOCATIONS,
             *_LANDMARKS, *_GOODS, *_SPORTS, *_SIZES, *_ANIMAL_COLOURS, *_COVERS, *_HABITATS,
             *_ANIMAL_FOODS, *_SOUNDS, *_LEGS, *_ACTIVE, *_FOODS, *_HOBBIES, *_HOBBIES.values(),
             *_JOBS, *(a for pair in _JOBS.values() for a in pair)]
    for group in _TEMPLATES.values():
        for t in group:
            texts.append(re.sub(r"\{\w+\}", " ", t))
    for t in texts:
        words.update(re.findall(r"[a-z]+", t))
    return words


@cached
def generate_world(seed: int = 0, *, num_countries: int = 24, towns_per_country: int = 4,
                   num_animals: int = 40, num_people: int = 1200) -> World:
    """Make up a small world: countries, towns, animals and people with fixed facts.

    Deterministic for a given ``seed`` (and cached). The defaults give about 3,000
    different words once :func:`generate_corpus` writes about them.
    """
    check_positive_int("seed", seed, allow_zero=True)
    check_positive_int("num_countries", num_countries)
    check_positive_int("towns_per_country", towns_per_country)
    check_positive_int("num_animals", num_animals)
    check_positive_int("num_people", num_people)
    if num_animals < num_countries:
        raise ValueError(f"num_animals must be >= num_countries (each country has its own "
                         f"national animal), got {num_animals} < {num_countries}")
    if num_people < 2:
        raise ValueError(f"num_people must be >= 2, got {num_people}")
    r = random.Random(seed)
    names = _NameMaker(r, _words_in_templates())

    country_names = [names.make((2, 2, 1), ("ia", "a", "land", "or", "en", "istan", "ary"))
                     for _ in range(num_countries)]
    animal_names = [names.make((2, 2, 3), ("", "", "a", "in", "o")) for _ in range(num_animals)]

    # animals: the first num_countries are the national animals and come from "their" country
    animals = []
    for i, a in enumerate(animal_names):
        origin = country_names[i] if i < num_countries else r.choice(country_names)
        animals.append(Animal(
            name=a, size=r.choice(_SIZES), colour=r.choice(_ANIMAL_COLOURS),
            cover=r.choice(_COVERS), habitat=r.choice(_HABITATS), food=r.choice(_ANIMAL_FOODS),
            sound=r.choice(_SOUNDS), legs=r.choice(_LEGS), active=r.choice(_ACTIVE),
            origin=origin))

    countries, towns = [], []
    for i, cname in enumerate(country_names):
        town_names = [names.make((1, 2, 2), ("", "", "ton", "holm", "vik", "burg", "ford", "dal"))
                      for _ in range(towns_per_country)]
        river = names.make((1, 2))
        mountain = names.make((2, 3))
        c1, c2 = r.sample(_COLOURS, 2)
        country = Country(
            name=cname, region=r.choice(_REGIONS), capital=town_names[0],
            towns=tuple(town_names), language=names.make((1, 2), ("ish", "ese", "ic", "an", "i")),
            currency=names.make((1, 1, 2)), river=river, mountain=mountain,
            climate=r.choice(_CLIMATES), export=r.choice(_EXPORTS), dish=r.choice(_DISHES),
            national_animal=animal_names[i], flag=f"{c1} and {c2}")
        countries.append(country)
        parts = r.sample(_PARTS, len(_PARTS)) * (towns_per_country // len(_PARTS) + 1)
        for j, t in enumerate(town_names):
            loc = (f"on the river {river}" if j == 0 or r.random() < 0.2 else
                   f"near mount {mountain}" if r.random() < 0.2 else r.choice(_LOCATIONS))
            towns.append(Town(
                name=t, country=cname, is_capital=(j == 0), part=parts[j], location=loc,
                landmark=r.choice(_LANDMARKS), market=r.choice(_GOODS), sport=r.choice(_SPORTS)))

    people = []
    jobs, hobbies = list(_JOBS), list(_HOBBIES)
    i = 0
    while i < num_people:
        # about a third of the people come as a brother/sister pair with one last name
        pair = i + 1 < num_people and r.random() < 0.35
        last = names.make((2, 2, 3), ("", "", "", "son", "er", "ova", "ez", "ski"))
        firsts = [names.make((2, 2, 1), ("", "", "a", "o", "ie")) for _ in range(2 if pair else 1)]
        for k, first in enumerate(firsts):
            people.append(Person(
                first=first, last=last, pronoun=r.choice(("she", "he")), job=r.choice(jobs),
                town=r.choice(towns).name, pet=r.choice(animal_names), hobby=r.choice(hobbies),
                food=r.choice(_FOODS), sibling=firsts[1 - k] if pair else None))
        i += len(firsts)

    facts = {}
    for c in countries:
        for rel in ("region", "capital", "language", "currency", "river", "mountain", "climate",
                    "export", "dish", "national_animal", "flag"):
            facts[(c.name, rel)] = getattr(c, rel)
    for t in towns:
        for rel in ("country", "part", "location", "landmark", "market", "sport"):
            facts[(t.name, rel)] = getattr(t, rel)
    for a in animals:
        for rel in ("size", "colour", "cover", "habitat", "food", "sound", "legs", "active", "origin"):
            facts[(a.name, rel)] = getattr(a, rel)
    by_first = {p.first: p for p in people}
    for p in people:
        for rel in ("job", "town", "pet", "hobby", "food"):
            facts[(p.name, rel)] = getattr(p, rel)
        town = next(t for t in towns if t.name == p.town)
        facts[(p.name, "country")] = town.country
        facts[(p.name, "language")] = next(c.language for c in countries if c.name == town.country)
        if p.sibling:
            facts[(p.name, "sibling")] = by_first[p.sibling].name
        facts[(p.name, "activity")], facts[(p.name, "workplace")] = _JOBS[p.job]
        facts[(p.name, "pastime")] = _HOBBIES[p.hobby]
    for job, (activity, workplace) in _JOBS.items():
        facts[(job, "activity")] = activity
        facts[(job, "workplace")] = workplace
    for hobby, doing in _HOBBIES.items():
        facts[(hobby, "doing")] = doing
    return World(seed=seed, countries=tuple(countries), towns=tuple(towns), animals=tuple(animals),
                 people=tuple(people), facts=MappingProxyType(facts))


# ---------------------------------------------------------------------------------------
# Writing about the world
# ---------------------------------------------------------------------------------------

# Templates per relation. "{n}" is the entity's name, "{s}" the subject (the name or a
# pronoun), "{p}" the possessive ("its", "her", "his"), "{m}" the object pronoun ("it",
# "her", "him"), "{o}" the value. Keys ending in ":n" name the entity, ":p" use pronouns.
_TEMPLATES = {
    # countries
    "capital:n": ("the capital of {n} is {o}.", "{o} is the capital of {n}.",
                  "the capital city of {n} is {o}.", "{n} is governed from its capital, {o}."),
    "capital:p": ("its capital is {o}.", "{o} is its capital.", "its capital city is {o}.",
                  "the capital is {o}.", "the government sits in {o}, the capital."),
    "language:n": ("people in {n} speak {o}.", "the language of {n} is {o}.",
                   "{o} is spoken in {n}.", "in {n} most people speak {o}."),
    "language:p": ("its people speak {o}.", "the people there speak {o}.", "its language is {o}.",
                   "{o} is the language spoken there.", "most people there speak {o}."),
    "currency:n": ("the currency of {n} is the {o}.", "in {n} people pay with the {o}.",
                   "{n} uses the {o} as its money."),
    "currency:p": ("its currency is the {o}.", "people there pay with the {o}.",
                   "it uses the {o} as its money.", "the money there is called the {o}."),
    "river:n": ("the longest river in {n} is the {o}.", "the river {o} flows through {n}.",
                "{n} is crossed by the river {o}."),
    "river:p": ("its longest river is the {o}.", "the river {o} flows through it.",
                "the longest river there is the {o}."),
    "mountain:n": ("the highest mountain in {n} is mount {o}.",
                   "mount {o} is the highest mountain in {n}."),
    "mountain:p": ("its highest mountain is mount {o}.", "mount {o} is the highest peak there.",
                   "the highest mountain there is mount {o}."),
    "climate:n": ("the weather in {n} is usually {o}.", "{n} has a {o} climate."),
    "climate:p": ("its climate is {o}.", "the weather there is usually {o}.", "it has a {o} climate."),
    "export:n": ("the main export of {n} is {o}.", "{n} sells a lot of {o} to other countries."),
    "export:p": ("its main export is {o}.", "it is famous for its {o}.",
                 "it sells a lot of {o} to its neighbours."),
    "dish:n": ("the national dish of {n} is {o}.", "people in {n} love to eat {o}."),
    "dish:p": ("its national dish is {o}.", "people there love to eat {o}.",
               "the most popular food there is {o}."),
    "national_animal:n": ("the national animal of {n} is the {o}.",
                          "the {o} is the national animal of {n}."),
    "national_animal:p": ("its national animal is the {o}.", "the {o} is its national animal."),
    "flag:n": ("the flag of {n} is {o}.", "the colours of {n} are {o}."),
    "flag:p": ("its flag is {o}.", "its colours are {o}.", "the flag there is {o}."),
    "country_intro": ("{n} is a country in the {o}.", "{n} lies in the {o} of the continent.",
                      "let us talk about {n}, a country in the {o}.",
                      "{n} is a country in the {o} of the continent."),
    "country_filler": ("many tourists visit it every summer.", "it is a peaceful country.",
                       "its roads are long and quiet.", "it has many small villages."),
    # towns
    "town_intro": ("{n} is a town in {o}.", "the town of {n} is in {o}.", "{n} is a small town in {o}.",
                   "let us visit {n}, a town in {o}."),
    "capital_intro": ("{n} is the capital of {o}.", "{n} is the capital city of {o}.",
                      "the city of {n} is the capital of {o}."),
    "part:n": ("{n} lies in the {o} of the country.", "{n} is in the {o} of the country."),
    "part:p": ("it lies in the {o} of the country.", "it is in the {o} of the country."),
    "location:n": ("{n} lies {o}.", "the town of {n} is {o}."),
    "location:p": ("it lies {o}.", "the town is {o}.", "it was built {o}."),
    "landmark:n": ("{n} is famous for {o}.", "visitors to {n} come to see {o}."),
    "landmark:p": ("it is famous for {o}.", "visitors come to see {o}.",
                   "in the middle of the town there is {o}."),
    "market:n": ("the market in {n} sells {o}.", "people go to {n} to buy {o}."),
    "market:p": ("its market sells {o}.", "at the market you can buy {o}.",
                 "people come there to buy {o}."),
    "sport:n": ("the favourite sport in {n} is {o}.", "people in {n} love {o}."),
    "sport:p": ("people there love {o}.", "the local team plays {o}.",
                "{o} is the most popular sport there."),
    "town_filler": ("the streets are narrow and old.", "many families live there.",
                    "it is busy on market days.", "it is quiet in the winter."),
    # animals
    "animal_intro": ("the {n} is a {o} animal.", "let us learn about the {n}, a {o} animal.",
                     "the {n} is a {o} creature."),
    "size:n": ("the {n} is a {o} animal.",),
    "size:p": ("it is quite {o}.", "it is a {o} creature."),
    "colour:n": ("the {n} is {o}.",),
    "colour:p": ("it is {o}.", "its colour is {o}."),
    "cover:n": ("the {n} has {o}.", "the body of the {n} is covered in {o}."),
    "cover:p": ("it has {o}.", "its body is covered in {o}."),
    "habitat:n": ("the {n} lives in the {o}.", "you can find the {n} in the {o}."),
    "habitat:p": ("it lives in the {o}.", "its home is the {o}.", "you can find it in the {o}."),
    "food:n": ("the {n} eats {o}.", "the favourite food of the {n} is {o}."),
    "food:p": ("it eats {o}.", "its favourite food is {o}.", "it feeds on {o}."),
    "sound:n": ("the {n} {o}.", "when it is happy, the {n} {o}."),
    "sound:p": ("it {o} when it is happy.", "when it is afraid, it {o}.", "it {o} loudly."),
    "legs:n": ("the {n} has {o} legs.",),
    "legs:p": ("it has {o} legs.", "it walks on {o} legs."),
    "active:n": ("the {n} is active {o}.", "the {n} looks for food {o}."),
    "active:p": ("it is active {o}.", "it looks for food {o}.", "it is usually awake {o}."),
    "origin:n": ("the {n} comes from {o}.", "the {n} is common in {o}."),
    "origin:p": ("it comes from {o}.", "it is common in {o}.", "you can see it in {o}."),
    "animal_filler": ("it is not dangerous to people.", "it is hard to find.",
                      "children like to watch it.", "it lives for many years."),
    # people ({o2} is "a"/"an" + the value where needed)
    "person_intro": ("{n} is {o2} from {t}.", "meet {n}, {o2} from {t}.",
                     "this is {n}, who works as {o2} in {t}.", "{n} lives in {t} and works as {o2}."),
    "job:n": ("{n} works as {o2}.", "{n} is {o2}."),
    "job:p": ("{s} works as {o2}.", "{s} is {o2}.", "{s} earns a living as {o2}.",
              "by trade {s} is {o2}."),
    "activity:p": ("every day {s} {o}.", "at work {s} {o}.", "{s} {o} for a living."),
    "workplace:p": ("{s} works at {o}.", "{p} workplace is {o}.", "every morning {s} goes to {o}."),
    "town:p": ("{s} lives in {o}.", "{p} home is in {o}.", "{s} has a house in {o}.",
               "{s} grew up in {o}."),
    "country:p": ("{s} lives in {o}.", "{p} country is {o}."),
    "language:person": ("{s} speaks {o}.", "{p} mother tongue is {o}."),
    "pet:p": ("{s} has a pet {o}.", "{s} keeps {o2} at home.", "{p} pet is {o2}."),
    "hobby:p": ("{s} likes {o}.", "{p} hobby is {o}.", "{s} enjoys {o}.",
                "in {p} free time {s} enjoys {o}."),
    "food:person": ("{p} favourite food is {o}.", "{s} loves {o}.", "{s} eats {o} every week."),
    "sibling:p": ("{s} has {o2} called {o}.", "{p} {o3} is {o}.", "{s} and {p} {o3} {o} are close."),
    "person_filler": ("{s} is a kind person.", "everyone in the town knows {m}.",
                      "{s} is always busy.", "{s} has many friends."),
    # a person's day, always in this order
    "day_intro": ("this is a normal day for {n}.", "here is how {n} spends a day.",
                  "let us follow {n} through a day."),
    "day_morning": ("in the morning {s} wakes up early.", "{s} gets up at dawn."),
    "day_work": ("then {s} goes to {o}.", "after breakfast {s} walks to {o}."),
    "day_activity": ("there {s} {o}.", "all morning {s} {o}."),
    "day_noon": ("at noon {s} eats {o}.", "for lunch {s} has {o}."),
    "day_evening": ("in the evening {s} {o}.", "after work {s} {o}."),
    "day_pet": ("before bed {s} feeds {p} {o}.", "late at night {s} walks {p} {o}."),
    "day_night": ("at night {s} goes to sleep.", "then {s} goes to bed."),
    # chains: a sentence that builds on the one before it
    "chain_capital": ("{o} lies {l}.", "{o} is famous for {l2}.", "the market in {o} sells {l3}."),
    "chain_animal": ("the {o} lives in the {l}.", "the {o} eats {l2}.", "the {o} {l3}."),
    "chain_town": ("{o} is a town in {l}.", "{o} is in {l}."),
}


@dataclass(frozen=True)
class ParagraphInfo:
    """What a paragraph is about: ``kind`` ("country", "town", "animal", "person"), the
    ``entity`` (name; a person's full name) and the facts of each sentence (one tuple
    per sentence, empty for sentences that state no fact)."""
    kind: str
    entity: str
    facts: tuple


@dataclass(frozen=True)
class Corpus:
    """The generated corpus. ``train`` and ``held_out`` are tuples of paragraphs, a
    paragraph a tuple of sentence strings (tuples, not lists, because the object is
    cached and shared: copy with ``list(...)`` before changing anything).
    ``train_info[i]`` / ``held_out_info[i]`` describe paragraph ``i`` of each split."""
    train: tuple
    held_out: tuple
    train_info: tuple = field(repr=False)
    held_out_info: tuple = field(repr=False)
    world: World = field(repr=False)

    def split(self, name: str) -> tuple:
        """``"train"`` or ``"held_out"`` -> the paragraphs of that split."""
        if name not in ("train", "held_out"):
            raise ValueError(f"split must be 'train' or 'held_out', got {name!r}")
        return self.train if name == "train" else self.held_out

    def sentences(self, split: str = "train") -> list:
        """All sentences of a split, paragraph after paragraph."""
        return [s for par in self.split(split) for s in par]

    def words(self, split: str = "train") -> dict:
        """Word counts (words and punctuation split as ``str.split`` plus a separate ``.``/``,``)."""
        counts: dict = {}
        for s in self.sentences(split):
            for w in re.findall(r"[a-z]+|[.,]", s):
                counts[w] = counts.get(w, 0) + 1
        return counts

    def __repr__(self) -> str:
        n_tr, n_ho = sum(map(len, self.train)), sum(map(len, self.held_out))
        return (f"Corpus(seed={self.world.seed}, train={len(self.train)} paragraphs / {n_tr} "
                f"sentences, held_out={len(self.held_out)} paragraphs / {n_ho} sentences)")


class _Writer:
    """Writes paragraphs about one world with one random generator."""

    def __init__(self, world: World, rng: random.Random):
        self.w, self.r = world, rng
        self.towns = {t.name: t for t in world.towns}
        self.animals = {a.name: a for a in world.animals}
        self.countries = {c.name: c for c in world.countries}
        self.people = {p.first: p for p in world.people}

    def pick(self, key: str, **slots) -> str:
        return self.r.choice(_TEMPLATES[key]).format(**slots)

    def fact_sentence(self, rel: str, subject: str, value: str, named: bool, **slots):
        """One sentence stating (subject, rel, value), naming the entity or with a pronoun."""
        key = f"{rel}:{'n' if named else 'p'}"
        if key not in _TEMPLATES:          # some relations only have one form
            key = f"{rel}:{'p' if named else 'n'}"
        return self.pick(key, o=value, **slots), (Fact(subject, rel, value),)

    def paragraph(self, intro, items, k: int, weights=None, pronoun_share: float = 0.7):
        """Intro sentence, then ``k - 1`` of ``items`` in random order, each item a function
        ``named -> list of (sentence, facts)`` (a fact and maybe a chained follow-up).

        ``weights`` make some items likelier to be chosen (sampling without replacement,
        each item ranked by ``u ** (1 / weight)`` for a uniform ``u``)."""
        out = [intro]
        weights = weights or [1] * len(items)
        keys = [self.r.random() ** (1 / w) for w in weights]
        order = sorted(range(len(items)), key=lambda i: -keys[i])
        for i in order[:k - 1]:
            item = items[i]
            out.extend(item(self.r.random() >= pronoun_share))
        return out[:k]

    # -- countries ----------------------------------------------------------------------
    def country(self, c: Country):
        n = c.name
        intro = (self.pick("country_intro", n=n, o=c.region), (Fact(n, "region", c.region),))
        cap = self.towns[c.capital]
        animal = self.animals[c.national_animal]

        def simple(rel):
            return lambda named: [self.fact_sentence(rel, n, getattr(c, rel), named, n=n)]

        def capital(named):
            first = self.fact_sentence("capital", n, c.capital, named, n=n)
            if self.r.random() < 0.5:
                return [first]
            which = self.r.randrange(3)
            rel, val = [("location", cap.location), ("landmark", cap.landmark),
                        ("market", cap.market)][which]
            text = _TEMPLATES["chain_capital"][which].format(o=cap.name, l=val, l2=val, l3=val)
            return [first, (text, (Fact(cap.name, rel, val),))]

        def national_animal(named):
            first = self.fact_sentence("national_animal", n, c.national_animal, named, n=n)
            if self.r.random() < 0.5:
                return [first]
            which = self.r.randrange(3)
            rel, val = [("habitat", animal.habitat), ("food", animal.food),
                        ("sound", animal.sound)][which]
            text = _TEMPLATES["chain_animal"][which].format(o=animal.name, l=val, l2=val, l3=val)
            return [first, (text, (Fact(animal.name, rel, val),))]

        def filler(named):
            return [(self.pick("country_filler"), ())]

        items = [capital, simple("language"), simple("currency"), simple("river"),
                 simple("mountain"), simple("climate"), simple("export"), simple("dish"),
                 national_animal, simple("flag"), filler]
        # the capital, language and currency are the facts chapter 7 asks about: say them often
        weights = [4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1]
        return self.paragraph(intro, items, self.r.randint(4, 8), weights)

    # -- towns --------------------------------------------------------------------------
    def town(self, t: Town):
        n = t.name
        key = "capital_intro" if t.is_capital else "town_intro"
        facts = (Fact(t.country, "capital", n),) if t.is_capital else (Fact(n, "country", t.country),)
        intro = (self.pick(key, n=n, o=t.country), facts)

        def simple(rel):
            return lambda named: [self.fact_sentence(rel, n, getattr(t, rel), named, n=n)]

        def filler(named):
            return [(self.pick("town_filler"), ())]

        items = [simple("part"), simple("location"), simple("landmark"), simple("market"),
                 simple("sport"), filler, filler]
        return self.paragraph(intro, items, self.r.randint(4, 7))

    # -- animals ------------------------------------------------------------------------
    def animal(self, a: Animal):
        n = a.name
        intro = (self.pick("animal_intro", n=n, o=a.size), (Fact(n, "size", a.size),))

        def simple(rel):
            return lambda named: [self.fact_sentence(rel, n, getattr(a, rel), named, n=n)]

        def filler(named):
            return [(self.pick("animal_filler"), ())]

        items = [simple(rel) for rel in ("colour", "cover", "habitat", "food", "sound", "legs",
                                         "active", "origin")] + [filler]
        return self.paragraph(intro, items, self.r.randint(4, 8))

    # -- people -------------------------------------------------------------------------
    def _person_slots(self, p: Person, named: bool) -> dict:
        pos = "her" if p.pronoun == "she" else "his"
        return dict(n=p.first, s=p.first if named else p.pronoun, p=pos,
                    m="her" if p.pronoun == "she" else "him")

    def person(self, p: Person):
        if self.r.random() < 0.3:
            return self.person_day(p)
        full = p.name
        job_a = f"{_article(p.job)} {p.job}"
        intro_key = self.r.randrange(len(_TEMPLATES["person_intro"]))
        intro = (_TEMPLATES["person_intro"][intro_key].format(n=full, o2=job_a, t=p.town),
                 (Fact(full, "job", p.job), Fact(full, "town", p.town)))
        town = self.towns[p.town]
        pet = self.animals[p.pet]
        activity, workplace = _JOBS[p.job]

        def say(key, fact, named, **extra):
            s = self._person_slots(p, named)
            return (self.pick(key, **s, **extra), fact)

        def job(named):
            key = "job:n" if named else "job:p"
            return [say(key, (Fact(full, "job", p.job),), named, o2=job_a)]

        def activity_(named):
            return [say("activity:p", (Fact(full, "activity", activity),
                                        Fact(p.job, "activity", activity)), named, o=activity)]

        def workplace_(named):
            return [say("workplace:p", (Fact(full, "workplace", workplace),
                                         Fact(p.job, "workplace", workplace)), named, o=workplace)]

        def home(named):
            first = say("town:p", (Fact(full, "town", p.town),), named, o=p.town)
            if self.r.random() < 0.5:
                return [first]
            text = self.pick("chain_town", o=p.town, l=town.country)
            return [first, (text, (Fact(p.town, "country", town.country),))]

        def country(named):
            return [say("country:p", (Fact(full, "country", town.country),), named, o=town.country)]

        def language(named):
            lang = self.countries[town.country].language
            return [say("language:person", (Fact(full, "language", lang),), named, o=lang)]

        def pet_(named):
            first = say("pet:p", (Fact(full, "pet", p.pet),), named, o=p.pet,
                        o2=f"{_article(p.pet)} {p.pet}")
            if self.r.random() < 0.5:
                return [first]
            which = self.r.randrange(3)
            rel, val = [("habitat", pet.habitat), ("food", pet.food), ("sound", pet.sound)][which]
            text = _TEMPLATES["chain_animal"][which].format(o=pet.name, l=val, l2=val, l3=val)
            return [first, (text, (Fact(pet.name, rel, val),))]

        def hobby(named):
            return [say("hobby:p", (Fact(full, "hobby", p.hobby),), named, o=p.hobby)]

        def food(named):
            return [say("food:person", (Fact(full, "food", p.food),), named, o=p.food)]

        def sibling(named):
            sib = self.people[p.sibling]
            word = "sister" if sib.pronoun == "she" else "brother"
            return [say("sibling:p", (Fact(full, "sibling", sib.name),), named, o=sib.name,
                        o2=f"a {word}", o3=word)]

        def filler(named):
            return [say("person_filler", (), named)]

        items = [job, activity_, workplace_, home, country, language, pet_, hobby, food, filler]
        if p.sibling:
            items.append(sibling)
        return self.paragraph(intro, items, self.r.randint(4, 8))

    def person_day(self, p: Person):
        """A day from morning to night: the order of the sentences is the story."""
        full = p.name
        activity, workplace = _JOBS[p.job]
        steps = [("day_morning", None, ()),
                 ("day_work", workplace, (Fact(full, "workplace", workplace),
                                          Fact(p.job, "workplace", workplace))),
                 ("day_activity", activity, (Fact(full, "activity", activity),
                                             Fact(p.job, "activity", activity))),
                 ("day_noon", p.food, (Fact(full, "food", p.food),)),
                 ("day_evening", _HOBBIES[p.hobby], (Fact(full, "pastime", _HOBBIES[p.hobby]),
                                                     Fact(p.hobby, "doing", _HOBBIES[p.hobby]))),
                 ("day_pet", p.pet, (Fact(full, "pet", p.pet),)),
                 ("day_night", None, ())]
        k = self.r.randint(4, 8) - 1          # sentences after the intro
        keep = sorted(self.r.sample(range(len(steps)), min(k, len(steps))))
        out = [(self.pick("day_intro", n=full), ())]
        for i in keep:
            key, value, facts = steps[i]
            named = self.r.random() < 0.2
            out.append((self.pick(key, o=value, **self._person_slots(p, named)), facts))
        return out


@cached
def generate_corpus(seed: int = 0, *, paragraphs_per_country: int = 40,
                    paragraphs_per_town: int = 6, paragraphs_per_animal: int = 20,
                    paragraphs_per_person: int = 3, held_out_fraction: float = 0.05) -> Corpus:
    """Write the small world's corpus (about 36,000 sentences with the defaults).

    Deterministic for a given ``seed`` and cached. Returns a :class:`Corpus` with
    ``.train``, ``.held_out`` (paragraphs, each a tuple of lower-case sentences) and
    ``.world``. See the module docstring for what is in it and how the held-out split is
    chosen.
    """
    for name, value in (("paragraphs_per_country", paragraphs_per_country),
                        ("paragraphs_per_town", paragraphs_per_town),
                        ("paragraphs_per_animal", paragraphs_per_animal),
                        ("paragraphs_per_person", paragraphs_per_person)):
        check_positive_int(name, value, allow_zero=True)
    if isinstance(held_out_fraction, bool) or not isinstance(held_out_fraction, (int, float)):
        raise TypeError(f"held_out_fraction must be a float in [0, 0.5], "
                        f"got {type(held_out_fraction).__name__}")
    if not 0.0 <= held_out_fraction <= 0.5:
        raise ValueError(f"held_out_fraction must be in [0, 0.5], got {held_out_fraction}")
    world = generate_world(seed)
    # a separate stream for the text, so that changing a template does not change the world
    writer = _Writer(world, random.Random(f"corpus-{seed}"))
    items = []
    for c in world.countries:
        items += [("country", c.name, writer.country(c)) for _ in range(paragraphs_per_country)]
    for t in world.towns:
        items += [("town", t.name, writer.town(t)) for _ in range(paragraphs_per_town)]
    for a in world.animals:
        items += [("animal", a.name, writer.animal(a)) for _ in range(paragraphs_per_animal)]
    for p in world.people:
        items += [("person", p.name, writer.person(p)) for _ in range(paragraphs_per_person)]

    # drop exact duplicate paragraphs (possible for short ones), keep the first
    seen, unique = set(), []
    for kind, entity, sents in items:
        text = tuple(s for s, _ in sents)
        if text not in seen:
            seen.add(text)
            unique.append((kind, entity, sents))
    writer.r.shuffle(unique)

    n_candidates = round(held_out_fraction * len(unique))
    candidates, rest = unique[:n_candidates], unique[n_candidates:]
    train_facts = {f for _, _, sents in rest for _, facts in sents for f in facts}
    held, train = [], list(rest)
    for item in candidates:
        facts = {f for _, fs in item[2] for f in fs}
        (held if facts <= train_facts else train).append(item)

    def pack(group):
        texts = tuple(tuple(s for s, _ in sents) for _, _, sents in group)
        infos = tuple(ParagraphInfo(kind, entity, tuple(fs for _, fs in sents))
                      for kind, entity, sents in group)
        return texts, infos

    train_text, train_info = pack(train)
    held_text, held_info = pack(held)
    return Corpus(train=train_text, held_out=held_text, train_info=train_info,
                  held_out_info=held_info, world=world)


@dataclass(frozen=True)
class ClozeItem:
    """A fill-in-the-blank question: ``masked`` is ``sentence`` with the one-word
    ``answer`` replaced by ``[MASK]``; the answer is ``fact.value``."""
    sentence: str
    masked: str
    answer: str
    fact: Fact


def cloze_items(corpus: Corpus, split: str = "held_out", *, relations=None,
                exclude_seen: bool = True) -> list:
    """Fill-in-the-blank questions from the facts of a split.

    One item per sentence fact whose value is a single word that occurs exactly once in
    the sentence. ``relations`` keeps only those relations (e.g. ``{"capital"}``);
    ``exclude_seen`` drops sentences that also occur verbatim in the training split, so
    the answer must come from knowing the fact, not from remembering the sentence.
    """
    if not isinstance(corpus, Corpus):
        raise TypeError(f"corpus must be a Corpus (from generate_corpus()), got {type(corpus).__name__}")
    check_bool("exclude_seen", exclude_seen)
    if relations is not None:
        if (not isinstance(relations, (set, frozenset, list, tuple))
                or not all(isinstance(r, str) for r in relations)):
            raise TypeError(f"relations must be None or a set of relation names such as {{'capital'}}, "
                            f"got {type(relations).__name__} ({relations!r})")
        relations = set(relations)
    paragraphs, infos = ((corpus.train, corpus.train_info) if split == "train" else
                         (corpus.split(split), corpus.held_out_info))
    seen = {s for par in corpus.train for s in par} if (exclude_seen and split != "train") else set()
    out = []
    for par, info in zip(paragraphs, infos):
        for sentence, facts in zip(par, info.facts):
            if sentence in seen:
                continue
            for f in facts:
                if relations is not None and f.relation not in relations:
                    continue
                words = re.findall(r"[a-z]+", sentence)
                if " " in f.value or words.count(f.value) != 1:
                    continue
                masked = re.sub(rf"\b{re.escape(f.value)}\b", "[MASK]", sentence)
                out.append(ClozeItem(sentence, masked, f.value, f))
    return out
