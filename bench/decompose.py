"""Decomposition + redaction overhead per request, and redaction recall/precision.

Overhead (model time excluded by construction: no model is called):
  rule_plan   — ``Decomposer.plan`` for a one-step ``sentiment`` request (the privacy scan of
                the text included);
  composite   — ``redact_and_summarize``: plan + redact step + restore step on a ~600-char text
                holding an email, a phone number and a card number.
Recall/precision: a labelled sample generated from public patterns with a fixed seed — emails
on reserved example domains, NANP 555 numbers and Ofcom drama numbers (+44 20 7946 0xxx),
the payment networks' published test card numbers, SSNs in the valid ranges, IPv4 and the
IPv6 documentation prefix 2001:db8::/32 — plus look-alike decoys (non-Luhn 16-digit numbers,
dates, times, versions, invalid SSNs and octets) and UK national-format numbers, which the
detector does not claim to find (they count as misses). A hit counts if kind and value match.
NER (names, places; spaCy en_core_web_sm, the `ner` extra) is timed apart: the redact step
with the model on the same text, 500 rounds, model loaded first.
Writes bench/results/decompose.json.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

from bench.harness import percentiles, write_result
from hybridinfer.decompose.decomposer import Decomposer
from hybridinfer.decompose.rules import default_rules_path, load_rules
from hybridinfer.privacy.detect import detect
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
TEST_CARDS = [
    "4111111111111111",
    "4012888888881881",
    "5555555555554444",
    "5105105105105100",
    "378282246310005",
    "371449635398431",
    "6011111111111117",
    "3530111333300000",
]


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


def positive(rng: random.Random) -> tuple[str, str] | None:
    """One labelled value (kind, text), or None for a value the detector does not claim."""
    kind = rng.choice(["EMAIL", "PHONE", "CARD", "SSN", "IP", "IP6", "UKPHONE"])
    if kind == "EMAIL":
        user = rng.choice(["jane.doe", "j_smith", "ops+alerts", "li.wei", "m.garcia99"])
        return kind, f"{user}@{rng.choice(['example.com', 'example.org', 'mail.example.net'])}"
    if kind == "PHONE":
        line = f"{rng.randrange(10000):04d}"
        formats = [f"(415) 555-{line}", f"415-555-{line}", f"+1 415 555 {line}"]
        return kind, rng.choice([*formats, f"+44 20 7946 0{line[1:]}"])
    if kind == "CARD":
        digits = rng.choice(TEST_CARDS)
        separator = rng.choice(["", " ", "-"])
        groups = [digits[i : i + 4] for i in range(0, len(digits), 4)]
        return kind, separator.join(groups)
    if kind == "SSN":
        area, group, serial = rng.randrange(1, 665), rng.randrange(1, 100), rng.randrange(1, 10000)
        return kind, f"{area:03d}-{group:02d}-{serial:04d}"
    if kind == "IP":
        return kind, ".".join(str(rng.randrange(1, 255)) for _ in range(4))
    if kind == "IP6":
        return "IP", f"2001:db8:{rng.randrange(65536):x}::{rng.randrange(65536):x}"
    return "PHONE", f"020 7946 0{rng.randrange(1000):03d}"  # UK national format: not claimed


def decoy(rng: random.Random) -> str:
    choices = [
        f"order {rng.randrange(10**15, 10**16)}",
        f"on 2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        f"at {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}",
        f"version {rng.randrange(10)}.{rng.randrange(10)}.{rng.randrange(10)}",
        f"id 000-{rng.randrange(100):02d}-{rng.randrange(10000):04d}",
        f"host 999.{rng.randrange(256)}.1.1",
        f"total ${rng.randrange(100, 99999)}.{rng.randrange(100):02d}",
        f"room {rng.randrange(100, 999)}",
    ]
    return rng.choice(choices)


def accuracy(samples: int = 2000, seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    for _ in range(samples):
        value = positive(rng)
        assert value is not None
        kind, text = value
        sentence = f"Please note {text} and {decoy(rng)} for the file."
        truth = {(kind, text)}
        found = {(finding.kind, finding.value) for finding in detect(sentence)}
        counts["tp"] += len(found & truth)
        counts["fp"] += len(found - truth)
        counts["fn"] += len(truth - found)
        counts[f"fn_{kind}"] += len(truth - found)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    return {
        "samples": samples,
        "seed": seed,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4),
        "counts": dict(counts),
    }


def main() -> None:
    result = {"overhead": overhead(), "redaction": accuracy(), "ner": ner_cost()}
    path = write_result("decompose", result)
    print(path.read_text())


if __name__ == "__main__":
    main()
