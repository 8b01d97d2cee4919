"""Every curl example of README.md, read from the README's own fenced code blocks and sent to a
real `hybridinfer up` process: each answers as the README says.

What the README says is read from its text where it says it: the JSON answer printed after an
example, a status and code in the comment above one ("403 privacy_violation"), the plan named
for ``auto`` ("here document_qa"), the digit an image shows ("of a 0"). The rest is what every
answer of its task must be: 200, ``ok``, and on topic — a summary of the text and an answer
from the knowledge base, never the prompt echoed back or a placeholder left in.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from hybridinfer.privacy.detect import detect
from hybridinfer.steps.retrieval import default_knowledge_path, load_passages
from tests.conftest import ADMIN_KEY, REPO
from tests.e2e.conftest import Running

pytestmark = pytest.mark.integration

README = REPO / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
PLACEHOLDER = re.compile(r"<[A-Z]+_\d+>")
PROMPT_WORDS = ("Passages:", "Question:", "Answer the question", "Summarise the text")
"""Words of the prompts the LLM steps are asked with: in an answer, the model echoed them."""
REQUEST_TIMEOUT_S = 120.0  # the composite tasks' own deadline (rules.yaml)


@dataclass(frozen=True)
class Example:
    """One curl command of the README, with the comment above it and the answer shown below."""

    comment: str
    url: str
    headers: dict[str, str]
    data: str
    documented: dict[str, Any] | None = None

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.data)
        return body

    @property
    def name(self) -> str:
        options = self.body.get("options", {})
        task = self.body.get("task") or self.url.rsplit("/", 1)[-1]
        return "-".join([task, *(str(value) for value in options.values())])


def commands(code: str) -> Iterator[str]:
    """The shell lines of a block, continuation lines joined."""
    pending = ""
    for line in code.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield (pending + line).strip()
        pending = ""


def parse_curl(command: str, key: str) -> tuple[str, dict[str, str], str]:
    """URL, headers and data of a curl command, tokenised as the shell would (with the key
    the README reads from ``$HYBRIDINFER_API_KEY``)."""
    words = shlex.split(command.replace("$HYBRIDINFER_API_KEY", key), comments=True)
    assert words[0] == "curl", command
    url, headers, data = "", {}, ""
    arguments = iter(words[1:])
    for word in arguments:
        if word == "-s":
            continue
        if word == "-H":
            name, value = next(arguments).split(":", 1)
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = next(arguments)
        elif not word.startswith("-") and not url:
            url = word
        else:
            raise AssertionError(f"the README's curl uses {word!r}, which this test cannot run")
    return url, headers, data


def readme_examples(text: str, key: str = ADMIN_KEY) -> list[Example]:
    """Every curl example of the README's ``bash`` blocks, in order."""
    blocks = [(match.group(1), match.group(2)) for match in FENCE.finditer(text)]
    examples: list[Example] = []
    for index, (language, code) in enumerate(blocks):
        if language != "bash":
            continue
        found: list[Example] = []
        comment: list[str] = []
        for command in commands(code):
            if command.startswith("#"):
                comment.append(command.lstrip("# "))
            elif command.startswith("curl "):
                url, headers, data = parse_curl(command, key)
                found.append(Example(" ".join(comment), url, headers, data))
                comment = []
        after = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
        if len(found) == 1 and after[0] == "json":  # the answer the README prints for it
            found = [dataclasses.replace(found[0], documented=json.loads(after[1]))]
        examples += found
    return examples


EXAMPLES = readme_examples(README.read_text(encoding="utf-8"))


def send(running: Running, example: Example) -> httpx.Response:
    """The request curl makes of the example: a POST of ``-d`` as a form (curl's default)."""
    path = re.sub(r"^(https?://)?[^/]+", "", example.url)
    headers = {"Content-Type": "application/x-www-form-urlencoded", **example.headers}
    return httpx.post(
        running.url + path, content=example.data, headers=headers, timeout=REQUEST_TIMEOUT_S
    )


def answered(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "ok", body
    return body


def words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z]{4,}", text.lower())}


def assert_fluent(text: str, body: dict[str, Any]) -> None:
    """An answer in words: not empty, no placeholder left, not the prompt echoed back."""
    assert text.strip(), body
    assert not PLACEHOLDER.search(text), f"a placeholder was not restored: {text!r}"
    echoed = [phrase for phrase in PROMPT_WORDS if phrase in text]
    assert not echoed, f"the model echoed its prompt ({echoed}): {text!r}"


def check_documented(example: Example, body: dict[str, Any]) -> None:
    """The answer the README prints: status, outputs, and where each subtask ran and why."""
    documented = example.documented
    assert documented is not None
    assert body["status"] == documented["status"]
    outputs, shown = body["outputs"], documented["outputs"]
    assert outputs["label"] == shown["label"]
    assert outputs["confidence"] == pytest.approx(shown["confidence"], abs=0.02)
    keys = ("id", "capability", "tier", "node", "model", "status")
    ran = [{key: subtask[key] for key in keys} for subtask in body["subtasks"]]
    assert ran == [{key: subtask[key] for key in keys} for subtask in documented["subtasks"]]
    for subtask, printed in zip(body["subtasks"], documented["subtasks"], strict=True):
        rule = printed["reason"].split(". ")[0]  # "Rule 'light-work-stays-private' (...) → ..."
        assert subtask["reason"].startswith(rule), subtask["reason"]
    assert set(body["timings_ms"]) == set(documented["timings_ms"])


def check_sentiment(example: Example, body: dict[str, Any]) -> None:
    if example.documented is not None:
        check_documented(example, body)
    assert body["outputs"]["label"] in {"negative", "neutral", "positive"}
    route = example.body.get("options", {}).get("route")
    if route not in (None, "auto"):  # "force the cloud tier"
        assert {subtask["tier"] for subtask in body["subtasks"]} == {route}, body["subtasks"]


def check_digits(example: Example, body: dict[str, Any]) -> None:
    shown = re.search(r"\bof an? (\d)\b", example.comment)
    assert shown, f"the README does not say which digit the image shows: {example.comment!r}"
    assert body["outputs"]["label"] == shown.group(1), body["outputs"]


def check_summary(example: Example, body: dict[str, Any]) -> None:
    """Personal data redacted and restored locally; the summary is of the text, in words,
    with the original values (never a pseudonym) wherever it names one."""
    text = example.body["inputs"]["text"]
    summary = body["outputs"]["summary"]
    assert_fluent(summary, body)
    kinds = {finding.kind for finding in detect(text)}
    assert set(body["outputs"]["redacted"]) == kinds
    tiers = {subtask["id"]: subtask["tier"] for subtask in body["subtasks"]}
    assert tiers["redact"] == tiers["restore"] == "local", body["subtasks"]
    assert len(words(summary) & words(text)) >= 3, f"not a summary of the text: {summary!r}"
    originals = {finding.value for finding in detect(text)}
    assert {finding.value for finding in detect(summary)} <= originals, summary


def check_auto(example: Example, body: dict[str, Any]) -> None:
    """The plan the comment names; for a question, an answer from the knowledge base."""
    named = re.search(r"\bhere (\w+)", example.comment)
    assert named, f"the README does not name the plan auto picks: {example.comment!r}"
    assert body["task"] == named.group(1)
    if body["task"] == "document_qa":
        answer = body["outputs"]["answer"]
        assert_fluent(answer, body)
        passages = {p["id"]: p["text"] for p in load_passages(default_knowledge_path())}
        sources = body["outputs"]["sources"]
        assert sources, body
        assert sources[0] in passages, sources
        # On topic: the demo's cloud LLM (270M, a base model) sees the passage with its values
        # pseudonymised and may write other contact values; it must still answer how to
        # reach support, not echo or wander (docs/models.md says what it can show).
        facts = {finding.value for finding in detect(passages[sources[0]])}
        on_topic = any(fact in answer for fact in facts) or (
            "support" in answer.lower() or bool(detect(answer))
        )
        assert on_topic, f"{answer!r} says nothing of how to reach support"


CHECKS: dict[str, Callable[[Example, dict[str, Any]], None]] = {
    "sentiment": check_sentiment,
    "digits": check_digits,
    "redact_and_summarize": check_summary,
    "auto": check_auto,
}
REFUSAL = re.compile(r"\b([45]\d\d) ([a-z_]+)\b")
"""A comment documenting a refusal: its status and error code."""
KNOWN_BUGS: dict[str, str] = {}
"""Examples that fail for a bug outside the README, until it is fixed: strict, so a fix shows
as XPASS and fails until its entry is removed."""


def cases() -> list[Any]:
    return [
        pytest.param(
            example,
            id=example.name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[example.name])]
            if example.name in KNOWN_BUGS
            else [],
        )
        for example in EXAMPLES
    ]


def test_the_readme_has_its_examples() -> None:
    names = [example.name for example in EXAMPLES]
    assert len(names) >= 6, names
    assert len(set(names)) == len(names), names
    assert set(KNOWN_BUGS) <= set(names), "a known bug names no example"
    assert EXAMPLES[0].documented is not None, "the first example's answer is not shown"
    for example in EXAMPLES:
        assert example.url.startswith("localhost:8080/"), example.url
        assert example.headers == {"Authorization": f"Bearer {ADMIN_KEY}"}
        has_check = example.body.get("task") in CHECKS
        assert REFUSAL.search(example.comment) or has_check, f"no check for {example.name}"


@pytest.mark.parametrize("example", cases())
def test_each_example_answers_as_the_readme_says(fresh_up: Running, example: Example) -> None:
    response = send(fresh_up, example)
    refusal = REFUSAL.search(example.comment)
    if refusal is not None:
        assert response.status_code == int(refusal.group(1)), response.text
        assert response.json()["error"]["code"] == refusal.group(2)
        return
    CHECKS[example.body["task"]](example, answered(response))
