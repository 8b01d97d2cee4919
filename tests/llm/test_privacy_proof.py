"""The privacy proof: personal data in every format the detectors claim, in every field a
public-zone backend can receive, along every path that can reach one, while every byte that
reaches a public-zone node is recorded. Four public deployments, each behind a recording
proxy: a real `hybridinfer node` (V2), the cloud LLM (Gemma on llama.cpp; a base model, asked
with completion prompts), a chat model (the SmolLM2 server again, at a second address, so that
every field of the OpenAI chat schema really goes out) and embeddings (the embedding server
again). No canary may arrive, in any encoding (``leaks``).

A request carries exactly one canary: a request holding many is refused as soon as one of them
is found, which proves nothing about the others. Here each format's protection rests on its
own detection. (The redacting tasks get every canary in one text: the redact step replaces
each value on its own, so there one miss is a leak whatever else was found.)

A case passes only by a 200 with nothing leaked, or by the documented refusal, 403
``privacy_violation``; never by a 5xx. Each field and path also carries a control (the word
"periwinkle", no personal data), which must reach the public recorders wherever the route
leads there: an empty recording cannot pass for a proof. The mutation tests switch recognisers
off and must then see the canary arrive. Cases that leak today are strict xfails
(``KNOWN_LEAKS``, with the cause): they fail the run once they stop leaking.

The outcome table is printed at the end of the module (``-s`` not needed).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ipaddress
import json
import re
import time
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import phonenumbers
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.cn import ric
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.us import ssn

from hybridinfer.control.keys import key_id_of
from hybridinfer.core.schemas import DeploymentInfo, NodeRegistration
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.decompose.names import NameCheck
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.pipeline import pipeline as pipeline_module
from hybridinfer.privacy.detect import default_detector
from tests.conftest import ADMIN_KEY, NODE_TOKEN
from tests.gateway.test_app import DIGIT_ZERO
from tests.llm.conftest import RunningLlm, gateway_settings, serve
from tests.peers import node_process, serve_asgi

MAX_TOKENS = 1
"""Every chat asks for one token: the proof is about what is sent, not what comes back."""


# --- the canaries ---------------------------------------------------------------------------


def _phone(region: str | None) -> Callable[[str], bool]:
    def valid(value: str) -> bool:
        written = "+" + value[2:] if value.startswith("00") else value
        return bool(phonenumbers.is_valid_number(phonenumbers.parse(written, region)))

    return valid


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


NINO = re.compile(r"(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]")
"""HMRC's rules for a National Insurance number (prefixes and suffix); stdnum has none."""


@dataclass(frozen=True)
class Canary:
    """One personal value, in one claimed format."""

    key: str
    kind: str
    """The detector kind that must find it (``NAME``/``PLACE``: the NER gate; ``NONE``: the
    control, which holds no personal data)."""
    value: str
    valid: Callable[[str], bool] = field(compare=False)
    """The value's own check (its checksum, libphonenumber, ``ipaddress``…)."""
    sentence: str = ""
    """A text whose only personal data is the value (default: a neutral sentence)."""
    bare: str = ""
    """The shortest writing that is still the claimed format (default: the value)."""

    @property
    def text(self) -> str:
        return self.sentence or f"Please note {self.value} for the file."

    @property
    def short(self) -> str:
        return self.bare or self.value


CANARIES = (
    Canary("email", "EMAIL", "canary.7731@example.org", lambda v: "@" in v),
    Canary("phone.us", "PHONE", "4155550193", _phone("US")),
    Canary("phone.gb", "PHONE", "020 7946 0958", _phone("GB")),
    Canary("phone.+44", "PHONE", "+44 161 496 0123", _phone(None)),
    Canary("phone.0049", "PHONE", "0049 30 901820", _phone(None)),
    Canary(
        "phone.cn",
        "PHONE",
        "13812345678",
        _phone("CN"),
        sentence="请记下13812345678，谢谢。",  # noqa: RUF001 (Chinese punctuation)
        bare="请记下13812345678",
    ),
    Canary(
        "card", "CARD", "4539 1488 0343 6467", lambda v: bool(luhn.is_valid(v.replace(" ", "")))
    ),
    Canary("iban", "IBAN", "DE89 3704 0044 0532 0130 00", iban.is_valid),
    Canary("ssn", "SSN", "536-22-4817", ssn.is_valid),
    Canary(
        "ssn.spaced",
        "SSN",
        "472 18 3390",
        lambda v: bool(ssn.is_valid(v.replace(" ", ""))),
        sentence="Please note SSN 472 18 3390 for the file.",
        bare="SSN 472 18 3390",
    ),
    Canary("nino", "NINO", "JG 10 37 52 B", lambda v: bool(NINO.fullmatch(v.replace(" ", "")))),
    Canary("cn.ric", "NATIONALID", "11010519491231002X", ric.is_valid),
    Canary("aadhaar", "NATIONALID", "2345 6789 0124", aadhaar.is_valid),
    Canary("cpf", "NATIONALID", "390.533.447-05", cpf.is_valid),
    Canary("nir", "NATIONALID", "2 95 10 99 126 111 93", nir.is_valid),
    Canary("dni", "NATIONALID", "54362315K", dni.is_valid),
    Canary("nie", "NATIONALID", "X2482300W", nie.is_valid),
    Canary("codicefiscale", "NATIONALID", "RCCMNL83S18D969H", codicefiscale.is_valid),
    Canary("ipv4", "IP", "203.0.113.77", _ip),
    Canary("ipv6", "IP", "2001:db8:85a3::8a2e:370:7334", _ip),
    Canary(
        "name",
        "NAME",
        "Maria Gonzalez",
        lambda v: True,
        sentence="Please ask Maria Gonzalez about the refund.",
    ),
    Canary(
        "place",
        "PLACE",
        "Manchester",
        lambda v: True,
        sentence="The meeting is in Manchester next week.",
    ),
)
CONTROL = Canary("control", "NONE", "periwinkle", lambda v: True)
"""No personal data: wherever a route leads to the public zone, this must arrive there."""
EVERY = (*CANARIES, CONTROL)
BY_KEY = {canary.key: canary for canary in EVERY}


# --- searching the recorded bytes -----------------------------------------------------------


def writings(canary: Canary) -> set[str]:
    """Ways the value could be written: as given, compact, its digits, a phone's national
    number, an address's other notation, a name's parts, an e-mail's local part."""
    value = canary.value
    found = {value, canary.short, re.sub(r"[\s.\-]", "", value)}
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7:
        found.add(digits)
    if canary.kind == "PHONE":
        written = "+" + value[2:] if value.startswith("00") else value
        region = "CN" if canary.key == "phone.cn" else "GB" if value.startswith("0") else "US"
        found.add(phonenumbers.national_significant_number(phonenumbers.parse(written, region)))
    if canary.kind == "IP":
        address = ipaddress.ip_address(value)
        found |= {address.compressed, address.exploded}
    if canary.kind == "NAME":
        found |= {part for part in value.split() if len(part) >= 4}
    if canary.kind == "EMAIL":
        found.add(value.split("@")[0])
    return found


def forms(canary: Canary) -> set[str]:
    """Every writing, plain, URL-encoded, JSON-escaped and base64 (lower-cased: the search is
    case-insensitive)."""
    found: set[str] = set()
    for text in writings(canary):
        found |= {text, urllib.parse.quote(text), urllib.parse.quote_plus(text)}
        found |= {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
        found.add(base64.b64encode(text.encode()).decode())
    return {form.lower() for form in found}


FORMS = {canary.key: forms(canary) for canary in EVERY}


def _json_strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, and in JSON texts held in its strings (tool arguments)."""
    if isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                yield from _json_strings(json.loads(value))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)


def readings(body: bytes) -> list[str]:
    """The body as text, URL-decoded, with its JSON strings unescaped (nested JSON texts too),
    with digit groups joined across separators, and with every base64-looking run decoded."""
    text = body.decode("utf-8", "replace")
    views = [text, urllib.parse.unquote_plus(text)]
    with contextlib.suppress(ValueError):  # the recorded request's body, after its head
        views.append("\n".join(_json_strings(json.loads(text.split("\n\n", 1)[-1]))))
    views.append(re.sub(r"(?<=\d)[ \t.\-/()]+(?=\d)", "", text))
    for run in re.findall(r"[A-Za-z0-9+/=_-]{16,}", text):
        try:
            views.append(base64.b64decode(run + "=" * (-len(run) % 4), altchars=b"-_").decode())
        except (binascii.Error, UnicodeDecodeError):
            continue
    return [view.lower() for view in views]


def leaks(body: bytes, canaries: tuple[Canary, ...] = EVERY) -> list[str]:
    """The keys of the canaries (the control included) found in ``body``."""
    views = readings(body)
    return [
        canary.key
        for canary in canaries
        if any(form in view for form in FORMS[canary.key] for view in views)
    ]


def test_the_canaries_are_valid_and_alone_in_their_texts() -> None:
    """Each value passes its own check, and its text holds no other personal data: the
    detector finds exactly the value (names and places: nothing, only the NER gate reads them)."""
    detector = default_detector()
    for canary in CANARIES:
        assert canary.valid(canary.value), canary
        for text in (
            canary.text,
            canary.short,
            json.dumps({"v": canary.short}, ensure_ascii=False),
        ):
            found = [(f.kind, f.value) for f in detector.detect(text)]
            if canary.kind in ("NAME", "PLACE"):
                assert found == [], (canary.key, text, found)
            else:
                assert found == [(canary.kind, canary.value)], (canary.key, text, found)
    assert detector.detect(CONTROL.text) == []


def test_the_search_finds_each_encoding() -> None:
    for canary in EVERY:
        for sent in (
            canary.text.encode(),
            urllib.parse.quote(canary.value).encode(),
            json.dumps({"t": canary.value}).encode(),  # \u escapes of non-ASCII
            base64.b64encode(f"x {canary.value}".encode()),
            json.dumps({"a": json.dumps({"b": canary.text})}).encode(),  # JSON in JSON
            b'POST /x?\n\n{"t": "' + canary.value.upper().encode() + b'"}',
        ):
            assert leaks(sent) == [canary.key], (canary.key, sent)
    assert leaks(b'{"t": "call 415-555-0193 or +1 (415) 555 0193"}') == ["phone.us"]
    assert leaks(b'{"t": "4539-1488-0343-6467"}') == ["card"]
    assert leaks(b'{"t": "2001:0db8:85a3:0000:0000:8a2e:0370:7334"}') == ["ipv6"]
    assert leaks(b'{"t": "ask Gonzalez"}') == ["name"]
    assert not leaks(b'{"text": "<NAME_1> wrote from <EMAIL_1> about <CARD_1>", "max_tokens": 8}')


# --- the public zone, recorded --------------------------------------------------------------


@dataclass
class Tag:
    """The case being run: every recorded request is filed under it."""

    current: str = "start"


@dataclass
class Recorder:
    """A proxy in front of a node that keeps every request it forwards, with the case's tag.
    ``mode``: ``pass`` forwards, ``fail`` answers 503 (a first choice that fails), ``slow``
    forwards after ``SLOW_S`` (a first choice slow enough to be hedged)."""

    name: str
    tag: Tag
    upstream: str | None = None
    mode: str = "pass"
    requests: list[tuple[str, bytes]] = field(default_factory=list)

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        head = f"{request.method} {request.url.path}?{request.url.query}\n"
        headers = "".join(f"{k}: {v}\n" for k, v in request.headers.items())
        self.requests.append((self.tag.current, head.encode() + headers.encode() + b"\n" + body))
        if self.mode == "fail":
            return Response(b'{"error": {"message": "injected"}}', status_code=503)
        if self.mode == "slow":
            await asyncio.sleep(SLOW_S)
        if self.upstream is None:
            return Response(b"not yet", status_code=503)
        async with httpx.AsyncClient(timeout=180) as client:
            answer = await client.request(
                request.method,
                f"{self.upstream}{request.url.path}",
                params=request.query_params,
                content=body,
                headers={"Content-Type": request.headers.get("content-type", "application/json")},
            )
        media = answer.headers.get("content-type", "application/json")
        return Response(answer.content, answer.status_code, media_type=media)

    def app(self) -> Starlette:
        methods = ["GET", "POST", "PUT", "DELETE", "HEAD"]
        return Starlette(routes=[Route("/{path:path}", self.forward, methods=methods)])


@dataclass
class Sent:
    """What the gateway answered to one case."""

    status: int
    code: str | None = None
    tier: str | None = None
    request_id: str | None = None
    body: Any = None

    @property
    def outcome(self) -> str:
        return "200" if self.status == 200 else f"{self.status} {self.code}"


@dataclass
class Row:
    group: str
    column: str
    canary: str
    outcome: str
    tier: str | None
    arrived: list[str]


OK, REFUSED = "200", "403 privacy_violation"
SLOW_S = 1.0
ASYNC_STATUS = {"privacy_violation": 403, "unsupported_content": 400}
"""The HTTP status a failed async task's error code has on the synchronous path."""


@dataclass
class PublicZone:
    gateway_url: str
    client: httpx.Client
    tag: Tag
    public: dict[str, Recorder]
    failing: Recorder
    failing_url: str
    rows: list[Row] = field(default_factory=list)

    def recorded(self) -> list[tuple[str, str, bytes]]:
        return [(name, tag, sent) for name, r in self.public.items() for tag, sent in r.requests]

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(path, json=body)

    def trace(self, request_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + 10
        while True:
            answer = self.client.get(f"/v1/traces/{request_id}")
            if answer.status_code == 200 or time.monotonic() > deadline:
                assert answer.status_code == 200, answer.text
                return dict(answer.json())
            time.sleep(0.05)

    def run(
        self, group: str, column: str, label: str, send: Callable[[], Sent]
    ) -> tuple[Sent, list[str]]:
        """Send one case; what it answered and which canaries reached a public recorder."""
        self.tag.current = f"{group} | {column} | {label}"
        # The answer cache is on: each case starts with none kept, or a control answered from
        # it would never reach a recorder and the case would prove nothing of its path.
        flushed = self.client.post("/v1/answers/flush", json={"tenant": key_id_of(ADMIN_KEY)})
        assert flushed.status_code == 200, flushed.text
        marks = {name: len(r.requests) for name, r in self.public.items()}
        sent = send()
        arrived = sorted(
            {
                key
                for name, r in self.public.items()
                for _, body in r.requests[marks[name] :]
                for key in leaks(body)
            }
        )
        self.rows.append(Row(group, column, label, sent.outcome, sent.tier, arrived))
        return sent, arrived


def _tiers(result: dict[str, Any]) -> str:
    return "+".join(str(s.get("tier")) for s in result.get("subtasks", []) if s.get("tier"))


def sent_of(answer: httpx.Response) -> Sent:
    request_id = answer.headers.get("x-request-id")
    try:
        payload = answer.json()
    except ValueError:
        return Sent(answer.status_code, "<not json>", request_id=request_id)
    if answer.status_code != 200:
        error = payload.get("error") if isinstance(payload, dict) else None
        code = error.get("code") if isinstance(error, dict) else str(payload)[:80]
        return Sent(answer.status_code, code, request_id=request_id, body=payload)
    tier = answer.headers.get("x-hybridinfer-tier") or _tiers(payload)
    return Sent(200, tier=tier, request_id=request_id, body=payload)


def infer(zone: PublicZone, task: str, inputs: dict[str, Any], options: dict[str, Any]) -> Sent:
    return sent_of(zone.post("/v1/infer", {"task": task, "inputs": inputs, "options": options}))


def stream(zone: PublicZone, body: dict[str, Any]) -> Sent:
    """A streamed chat: 200 only when the events end with ``data: [DONE]``."""
    with zone.client.stream("POST", "/v1/chat/completions", json=body | {"stream": True}) as r:
        if r.status_code != 200:
            r.read()
            return sent_of(r)
        lines = [line for line in r.iter_lines() if line]
        tier, request_id = r.headers.get("x-hybridinfer-tier"), r.headers.get("x-request-id")
    if lines and lines[-1] == "data: [DONE]":
        return Sent(200, tier=tier, request_id=request_id)
    return Sent(299, f"stream ended without [DONE]: {lines[-1:]}", request_id=request_id)


def run_task(zone: PublicZone, body: dict[str, Any]) -> Sent:
    """``POST /v1/tasks``, then ``GET /v1/tasks/{id}`` until it is done or failed."""
    submitted = zone.post("/v1/tasks", body)
    if submitted.status_code != 202:
        return sent_of(submitted)
    task_id = submitted.json()["task_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        state = zone.client.get(f"/v1/tasks/{task_id}").json()
        if state["status"] == "done":
            return Sent(200, tier=_tiers(state["result"]), request_id=task_id)
        if state["status"] == "failed":
            code = state["error"]["code"]
            return Sent(ASYNC_STATUS.get(code, 599), code, request_id=task_id)
        time.sleep(0.05)
    return Sent(598, "task not finished in 120 s", request_id=task_id)


def _wait_ready(zone_client: httpx.Client, node_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        nodes = {n["id"]: n for n in zone_client.get("/v1/nodes").json()["nodes"]}
        if nodes.get(node_id, {}).get("status") == "ready":
            return
        time.sleep(0.2)
    raise AssertionError(f"{node_id} did not become ready")


def _public_twin(
    registration: NodeRegistration, node_id: str, url: str, cost: float, quality: float
) -> NodeRegistration:
    """A private server's registration again, as a paid, better public-zone deployment."""
    deployments = [
        d.model_copy(update={"cost_per_call": cost, "quality": quality, "max_input": 6000})
        for d in registration.deployments
    ]
    update = {"id": node_id, "tier": Tier.CLOUD, "zone": Zone.PUBLIC, "url": url}
    return registration.model_copy(update=update | {"deployments": deployments})


@pytest.fixture(scope="module")
def zone(
    tmp_path_factory: pytest.TempPathFactory, llms: dict[str, RunningLlm], models_dir: Any
) -> Iterator[PublicZone]:
    """One gateway for the module: the private local models and four recorded public-zone
    deployments — the V2 node, the cloud LLM (Gemma, a base model: asked with completion
    prompts, it never sees tools, names or tool calls), a chat model (the SmolLM2 server behind
    a second address, so that every field of the chat schema does go out) and embeddings."""
    tag = Tag()
    v2 = Recorder("v2", tag)
    gemma = Recorder("gemma", tag, llms["llm-cloud"].server.url)
    chat = Recorder("chat", tag, llms["llm-local"].server.url)
    embed = Recorder("embed", tag, llms["embed-local"].server.url)
    failing = Recorder("first", tag, llms["llm-local"].server.url)  # private: not searched
    with (
        serve_asgi(v2.app()) as v2_url,
        serve_asgi(gemma.app()) as gemma_url,
        serve_asgi(chat.app()) as chat_url,
        serve_asgi(embed.app()) as embed_url,
        serve_asgi(failing.app()) as failing_url,
    ):
        settings = gateway_settings(tmp_path_factory.mktemp("privacy"), llms)
        specs = {node: item.server.spec for node, item in llms.items()}
        static = [
            spec.registration(gemma_url if node == "llm-cloud" else llms[node].server.url)
            for node, spec in specs.items()
        ]
        static.append(
            _public_twin(
                specs["llm-local"].registration(chat_url), "chat-cloud", chat_url, 0.004, 0.4
            )
        )
        static.append(
            _public_twin(
                specs["embed-local"].registration(embed_url), "embed-cloud", embed_url, 0.0001, 0.4
            )
        )
        update = {
            "static_nodes": static,
            "models_dir": models_dir,
            "local_models": ["sentiment-small", "digits-small"],
            "local_cpu_interval_s": 3600.0,  # routing must not follow the shared host's load
            "breaker_failures": 1000,  # the failing first choice stays in the chain
            "eject_max_share": 0.0,  # and is not ejected as an outlier either
            # The deliberately slow first choice (a cloud-tier node) must not read as a slow
            # cloud link, or the default policy's slow-link rule would turn cascades off.
            "slow_exchange_ms": 600_000.0,
            "request_timeout_ms": 60_000,
            "answer_cache": "memory",  # on (as by default), flushed before each case (``run``)
            # A probe is a TCP connect bounded by min(2 s, interval): at 0.5 s a busy shared
            # host (the gateway's loop lagging) marks every node down at once.
            "probe_interval_s": 2.0,
        }
        for gateway in serve(settings.model_copy(update=update)):
            headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
            client = httpx.Client(base_url=gateway.url, headers=headers, timeout=300)
            args = ["--id", "cloud-v2", "--tier", "cloud", "--zone", "public"]
            args += ["--models", "sentiment-large,digits-large", "--models-dir", str(models_dir)]
            args += ["--control-plane", gateway.url, "--advertise-url", v2_url]
            args += ["--cost-per-call", "0.0001", "--heartbeat-interval", "1"]
            with client, node_process(*args, env={"HYBRIDINFER_NODE_TOKEN": NODE_TOKEN}) as url:
                v2.upstream = url
                nodes = ("cloud-v2", "llm-cloud", "chat-cloud", "embed-cloud", "llm-local")
                for node_id in nodes:
                    _wait_ready(client, node_id)
                public = {"v2": v2, "gemma": gemma, "chat": chat, "embed": embed}
                zone = PublicZone(gateway.url, client, tag, public, failing, failing_url)
                _warm_names(zone)
                yield zone


def _warm_names(zone: PublicZone) -> None:
    """Wait for the NER model (seconds to load) with a request that needs it."""
    zone.tag.current = "warm-up"
    body = {"model": "auto", "messages": [user(BY_KEY["name"].text)], "max_tokens": 1}
    answer = zone.post("/v1/chat/completions", body | {"hybridinfer": {"route": "cloud"}})
    assert answer.status_code == 403, answer.text


# --- the fields a public backend can receive ------------------------------------------------

ASK = "Reply with one word: ok."


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_turn(
    arguments: str = '{"note": "the first one"}',
    name: str = "lookup",
    call_id: str = "call_1",
    result: Any = "found it",
) -> list[dict[str, Any]]:
    """A user ask, the assistant's tool call and the tool's result."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        user("Look up the note, then reply with one word."),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def tools(description: str = "Look up a note.", parameter: str = "The note to look up.") -> Any:
    parameters = {
        "type": "object",
        "properties": {"note": {"type": "string", "description": parameter}},
    }
    function = {"name": "lookup", "description": description, "parameters": parameters}
    return [{"type": "function", "function": function}]


def _json(value: Any, ascii_only: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


Build = Callable[[Canary], dict[str, Any]]
CHAT_FIELDS: dict[str, Build] = {
    "content": lambda c: {"messages": [user(c.text)]},
    "text parts": lambda c: {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": ASK}, {"type": "text", "text": c.text}],
            }
        ]
    },
    "system": lambda c: {"messages": [{"role": "system", "content": c.text}, user(ASK)]},
    "system parts": lambda c: {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": c.text}]},
            user(ASK),
        ]
    },
    "developer": lambda c: {"messages": [{"role": "developer", "content": c.text}, user(ASK)]},
    "assistant": lambda c: {
        "messages": [user(ASK), {"role": "assistant", "content": c.text}, user(ASK)]
    },
    "name": lambda c: {"messages": [{"role": "user", "content": ASK, "name": c.short}]},
    "refusal": lambda c: {
        "messages": [
            user(ASK),
            {"role": "assistant", "content": "no", "refusal": c.text},
            user(ASK),
        ]
    },
    "tool_calls.arguments": lambda c: {"messages": tool_turn(arguments=_json({"note": c.text}))},
    "tool_calls.arguments value": lambda c: {
        "messages": tool_turn(arguments=_json({"value": c.short}))
    },
    "tool_calls.arguments ascii": lambda c: {
        "messages": tool_turn(arguments=_json({"note": c.text}, ascii_only=True))
    },
    "tool_calls.name": lambda c: {"messages": tool_turn(name=c.short)},
    "tool_calls.id": lambda c: {"messages": tool_turn(call_id=c.short)},
    "tool content": lambda c: {"messages": tool_turn(result=c.text)},
    "tool content parts": lambda c: {
        "messages": tool_turn(result=[{"type": "text", "text": c.text}])
    },
    "tool content json": lambda c: {"messages": tool_turn(result=json.dumps({"value": c.short}))},
    "tools.description": lambda c: {"messages": [user(ASK)], "tools": tools(description=c.text)},
    "tools.parameters": lambda c: {"messages": [user(ASK)], "tools": tools(parameter=c.text)},
    "tool_choice": lambda c: {
        "messages": [user(ASK)],
        "tools": tools(),
        "tool_choice": {"type": "function", "function": {"name": c.short}},
    },
    "response_format": lambda c: {
        "messages": [user(ASK)],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "description": c.text,
                "schema": {"type": "object", "properties": {"word": {"type": "string"}}},
            },
        },
    },
    "stop": lambda c: {"messages": [user(ASK)], "stop": [c.short]},
}


def chat_infer(options: dict[str, Any], build: Build) -> Callable[[PublicZone, Canary], Sent]:
    return lambda zone, c: infer(zone, "chat", build(c) | {"max_tokens": MAX_TOKENS}, options)


def chat_completion(
    routing: dict[str, Any], build: Build, streamed: bool = False
) -> Callable[[PublicZone, Canary], Sent]:
    def send(zone: PublicZone, canary: Canary) -> Sent:
        body = {"model": "auto", "max_tokens": MAX_TOKENS, **build(canary)}
        if routing:
            body["hybridinfer"] = routing
        if streamed:
            return stream(zone, body)
        return sent_of(zone.post("/v1/chat/completions", body))

    return send


def text_infer(task: str, name: str, options: dict[str, Any], listed: bool = False) -> Any:
    def send(zone: PublicZone, canary: Canary) -> Sent:
        text: Any = ["a calm evening", canary.text] if listed else canary.text
        return infer(zone, task, {name: text}, options)

    return send


def embeddings(routing: dict[str, Any], listed: bool = False) -> Any:
    def send(zone: PublicZone, canary: Canary) -> Sent:
        text: Any = ["a calm evening", canary.text] if listed else canary.text
        body: dict[str, Any] = {"model": "auto", "input": text}
        if routing:
            body["hybridinfer"] = routing
        return sent_of(zone.post("/v1/embeddings", body))

    return send


def task_of(task: str, build: Callable[[Canary], dict[str, Any]], options: dict[str, Any]) -> Any:
    return lambda zone, c: run_task(zone, {"task": task, "inputs": build(c), "options": options})


@dataclass(frozen=True)
class Column:
    """One field or path; each canary is sent through it, then the control."""

    group: str
    name: str
    send: Callable[[PublicZone, Canary], Sent]
    expect: str
    """The outcome for every canary."""
    control: str = OK
    """The outcome for the control (the same field or path without personal data)."""
    control_arrives: bool | None = True
    """Whether the control must reach a public recorder (None: the route may stay private)."""


CLOUD = {"route": "cloud"}
UPSTREAM_REFUSES = {
    "tool_choice": "502 upstream_rejected",
    "response_format": "502 upstream_rejected",
}
"""Controls the public chat models refuse, having received them (so the field does go out):
llama-cpp-python answers 500 "Tool choice 'periwinkle' not found in tools." and 500 "Input
should be 'text' or 'json_object'" (no json_schema); Gemma, a base model, refuses tools and
response formats before sending. The last error is Gemma's."""
FIELD_COLUMNS = [
    *(
        Column(
            "route=cloud /v1/chat/completions",
            name,
            chat_completion(CLOUD, build),
            REFUSED,
            UPSTREAM_REFUSES.get(name, OK),
        )
        for name, build in CHAT_FIELDS.items()
    ),
    *(
        Column(
            "route=cloud /v1/infer chat",
            name,
            chat_infer(CLOUD, build),
            REFUSED,
            UPSTREAM_REFUSES.get(name, OK),
        )
        for name, build in CHAT_FIELDS.items()
    ),
    Column(
        "route=cloud /v1/infer", "sentiment.text", text_infer("sentiment", "text", CLOUD), REFUSED
    ),
    Column("route=cloud /v1/infer", "embed.input", text_infer("embed", "input", CLOUD), REFUSED),
    Column(
        "route=cloud /v1/infer",
        "embed.input[1]",
        text_infer("embed", "input", CLOUD, listed=True),
        REFUSED,
    ),
    Column("route=cloud /v1/embeddings", "input", embeddings(CLOUD), REFUSED),
    Column("route=cloud /v1/embeddings", "input[1]", embeddings(CLOUD, listed=True), REFUSED),
    Column(
        "route=cloud /v1/tasks",
        "sentiment.text",
        task_of("sentiment", lambda c: {"text": c.text}, CLOUD),
        REFUSED,
    ),
    Column(
        "route=cloud /v1/tasks",
        "chat tool_calls.arguments",
        task_of(
            "chat",
            lambda c: CHAT_FIELDS["tool_calls.arguments"](c) | {"max_tokens": MAX_TOKENS},
            CLOUD,
        ),
        REFUSED,
    ),
    Column(
        "route=cloud /v1/tasks",
        "embed.input",
        task_of("embed", lambda c: {"input": [c.text]}, CLOUD),
        REFUSED,
    ),
]
QUALITY = {"prefer": "quality"}
CONTENT = CHAT_FIELDS["content"]
FILLER = "the quick brown fox jumps over the lazy dog. " * 36
"""1,600 characters without personal data: past the local LLM's input limit (1,500), so the
router can only place the chat in the public zone."""
LONG: Build = lambda c: {"messages": [user(c.text + " " + FILLER)]}  # noqa: E731
PATH_COLUMNS = [
    # Auto-routed paths: the policy and the prompt's difficulty decide whether the control
    # goes out (None); the canaries must be answered in the private zone either way.
    Column("/v1/infer sentiment", "{}", text_infer("sentiment", "text", {}), OK, OK, None),
    Column("/v1/infer sentiment", "prefer=quality", text_infer("sentiment", "text", QUALITY), OK),
    Column("/v1/infer chat", "{}", chat_infer({}, CONTENT), OK, OK, None),
    Column("/v1/infer chat", "prefer=quality", chat_infer(QUALITY, CONTENT), OK, OK, None),
    Column("/v1/infer chat", "{} too long for local", chat_infer({}, LONG), REFUSED),
    Column("/v1/infer embed", "{}", text_infer("embed", "input", {}), OK, OK, None),
    Column(
        "/v1/infer embed", "prefer=quality", text_infer("embed", "input", QUALITY), OK, OK, None
    ),
    Column("/v1/chat/completions", "plain", chat_completion({}, CONTENT), OK, OK, None),
    Column(
        "/v1/chat/completions", "prefer=quality", chat_completion(QUALITY, CONTENT), OK, OK, None
    ),
    Column("/v1/chat/completions", "too long for local", chat_completion({}, LONG), REFUSED),
    Column("/v1/chat/completions", "stream", chat_completion({}, CONTENT, True), OK, OK, None),
    Column(
        "/v1/chat/completions",
        "stream route=cloud",
        chat_completion(CLOUD, CONTENT, streamed=True),
        REFUSED,
    ),
    Column(
        "/v1/chat/completions",
        "stream too long for local",
        chat_completion({}, LONG, streamed=True),
        REFUSED,
    ),
    Column(
        "/v1/chat/completions",
        "stream prefer=quality, tool turn",
        chat_completion(QUALITY, CHAT_FIELDS["tool content"], streamed=True),
        OK,
        OK,
        None,
    ),
    Column("/v1/embeddings", "{}", embeddings({}), OK, OK, None),
    Column("/v1/embeddings", "prefer=quality", embeddings(QUALITY), OK, OK, None),
    Column(
        "/v1/tasks",
        "sentiment {}",
        task_of("sentiment", lambda c: {"text": c.text}, {}),
        OK,
        OK,
        None,
    ),
    Column(
        "/v1/tasks",
        "sentiment prefer=quality",
        task_of("sentiment", lambda c: {"text": c.text}, QUALITY),
        OK,
    ),
    Column(
        "/v1/tasks",
        "chat prefer=quality",
        task_of("chat", lambda c: CONTENT(c) | {"max_tokens": MAX_TOKENS}, QUALITY),
        OK,
        OK,
        None,
    ),
    Column(
        "/v1/tasks",
        "chat too long for local",
        task_of("chat", lambda c: LONG(c) | {"max_tokens": MAX_TOKENS}, {}),
        REFUSED,
    ),
]

KNOWN_LEAKS: dict[tuple[str, str], str] = {}
"""(column, canary) → why it leaks today (see the report); strict xfail: the case turns
into a failure once it stops leaking, and must then leave this list."""


def _cases(columns: list[Column]) -> list[Any]:
    cases = []
    for column in columns:
        for canary in EVERY:
            reason = KNOWN_LEAKS.get((column.name, canary.key))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(
                pytest.param(
                    column, canary, marks=marks, id=f"{column.group}:{column.name}:{canary.key}"
                )
            )
    return cases


def check(zone: PublicZone, column: Column, canary: Canary) -> Sent:
    sent, arrived = zone.run(
        column.group, column.name, canary.key, lambda: column.send(zone, canary)
    )
    if canary is CONTROL:
        assert sent.outcome == column.control, (sent.outcome, sent.body)
        if column.control_arrives is not None:
            assert arrived == (["control"] if column.control_arrives else []), arrived
        return sent
    assert arrived == [], f"{canary.key} reached the public zone"
    assert sent.outcome == column.expect, (sent.outcome, sent.body)
    return sent


CHAT_TEXT_INPUTS = {"messages", "stop", "tools", "tool_choice", "response_format"}
CHAT_NUMBER_INPUTS = {"max_tokens", "temperature", "top_p", "seed"}
CHAT_NUMBER_INPUTS |= {"presence_penalty", "frequency_penalty"}
COVERED = {
    "sentiment": {"text"},
    "embed": {"input"},
    "chat": CHAT_TEXT_INPUTS | CHAT_NUMBER_INPUTS,
    "redact_and_summarize": {"text"},
    "document_qa": {"question"},
    "digits": {"pixels"},  # numbers only: no string to hold a canary
    "describe_image": {"pixels"},
}
"""Every input of every task: each string input has canaries in a column below."""


def test_every_task_input_is_covered() -> None:
    rules = load_rules(default_rules_path()).tasks
    assert {task: set(rule.inputs) for task, rule in rules.items()} == COVERED, (
        "a task or an input was added: give it canaries here"
    )
    assert {key for build in CHAT_FIELDS.values() for key in build(CONTROL)} == CHAT_TEXT_INPUTS


@pytest.mark.integration
@pytest.mark.parametrize(("column", "canary"), _cases(FIELD_COLUMNS))
def test_each_field_with_route_cloud(zone: PublicZone, column: Column, canary: Canary) -> None:
    """Forced to the public tier, every canary in every field is refused, and the control in
    the same field arrives (so the field really is sent)."""
    check(zone, column, canary)


@pytest.mark.integration
@pytest.mark.parametrize(("column", "canary"), _cases(PATH_COLUMNS))
def test_each_path(zone: PublicZone, column: Column, canary: Canary) -> None:
    """Routed by the policy, answered in the private zone (or refused when forced out)."""
    check(zone, column, canary)


ALL_TEXT = " ".join(canary.text for canary in CANARIES)
"""Every canary in one text: the redact step replaces each value it finds on its own, so one
it misses arrives whatever it found besides (unlike a refusal, one finding saves nothing)."""


@pytest.mark.integration
@pytest.mark.parametrize("options", [{}, CLOUD, QUALITY], ids=["{}", "route=cloud", "quality"])
@pytest.mark.parametrize(
    ("task", "name"), [("redact_and_summarize", "text"), ("document_qa", "question")]
)
def test_the_redacting_tasks_send_placeholders_only(
    zone: PublicZone, task: str, name: str, options: dict[str, Any]
) -> None:
    group, column = f"/v1/infer {task}", f"{name} {json.dumps(options)}"
    sent, arrived = zone.run(
        group, column, "all canaries", lambda: infer(zone, task, {name: ALL_TEXT}, options)
    )
    assert arrived == []
    assert sent.outcome == OK, sent.body
    assert sent.tier is not None
    if "cloud" in sent.tier:  # a step ran on the cloud LLM: it got the pseudonymised text
        tag = f"{group} | {column} | all canaries"
        sent_up = [body for t, body in zone.public["gemma"].requests if t == tag]
        assert any(b"<EMAIL_1>" in body for body in sent_up), "no placeholder reached the cloud"


@pytest.mark.integration
def test_the_user_field_is_never_forwarded(zone: PublicZone) -> None:
    """``user`` names a person: with route=cloud the chat goes out, the field does not."""
    chunk: list[str] = []
    chunks: list[str] = []
    for canary in CANARIES:
        if len(" ".join([*chunk, canary.text])) > 256:
            chunks.append(" ".join(chunk))
            chunk = []
        chunk.append(canary.text)
    chunks.append(" ".join(chunk))
    for number, text in enumerate(chunks):
        body = {"model": "auto", "messages": [user(CONTROL.text)], "max_tokens": MAX_TOKENS}
        body |= {"user": text, "hybridinfer": CLOUD}
        sent, arrived = zone.run(
            "route=cloud /v1/chat/completions",
            "user",
            f"canaries part {number + 1}",
            lambda body=body: sent_of(zone.post("/v1/chat/completions", body)),  # type: ignore[misc]
        )
        assert sent.outcome == OK, sent.body
        assert arrived == ["control"], arrived


@pytest.mark.integration
def test_a_phone_number_as_a_json_number_is_read_too(zone: PublicZone) -> None:
    """``4155550193`` is a phone number in a string (refused above, in every field); written
    as a JSON number in a tool's parameter schema it must be refused the same."""
    schema = tools()
    schema[0]["function"]["parameters"]["properties"]["note"]["default"] = 4155550193
    build: Build = lambda _: {"messages": [user(ASK)], "tools": schema}  # noqa: E731
    sent, arrived = zone.run(
        "route=cloud /v1/chat/completions",
        "tools.parameters number",
        "phone.us",
        lambda: chat_completion(CLOUD, build)(zone, BY_KEY["phone.us"]),
    )
    assert arrived == [], "phone.us reached the public zone"
    assert sent.outcome == REFUSED


@pytest.mark.integration
@pytest.mark.parametrize("task", ["digits", "describe_image"])
@pytest.mark.parametrize(
    "options",
    [{"privacy": "sensitive"}, {"privacy": "sensitive", "route": "cloud"}],
    ids=["sensitive", "sensitive route=cloud"],
)
def test_declared_sensitive_pixels_stay_private(
    zone: PublicZone, task: str, options: dict[str, Any]
) -> None:
    """Pixels carry no string to hold a canary: declared sensitive, nothing of them leaves."""
    before = {name: len(r.requests) for name, r in zone.public.items()}
    sent, _ = zone.run(
        f"/v1/infer {task}",
        json.dumps(options),
        "pixels",
        lambda: infer(zone, task, {"pixels": DIGIT_ZERO}, options),
    )
    calls = [
        body
        for name, r in zone.public.items()
        for _, body in r.requests[before[name] :]
        if body.startswith(b"POST")
    ]
    assert calls == []
    assert sent.outcome == (REFUSED if "route" in options else OK), sent.body


UNSURE = (
    "{} said the food was okay I guess.",
    "{} thinks it might be fine, maybe.",
    "Not sure what to make of {} today.",
    "{} said it was fine I guess, not sure really.",
    "{} called it average, nothing special.",
    "{} had mixed feelings about the show.",
)
"""Texts the small sentiment model is unsure of: its answer escalates to the public V2 node."""
SUBJECTS = {
    "name": "Maria Gonzalez",
    "place": "the crowd in Manchester",
    "control": "the periwinkle fan club",
}
KNOWN_LEAKS[("cascade", "place 1")] = (
    "NER (en_core_web_sm) finds no place in 'the crowd in Manchester said the food was okay "
    "I guess.' (it does in the five other sentences): a model's miss, the escalation sends it"
)
ESCALATIONS: Counter[str] = Counter()


def _roles(zone: PublicZone, sent: Sent, role: str) -> list[dict[str, Any]]:
    assert sent.request_id is not None
    return [a for a in zone.trace(sent.request_id)["attempts"] if a["role"] == role]


def _cascade_cases() -> list[Any]:
    cases = []
    for number, template in enumerate(UNSURE, 1):
        for label in SUBJECTS:
            reason = KNOWN_LEAKS.get(("cascade", f"{label} {number}"))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(template, label, number, marks=marks, id=f"{label}-{number}"))
    return cases


@pytest.mark.integration
@pytest.mark.parametrize(("template", "label", "number"), _cascade_cases())
def test_the_cascade_escalation_is_gated(
    zone: PublicZone, template: str, label: str, number: int
) -> None:
    """Sentiment cascades to the public V2 node when the local model is unsure. A text whose
    only personal data is a name or a place (found by NER alone) escalates no further than
    the gate, and the local answer stands."""
    text = template.format(SUBJECTS[label])
    sent, arrived = zone.run(
        "/v1/infer sentiment",
        "cascade",
        f"{label} {number}",
        lambda: infer(zone, "sentiment", {"text": text}, {}),
    )
    assert sent.outcome == OK, sent.body
    escalations = _roles(zone, sent, "escalation")
    if label == "control":
        assert arrived == (["control"] if escalations else [])
        ESCALATIONS["control"] += any(a["status"] == "ok" for a in escalations)
        return
    assert arrived == [], f"{label} reached the public zone: {text!r}"
    assert all(a["error_code"] == "privacy_violation" for a in escalations), escalations
    ESCALATIONS["refused"] += bool(escalations)


@pytest.mark.integration
def test_the_cascade_was_exercised(zone: PublicZone) -> None:
    """Escalations were tried and refused at the gate, and a control did escalate: the
    cascade path to the public node is real."""
    assert ESCALATIONS["refused"] >= 2, ESCALATIONS
    assert ESCALATIONS["control"] >= 1, ESCALATIONS


@pytest.mark.integration
@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.key)
def test_with_its_recogniser_off_the_canary_arrives(
    zone: PublicZone, canary: Canary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proof can fail: with the recogniser of the canary's kind switched off (the NER
    reading, for names and places), the same request goes out and the search finds it.

    Where another recogniser finds the value too (the phone recogniser reads SSNs, Aadhaar,
    CPF and NIR numbers as German phone numbers), one switched off is refused still, and
    that one is switched off as well."""
    inputs = {"text": canary.text}
    send: Callable[[], Sent] = lambda: infer(zone, "sentiment", inputs, CLOUD)  # noqa: E731
    sent, arrived = zone.run("mutation", "every recogniser", canary.key, send)
    assert (sent.outcome, arrived) == (REFUSED, [])
    if canary.kind in ("NAME", "PLACE"):

        async def nothing(*_: Any) -> list[str]:
            return []

        # The reading is off both ways it answers: a text read before (remembered, answered
        # in line by the gate) and a new one.
        monkeypatch.setattr(NameCheck, "remembered_kinds_in", lambda *_: None)
        monkeypatch.setattr(NameCheck, "kinds_in", nothing)
        sent, arrived = zone.run("mutation", f"without {canary.kind}", canary.key, send)
        assert (sent.outcome, arrived) == (OK, [canary.key])
        return
    off = [canary.kind]
    while True:
        weakened = default_detector()
        for kind in off:
            weakened = weakened.without(kind)
        monkeypatch.setattr(pipeline_module, "detector_for", lambda _r, d=weakened: d)
        still = sorted({finding.kind for finding in weakened.detect(canary.text)})
        sent, arrived = zone.run("mutation", f"without {'+'.join(off)}", canary.key, send)
        if not still:
            assert (sent.outcome, arrived) == (OK, [canary.key])
            return
        assert (sent.outcome, arrived) == (REFUSED, []), still  # found by another kind
        off += still


@pytest.mark.integration
def test_with_the_phone_recogniser_off_a_chat_leaks(
    zone: PublicZone, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The brief's own mutation: a phone-only chat, route=cloud, phone recogniser removed."""
    canary = BY_KEY["phone.us"]
    send = lambda: chat_completion(CLOUD, CONTENT)(zone, canary)  # noqa: E731
    sent, arrived = zone.run("mutation", "chat, every recogniser", canary.key, send)
    assert (sent.outcome, arrived) == (REFUSED, [])
    weakened = default_detector().without("PHONE")
    monkeypatch.setattr(pipeline_module, "detector_for", lambda _regions: weakened)
    sent, arrived = zone.run("mutation", "chat, without PHONE", canary.key, send)
    assert (sent.outcome, arrived) == (OK, ["phone.us"])


@pytest.fixture(scope="module")
def private_cloud(zone: PublicZone, llms: dict[str, RunningLlm]) -> PublicZone:
    """Two chat nodes of a private cloud (tier cloud, private zone), registered now: with
    ``route: cloud, prefer: quality`` every chat's chain is then the first one (best: the
    ``first`` proxy, which can fail or be slow), the public chat models, then the last one
    (worst, but private). The mutation tests run before: these would answer their chats."""
    nodes = {
        "private-first": (zone.failing_url, 0.9, 0.0),
        "private-last": (llms["llm-local"].server.url, 0.2, 0.004),
    }
    for node_id, (url, quality, cost) in nodes.items():
        deployment = DeploymentInfo(
            model="smollm2-135m",
            version="1",
            capability="chat",
            quality=quality,
            latency_ms=50.0,
            cost_per_call=cost,
            max_input=6000,
        )
        registration = NodeRegistration(
            id=node_id,
            tier=Tier.CLOUD,
            zone=Zone.PRIVATE,
            url=url,
            protocol="openai",
            deployments=[deployment],
        )
        answer = zone.client.post(
            "/v1/nodes",
            json=registration.model_dump(mode="json"),
            headers={"Authorization": f"Bearer {NODE_TOKEN}"},
        )
        assert answer.status_code == 201, answer.text
        _wait_ready(zone.client, node_id)
    return zone


PRIVATE_FIRST = {"route": "cloud", "prefer": "quality"}
NER_FIRST = sorted(EVERY, key=lambda c: c.kind not in ("NAME", "PLACE", "NONE"))
"""Names, places and the control first: the hedge delay is 50 ms until the first choice has
20 answers, then its p95."""


PUBLIC_CHAT = {"chat-cloud", "llm-cloud"}


def _nodes(zone: PublicZone, sent: Sent) -> list[tuple[str, str, str]]:
    """(node, role, error code or status) of each attempt; the row shows the node that
    answered (its tier, ``cloud``, does not say which zone)."""
    assert sent.request_id is not None
    attempts = zone.trace(sent.request_id)["attempts"]
    found = [(a["node"], a["role"], a["error_code"] or a["status"]) for a in attempts]
    zone.rows[-1].tier = next((node for node, _, status in found if status == "ok"), None)
    return found


@pytest.mark.integration
@pytest.mark.parametrize("canary", NER_FIRST, ids=lambda c: c.key)
def test_the_hedge_is_gated(private_cloud: PublicZone, canary: Canary) -> None:
    """The first choice is slow for names, places and the control: the hedge races the next
    deployment, the public chat model. The gate refuses it a name; the control goes out."""
    zone = private_cloud
    zone.failing.mode = "slow" if canary.kind in ("NAME", "PLACE", "NONE") else "pass"
    options = PRIVATE_FIRST | {"hedge": True, "max_latency_ms": 60_000}
    inputs = {"messages": [user(canary.text)], "max_tokens": 8}
    try:
        sent, arrived = zone.run(
            "route=cloud prefer=quality chat",
            "hedge, private first",
            canary.key,
            lambda: infer(zone, "chat", inputs, options),
        )
    finally:
        zone.failing.mode = "pass"
    assert sent.outcome == OK, sent.body
    attempts = _nodes(zone, sent)
    hedges = [(node in PUBLIC_CHAT, status) for node, role, status in attempts if role == "hedge"]
    if canary is CONTROL:
        assert hedges == [(True, "ok")], attempts
        assert arrived == ["control"]
        return
    assert arrived == [], f"{canary.key} reached the public zone"
    if canary.kind in ("NAME", "PLACE"):
        assert hedges == [(True, "privacy_violation")], attempts
    else:  # the router left no public deployment in the chain
        assert {a[0] for a in attempts} <= {"private-first", "private-last"}, attempts


@pytest.mark.integration
@pytest.mark.parametrize("streamed", [False, True], ids=["infer", "stream"])
@pytest.mark.parametrize("canary", EVERY, ids=lambda c: c.key)
def test_a_failed_first_choice_falls_back_through_the_gate(
    private_cloud: PublicZone, canary: Canary, streamed: bool
) -> None:
    """The first choice (private) fails; the chain moves on to the public chat models —
    where the gate stops a name — and on to the last, private, deployment."""
    zone = private_cloud
    if streamed:
        send = lambda: chat_completion(PRIVATE_FIRST, CONTENT, True)(zone, canary)  # noqa: E731
    else:
        send = lambda: chat_infer(PRIVATE_FIRST, CONTENT)(zone, canary)  # noqa: E731
    column = f"fallback after a failure ({'stream' if streamed else 'infer'})"
    zone.failing.mode = "fail"
    try:
        sent, arrived = zone.run("route=cloud prefer=quality chat", column, canary.key, send)
    finally:
        zone.failing.mode = "pass"
    assert sent.outcome == OK, sent.body
    attempts = _nodes(zone, sent)
    assert attempts[0][0] == "private-first", attempts
    assert attempts[0][2] != "ok", attempts
    node, role, status = attempts[-1]
    if canary is CONTROL:
        assert (node in PUBLIC_CHAT, role, status) == (True, "fallback", "ok"), attempts
        assert arrived == ["control"]
        return
    assert arrived == [], f"{canary.key} reached the public zone"
    assert (node, role, status) == ("private-last", "fallback", "ok"), attempts
    refused = {node for node, _, status in attempts if status == "privacy_violation"}
    if canary.kind in ("NAME", "PLACE"):  # the gate stopped it at each public node
        assert refused == PUBLIC_CHAT, attempts
    else:  # the router had left no public node in the chain
        assert {node for node, _, _ in attempts} == {"private-first", "private-last"}, attempts


def render(rows: list[Row]) -> str:
    """One line per field or path: the canaries' outcomes, the control's, what arrived."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.group, row.column)].append(row)
    lines = [f"{'field or path':<68} {'canaries':<34} {'control':<22} arrived"]
    for (group, column), found in groups.items():
        counts = Counter(
            f"{r.outcome} {r.tier}" if r.outcome == OK else r.outcome
            for r in found
            if not r.canary.startswith("control")
        )
        outcomes = ", ".join(f"{outcome} x{n}" for outcome, n in counts.most_common())
        controls = [r for r in found if r.canary.startswith("control")]
        control = ", ".join(
            f"{r.outcome} {r.tier or ''}".strip() + (" ->public" if r.arrived else "")
            for r in controls[:1]
        )
        arrived = sorted(
            f"{r.canary} (known, xfail)" if (column, r.canary) in KNOWN_LEAKS else r.canary
            for r in found
            if set(r.arrived) - {"control"}
        )
        lines.append(
            f"{group + ': ' + column:<68} {outcomes:<34} {control:<22} {', '.join(arrived) or '-'}"
        )
    return "\n".join(lines)


@pytest.mark.integration
def test_nothing_arrived_anywhere(zone: PublicZone, capsys: pytest.CaptureFixture[str]) -> None:
    """Every byte every public recorder got, searched again (late ones included), and the
    outcome table. The mutation tests' cases and the known leaks are left out of the search."""
    with capsys.disabled():
        print(f"\n\nPrivacy proof: {len(zone.rows)} cases\n{render(zone.rows)}\n")
    known = {f"{column} | {key}" for column, key in KNOWN_LEAKS}
    found = [
        (name, tag, keys)
        for name, tag, body in zone.recorded()
        if not tag.startswith("mutation") and tag.split(" | ", 1)[-1] not in known
        for keys in [leaks(body, CANARIES)]
        if keys
    ]
    assert found == []
    for name, recorder in zone.public.items():
        assert any(leaks(body, (CONTROL,)) for _, body in recorder.requests), (
            f"no control reached {name}: is the recorder in the path?"
        )
