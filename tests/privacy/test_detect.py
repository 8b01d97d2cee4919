from __future__ import annotations

import pytest

from hybridinfer.privacy import detect as detect_module
from hybridinfer.privacy.detect import Detector, default_detector, detect
from hybridinfer.privacy.findings import Finding


def kinds(text: str) -> list[tuple[str, str]]:
    return [(finding.kind, finding.value) for finding in detect(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@example.co.uk now", [("EMAIL", "jane.doe+x@example.co.uk")]),
        ("card 4111 1111 1111 1111.", [("CARD", "4111 1111 1111 1111")]),
        ("card 5500-0000-0000-0004", [("CARD", "5500-0000-0000-0004")]),
        ("ssn 123-45-6789", [("SSN", "123-45-6789")]),
        ("call +44 20 7946 0958 today", [("PHONE", "+44 20 7946 0958")]),
        ("call (415) 555-2671", [("PHONE", "(415) 555-2671")]),
        ("call 415-555-2671", [("PHONE", "415-555-2671")]),
        ("host 192.168.10.254 up", [("IP", "192.168.10.254")]),
        ("it came from 203.0.113.77.", [("IP", "203.0.113.77")]),
        ("host 2001:db8::8a2e:370:7334 up", [("IP", "2001:db8::8a2e:370:7334")]),
        # The formats the hand-written patterns missed (libphonenumber, context words).
        ("4155550193", [("PHONE", "4155550193")]),
        ("020 7946 0123", [("PHONE", "020 7946 0123")]),
        ("SSN 536 22 4817", [("SSN", "536 22 4817")]),
        ("Rufen Sie 030 1234567 an", [("PHONE", "030 1234567")]),
        ("appelez le 06 12 34 56 78", [("PHONE", "06 12 34 56 78")]),
        ("+1-780-563-6083x7783", [("PHONE", "+1-780-563-6083x7783")]),
        # stdnum-validated identifiers.
        ("IBAN GB82 WEST 1234 5698 7654 32", [("IBAN", "GB82 WEST 1234 5698 7654 32")]),
        ("pay DE89370400440532013000 now", [("IBAN", "DE89370400440532013000")]),
        ("CPF 753.400.795-03", [("NATIONALID", "753.400.795-03")]),
        ("NIE X6782828J", [("NATIONALID", "X6782828J")]),
        ("DNI 55608283X", [("NATIONALID", "55608283X")]),
        ("NIR 183090240896237", [("NATIONALID", "183090240896237")]),
        ("CF BDRVNN28M71F348I", [("NATIONALID", "BDRVNN28M71F348I")]),
        ("Aadhaar 2345 6789 0124", [("NATIONALID", "2345 6789 0124")]),
        ("NINO AB 12 34 56 C", [("NINO", "AB 12 34 56 C")]),
        ("iban de89370400440532013000", [("IBAN", "de89370400440532013000")]),
        # National numbers with a checksum but no distinctive form: found where a word names them.
        ("Steuer-ID 65929970489", [("NATIONALID", "65929970489")]),
        ("mijn BSN is 111222333", [("NATIONALID", "111222333")]),
        ("PESEL 44051401359", [("NATIONALID", "44051401359")]),
        ("personnummer 880320-0016", [("NATIONALID", "880320-0016")]),
        ("CPR-nummer 211062-5629", [("NATIONALID", "211062-5629")]),
        ("SIN: 130 692 544", [("NATIONALID", "130 692 544")]),
        ("fødselsnummer 151086 95088", [("NATIONALID", "151086 95088")]),
        ("my tax file number is 123 456 782", [("NATIONALID", "123 456 782")]),
        ("NHS number 943 476 5919", [("NATIONALID", "943 476 5919")]),
        ("rijksregisternummer 85.07.30-033.28", [("NATIONALID", "85.07.30-033.28")]),
        ("주민등록번호 971013-9019902", [("NATIONALID", "971013-9019902")]),
        ("SA ID number 7503305044089", [("NATIONALID", "7503305044089")]),
        # Distinctive forms with a check character: found without a word.
        ("hetu 131052-308T ok", [("NATIONALID", "131052-308T")]),
        ("registro BOXW310820HNERXN09", [("NATIONALID", "BOXW310820HNERXN09")]),
    ],
)
def test_finds_each_kind(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


def test_chinese_text_needs_no_spaces_around_the_values() -> None:
    text = "您好，我的电话是13812345678，身份证号码440900198901224552，谢谢。"  # noqa: RUF001
    assert kinds(text) == [("PHONE", "13812345678"), ("NATIONALID", "440900198901224552")]


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112",  # fails Luhn
        "order 7911807944210807",  # passes Luhn, but no card network starts with 7
        "ssn 000-12-3456",  # invalid area
        "version 1.2.3.4.5 and 999.1.1.1",
        "at 12:30:45 on 2024-01-15",
        "shipped 01/06/2024 and 12.05.2023",
        "total 1234 items",
        "see C:\\dir and 1:2",
        "order 123456789",  # nine bare digits: no SSN without a word naming one
        "ref GB82 WEST 1234 5698 7654 33",  # fails mod 97, and no word says IBAN
        "NINO ZZ 12 34 56 C",  # a prefix HMRC never issues
        "build 2.14.1-rc3",
        # Checksummed national numbers without a word naming them are orders, not people.
        "order 111222333 and invoice 44051401359",
        # Prose around "at" and full stops is not a written-out address.
        "look at example.com for the docs",
        "I am at home. Then we go",
        "meet @ 5pm. Then lunch",
        "she smiled at him dot dot dot",
        "dot the i's and cross the t's",
        "y = weights @ inputs.transpose() + bias",  # a matrix product, not an address
        "return a @ b.T",
        # Ids: a digit run glued to letters, or a UUID's all-digit groups, read as a phone
        # number, a card or an ID before (each of these was taken for one).
        "commit 0820465761be fixed it",
        "id 08961759f46b4b62932ecc290fbc05ed",
        "trace 0517441d-38da-477b-a522-908d1e29afc4",
        "trace dd4d7e03-0686-4580-8ac7-020957bc8c94",
        "job 1F8C5A7C-3664-4180-9181-CC71BB6E4728 failed",
        "trace 2cff9c0d-5749-4205-9662-b9507af7e6b9",
    ],
)
def test_ignores_lookalikes(text: str) -> None:
    assert kinds(text) == []


def test_values_beside_an_id_or_glued_to_another_script_are_still_found() -> None:
    text = "job 0517441d-38da-477b-a522-908d1e29afc4: call 020 7946 0958, card 4111111111111111"
    assert kinds(text) == [("PHONE", "020 7946 0958"), ("CARD", "4111111111111111")]
    assert kinds("电话13812345678请回电") == [("PHONE", "13812345678")]


def test_several_in_order() -> None:
    text = "Mail a@b.io, call +1 415 555 2671, pay with 4111111111111111."
    assert [kind for kind, _ in kinds(text)] == ["EMAIL", "PHONE", "CARD"]


def test_a_recogniser_switched_off_finds_nothing_of_its_kind() -> None:
    text = "call 415-555-2671 or mail a@b.io"
    assert [f.kind for f in default_detector().without("PHONE").detect(text)] == ["EMAIL"]


def test_findings_name_the_format_that_matched() -> None:
    [finding] = detect("身份证440900198901224552")
    assert finding.scheme == "cn.ric"


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("write to jane.doe [at] example [dot] com please", "jane.doe [at] example [dot] com"),
        ("JANE.DOE(AT)EXAMPLE.COM", "JANE.DOE(AT)EXAMPLE.COM"),
        ("reach john.doe at gmail dot com", "john.doe at gmail dot com"),
        ("reach me: jane . doe @ example . com", "jane . doe @ example . com"),
        ("bob[@]foo[.]io", "bob[@]foo[.]io"),
        # "me at jane dot doe" ends in no domain: the address is the run that does.
        (
            "mail me at jane dot doe at example dot co dot uk",
            "jane dot doe at example dot co dot uk",
        ),
        # Where two runs end in a domain, which "at" is the address's cannot be told: both.
        ("write jane at home dot de at example dot com", "jane at home dot de at example dot com"),
    ],
)
def test_finds_addresses_written_out_to_dodge_a_scraper(text: str, written: str) -> None:
    assert kinds(text) == [("EMAIL", written)]


def test_a_written_out_address_is_found_beside_digits_and_a_plain_one() -> None:
    text = "mail 5 jane@example.com and bob [at] foo [dot] io"
    assert kinds(text) == [("EMAIL", "jane@example.com"), ("EMAIL", "bob [at] foo [dot] io")]


def test_a_word_that_begins_like_a_naming_word_does_not_name_a_national_number() -> None:
    # "since" is not "SIN"; (the nine digits may still read as a phone number somewhere)
    assert "NATIONALID" not in [kind for kind, _ in kinds("since 130 692 544 units shipped")]
    assert kinds("SIN 130 692 544") == [("NATIONALID", "130 692 544")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4111\u200b1111\u200b1111\u200b1111", ("CARD", "4111\u200b1111\u200b1111\u200b1111")),
        ("card 4111\u00a01111\u00a01111\u00a01111", ("CARD", "4111\u00a01111\u00a01111\u00a01111")),
        ("card 4111\u20131111\u20131111\u20131111", ("CARD", "4111\u20131111\u20131111\u20131111")),
        ("mail jane\u200b.doe@example.com", ("EMAIL", "jane\u200b.doe@example.com")),
        ("mail jane.doe\uff20example.com", ("EMAIL", "jane.doe\uff20example.com")),
        ("call +1\u00a0415\u00a0555\u00a02671", ("PHONE", "+1\u00a0415\u00a0555\u00a02671")),
        ("call 415\u2011555\u20112671", ("PHONE", "415\u2011555\u20112671")),
        ("ssn 078\u201305\u20131120", ("SSN", "078\u201305\u20131120")),
        ("ip 192\u2024168\u20241\u202420", ("IP", "192\u2024168\u20241\u202420")),
        # Escaped as in a URL or in HTML.
        ("unsubscribe?email=jane%40example.com", ("EMAIL", "jane%40example.com")),
        ("jane&#64;example&#46;com", ("EMAIL", "jane&#64;example&#46;com")),
        # Tag characters (invisible copies of ASCII) and a soft hyphen inside the value.
        (
            "iban DE89\U000e0041370400440532\u00ad013000",
            ("IBAN", "DE89\U000e0041370400440532\u00ad013000"),
        ),
    ],
)
def test_look_alike_and_invisible_characters_do_not_hide_a_value(
    text: str, expected: tuple[str, str]
) -> None:
    # The finding is the original's span and characters: what a pseudonymiser must replace.
    [finding] = detect(text)
    assert (finding.kind, finding.value) == expected
    assert text[finding.start : finding.end] == finding.value


class Counting:
    """A recogniser of the word "secret" that counts the texts it reads."""

    kind = "EMAIL"

    def __init__(self) -> None:
        self.reads = 0

    def find(self, text: str, taken: object = ()) -> list[Finding]:
        self.reads += 1
        start = text.find("secret")
        return [] if start < 0 else [Finding("EMAIL", start, start + 6, "secret")]


def test_a_clean_text_is_scanned_once_and_a_text_with_values_every_time() -> None:
    counting = Counting()
    detector = Detector([counting])
    for _ in range(3):
        assert detector.detect("mail me at 12 @ noon") == []
    assert counting.reads == 1
    for _ in range(3):
        assert [f.value for f in detector.detect("the secret 42 @")] == ["secret"]
    assert counting.reads == 4
    assert detector.scan("mail me at 12 @ noon") == []
    assert counting.reads == 5


def test_the_memo_keeps_digests_not_texts_and_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(detect_module, "CLEAN_MEMO_SIZE", 8)
    detector = Detector([Counting()])
    for number in range(20):
        detector.detect(f"call 555 {number} @")
    memo = detector._clean
    assert len(memo) == 8
    assert all(isinstance(key, bytes) and len(key) == 16 for key in memo)
    assert not any(b"555" in key for key in memo)
