"""Router training and evaluation data: per prompt, was the weak model right, was the strong?

Two sources: any CSV with a ``prompt`` column and two boolean columns, and the RouteLLM MMLU
folder (``responses/mmlu_<subject>.csv`` plus ``contaminated_prompts.jsonl``), whose subject
names become groups so a router can be scored on subjects it never saw.
"""

from __future__ import annotations

import csv
import json
import sys
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


def read_outcomes_csv(
    path: Path,
    weak_column: str = WEAK_COLUMN,
    strong_column: str = STRONG_COLUMN,
    group: str | None = None,
) -> Outcomes:
    """Read one CSV; any problem with it is an ``InvalidInput`` naming the file and row."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            columns = reader.fieldnames or []
            missing = [
                name for name in (PROMPT_COLUMN, weak_column, strong_column) if name not in columns
            ]
            if missing:
                raise InvalidInput(
                    f"{path}: missing column(s) {', '.join(map(repr, missing))}; "
                    f"found {', '.join(map(repr, columns)) or 'none'}"
                )
            prompts, weak, strong = [], [], []
            for line, row in enumerate(reader, start=2):
                prompts.append(row[PROMPT_COLUMN] or "")
                weak.append(_parse_bool(row[weak_column], path, line, weak_column))
                strong.append(_parse_bool(row[strong_column], path, line, strong_column))
    except (UnicodeDecodeError, csv.Error) as error:
        raise InvalidInput(f"{path}: not a readable CSV ({error})") from None
    if not prompts:
        raise InvalidInput(f"{path}: no rows")
    name = group if group is not None else path.stem
    return Outcomes(prompts, np.asarray(weak), np.asarray(strong), [name] * len(prompts))


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
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            found.add(json.loads(line)["eval_prompt"])
    return found


def _parse_bool(value: str | None, path: Path, line: int, column: str) -> bool:
    text = (value or "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidInput(f"{path}:{line}: column {column!r} must be True or False, got {value!r}")
