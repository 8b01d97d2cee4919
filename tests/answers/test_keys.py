"""Filing a call: canonical inputs, the prompt apart from the rest, namespaces."""

from __future__ import annotations

from hybridinfer.answers.keys import PLACEHOLDER, canonical, file_call, namespace_of, split_prompt


def test_canonical_inputs_ignore_key_order_whitespace_and_absent_values() -> None:
    first = file_call("t/_/c/", "m:1@local", {"text": " hi ", "x": None, "y": 1}, False)
    second = file_call("t/_/c/", "m:1@local", {"y": 1, "text": "hi"}, False)
    assert first.key == second.key
    assert canonical({"a": [" b "], "c": None}) == {"a": ["b"]}


def test_the_model_version_and_the_namespace_are_part_of_the_key() -> None:
    inputs = {"text": "hi"}
    keys = {
        file_call("t/_/c/", "m:1@local", inputs, False).key,
        file_call("t/_/c/", "m:2@local", inputs, False).key,
        file_call("t/_/c/", "m:1@cloud", inputs, False).key,
        file_call("u/_/c/", "m:1@local", inputs, False).key,
    }
    assert len(keys) == 4


def test_a_chat_is_indexed_by_everything_but_its_last_user_message() -> None:
    def chat(text: str, temperature: float = 0.0) -> dict[str, object]:
        messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]
        return {"messages": messages, "temperature": temperature}

    first = file_call("t/_/chat/", "m:1@cloud", chat("What is 2 + 2?"), True)
    second = file_call("t/_/chat/", "m:1@cloud", chat("Calculate 2 + 2"), True)
    hotter = file_call("t/_/chat/", "m:1@cloud", chat("Calculate 2 + 2", 0.5), True)
    assert first.key != second.key
    assert first.index == second.index != hotter.index
    assert second.prompt == "Calculate 2 + 2"
    prompt, rest = split_prompt({"question": "why?", "passages": ["p"]})
    assert prompt == "why?"
    assert rest == {"question": PLACEHOLDER, "passages": ["p"]}


def test_namespaces_nest_scope_under_tenant() -> None:
    assert namespace_of("k1", None, "chat") == "k1/_/chat/"
    assert namespace_of("k1", "team-a", "chat") == "k1/team-a/chat/"
