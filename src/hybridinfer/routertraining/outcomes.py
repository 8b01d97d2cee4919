"""Router training and evaluation data: per prompt, was the weak model right, was the strong?

Two sources: any CSV with a ``prompt`` column and two boolean columns, and the RouteLLM MMLU
folder (``responses/mmlu_<subject>.csv`` plus ``contaminated_prompts.jsonl``), whose subject
names become groups so a router can be scored on subjects it never saw.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hybridinfer.errors import InvalidInput

WEAK_COLUMN = "mistralai/Mixtral-8x7B-Instruct-v0.1"
STRONG_COLUMN = "gpt-4-1106-preview"
PROMPT_COLUMN = "prompt"
_TRUE = {"true", "1", "1.0", "yes"}
_FALSE = {"false", "0", "0.0", "no"}
_UNKNOWN = {"", "nan", "none", "null", "na", "n/a"}
"""An outcome not recorded (pandas writes a missing value as an empty cell or ``NaN``)."""
_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")
"""Tried in turn: UTF-8 (with or without a byte-order mark), then a Windows export's code page;
latin-1 decodes any byte, so a file is never refused for its encoding alone."""
_GZIP_MAGIC = b"\x1f\x8b"
_DELIMITERS = (",", "\t", ";", "|")

# MMLU passages run to a few kB, beyond the csv module's default field limit on some builds.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass(frozen=True)
class Outcomes:
    """Prompts with the weak and strong model's correctness; ``groups`` name each prompt's set."""

    prompts: list[str]
    weak: npt.NDArray[np.bool_]
    strong: npt.NDArray[np.bool_]
    groups: list[str]

    def __len__(self) -> int:
        return len(self.prompts)

    def subset(self, mask: npt.NDArray[np.bool_]) -> Outcomes:
        """The rows where ``mask`` is true."""
        rows = np.flatnonzero(mask)
        return Outcomes(
            prompts=[self.prompts[row] for row in rows],
            weak=self.weak[rows],
            strong=self.strong[rows],
            groups=[self.groups[row] for row in rows],
        )

    def followed_by(self, prompts: list[str]) -> Outcomes:
        """These rows, then ``prompts`` (another form of each, in order) with the same
        outcomes and groups: a training set that sees every question in two forms."""
        if len(prompts) != len(self):
            raise ValueError("followed_by needs one prompt per row")
        return Outcomes(
            prompts=[*self.prompts, *prompts],
            weak=np.concatenate([self.weak, self.weak]),
            strong=np.concatenate([self.strong, self.strong]),
            groups=[*self.groups, *self.groups],
        )


def normalise_prompt(prompt: str) -> str:
    """The prompt with runs of whitespace made one space and the ends stripped: what makes two
    prompts the same question."""
    return " ".join(prompt.split())


def merge_duplicate_groups(prompts: list[str], groups: list[str]) -> list[str]:
    """Groups joined wherever the same prompt (after ``normalise_prompt``) appears in both.

    MMLU repeats 78 questions in ``clinical_knowledge`` and ``college_medicine``; splitting
    by subject alone would put a copy of each on both sides of a split and score the router on
    questions it was trained on. Joined groups are named ``a+b`` (sorted).
    """
    parent = {group: group for group in groups}

    def root(group: str) -> str:
        while parent[group] != group:
            parent[group] = parent[parent[group]]
            group = parent[group]
        return group

    first_seen: dict[str, str] = {}
    for prompt, group in zip(prompts, groups, strict=True):
        key = normalise_prompt(prompt)
        other = first_seen.setdefault(key, group)
        parent[root(group)] = root(other)
    members: dict[str, list[str]] = {}
    for group in parent:
        members.setdefault(root(group), []).append(group)
    names = {top: "+".join(sorted(found)) for top, found in members.items()}
    return [names[root(group)] for group in groups]


def default_data_dir() -> Path:
    """``../shared/data/routellm-mmlu`` beside the repository this package is checked out in."""
    repository = Path(__file__).resolve().parents[3]
    return repository.parent / "shared" / "data" / "routellm-mmlu"


@dataclass(frozen=True)
class OutcomesFile:
    """One CSV read: its outcomes, which columns they came from and how they were found."""

    outcomes: Outcomes
    weak_column: str
    strong_column: str
    found_by: str
    """``given`` (named by the caller), ``model name`` (the RouteLLM pair's names, any case and
    with or without the organisation) or ``accuracy`` (the only two True/False columns; the
    more accurate is the strong model)."""
    contaminated_dropped: int = 0
    unknown_dropped: int = 0
    """Rows left out because a model's outcome was not recorded (an empty cell, ``NaN``)."""
    encoding: str = "utf-8"


def read_outcomes_csv(
    path: Path,
    weak_column: str | None = WEAK_COLUMN,
    strong_column: str | None = STRONG_COLUMN,
    group: str | None = None,
) -> Outcomes:
    """Read one CSV; any problem with it is an ``InvalidInput`` naming the file and row."""
    return open_outcomes_csv(path, weak_column, strong_column, group).outcomes


def open_outcomes_csv(
    path: Path,
    weak_column: str | None = None,
    strong_column: str | None = None,
    group: str | None = None,
    *,
    drop_contaminated: bool = False,
    prompt_column: str | None = None,
) -> OutcomesFile:
    """Read one CSV in the RouteLLM form: a ``prompt`` column and a True/False column per model.

    A column named by the caller must exist. One left ``None`` is found: first by the RouteLLM
    pair's model name (RouteLLM's GSM8K file says ``mixtral-8x7b-instruct-v0.1`` where its MMLU
    files say ``mistralai/Mixtral-8x7B-Instruct-v0.1``), else, when the file has exactly two
    True/False columns, the more accurate one is the strong model. Other columns (the models'
    responses) are ignored. ``prompt_column`` names the prompt's column where it is not
    ``prompt`` (in any case). Tab-, semicolon- or bar-separated text, JSON Lines or a JSON array
    of objects, gzip-compressed files, a byte-order mark (UTF-8 or UTF-16) and a file that is
    not UTF-8 (read as Windows-1252) are read too. A row whose outcome for either model is not
    recorded (an empty cell, ``NaN``) is left out and counted. With
    ``drop_contaminated``, prompts listed in RouteLLM's ``contaminated_prompts.jsonl``
    (``contaminated_list_for``) are left out, as RouteLLM's own evaluation does.
    """
    path = Path(path)
    if path.is_dir():
        inside = sorted(path.glob("*.csv")) or sorted(path.glob("*/*.csv"))
        example = f" such as {inside[0].relative_to(path)}" if inside else ""
        raise InvalidInput(f"{path}: a folder, not a file; name one file in it{example}")
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    header, records, encoding = _read_table(path)
    prompt_column = prompt_column or _find_prompt_column(header)
    missing = [
        name
        for name in (prompt_column or PROMPT_COLUMN, weak_column, strong_column)
        if name is not None and name not in header
    ]
    if missing:
        raise InvalidInput(
            f"{path}: missing column(s) {', '.join(map(repr, missing))}; "
            f"found {', '.join(map(repr, header)) or 'none'} (name the prompt's with "
            "--prompt-col, the models' with --weak-col and --strong-col)"
        )
    assert prompt_column is not None
    index = {name: header.index(name) for name in header}
    if not records:
        raise InvalidInput(f"{path}: no rows")

    def column(name: str) -> list[str]:
        at = index[name]
        return [record[at] if at < len(record) else "" for _, record in records]

    places = [place for place, _ in records]

    weak_name, strong_name, found_by = _resolve_columns(
        path, header, prompt_column, column, weak_column, strong_column
    )
    weak = [
        _parse_bool(v, path, at, weak_name) for at, v in zip(places, column(weak_name), strict=True)
    ]
    strong = [
        _parse_bool(v, path, at, strong_name)
        for at, v in zip(places, column(strong_name), strict=True)
    ]
    recorded = [w is not None and s is not None for w, s in zip(weak, strong, strict=True)]
    unknown = recorded.count(False)
    if unknown == len(records):
        raise InvalidInput(f"{path}: no row records both models' outcomes")
    rows = [row for row, kept in enumerate(recorded) if kept]
    prompts = column(prompt_column)
    name = group if group is not None else path.stem
    outcomes = Outcomes(
        [prompts[row] for row in rows],
        np.asarray([weak[row] for row in rows], dtype=bool),
        np.asarray([strong[row] for row in rows], dtype=bool),
        [name] * len(rows),
    )
    dropped = 0
    if drop_contaminated:
        excluded = _contaminated(contaminated_list_for(path))
        keep = np.asarray([p not in excluded for p in outcomes.prompts], dtype=bool)
        dropped = int((~keep).sum())
        if dropped == len(outcomes):
            raise InvalidInput(f"{path}: every row is listed in contaminated_prompts.jsonl")
        outcomes = outcomes.subset(keep) if dropped else outcomes
    return OutcomesFile(outcomes, weak_name, strong_name, found_by, dropped, unknown, encoding)


def contaminated_list_for(path: Path) -> Path:
    """Where RouteLLM keeps the contaminated prompts of a responses file: beside it (its
    GSM8K layout), or one level up when the file sits in a ``responses`` folder (its MMLU one)."""
    beside = path.parent / "contaminated_prompts.jsonl"
    above = path.parent.parent / "contaminated_prompts.jsonl"
    if not beside.is_file() and path.parent.name == "responses" and above.is_file():
        return above
    return beside


def _read_table(path: Path) -> tuple[list[str], list[tuple[str, list[str]]], str]:
    """The header (names stripped), the non-empty records of the file, each with where it is
    (``row 3``: the header is row 1; ``line 3`` of JSON Lines), and the encoding it was read
    in. CSV, tab-, semicolon- or bar-separated text, JSON Lines or a JSON array of objects;
    gzip-compressed or not."""
    data = path.read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:  # a bad header, a cut or corrupt stream
            raise InvalidInput(f"{path}: not a readable gzip file ({error})") from None
    text, encoding = _decode(data)
    if text.lstrip()[:1] in ("{", "["):
        header, records = _json_table(path, text)
    else:
        header, records = _csv_table(path, text)
    return header, records, encoding


def _decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding it was read in; a UTF-16 byte-order mark (a spreadsheet's
    "Unicode text" export) is honoured, else ``_ENCODINGS`` are tried in turn."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            pass
    for encoding in _ENCODINGS:
        try:
            return data.decode(encoding), encoding.removesuffix("-sig")
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes any byte")  # pragma: no cover


def _csv_table(path: Path, text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    delimiter = _delimiter(text.split("\n", 1)[0])
    try:
        reader = csv.reader(io.StringIO(text, newline=""), csv.excel, delimiter=delimiter)
        header = [name.strip() for name in next(reader, [])]
        records = [
            (f"row {number}", record)
            for number, record in enumerate(reader, 2)
            if any(field.strip() for field in record)
        ]
    except csv.Error as error:
        raise InvalidInput(f"{path}: not a readable CSV ({error})") from None
    return header, records


def _delimiter(header_line: str) -> str:
    """The separator of a header line: the most frequent of comma, tab, semicolon (a
    spreadsheet's export where the comma is the decimal mark) and bar; a comma on a tie."""
    counts = {sign: header_line.count(sign) for sign in _DELIMITERS}
    best = max(_DELIMITERS, key=counts.__getitem__)
    return best if counts[best] > counts[","] else ","


def _json_table(path: Path, text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """A JSON array of objects, or one object per line (JSON Lines), as a header (every key,
    in the order first seen) and records of cells written as a CSV would hold them."""
    try:
        if text.lstrip().startswith("["):
            items = json.loads(text)
            places = [f"item {n}" for n in range(1, len(items) + 1)]
        else:
            lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
            places, items = [], []
            for number, line in lines:
                places.append(f"line {number}")
                items.append(json.loads(line))
    except ValueError as error:
        raise InvalidInput(f"{path}: not readable JSON ({error})") from None
    header: dict[str, None] = {}
    for place, item in zip(places, items, strict=True):
        if not isinstance(item, dict):
            raise InvalidInput(f"{path}: {place}: each record must be a JSON object")
        header.update(dict.fromkeys(map(str, item)))
    records = [
        (place, [_cell(path, place, name, item.get(name)) for name in header])
        for place, item in zip(places, items, strict=True)
    ]
    return list(header), records


def _cell(path: Path, place: str, name: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise InvalidInput(f"{path}: {place}: column {name!r} holds a nested value")


def _find_prompt_column(header: list[str]) -> str | None:
    if PROMPT_COLUMN in header:
        return PROMPT_COLUMN
    matches = [name for name in header if name.lower() == PROMPT_COLUMN]
    return matches[0] if len(matches) == 1 else None


def _model_key(column: str) -> str:
    """A model column's name without its organisation and case: what RouteLLM's files share."""
    return column.rsplit("/", 1)[-1].strip().lower()


def _resolve_columns(
    path: Path,
    header: list[str],
    prompt_column: str,
    column: Callable[[str], list[str]],
    weak: str | None,
    strong: str | None,
) -> tuple[str, str, str]:
    if weak is not None and strong is not None:
        return weak, strong, "given"
    by_name = {_model_key(name): name for name in header if name != prompt_column}
    weak_found = weak or by_name.get(_model_key(WEAK_COLUMN))
    strong_found = strong or by_name.get(_model_key(STRONG_COLUMN))
    if weak_found is not None and strong_found is not None and weak_found != strong_found:
        return weak_found, strong_found, "model name"
    booleans = [
        name
        for name in header
        if name != prompt_column
        and all(_is_bool(value) or _is_unknown(value) for value in column(name))
        and any(_is_bool(value) for value in column(name))
    ]
    if len(booleans) == 2:
        first, second = booleans
        known = weak if weak is not None else strong
        if known is None:
            right = {name: _accuracy(column(name)) for name in booleans}
            if right[first] != right[second]:
                weak_name, strong_name = sorted(booleans, key=right.__getitem__)
                return weak_name, strong_name, "accuracy"
        elif known in booleans:
            other = second if known == first else first
            return (known, other, "given") if weak is not None else (other, known, "given")
    found = ", ".join(map(repr, booleans)) or "none"
    raise InvalidInput(
        f"{path}: cannot tell which columns hold the weak and the strong model's outcomes "
        f"(True/False columns: {found}); name them with --weak-col and --strong-col"
    )


def _is_bool(value: str) -> bool:
    text = value.strip().lower()
    return text in _TRUE or text in _FALSE


def _is_unknown(value: str) -> bool:
    return value.strip().lower() in _UNKNOWN


def _accuracy(values: list[str]) -> float:
    """The share of True among the recorded outcomes."""
    recorded = [value for value in values if _is_bool(value)]
    return sum(value.strip().lower() in _TRUE for value in recorded) / len(recorded)


def load_outcomes_dir(data_dir: Path) -> Outcomes:
    """Every subject of a RouteLLM MMLU folder, without the contaminated prompts."""
    data_dir = Path(data_dir)
    files = sorted((data_dir / "responses").glob("*.csv"))
    if not files:
        raise InvalidInput(f"{data_dir}: no responses/*.csv (is this the routellm-mmlu folder?)")
    parts = [read_outcomes_csv(file, group=file.stem.removeprefix("mmlu_")) for file in files]
    combined = Outcomes(
        prompts=[prompt for part in parts for prompt in part.prompts],
        weak=np.concatenate([part.weak for part in parts]),
        strong=np.concatenate([part.strong for part in parts]),
        groups=[name for part in parts for name in part.groups],
    )
    excluded = _contaminated(data_dir / "contaminated_prompts.jsonl")
    keep = np.asarray([prompt not in excluded for prompt in combined.prompts], dtype=bool)
    return combined.subset(keep)


def _contaminated(path: Path) -> set[str]:
    """Prompts that overlap the original router training data (RouteLLM drops them too)."""
    if not path.is_file():
        return set()
    found = set()
    for line_number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            prompt = json.loads(line)["eval_prompt"]
        except (ValueError, KeyError, TypeError):
            raise InvalidInput(
                f"{path}:{line_number}: each line must be a JSON object with an 'eval_prompt'"
            ) from None
        found.add(str(prompt))
    return found


def _parse_bool(value: str | None, path: Path, place: str, column: str) -> bool | None:
    """True or False; None where the outcome was not recorded."""
    text = (value or "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if text in _UNKNOWN:
        return None
    raise InvalidInput(f"{path}: {place}: column {column!r} must be True or False, got {value!r}")
