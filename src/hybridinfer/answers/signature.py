"""What a semantic hit must match exactly: a prompt's numbers, negation, names, marked words.

Sentence embeddings put near misses close together: MiniLM gives "What is 2 + 2?" and "What is
2 + 3?" a cosine of 0.89, "Is Paris the capital of France?" and "Is Paris not the capital of
France?" 0.95, "Convert Celsius to Fahrenheit" and its reverse 0.99, above most paraphrases.
Cosine alone cannot separate them (``bench/answercache.py``), so a semantic hit also needs the
two prompts' signatures to agree: the same numbers (digits and number words), negation,
operators, names (capitalised words, openers aside) and marked words of opposite pairs, in
order, and no word of one that is the other's with a reversing prefix. It is a lexical guard,
not a parser: a paraphrase that renames an entity ("the US" / "America") misses, which costs
a model call; so does a paraphrase that reorders the content words both prompts share, which
is how a swapped pair ("dollars to euros" / "euros to dollars") is told apart. An attribute
swap it has no word for ("deepest" / "largest") passes it and leans on the threshold alone.
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
    "translate calculate compute say help suggest recommend compose at"
)
OPENERS = frozenset(_OPENERS.split())
_MARKED = (
    "less fewer fewest least little after last later previous second third below under lower "
    "lowest smaller smallest shorter shortest cold colder coldest cool slow slower slowest "
    "harder hardest difficult bad worse worst expensive weak young old heavy shallow poor "
    "decrease lose loss stop end close sell pull remove disable export receive hate cons "
    "disadvantages risks negative false rarely female south west bottom night winter autumn "
    "antonym minimum min minus exhale exit leave download"
)
_BASE_MARKED = frozenset(_MARKED.split())


def _graded(word: str) -> set[str]:
    """A marked adjective's comparative and superlative ("weak" → "weaker", "weakest")."""
    stem = word[:-1] + "i" if word.endswith("y") else word
    return {stem + "er", stem + "est"} if len(word) <= 7 else set()


MARKED = _BASE_MARKED | frozenset(
    graded for word in _BASE_MARKED if not word.endswith(("er", "est")) for graded in _graded(word)
)
CLITIC = re.compile(r"'(?:s|re|ll|d|ve|m)$")
"""The marked member of common opposite pairs ("slower" of faster/slower, "cons" of
pros/cons): swapping one for its opposite keeps a sentence's embedding and flips its answer,
so a semantic hit needs the same marked words in the same order. Only the marked member is
listed: the unmarked one ("fast", "many", "best") is common in paraphrases, and a swap is
still seen from the marked side."""
CONTENT_MIN = 3
"""Shorter words carry no order worth checking ("to", "in")."""
REVERSAL = ("un", "dis", "de", "non", "anti", "en", "in", "im", "ex")
"""Prefixes that reverse a word ("unzip" / "zip", "include" / "exclude"). Two prompts are
compared word against word, so "define" clashes only with a prompt that says "fine"."""


def _words(text: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in WORD.findall(text)]


def names_of(text: str) -> list[str]:
    """Capitalised words that are not sentence openers or common words, lowercased, without
    a clitic (so "France's" and "France" are one name, "What's" an opener)."""
    found: dict[str, None] = {}
    for word in _words(text):
        lowered = word.lower()
        base = CLITIC.sub("", lowered)
        if word[0].isupper() and base not in OPENERS and lowered not in NEGATIONS:
            found[base] = None
    return list(found)


def signature(text: str) -> tuple[str, ...]:
    """What ``agree`` compares: the prompt's numbers (sorted, as digits), ``neg`` if it
    negates, its operators, its names and marked words in order ("Celsius to Fahrenheit" is not
    "Fahrenheit to Celsius"), then its distinct words (``w:``) for the reversal check."""
    words = [word.lower() for word in _words(text)]
    numbers = [n.replace(",", "") for n in NUMBER.findall(text)]
    numbers += [NUMBER_WORDS[word] for word in words if word in NUMBER_WORDS]
    parts = [f"#{number}" for number in sorted(numbers)]
    if any(word in NEGATIONS or word.endswith("n't") for word in words):
        parts.append("neg")
    parts += [f"op{symbol}" for symbol in sorted(set(OPERATOR.findall(text)))]
    parts += [f"@{name}" for name in names_of(text)]
    parts += [f"~{word}" for word in words if word in MARKED]
    parts += [f"w:{word}" for word in sorted(set(words))]
    content = [w for w in words if len(w) >= CONTENT_MIN and w not in OPENERS]
    parts += [f"s:{word}" for word in dict.fromkeys(content)]
    return tuple(parts)


def _roots(word: str) -> set[str]:
    return {word} | {
        word[len(p) :] for p in REVERSAL if word.startswith(p) and len(word) > len(p) + 2
    }


def _same_order(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Whether the content words both prompts use come in the same order: "dollars to euros"
    is not "euros to dollars" (a paraphrase that reorders them misses: a model call, not a
    wrong answer)."""
    mine = [p for p in first if p.startswith("s:")]
    theirs = [p for p in second if p.startswith("s:")]
    shared = set(mine) & set(theirs)
    return [p for p in mine if p in shared] == [p for p in theirs if p in shared]


def agree(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Whether two prompts' signatures allow one's answer to serve the other: the same
    numbers, negation, operators, names and marked words, and no two different words of the
    two that share a root once a reversing prefix is taken off ("zip" / "unzip",
    "encrypt" / "decrypt")."""
    strict = [[p for p in side if not p.startswith(("w:", "s:"))] for side in (first, second)]
    if strict[0] != strict[1] or not _same_order(first, second):
        return False
    mine = {p[2:] for p in first if p.startswith("w:")}
    theirs = {p[2:] for p in second if p.startswith("w:")}
    roots = {root: word for word in theirs - mine for root in _roots(word)}
    return not any(roots.keys() & _roots(word) for word in mine - theirs)
