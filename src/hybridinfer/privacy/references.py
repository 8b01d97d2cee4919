"""Which of the NER model's names and places are personal data, and which refer to no one.

The model tags every proper name: "Explain Einstein's theory", "Dijkstra's algorithm", "the
economies of Japan and Germany" all held a "person" or a "place", and each kept a hard question
in the private zone. Of the spans it tags, these are public references, not findings:

- **eponyms**: a name followed (after its possessive) by the idea named after it — a theorem,
  a law, an equation, an algorithm, an effect (``EPONYM_HEADS``, the head noun of the words
  after it): "Ohm's law" is the law, "Markov chain" the chain. The head must be one of these
  words: "Jane's phone number", "Jane's law firm" keep "Jane", and so does "Newton's method"
  (a person's own method is too common a phrase);
- **countries, continents, states, seas and mountains**: a place that WordNet 3.0 names as an
  instance of one (``PUBLIC_PLACES``) and never as a city, town or other settlement
  (``SETTLEMENTS``): "Japan", "Texas", "the Atlantic Ocean" identify no one; "Kyoto", "Berlin",
  a street, an unknown name stay findings. Without WordNet (the ``answers`` extra) every place
  stays one.

Both tests read the span's proper nouns ("Explain Einstein's" is tested as "Einstein"); a span
that stays a finding is kept whole, as the model gave it (a first name the tagger took for a
verb, "Rob Smith", stays inside it). The limit, stated: a name before one of these nouns is
taken for an eponym, a private one too ("my sister Ann's theory" may leave the private zone).
"""

from __future__ import annotations

from typing import Any

from hybridinfer.lexicon.wordnet import wordnet
from hybridinfer.privacy.findings import Finding

EPONYM_HEADS = frozenset(
    {
        "algorithm", "approximation", "chain", "coefficient", "complexity", "conjecture",
        "constant", "criterion", "curve", "distribution", "effect", "entropy", "equation",
        "equilibrium", "estimator", "formula", "hypothesis", "inequality", "integral", "law",
        "lemma", "manifold", "operator", "paradox", "polynomial", "principle", "razor",
        "series", "sieve", "spiral", "theorem", "theory", "transform", "transformation",
        "triangle",
    }
)  # fmt: skip
"""Nouns that, after a name, name an idea after a person. Words a person's own things are
often called by (method, problem, number, model, code, test, machine) are left out."""
PUBLIC_PLACES = frozenset(
    {"country", "continent", "empire", "state", "geological_formation", "body_of_water"}
)
"""WordNet classes of places that identify no one (``state``: Texas, Bavaria, Ontario)."""
SETTLEMENTS = frozenset(
    {"city", "town", "municipality", "village", "urban_area", "port", "neighborhood"}
)
"""WordNet classes of places a person's address narrows to: a place also named so stays."""
_POSSESSIVE = frozenset({"'s", "'", "\u2019s", "\u2019"})
_COMPOUND = frozenset({"ADJ", "NOUN", "PROPN"})


def personal(doc: Any, spans: list[tuple[str, int, int]], text: str) -> list[Finding]:
    """The ``(kind, start, end)`` spans of ``text`` (tokenised and tagged in ``doc``) that hold
    a proper noun and are personal data, in order."""
    found = []
    for kind, start, end in spans:
        words = doc.char_span(start, end, alignment_mode="expand")
        proper = [token for token in words or () if token.pos_ == "PROPN"]
        if not proper:
            continue  # it tags a sentence's first verb, "Summarise", a person
        first, last = proper[0], proper[-1]
        name = text[first.idx : last.idx + len(last.text)]
        if names_an_idea(doc, last.i) or (kind == "PLACE" and public_place(name)):
            continue
        found.append(Finding(kind, start, end, text[start:end], "ner"))
    return sorted(found, key=lambda finding: finding.start)


def names_an_idea(doc: Any, last: int) -> bool:
    """Whether the words after token ``last`` make the name an eponym: past a possessive or a
    hyphenated second name ("Euler-Lagrange"), a run of adjectives and nouns whose last noun
    is one of ``EPONYM_HEADS``."""
    head = None
    for token in doc[last + 1 : last + 6]:
        if token.text in _POSSESSIVE or token.text == "-":
            if head is not None:
                break
            continue
        if token.pos_ not in _COMPOUND or not token.is_alpha:
            break
        if token.pos_ == "NOUN":
            head = token.text.lower()
    if head is None:
        return False
    return head in EPONYM_HEADS or (head.endswith("s") and head[:-1] in EPONYM_HEADS)


def public_place(name: str) -> bool:
    """Whether WordNet names ``name`` (a leading "the" dropped) as a country, continent, state,
    sea or mountain and never as a settlement; False without WordNet."""
    lexicon = wordnet()
    if lexicon is None:
        return False
    words = name.split()
    if words and words[0].lower() == "the":
        words = words[1:]
    senses = lexicon.instance_classes(" ".join(words))
    return any(s & PUBLIC_PLACES for s in senses) and not any(s & SETTLEMENTS for s in senses)
