from __future__ import annotations

import json

from hybridinfer.decompose.privacy import strings_in
from hybridinfer.privacy.conversation import redact_inputs
from hybridinfer.privacy.detect import detect
from hybridinfer.privacy.pseudonym import Pseudonymiser

EMAIL = "jane@example.com"


def test_every_field_of_every_turn_is_replaced_under_one_mapping() -> None:
    inputs = {
        "messages": [
            {"role": "system", "content": f"The user is {EMAIL}."},
            {"role": "user", "content": [{"type": "text", "text": f"mail {EMAIL} or 4155550193"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "1",
                        "type": "function",
                        # an escaped @ hides nothing: JSON in strings is parsed and walked
                        "function": {
                            "name": "send",
                            "arguments": '{"to": "jane\\u0040example.com"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "1", "content": json.dumps({EMAIL: "sent"})},
        ],
        "max_tokens": 4155550193,
        "temperature": 0.2,
    }
    mapping = Pseudonymiser()
    sent = redact_inputs(mapping, inputs)
    assert not [f for text in strings_in(sent) for f in detect(text)]
    assert sent["messages"][0]["content"] == "The user is <EMAIL_1>."
    assert sent["messages"][1]["content"][0]["text"] == "mail <EMAIL_1> or <PHONE_1>"
    arguments = sent["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments) == {"to": "<EMAIL_1>"}
    assert json.loads(sent["messages"][3]["content"]) == {"<EMAIL_1>": "sent"}
    assert sent["max_tokens"] == "<PHONE_1>"
    assert sent["temperature"] == 0.2
    assert mapping.describe() == {"EMAIL": 1, "PHONE": 1}
    assert mapping.restore(sent["messages"][0]["content"]) == inputs["messages"][0]["content"]


def test_a_field_without_personal_data_is_unchanged() -> None:
    inputs = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 8, "stop": ["\n"]}
    assert redact_inputs(Pseudonymiser(), inputs) == inputs
