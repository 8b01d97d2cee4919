"""Decomposition + redaction overhead per request (model time excluded by construction: no
model is called).

  rule_plan   — ``Decomposer.plan`` for a one-step ``sentiment`` request (the privacy scan of
                the text included);
  composite   — ``redact_and_summarize``: plan + redact step + restore step on a ~600-char text
                holding an email, a phone number and a card number.
NER (names, places; Presidio on spaCy's small English model, the `ner` extra) is timed apart:
the redact step with the model on the same text, 500 rounds, model loaded first.

Recall and precision of the detection, per kind and locale, are measured by
``bench/privacy.py`` (a multi-locale Faker corpus and decoys; bench/results/privacy.json).
Writes bench/results/decompose.json.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.harness import percentiles, write_result
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.privacy.ner import NameFinder
from hybridinfer.privacy.pseudonym import redact_step, restore_step

ROUNDS = 5000
TEXT = (
    "Hello team, following up on the March invoice. Jane Doe wrote from jane.doe@example.com "
    "and asked us to call her back on +1 415 555 2671 before Friday. She says the card "
    "4111 1111 1111 1111 was declined twice although the limit was not reached. The shipment "
    "left the warehouse on Monday and should arrive within three working days. Please check "
    "the payment logs, refund the duplicate charge and confirm by email. Everything else about "
    "the order looks fine, and the customer was happy with the support she received."
)


def timed(function: Callable[[], object], rounds: int = ROUNDS) -> dict[str, float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000.0)
    return percentiles(samples)


def overhead() -> dict[str, dict[str, float]]:
    decomposer = Decomposer(load_rules(default_rules_path()))

    def rule_plan() -> None:
        decomposer.plan("sentiment", {"text": TEXT}, None)

    def composite() -> None:
        decomposer.plan("redact_and_summarize", {"text": TEXT}, None)
        redacted = redact_step({"text": TEXT})
        restore_step({"text": redacted["text"], "pseudonyms": redacted["pseudonyms"]})

    for function in (rule_plan, composite):  # warm up
        for _ in range(200):
            function()
    return {"rule_plan_ms": timed(rule_plan), "composite_plan_and_redaction_ms": timed(composite)}


def ner_cost() -> dict[str, object]:
    if not NameFinder.available():
        return {"installed": False}
    finder = NameFinder()
    finder.find(TEXT)  # load the model

    def redact_with_names() -> None:
        redact_step({"text": TEXT}, find_more=finder.find)

    found = sorted({(f.kind, f.value) for f in finder.find(TEXT)})
    return {"installed": True, "redact_step_ms": timed(redact_with_names, 500), "found": found}


def main() -> None:
    result = {
        "overhead": overhead(),
        "redaction": {"see": "bench/results/privacy.json (python -m bench.privacy)"},
        "ner": ner_cost(),
    }
    path = write_result("decompose", result)
    print(path.read_text())


if __name__ == "__main__":
    main()
