"""The privacy benchmark's corpus and scorer (``bench/privacy.py``), on a small corpus: the
figures it publishes must not break silently."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bench.privacy import (
    NOT_A_NINO,
    PATTERN_KINDS,
    VALID,
    Label,
    Sample,
    corpus,
    decoys,
    score,
)
from bench.privacydisguise import DISGUISES, disguised, disguised_section

from hybridinfer.privacy.detect import Finding, default_detector


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return corpus(n=4)


def exact(samples: list[Sample], kind: str | None = None) -> Callable[[str], list[Finding]]:
    """A finder that answers each sample's labels (as ``kind`` if given): a perfect detector."""
    by_text = {sample.text: sample.labels for sample in samples}

    def find(text: str) -> list[Finding]:
        return [
            Finding(kind or label.kind, label.start, label.end, label.value)
            for label in by_text.get(text, ())
        ]

    return find


def test_labels_point_at_their_values(samples: list[Sample]) -> None:
    assert len(samples) > 200
    for sample in samples:
        for label in sample.labels:
            assert sample.text[label.start : label.end] == label.value
    assert corpus(n=4) == samples  # a fixed seed: the same corpus each time


def test_values_their_library_refuses_are_kept_in_rows_of_their_own(
    samples: list[Sample],
) -> None:
    validities = {(label.scheme, label.validity) for s in samples for label in s.labels}
    assert ("gb.nino", NOT_A_NINO) in validities
    assert any(scheme == "in.aadhaar" and "InvalidChecksum" in v for scheme, v in validities)
    report = score(samples, exact(samples), PATTERN_KINDS).report()
    assert any(key.startswith("NINO gb.nino en_GB: not a NINO") for key in report["invalid"])
    valid_ninos = sum(
        1 for s in samples for lb in s.labels if lb.kind == "NINO" and lb.validity == VALID
    )
    assert report["kinds"]["NINO"]["n"] == valid_ninos


def test_a_perfect_finder_scores_one(samples: list[Sample]) -> None:
    report = score([*samples, *decoys(3)], exact(samples), PATTERN_KINDS).report()
    for kind in PATTERN_KINDS:
        row = report["kinds"][kind]
        assert row["n"] > 0, kind
        assert row["recall"] == 1.0, kind
        assert row["precision"] == 1.0, kind
    assert all(row["flagged"] == 0 for row in report["decoys"].values())
    assert report["errors"]["count"] == 0


def test_a_finding_of_another_kind_is_caught_but_not_right() -> None:
    text = "Call me on +44 20 7946 0958."
    label = Label("PHONE", 11, 27, "+44 20 7946 0958", "en_GB", "phone.gb", "international",
                  "named", VALID)  # fmt: skip
    sample = Sample(text, "en_GB", (label,))
    report = score([sample], exact([sample], kind="CARD"), PATTERN_KINDS).report()
    assert report["kinds"]["PHONE"]["recall"] == 0.0
    assert report["kinds"]["PHONE"]["recall_any_kind"] == 1.0
    assert report["kinds"]["CARD"]["precision"] == 0.0
    assert report["kinds"]["CARD"]["precision_any_kind"] == 1.0


def test_a_finding_on_a_decoy_is_false_and_a_crash_is_counted() -> None:
    decoy = Sample("Your order 4711 has shipped.", "en", decoy="order number")
    crash = Sample("boom 1", "en", decoy="order number")

    def find(text: str) -> list[Finding]:
        if text.startswith("boom"):
            raise ValueError("boom")
        return [Finding("PHONE", 11, 15, "4711")]

    report = score([decoy, crash], find, PATTERN_KINDS).report()
    assert report["kinds"]["PHONE"]["precision"] == 0.0
    assert report["kinds"]["PHONE"]["false"] == 1
    assert report["decoys"]["order number"] == {
        **report["decoys"]["order number"],
        "n": 2,
        "flagged": 1,
    }
    assert report["errors"]["count"] == 1


def test_phone_recall_follows_the_phone_recogniser(samples: list[Sample]) -> None:
    phones = [s for s in samples if s.labels[0].kind == "PHONE"]
    off = score(phones, default_detector().without("PHONE").detect, PATTERN_KINDS).report()
    assert off["kinds"]["PHONE"]["n"] > 20
    assert off["kinds"]["PHONE"]["recall"] == 0.0
    assert off["kinds"]["PHONE"]["findings"] == 0
    # The forms libphonenumber itself writes, valid numbers: the full detector finds them.
    written = [s for s in phones if s.labels[0].form in ("national", "international")]
    on = score(written, default_detector().detect, PATTERN_KINDS).report()
    assert on["kinds"]["PHONE"]["n"] >= 10
    assert on["kinds"]["PHONE"]["recall"] > 0.9


def test_disguised_labels_point_at_their_rewritten_values(samples: list[Sample]) -> None:
    for name, disguise in DISGUISES.items():
        rewritten = list(disguised(samples, disguise))
        assert rewritten, name
        for sample in rewritten:
            [label] = sample.labels
            assert sample.text[label.start : label.end] == label.value
            assert label.value not in {s.labels[0].value for s in samples if s.labels}


def test_the_disguised_section_tells_folded_from_as_written(samples: list[Sample]) -> None:
    section = disguised_section(samples, default_detector(), ("EMAIL", "CARD"))
    zero_width = section["zero-width inside"]
    # A zero-width space splits every value for the recognisers that read the text as written.
    assert zero_width["folded"]["CARD"]["recall"] > 0.9
    assert zero_width["as written"]["CARD"]["recall"] < 0.1
    assert section["written out"]["folded"]["EMAIL"]["recall"] == 1.0
