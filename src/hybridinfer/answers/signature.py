"""What a semantic hit must match exactly: a prompt's numbers, negation and names.

Sentence embeddings place "What is 2 + 2?" and "What is 2 + 3?" almost on top of each other
(MiniLM cosine ~0.97), and "Is Paris in France?" near "Is Paris not in France?". Cosine alone
cannot separate such near misses from paraphrases, so a semantic hit also needs the same
signature: the multiset of numbers (digits and number words), whether the prompt negates, and
the set of names (capitalised words, sentence openers and common words aside). It is a cheap
lexical guard, not a parser: a paraphrase that renames an entity ("the US" / "America") misses,
which costs a model call, never a wrong answer.
"""

from __future__ import annotations

import re

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
OPERATOR = re.compile(r"(?<=[\d\s])[-+*/^=<>%\u00d7\u00f7](?=[\s\d])")
_SMALL = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
NUMBER_WORDS = {word: str(value) for value, word in enumerate(_SMALL.split())} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "hundred": "100",
    "thousand": "1000",
}
_NEGATIONS = (
    "not no never none nobody nothing neither nor without cannot isn't aren't wasn't "
    "weren't don't doesn't didn't won't wouldn't can't couldn't shouldn't hasn't haven't hadn't"
)
NEGATIONS = frozenset(_NEGATIONS.split())
_OPENERS = (
    "what who whom whose where when why how which is are was were can could would should "
    "shall will do does did tell give please explain describe list name define summarise "
    "summarize i i'm i'd i've me my we our you your the a an in on of for to and or but if "
    "it its this that these those there here hi hello hey write show find compare "
    "translate calculate compute say help suggest recommend"
)
OPENERS = frozenset(_OPENERS.split())
CLITIC = re.compile(r"'(?:s|re|ll|d|ve|m)$")


def _words(text: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in WORD.findall(text)]


def names_of(text: str) -> set[str]:
    """Capitalised words that are not sentence openers or common words, lowercased, without
    a clitic (so "France's" and "France" are one name, "What's" an opener)."""
    found: set[str] = set()
    for word in _words(text):
        lowered = word.lower()
        base = CLITIC.sub("", lowered)
        if word[0].isupper() and base not in OPENERS and lowered not in NEGATIONS:
            found.add(base)
    return found


def signature(text: str) -> tuple[str, ...]:
    """The prompt's numbers (sorted, as digits), ``neg`` if it negates, operators, names."""
    words = [word.lower() for word in _words(text)]
    numbers = [n.replace(",", "") for n in NUMBER.findall(text)]
    numbers += [NUMBER_WORDS[word] for word in words if word in NUMBER_WORDS]
    parts = [f"#{number}" for number in sorted(numbers)]
    if any(word in NEGATIONS or word.endswith("n't") for word in words):
        parts.append("neg")
    parts += [f"op{symbol}" for symbol in sorted(set(OPERATOR.findall(text)))]
    parts += [f"@{name}" for name in sorted(names_of(text))]
    return tuple(parts)
