from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hybridinfer.privacy.findings import Finding
from hybridinfer.privacy.pseudonym import Pseudonymiser
from hybridinfer.privacy.restore import AnswerRestorer, StreamRestorer

TEXT = "mail jane@example.com or call +44 20 7946 0958, card 4111 1111 1111 1111"


def mapping() -> Pseudonymiser:
    issued = Pseudonymiser()
    assert issued.redact(TEXT) == "mail <EMAIL_1> or call <PHONE_1>, card <CARD_1>"
    return issued


def test_a_split_placeholder_waits_only_until_whole() -> None:
    stream = StreamRestorer(mapping())
    assert stream.feed("Hi <EM") == "Hi "
    assert stream.holding == 3
    assert stream.feed("AIL") == ""
    assert stream.feed("_1> now") == "jane@example.com now"
    assert stream.holding == 0
    assert stream.flush() == ""


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=6))
def test_any_split_restores_the_whole(cuts: list[int]) -> None:
    answer = "Yes: <EMAIL_1>, [phone_1] and < CARD _1 >; not <EMAIL_7>. Ph and I."
    stream = StreamRestorer(mapping())
    bounds = sorted({0, len(answer), *[min(c, len(answer)) for c in cuts]})
    out = "".join(stream.feed(answer[a:b]) for a, b in itertools.pairwise(bounds))
    out += stream.flush()
    expected = "Yes: jane@example.com, +44 20 7946 0958 and 4111 1111 1111 1111; not <EMAIL_7>. "
    assert out == expected + "Ph and I."


def test_an_unissued_placeholder_is_left_and_counted() -> None:
    issued = mapping()
    assert (
        issued.restore_text("see <EMAIL_4> and <EMAIL_1>") == "see <EMAIL_4> and jane@example.com"
    )
    assert issued.outcome() == {
        "kinds": {"EMAIL": 1, "PHONE": 1, "CARD": 1},
        "values": 3,
        "restored": 1,
        "unissued": 1,
    }


def chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    body = dict(delta)
    if content is not None:
        body["content"] = content
    return {"delta": body, "finish_reason": finish, "usage": None}


def test_an_answer_restores_text_and_tool_call_arguments() -> None:
    answer = AnswerRestorer(mapping())
    pieces = [
        chunk("Sending to <EMAIL", role="assistant"),
        chunk("_1"),
        chunk(
            tool_calls=[
                {"index": 0, "id": "c", "function": {"name": "send", "arguments": '{"to": "<EM'}}
            ]
        ),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": 'AIL_1>"}'}}]),
        chunk(finish="tool_calls"),
    ]
    out = [answer.piece(piece) for piece in pieces]
    assert out[0] == chunk("Sending to ", role="assistant")
    assert out[1] is None  # all it carried is held
    content = "".join((p or {}).get("delta", {}).get("content") or "" for p in out)
    arguments = "".join(
        call["function"].get("arguments", "")
        for p in out
        if p is not None
        for call in p["delta"].get("tool_calls") or []
    )
    assert content == "Sending to jane@example.com"
    assert json.loads(arguments) == {"to": "jane@example.com"}
    assert out[-1] is not None
    assert out[-1]["finish_reason"] == "tool_calls"


def test_values_in_arguments_are_json_escaped() -> None:
    name = 'Ann "the" Lee'  # a value a JSON string must escape

    def names(text: str) -> list[Finding]:
        start = text.find(name)
        return [] if start < 0 else [Finding("NAME", start, start + len(name), name)]

    issued = Pseudonymiser(find_more=names)
    assert issued.redact(f"ask {name}") == "ask <NAME_1>"
    restored = issued.restore({"arguments": '{"who": "<NAME_1>"}', "content": "<NAME_1>"})
    assert json.loads(restored["arguments"]) == {"who": name}
    assert restored["content"] == name


def test_the_end_of_an_answer_without_a_finish_flushes() -> None:
    answer = AnswerRestorer(mapping())
    assert answer.piece(chunk("call <PHONE_1")) == chunk("call ")
    assert answer.finish() == "+44 20 7946 0958"
