"""Checksummed identifiers, validated by ``python-stdnum``: payment cards (Luhn plus each
network's number ranges and lengths), IBANs (ISO 13616 mod 97, in either case) and national
identifiers — the Chinese resident identity number, Indian Aadhaar, Brazilian CPF, French NIR,
Spanish DNI and NIE, Italian codice fiscale, Finnish HETU and Mexican CURP on their own; the
German tax id, Dutch BSN, Polish PESEL, Swedish, Danish and Norwegian personal numbers,
Korean RRN, South African id, Canadian SIN, Australian TFN, UK NHS number and Belgian
national number when a word names them (bare digits with a checksum are as often an order or
an account number).

A checksum makes a hit precise: a 16-digit order number that fails Luhn is not a card. Where
stdnum checks more than the number carries reliably (the Chinese number's county code against
a list that changes with each redistricting), only the checksum and the birth date are
checked. A candidate never starts or ends inside a longer group of digits, nor after a ``+``
(that is a phone number's country code).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stdnum import iban, luhn
from stdnum.au import tfn
from stdnum.be import nn
from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.cn import ric
from stdnum.de import idnr
from stdnum.dk import cpr
from stdnum.es import dni, nie
from stdnum.exceptions import ValidationError
from stdnum.fi import hetu
from stdnum.fr import nir
from stdnum.gb import nhs
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.kr import rrn
from stdnum.mx import curp
from stdnum.nl import bsn
from stdnum.no import fodselsnummer
from stdnum.pl import pesel
from stdnum.se import personnummer
from stdnum.za import idnr as za_idnr

from hybridinfer.privacy.recogniser import PatternRecogniser, digits_of

BEFORE = r"(?<![0-9A-Za-z+])(?<![0-9][ .-])"
AFTER = r"(?![0-9A-Za-z])(?![ .-][0-9])"
"""Boundaries of a digit identifier: not inside a word, a longer digit group or after ``+``."""

CARD_NETWORKS = (
    (re.compile(r"4"), (13, 16, 19)),  # Visa
    (re.compile(r"5[1-5]|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)"), (16,)),  # Mastercard
    (re.compile(r"3[47]"), (15,)),  # American Express
    (re.compile(r"30[0-5]|3[689]"), tuple(range(14, 20))),  # Diners Club
    (re.compile(r"35"), tuple(range(16, 20))),  # JCB (3528-3589; 35xx as issuers print it)
    (re.compile(r"1800|2131"), (15,)),  # JCB, 15 digits
    (re.compile(r"6011|64[4-9]|65|62"), tuple(range(16, 20))),  # Discover, UnionPay
    (re.compile(r"220[0-4]"), tuple(range(16, 20))),  # Mir
    (re.compile(r"9792"), (16,)),  # Troy
    (re.compile(r"5[06-8]|6|0604"), tuple(range(12, 20))),  # Maestro
)
"""Leading digits of each payment network and the lengths its numbers have."""


def card_number(value: str) -> bool:
    """Whether ``value`` is a payment card number: a network's prefix and length, and Luhn."""
    digits = digits_of(value)
    return any(
        prefix.match(digits) and len(digits) in lengths for prefix, lengths in CARD_NETWORKS
    ) and bool(luhn.is_valid(digits))


def _cn_ric(value: str) -> bool:
    number = digits_of(value) + ("X" if value[-1:] in "Xx" else "")
    if len(number) != 18:
        return False
    try:
        ric.get_birth_date(number)
        return bool(ric.calc_check_digit(number) == number[-1].upper())
    except (ValidationError, ValueError):
        return False


CARD_WORDS = (
    "card", "visa", "mastercard", "maestro", "amex", "paid with", "pay with", "charge",
    "karte", "kreditkarte", "bezahlt", "carte", "payé avec", "tarjeta", "pagué con", "carta",
    "pagato con", "cartão", "paguei com", "卡号", "信用卡", "银行卡",
)  # fmt: skip
_CARD_FORMS = (
    r"\d{13,19}",
    r"\d{4}([ -])(?:\d{3,6}\1){1,3}\d{1,6}",  # 4-4-4-4, 4-6-5, 4-4-4-1 …: networks print many
)
WORD_START, WORD_END = r"(?<![0-9A-Za-z])", r"(?![0-9A-Za-z])"
LETTERED_NATIONAL_NUMBERS: tuple[
    tuple[str, str, Callable[[str], bool], tuple[str, ...]], ...
] = (
    ("es.dni", r"\d{8}-?[A-Za-z]", dni.is_valid, ("dni", "nif")),
    ("es.nie", r"[XYZxyz]-?\d{7}-?[A-Za-z]", nie.is_valid, ("nie",)),
    ("it.codicefiscale", r"[A-Za-z]{6}\d{2}[A-Za-z]\d{2}[A-Za-z]\d{3}[A-Za-z]",
     codicefiscale.is_valid, ("codice fiscale",)),
    ("fi.hetu", r"\d{6}[-+A-FU-Ya-fu-y]\d{3}[0-9A-Ya-y]", hetu.is_valid,
     ("henkilötunnus", "hetu", "personbeteckning")),
    ("mx.curp", r"[A-Za-z]{4}\d{6}[HMXhmx][A-Za-z]{5}[0-9A-Za-z]\d", curp.is_valid, ("curp",)),
)  # fmt: skip
"""National numbers with letters in a form of their own: found alone when the validator
accepts them, or named by a word."""

NAMED_NATIONAL_NUMBERS: tuple[tuple[str, str, Callable[[str], bool], tuple[str, ...]], ...] = (
    ("de.idnr", r"\d{2} ?\d{3} ?\d{3} ?\d{3}", idnr.is_valid,
     ("steuer-id", "steuer id", "steueridentifikationsnummer", "identifikationsnummer", "idnr",
      "tax id")),
    ("nl.bsn", r"\d{4}\.?\d{2}\.?\d{3}|\d{3} ?\d{3} ?\d{3}", bsn.is_valid,
     ("bsn", "burgerservicenummer", "sofinummer")),
    ("pl.pesel", r"\d{11}", pesel.is_valid, ("pesel",)),
    ("se.personnummer", r"(?:\d{2})?\d{6}[-+]?\d{4}", personnummer.is_valid,
     ("personnummer", "personnr", "personal identity number")),
    ("dk.cpr", r"\d{6}-?\d{4}", cpr.is_valid, ("cpr", "personnummer")),
    ("no.fodselsnummer", r"\d{6} ?\d{5}", fodselsnummer.is_valid,
     ("fødselsnummer", "fodselsnummer", "personnummer")),
    ("kr.rrn", r"\d{6}-?\d{7}", rrn.is_valid, ("주민등록번호", "resident registration", "rrn")),
    ("za.idnr", r"\d{6} ?\d{4} ?\d{3}", za_idnr.is_valid,
     ("id number", "identity number", "sa id")),
    # "sin" alone would be the start of "since" and "single".
    ("ca.sin", r"\d{3}[ -]?\d{3}[ -]?\d{3}", sin.is_valid,
     ("sin ", "sin:", "sin#", "social insurance", "assurance sociale")),
    ("au.tfn", r"\d{3} ?\d{3} ?\d{2,3}", tfn.is_valid, ("tfn", "tax file number")),
    ("gb.nhs", r"\d{3}[ -]?\d{3}[ -]?\d{4}", nhs.is_valid, ("nhs",)),
    ("be.nn", r"\d{2}\.?\d{2}\.?\d{2}[-.]?\d{3}\.?\d{2}", nn.is_valid,
     ("rijksregisternummer", "numéro national", "national number", "registre national", "insz",
      "niss")),
)  # fmt: skip
"""National numbers whose digits carry a checksum but no form of their own: (scheme, pattern,
stdnum validator, the words that name one). A hit needs a naming word and the checksum."""

RECOGNISERS = (
    PatternRecogniser(
        "IBAN",
        "iban",
        # Upper case as printed; lower case compact, or in groups ending in digits (a word
        # after the number must not join its last group and fail the checksum).
        re.compile(
            r"(?<![A-Za-z0-9])(?:[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"
            r"|[a-z]{2}\d{2}(?:[a-z0-9]{4}){2,7}[a-z0-9]{0,4}"
            r"|[a-z]{2}\d{2}(?: [a-z0-9]{4}){2,7}(?: \d{1,4})?)(?![A-Za-z0-9])"
        ),
        lambda value: bool(iban.is_valid(value)),
        context=("iban",),
    ),
    PatternRecogniser(
        "NATIONALID",
        "cn.ric",
        re.compile(BEFORE + r"\d{6} ?\d{8} ?\d{3}[0-9Xx]" + AFTER),
        _cn_ric,
        context=("身份证", "身份号码", "公民身份号码", "identity card", "resident id", "id number"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "in.aadhaar",
        re.compile(BEFORE + r"\d{4}([ -]?)\d{4}\1\d{4}" + AFTER),
        lambda value: bool(aadhaar.is_valid(value)),
        context=("aadhaar", "uidai", "uid", "आधार"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "br.cpf",
        re.compile(BEFORE + r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}" + AFTER),
        lambda value: bool(cpf.is_valid(value)),
        context=("cpf",),
    ),
    PatternRecogniser(
        "NATIONALID",
        "fr.nir",
        re.compile(
            BEFORE + r"[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3}"
            r" ?\d{2}" + AFTER
        ),
        lambda value: bool(nir.is_valid(value)),
        context=("sécurité sociale", "securite sociale", "nir", "insee", "n° ss"),
    ),
    *(
        PatternRecogniser(
            "NATIONALID", scheme, re.compile(f"{WORD_START}{form}{WORD_END}"), valid, words
        )
        for scheme, form, valid, words in LETTERED_NATIONAL_NUMBERS
    ),
    *(
        PatternRecogniser(
            "NATIONALID", scheme, re.compile(f"{BEFORE}(?:{form}){AFTER}"), valid, words, True
        )
        for scheme, form, valid, words in NAMED_NATIONAL_NUMBERS
    ),
    PatternRecogniser(
        "CARD",
        "card",
        re.compile(BEFORE + "(?:" + "|".join(_CARD_FORMS) + ")" + AFTER),
        card_number,
        context=CARD_WORDS,
    ),
    PatternRecogniser(  # 12 digits are as often an Aadhaar or an order: only named a card
        "CARD",
        "card.maestro",
        re.compile(BEFORE + r"\d{4}([ -]?)\d{4}\1\d{4}" + AFTER),
        card_number,
        context=CARD_WORDS,
        needs_context=True,
    ),
)
