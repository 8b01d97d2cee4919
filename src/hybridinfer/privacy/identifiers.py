"""Checksummed identifiers, validated by ``python-stdnum``: payment cards (Luhn plus the
issuers' number ranges), IBANs (ISO 13616 mod 97) and national identifiers — the Chinese
resident identity number, Indian Aadhaar, Brazilian CPF, French NIR, Spanish DNI and NIE,
Italian codice fiscale.

A checksum makes a hit precise: a 16-digit order number that fails Luhn is not a card.
Where stdnum checks more than the number carries reliably (the Chinese number's county code
against a list that changes with each redistricting), only the checksum and the birth date
are checked.
"""

from __future__ import annotations

import re

from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.cn import ric
from stdnum.es import dni, nie
from stdnum.exceptions import ValidationError
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale

from hybridinfer.privacy.recogniser import PatternRecogniser, digits_of

_NOT_DIGIT_BEFORE = r"(?<![0-9A-Za-z])"
_NOT_DIGIT_AFTER = r"(?![0-9A-Za-z])"

CARD_ISSUERS = re.compile(r"4|5[0-9]|2[2-7]|3[0-9]|6[0-9]|1800|2131|81|9792")
"""Leading digits of payment networks: Visa 4; Mastercard 51-55, 2221-2720; Maestro 50, 56-69;
Amex 34/37; Diners 30, 36, 38, 39; JCB 35, 1800, 2131; Discover and UnionPay 6x, 81; Troy 9792."""


def _card(value: str) -> bool:
    digits = digits_of(value)
    return (
        13 <= len(digits) <= 19 and CARD_ISSUERS.match(digits) is not None and luhn.is_valid(digits)
    )


def _iban(value: str) -> bool:
    return bool(iban.is_valid(value))


def _cn_ric(value: str) -> bool:
    number = ric.compact(value)
    try:
        ric.get_birth_date(number)
    except ValidationError:
        return False
    return bool(ric.calc_check_digit(number[:17]) == number[17].upper())


RECOGNISERS = (
    PatternRecogniser(
        "CARD",
        "card",
        re.compile(_NOT_DIGIT_BEFORE + r"\d(?:[ -]?\d){12,18}" + _NOT_DIGIT_AFTER),
        _card,
        context=("card", "visa", "mastercard", "amex", "卡号", "carte", "karte", "tarjeta"),
    ),
    PatternRecogniser(
        "IBAN",
        "iban",
        re.compile(
            r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"
            r"(?![A-Za-z0-9])"
        ),
        _iban,
        context=("iban",),
    ),
    PatternRecogniser(
        "NATIONALID",
        "cn.ric",
        re.compile(r"(?<![0-9])\d{6} ?\d{8} ?\d{3}[0-9Xx](?![0-9A-Za-z])"),
        _cn_ric,
        context=("身份证", "identity card", "resident id", "id number"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "in.aadhaar",
        re.compile(r"(?<![0-9])\d{4}[ -]?\d{4}[ -]?\d{4}(?![0-9])"),
        lambda value: bool(aadhaar.is_valid(value)),
        context=("aadhaar", "uidai", "आधार"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "br.cpf",
        re.compile(r"(?<![0-9.])\d{3}\.?\d{3}\.?\d{3}-?\d{2}(?![0-9])"),
        lambda value: bool(cpf.is_valid(value)),
        context=("cpf",),
    ),
    PatternRecogniser(
        "NATIONALID",
        "fr.nir",
        re.compile(
            r"(?<![0-9])[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3}"
            r" ?\d{2}(?![0-9])"
        ),
        lambda value: bool(nir.is_valid(value)),
        context=("sécurité sociale", "securite sociale", "nir", "insee"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "es.dni",
        re.compile(r"(?<![0-9A-Za-z])\d{8}-?[A-Za-z](?![0-9A-Za-z])"),
        lambda value: bool(dni.is_valid(value)),
        context=("dni", "nif"),
    ),
    PatternRecogniser(
        "NATIONALID",
        "es.nie",
        re.compile(r"(?<![0-9A-Za-z])[XYZxyz]-?\d{7}-?[A-Za-z](?![0-9A-Za-z])"),
        lambda value: bool(nie.is_valid(value)),
        context=("nie",),
    ),
    PatternRecogniser(
        "NATIONALID",
        "it.codicefiscale",
        re.compile(
            r"(?<![0-9A-Za-z])[A-Za-z]{6}\d{2}[A-Za-z]\d{2}[A-Za-z]\d{3}[A-Za-z](?![0-9A-Za-z])"
        ),
        lambda value: bool(codicefiscale.is_valid(value)),
        context=("codice fiscale",),
    ),
)
