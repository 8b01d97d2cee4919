"""``hybridinfer demo``: a mixed workload against a running gateway, and where each part ran.

Two easy chats, three hard ones (a proof the difficulty head reads as hard; a long input
the local LLM cannot take; one asking for quality), a sentiment text holding personal data,
a redact-and-summarise, a digit image to describe and a free-form question
(``task: "auto"``), sent one after another (the demo LLMs answer one request at a time).
Then one table row per subtask: its tier, node, model, status, latency and the router's
reason. The gateway decides everything; the demo only asks and shows.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import click

DIGIT_ZERO = [
    0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0, 0, 4, 12, 0,
    0, 8, 8, 0, 0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0, 0, 2, 14, 5, 10, 12, 0, 0, 0,
    0, 6, 13, 10, 0, 0, 0,
]  # fmt: skip
"""A handwritten 0 from scikit-learn's digits, 8x8 grey levels 0..16, row by row."""
NOTES = (
    "Notes from the harbour survey, spring. The lighthouse on the north pier was built in 1872 "
    "from granite quarried two miles inland, and it still carries its first iron lantern room. "
    "Its lamp was converted from oil to electricity in 1921 and automated in 1968, when the "
    "last keeper moved out. The keeper's cottage beside it was restored in 1990 and now holds "
    "a small museum about the fishing fleet: nets, a brass compass, logbooks and photographs of "
    "the great herring catches. The pier is four hundred metres long. Its outer half was "
    "rebuilt after the winter storm of 1953, when waves broke over the lantern and carried away "
    "the railings. Fishing boats leave from the inner basin at high tide; the ferry to the "
    "islands sails twice a day in summer and once a day in winter, weather allowing. Seals "
    "rest on the rocks below the outer wall most afternoons, and terns nest on the breakwater "
    "from May to July, when part of it is closed to walkers. The harbour office asks visitors "
    "to keep to the marked path along the pier, to stay off the slipway when boats are being "
    "hauled out, and to report any damage to the railings. A tide table hangs by the museum "
    "door. Repairs to the slipway are planned for the autumn, and the old fish market on the "
    "quay will reopen as a café next year. The survey found the lantern room dry, the granite "
    "sound and the iron stair in need of paint. Two of the four harbour lights were replaced "
    "with LED lamps in March, and the fog signal, silent since 2004, will stay as a museum "
    "piece. Parking on the quay is free after six in the evening."
)
"""Over the local LLM's input limit (1,500 characters by default): the chat goes to the cloud."""
PERSONAL = (
    "Jane Doe here (jane.doe@example.com, +1 415 555 2671): the refund took three weeks and "
    "nobody answered my emails. Really disappointed."
)
INVOICE = (
    "Jane Doe wrote from jane.doe@example.com about the March invoice. She asked us to call her "
    "on +1 415 555 2671 before Friday. Her card 4111 1111 1111 1111 was declined twice. The "
    "shipment left the warehouse on Monday and should arrive next week."
)
REASON_WIDTH = 60
COLUMNS = ("request", "subtask", "tier", "node", "model", "status", "latency", "reason")


def _chat(text: str, **options: str) -> dict[str, Any]:
    inputs = {"messages": [{"role": "user", "content": text}], "max_tokens": 48}
    return {"task": "chat", "inputs": inputs, "options": options}


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One request of the workload, and the output field that holds its answer."""

    name: str
    body: dict[str, Any]
    answer: str


WORKLOAD = (
    DemoRequest("easy chat", _chat("Say hello in three words."), "text"),
    DemoRequest("easy chat", _chat("What is the capital of France?"), "text"),
    DemoRequest(
        "hard chat: a proof",
        _chat("Prove that there are infinitely many primes, step by step."),
        "text",
    ),
    DemoRequest(
        "hard chat: long input",
        _chat(f"{NOTES}\nIn one sentence, what are these notes about?"),
        "text",
    ),
    DemoRequest(
        "hard chat: prefer quality",
        _chat("Explain in two sentences why the sky is blue.", prefer="quality"),
        "text",
    ),
    DemoRequest(
        "sentiment, personal data", {"task": "sentiment", "inputs": {"text": PERSONAL}}, "label"
    ),
    DemoRequest(
        "redact_and_summarize",
        {"task": "redact_and_summarize", "inputs": {"text": INVOICE}},
        "summary",
    ),
    DemoRequest(
        "describe_image", {"task": "describe_image", "inputs": {"pixels": DIGIT_ZERO}}, "caption"
    ),
    DemoRequest(
        'task "auto" question',
        {"task": "auto", "inputs": {"text": "How can I reach support by email?"}},
        "answer",
    ),
)


@dataclass(frozen=True, slots=True)
class Row:
    """One subtask of one request, as the table shows it."""

    request: str
    subtask: str
    tier: str
    node: str
    model: str
    status: str
    latency_ms: float | None
    reason: str


class GatewayClient:
    """Calls one gateway with one key; an unreachable gateway or a refused key ends the demo
    with one line, not a stack trace."""

    def __init__(self, url: str, key: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self._key = key
        self._timeout_s = timeout_s

    def call(self, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """The status and JSON body of one call (error statuses included)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"}
        request = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise click.ClickException(
                f"cannot reach the gateway at {self.url}: {reason} (is `hybridinfer up` running?)"
            ) from None
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {
                "error": {"code": f"http_{status}", "message": raw[:200].decode("utf-8", "replace")}
            }
        code, message = _error(payload)
        if status == 401 or (status == 403 and code == "forbidden"):  # not a privacy refusal
            raise click.ClickException(f"the gateway at {self.url} refused the key: {message}")
        return status, payload

    def check(self) -> None:
        """Reachable, and the key may infer (``GET /v1/models`` needs the ``infer`` scope)."""
        status, payload = self.call("/v1/models")
        if status != 200:
            code, message = _error(payload)
            raise click.ClickException(
                f"the gateway at {self.url} answered {status} {code}: {message}"
            )


def _error(payload: Any) -> tuple[str, str]:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return "error", str(payload)[:200]
    return str(error.get("code", "error")), str(error.get("message", ""))


def rows_of(request: DemoRequest, status: int, payload: Any) -> list[Row]:
    """The table rows of one answer: one per subtask, or one for a failed request."""
    name = request.name
    if status != 200 or not isinstance(payload, dict):
        code, message = _error(payload)
        return [Row(name, "-", "-", "-", "-", f"{status} {code}", None, message)]
    if payload.get("task"):
        name = f"{name} → {payload['task']}"
    rows = []
    for subtask in payload.get("subtasks", []):
        error = subtask.get("error") or {}
        rows.append(
            Row(
                name,
                str(subtask.get("id")),
                str(subtask.get("tier") or "-"),
                str(subtask.get("node") or "-"),
                str(subtask.get("model") or "-"),
                str(subtask.get("status")) + (f" {error['code']}" if error.get("code") else ""),
                subtask.get("latency_ms"),
                str(error.get("message") or subtask.get("reason") or ""),
            )
        )
    return rows


def _truncated(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _latency(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def render_table(rows: list[Row], reason_width: int = REASON_WIDTH) -> list[str]:
    """Plain-text columns; a request's name only on its first row."""
    cells: list[tuple[str, ...]] = []
    previous = None
    for row in rows:
        shown = "" if row.request == previous else row.request
        previous = row.request
        cells.append(
            (shown, row.subtask, row.tier, row.node, row.model, row.status,
             _latency(row.latency_ms), _truncated(" ".join(row.reason.split()), reason_width))
        )  # fmt: skip
    widths = [max([len(name), *(len(cell[i]) for cell in cells)]) for i, name in enumerate(COLUMNS)]
    lines = ["  ".join(name.ljust(width) for name, width in zip(COLUMNS, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() for cell in cells
    ]
    return lines


def summary_line(rows: list[Row], requests: int, seconds: float) -> str:
    """How many subtasks ran where, and how many failed."""
    tiers: dict[str, int] = {}
    for row in rows:
        if row.tier != "-":
            tiers[row.tier] = tiers.get(row.tier, 0) + 1
    failed = sum(1 for row in rows if not row.status.startswith("ok"))
    placed = ", ".join(f"{count} {tier}" for tier, count in sorted(tiers.items()))
    return f"{requests} requests, {len(rows)} subtasks ({placed}), {failed} failed, {seconds:.1f} s"


@click.command("demo")
@click.option("--url", default="http://127.0.0.1:8080", show_default=True, help="The gateway.")
@click.option("--key", envvar="HYBRIDINFER_API_KEY", help="An API key with the infer scope.")
@click.option(
    "--timeout", "timeout_s", default=300.0, show_default=True, help="Seconds per request."
)
@click.option("--answers/--no-answers", default=False, help="Also print each request's answer.")
def demo(url: str, key: str | None, timeout_s: float, answers: bool) -> None:
    """Send a mixed workload to a running gateway; print where each part ran and why."""
    if not key:
        raise click.ClickException("an API key is needed: --key or HYBRIDINFER_API_KEY")
    client = GatewayClient(url, key, timeout_s)
    client.check()
    rows: list[Row] = []
    said: list[tuple[str, str]] = []
    started = time.monotonic()
    for request in WORKLOAD:
        click.echo(f"… {request.name}", err=True)
        status, payload = client.call("/v1/infer", request.body)
        rows += rows_of(request, status, payload)
        outputs = payload.get("outputs") if isinstance(payload, dict) else None
        if isinstance(outputs, dict) and request.answer in outputs:
            said.append((request.name, str(outputs[request.answer])))
    for line in render_table(rows):
        click.echo(line)
    click.echo(summary_line(rows, len(WORKLOAD), time.monotonic() - started))
    if answers:
        click.echo("")
        for name, text in said:
            click.echo(f"{name}: {_truncated(' '.join(text.split()), 200)}")
