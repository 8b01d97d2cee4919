# ruff: noqa: RUF001 - the Chinese templates hold Chinese punctuation, on purpose
"""Personal-data detection: recall and precision per kind and locale, and its latency.

Corpus: values from PyPI ``Faker`` with a fixed seed for nine locales (phone numbers, e-mail
addresses, payment cards, IBANs, national numbers — US SSN, French NIR, Chinese resident id,
Brazilian CPF, Spanish DNI/NIE, Indian Aadhaar, Italian codice fiscale —, IPv4/IPv6, names
and cities), written in several forms (spaces, dashes, dots, brackets, country prefixes) and
embedded in sentence templates in the locale's language, some naming the kind ("IBAN: …",
"电话…": *named*), some not (*bare*). UK National Insurance numbers are generated here by
HMRC's rules; Faker's own (ZZ… T) are reserved prefixes, reported as "not a NINO".

A value Faker emits that its format's library refuses (libphonenumber, python-stdnum, the
SSA's rules) is kept in a row of its own ("generated, invalid per …"), never dropped, so the
figures show what the detector does with malformed values; the goal lines (recall ≥ 0.99 per
format, precision ≥ 0.97 per kind) apply to valid values.

Decoys that must not be flagged: order and invoice numbers, dates, times, versions, prices,
bare 9-digit ids, 16-digit non-Luhn numbers, tracking numbers, ISBNs, EAN barcodes and
postcodes, in sentences.

Scoring: a value is *found* if one finding of its kind covers it (*found as any kind*: a
finding of any kind covers it — for privacy any kind is a catch). A finding is *true* if it
overlaps a labelled value of its kind; precision = true findings / all findings, over the
corpus and the decoys. Names and places (NER, ``privacy/ner.py``, English only) are scored on
a subset apart, with the pattern detector merged in as the redact step does.

The same values disguised (no-break spaces, Unicode dashes, a zero-width space, full-width
forms, addresses written out): ``bench/privacydisguise.py``.

Latency: ``Detector.scan`` (patterns only; ``detect`` without its memo of clean texts, so a
text not seen before) on 200- and 2,000-character texts — prose with a few values, prose with
none, decoy-heavy text —, and ``NameFinder.find`` apart.

    python -m bench.privacy [--n 60] [--decoys 100] [--rounds 2000] [--no-ner]

Writes bench/results/privacy.json.
"""

from __future__ import annotations

import argparse
import ipaddress
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import phonenumbers
from faker import Faker
from phonenumbers import PhoneNumberFormat
from stdnum import iban, luhn
from stdnum.br import cpf
from stdnum.cn import ric
from stdnum.es import dni, nie
from stdnum.exceptions import ValidationError
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale

from bench.harness import percentiles, write_result
from hybridinfer.privacy.detect import (
    Detector,
    Finding,
    default_detector,
    merge,
    standard_recognisers,
)
from hybridinfer.privacy.ner import NameFinder

SEED = 20240501
LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "zh_CN", "es_ES", "pt_BR", "en_IN", "it_IT")
REGION = {
    "en_US": "US",
    "en_GB": "GB",
    "de_DE": "DE",
    "fr_FR": "FR",
    "zh_CN": "CN",
    "es_ES": "ES",
    "pt_BR": "BR",
    "en_IN": "IN",
    "it_IT": "IT",
}
LANGUAGE = {locale: locale[:2] for locale in LOCALES}
NER_LOCALES = ("en_US", "en_GB", "en_IN")
"""Where names and places are claimed: ``ner.py`` loads an English model only."""
PATTERN_KINDS = ("EMAIL", "CARD", "IBAN", "NATIONALID", "SSN", "NINO", "IP", "PHONE")
NER_KINDS = ("NAME", "PLACE")
RECALL_GOAL = 0.99
PRECISION_GOAL = 0.97
VALID = "valid"
NOT_A_NINO = "not a NINO (Faker's reserved ZZ prefix)"
EXAMPLES = 5


def invalid(library: str, reason: str) -> str:
    return f"generated, invalid per {library} ({reason})"


# --- Templates: {v} is the value, {label} a word naming its kind (national numbers) -------

Templates = dict[str, list[tuple[str, str]]]
"""language → [(framing, template)]; framing "named" if the sentence names the kind."""


def templates(table: str) -> Templates:
    """``language framing template`` lines into a table."""
    parsed: Templates = defaultdict(list)
    for line in table.strip().splitlines():
        language, framing, template = line.strip().split(" ", 2)
        parsed[language].append((framing, template))
    return dict(parsed)


PHONE = templates("""
    en named Call me on {v} after six.
    en named Phone: {v}
    en named Mobile {v} (evenings only).
    en bare You can reach me at {v} until Friday.
    en bare My number is {v}, in case the line drops.
    de named Rufen Sie mich unter {v} an.
    de named Tel.: {v}
    de named Handy: {v}
    de bare Sie erreichen mich unter {v}.
    de bare Meine Nummer lautet {v}.
    fr named Appelez-moi au {v}.
    fr named Tél. : {v}
    fr named Mon portable : {v}
    fr bare Vous pouvez me joindre au {v}.
    fr bare Mon numéro est le {v}.
    zh named 请拨打电话{v}联系我。
    zh named 手机：{v}
    zh named 我的手机号是{v}，谢谢。
    zh bare 我的号码是{v}。
    zh bare 有事请找我{v}，随时都可以。
    es named Llámame al {v}.
    es named Teléfono: {v}
    es named Tel. {v}
    es bare Puedes localizarme en el {v}.
    es bare Mi número es el {v}.
    pt named Ligue para {v}.
    pt named Telefone: {v}
    pt named WhatsApp: {v}
    pt bare Pode me encontrar no {v}.
    pt bare Meu número é {v}.
    it named Chiamami al {v}.
    it named Tel. {v}
    it named Cellulare: {v}
    it bare Puoi trovarmi al {v}.
    it bare Il mio numero è {v}.
""")
EMAIL = templates("""
    en named Email: {v}
    en named Send the report to my email {v} please.
    en bare Write to {v} for details.
    en bare Questions go to {v}, thanks.
    de named E-Mail: {v}
    de bare Schreiben Sie an {v}.
    de bare Rückfragen bitte an {v} richten.
    fr named E-mail : {v}
    fr named Courriel : {v}
    fr bare Écrivez à {v} pour plus d'informations.
    zh named 邮箱：{v}
    zh named 请发邮件到{v}。
    zh bare 请联系{v}获取详情。
    es named Correo: {v}
    es bare Escribe a {v} para más información.
    pt named E-mail: {v}
    pt bare Escreva para {v} para mais detalhes.
    it named Email: {v}
    it bare Scrivi a {v} per i dettagli.
""")
CARD = templates("""
    en named My card number is {v}, expiry 09/27.
    en named Please charge card {v}.
    en bare I paid with {v} yesterday and it was declined.
    en bare The number on the front is {v}.
    de named Meine Kreditkartennummer ist {v}.
    de bare Bezahlt habe ich mit {v}.
    fr named Mon numéro de carte est {v}.
    fr bare J'ai payé avec {v} hier.
    zh named 我的卡号是{v}。
    zh named 信用卡{v}已冻结。
    zh bare 我用{v}付的款。
    es named Mi número de tarjeta es {v}.
    es bare Pagué con {v} ayer.
    pt named O número do meu cartão é {v}.
    pt bare Paguei com {v} ontem.
    it named Il numero della mia carta è {v}.
    it bare Ho pagato con {v} ieri.
""")
IBAN = templates("""
    en named IBAN: {v}
    en named Please wire the deposit to IBAN {v} by Monday.
    en bare Transfer the money to {v} before the 15th.
    en bare Account {v}, reference invoice 2291.
    de named IBAN: {v}
    de named Bitte überweisen Sie auf die IBAN {v}.
    de bare Bitte überweisen Sie den Betrag auf {v}.
    fr named IBAN : {v}
    fr named Merci de virer le montant sur l'IBAN {v}.
    fr bare Virement à effectuer sur {v} avant le 15.
    zh named IBAN：{v}
    zh bare 请汇款至{v}。
    es named IBAN: {v}
    es named Haz la transferencia al IBAN {v}.
    es bare Transfiere el importe a {v} antes del lunes.
    pt named IBAN: {v}
    pt bare Transfira o valor para {v} até segunda.
    it named IBAN: {v}
    it named Effettua il bonifico sull'IBAN {v}.
    it bare Trasferisci l'importo su {v} entro lunedì.
""")
NATIONAL = templates("""
    en named My {label} is {v}.
    en named {label}: {v}
    en named Please confirm the {label} {v} on the form.
    en bare The number on file is {v}.
    en bare Please update record {v} today.
    fr named Mon {label} est le {v}.
    fr named {label} : {v}
    fr bare Le numéro enregistré est {v}.
    zh named {label}{v}已登记。
    zh named 我的{label}是{v}，请核对。
    zh bare 登记的号码为{v}。
    es named Mi {label} es {v}.
    es named {label}: {v}
    es bare El número registrado es {v}.
    pt named Meu {label} é {v}.
    pt named {label}: {v}
    pt bare O número cadastrado é {v}.
    it named Il mio {label} è {v}.
    it named {label}: {v}
    it bare Il codice registrato è {v}.
""")
LABEL_WORDS = {
    "us.ssn": ("SSN", "Social Security number", "social security no."),
    "gb.nino": ("National Insurance number", "NI number", "NINO"),
    "in.aadhaar": ("Aadhaar number", "Aadhaar no.", "UID number"),
    "fr.nir": ("numéro de sécurité sociale", "NIR", "numéro de sécu"),
    "cn.ric": ("身份证号码", "身份证号", "公民身份号码"),
    "es.dni": ("DNI", "NIF"),
    "es.nie": ("NIE", "número de identidad de extranjero"),
    "br.cpf": ("CPF",),
    "it.codicefiscale": ("codice fiscale", "C.F."),
}
"""How writers name each national number (not the detector's context words)."""
IP = templates("""
    en named The IP address {v} was blocked.
    en named Server IP: {v}
    en bare The request came from {v} at noon.
    en bare Connections from {v}.
    de named Die IP-Adresse {v} wurde gesperrt.
    de bare Die Anfrage kam von {v}.
    fr named L'adresse IP {v} a été bloquée.
    fr bare La requête venait de {v}.
    zh named IP地址{v}已被封禁。
    zh bare 请求来自{v}。
    es named La dirección IP {v} fue bloqueada.
    es bare La petición llegó desde {v}.
    pt named O endereço IP {v} foi bloqueado.
    pt bare A requisição veio de {v}.
    it named L'indirizzo IP {v} è stato bloccato.
    it bare La richiesta proveniva da {v}.
""")
NAME = templates("""
    en named My name is {v}.
    en bare {v} will join the meeting tomorrow.
    en bare Please forward this to {v}.
    de named Mein Name ist {v}.
    de bare {v} kommt morgen zum Termin.
    fr named Je m'appelle {v}.
    fr bare {v} participera à la réunion demain.
    zh named 我叫{v}。
    zh bare {v}明天参加会议。
    es named Me llamo {v}.
    es bare {v} asistirá a la reunión mañana.
    pt named Meu nome é {v}.
    pt bare {v} vai participar da reunião amanhã.
    it named Mi chiamo {v}.
    it bare {v} parteciperà alla riunione domani.
""")
PLACE = templates("""
    en named I live in {v}.
    en bare The office moved to {v} last year.
    en bare She was born in {v} and studied abroad.
    de named Ich wohne in {v}.
    de bare Das Büro ist nach {v} umgezogen.
    fr named J'habite à {v}.
    fr bare Le bureau a déménagé à {v}.
    zh named 我住在{v}。
    zh bare 公司搬到了{v}。
    es named Vivo en {v}.
    es bare La oficina se trasladó a {v}.
    pt named Moro em {v}.
    pt bare O escritório mudou para {v}.
    it named Abito a {v}.
    it bare L'ufficio si è trasferito a {v}.
""")
FIELDS: dict[str, Templates] = {
    "PHONE": PHONE,
    "EMAIL": EMAIL,
    "CARD": CARD,
    "IBAN": IBAN,
    "NATIONALID": NATIONAL,
    "SSN": NATIONAL,
    "NINO": NATIONAL,
    "IP": IP,
    "NAME": NAME,
    "PLACE": PLACE,
}


# --- The corpus ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Label:
    """One labelled value in a sample's text."""

    kind: str
    start: int
    end: int
    value: str
    locale: str
    scheme: str  # the format family: "phone.gb", "card.visa16", "cn.ric", "ipv6"
    form: str  # how it is written: "compact", "spaced", "e164", "faker" (as Faker wrote it)
    framing: str  # "named": the sentence names the kind; "bare": it does not
    validity: str  # VALID, "generated, invalid per <library> (<why>)" or NOT_A_NINO
    printable: bool = True  # False for values not from Faker (NINOs by HMRC's rules)

    @property
    def neutral(self) -> bool:
        """Neither a true nor a false finding: a placeholder that is not personal data."""
        return self.validity == NOT_A_NINO

    def shown(self) -> str:
        return self.value if self.printable else re.sub(r"[0-9]", "#", self.value)


@dataclass(frozen=True, slots=True)
class Sample:
    """One sentence: a corpus sentence with its labels, or a decoy (``decoy`` its type)."""

    text: str
    locale: str
    labels: tuple[Label, ...] = ()
    decoy: str = ""


@dataclass(frozen=True, slots=True)
class Item:
    """A value before it is embedded; ``before``/``after`` decorate it (``mailto:``, ``]:443``)."""

    kind: str
    value: str
    scheme: str
    form: str
    validity: str = VALID
    named_only: bool = False  # a form the detector claims only after a word naming it
    before: str = ""
    after: str = ""
    printable: bool = True


def _stdnum_validity(module: Any, value: str) -> str:
    try:
        module.validate(value)
    except ValidationError as exc:
        return invalid("python-stdnum", type(exc).__name__)
    return VALID


def _phone(raw: str, region: str, rng: random.Random) -> Item:
    scheme = f"phone.{region.lower()}"
    try:  # "00" is the international prefix of most of the world (not of the US: 011)
        number = phonenumbers.parse("+" + raw[2:] if raw.startswith("00") else raw, region)
    except phonenumbers.NumberParseException:
        return Item("PHONE", raw, scheme, "faker", invalid("libphonenumber", "unparseable"))
    if not phonenumbers.is_valid_number(number):
        why = "unassigned range" if phonenumbers.is_possible_number(number) else "impossible length"
        return Item("PHONE", raw, scheme, "faker", invalid("libphonenumber", why))
    form = rng.choice(
        ("faker", "faker", "national", "international", "e164", "dashed", "dotted", "00-prefix")
    )
    if form == "faker" or number.extension:
        return Item("PHONE", raw, scheme, "faker")
    national = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
    international = phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
    value = {
        "national": national,
        "international": international,
        "e164": phonenumbers.format_number(number, PhoneNumberFormat.E164),
        "dashed": "-".join(re.findall(r"\d+", national)),
        "dotted": ".".join(re.findall(r"\d+", national)),
        "00-prefix": "00" + international[1:],
    }[form]
    return Item("PHONE", value, scheme, form)


def card_networks(fake: Faker) -> list[str]:
    """The card networks the locale's Faker provider has ("jcb" and "visa" are aliases)."""
    provider = next(p for p in fake.get_providers() if hasattr(p, "credit_card_types"))
    networks = set(provider.credit_card_types)
    if "jcb15" in networks:
        networks.discard("jcb")
    if "visa16" in networks:
        networks.discard("visa")
    return sorted(networks)


def _grouped(digits: str, sizes: Sequence[int], separator: str) -> str:
    pieces, position = [], 0
    for size in sizes:
        if position >= len(digits):
            break
        pieces.append(digits[position : position + size])
        position += size
    if position < len(digits):
        pieces.append(digits[position:])
    return separator.join(pieces)


def _card(fake: Faker, rng: random.Random) -> Item:
    network = rng.choice(card_networks(fake))
    digits = fake.credit_card_number(card_type=network)
    validity = VALID if luhn.is_valid(digits) else invalid("python-stdnum", "Luhn")
    form = rng.choice(("compact", "spaced", "dashed"))
    sizes = {"amex": (4, 6, 5), "diners": (4, 6, 4)}.get(network, (4,) * 5)
    value = (
        digits if form == "compact" else _grouped(digits, sizes, " " if form == "spaced" else "-")
    )
    return Item("CARD", value, f"card.{network}", form, validity)


def _iban(fake: Faker, rng: random.Random) -> Item:
    value = fake.iban()
    validity = _stdnum_validity(iban, value)
    form = rng.choice(("compact", "paper"))
    if form == "paper":
        value = _grouped(value, (4,) * 9, " ")
    return Item("IBAN", value, "iban", form, validity)


def _ssn(value: str, rng: random.Random) -> Item:
    area, group, serial = value.split("-")
    ok = area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"
    validity = VALID if ok else invalid("SSA rules", "area, group or serial")
    form = rng.choice(("dashed", "dashed", "spaced", "compact"))
    if form == "dashed":
        return Item("SSN", value, "us.ssn", form, validity)
    shown = f"{area} {group} {serial}" if form == "spaced" else area + group + serial
    return Item("SSN", shown, "us.ssn", form, validity, named_only=True)


NINO_FIRST = "ABCEGHJKLMNOPRSTWXYZ"  # HMRC: not D, F, I, Q, U, V
NINO_SECOND = "ABCEGHJKLMNPRSTWXYZ"  # nor O
NINO_UNUSED = ("BG", "GB", "KN", "NK", "NT", "TN", "ZZ")


def _nino(rng: random.Random) -> Item:
    """A NINO by HMRC's rules: allowed prefix letters and pairs, six digits, suffix A-D."""
    while (prefix := rng.choice(NINO_FIRST) + rng.choice(NINO_SECOND)) in NINO_UNUSED:
        pass
    digits, suffix = f"{rng.randrange(10**6):06d}", rng.choice("ABCD")
    form = rng.choice(("compact", "spaced", "spaced-6"))
    value = {
        "compact": f"{prefix}{digits}{suffix}",
        "spaced": f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {suffix}",
        "spaced-6": f"{prefix} {digits} {suffix}",
    }[form]
    return Item("NINO", value, "gb.nino", form, printable=False)


def _national(scheme: str, value: str, rng: random.Random) -> Item:
    """A stdnum-checked national number in one of the forms people write it in."""
    module = {
        "fr.nir": nir,
        "cn.ric": ric,
        "in.aadhaar": aadhaar,
        "br.cpf": cpf,
        "es.dni": dni,
        "es.nie": nie,
        "it.codicefiscale": codicefiscale,
    }[scheme]
    validity = _stdnum_validity(module, value)
    compact = re.sub(r"[\s.\-]", "", value)
    forms: dict[str, tuple[str, ...]] = {
        "fr.nir": ("compact", "spaced"),
        "cn.ric": ("compact", "compact", "compact", "spaced"),
        "in.aadhaar": ("spaced", "compact", "dashed"),
        "br.cpf": ("dotted", "compact"),
        "es.dni": ("compact", "dashed"),
        "es.nie": ("compact", "dashed"),
        "it.codicefiscale": ("compact",),
    }
    form = rng.choice(forms[scheme])
    if form == "compact":
        shown = compact
    elif scheme == "fr.nir":  # 1 86 10 41 018 676 22
        shown = _grouped(compact, (1, 2, 2, 2, 3, 3, 2), " ")
    elif scheme == "cn.ric":
        shown = _grouped(compact, (6, 8, 4), " ")
    elif scheme == "in.aadhaar":
        shown = _grouped(compact, (4, 4, 4), " " if form == "spaced" else "-")
    elif scheme == "br.cpf":
        shown = f"{compact[:3]}.{compact[3:6]}.{compact[6:9]}-{compact[9:]}"
    elif scheme == "es.dni":
        shown = f"{compact[:8]}-{compact[8:]}"
    else:  # es.nie
        shown = f"{compact[0]}-{compact[1:8]}-{compact[8:]}"
    return Item("NATIONALID", shown, scheme, form, validity)


def _email(fake: Faker, rng: random.Random) -> Item:
    form = rng.choice(("plain", "plain", "angle", "mailto"))
    before, after = {"plain": ("", ""), "angle": ("<", ">"), "mailto": ("mailto:", "")}[form]
    return Item("EMAIL", fake.email(), "email", form, before=before, after=after)


def _ip(fake: Faker, rng: random.Random, family: int) -> Item:
    if family == 4:
        if rng.random() < 0.25:
            return Item(
                "IP", fake.ipv4(), "ipv4", "with-port", after=f":{rng.choice((80, 8080, 443))}"
            )
        return Item("IP", fake.ipv4(), "ipv4", "plain")
    value = fake.ipv6()
    form = rng.choice(("faker", "compressed", "bracketed"))
    if form == "faker":
        return Item("IP", value, "ipv6", form)
    compressed = ipaddress.IPv6Address(value).compressed
    if form == "bracketed":
        return Item("IP", compressed, "ipv6", form, before="[", after="]:443")
    return Item("IP", compressed, "ipv6", form)


HONORIFICS = ("en_US", "en_GB", "de_DE", "pt_BR", "it_IT")
"""Locales whose Faker ``prefix()`` is a title (Dr, Mrs, Sig.ra), not part of the name."""


def _name(locale: str, fake: Faker, rng: random.Random) -> Item:
    """A first and last name; a title before it now and then, outside the label."""
    if locale == "zh_CN":
        return Item("NAME", fake.last_name() + fake.first_name(), "ner", "family-given")
    name = f"{fake.first_name()} {fake.last_name()}"
    if locale in HONORIFICS and rng.random() < 0.25:
        return Item("NAME", name, "ner", "with-title", before=fake.prefix() + " ")
    return Item("NAME", name, "ner", "given-family")


def items(locale: str, fake: Faker, rng: random.Random, n: int) -> Iterator[Item]:
    """Every value of one locale: ``n`` of each (twice as many phone numbers)."""
    region = REGION[locale]
    for _ in range(2 * n):
        yield _phone(fake.phone_number(), region, rng)
    for _ in range(n):
        yield _email(fake, rng)
        yield _card(fake, rng)
        yield _iban(fake, rng)
        yield _ip(fake, rng, 4)
        yield _ip(fake, rng, 6)
        yield _name(locale, fake, rng)
        yield Item("PLACE", fake.city(), "ner", "faker")
        if locale == "en_US":
            yield _ssn(fake.ssn(), rng)
        elif locale == "en_GB":
            yield _nino(rng)
            if rng.random() < 0.5:
                yield Item("NINO", fake.ssn(), "gb.nino", "faker", NOT_A_NINO)
        elif locale == "fr_FR":
            yield _national("fr.nir", fake.ssn(), rng)
        elif locale == "zh_CN":
            yield _national("cn.ric", fake.ssn(), rng)
        elif locale == "es_ES":
            yield _national("es.dni", fake.nif(), rng)
            yield _national("es.nie", fake.nie(), rng)
        elif locale == "pt_BR":
            yield _national("br.cpf", fake.cpf() if rng.random() < 0.5 else fake.ssn(), rng)
        elif locale == "en_IN":
            yield _national("in.aadhaar", fake.aadhaar_id(), rng)
        elif locale == "it_IT":
            yield _national("it.codicefiscale", fake.ssn(), rng)


def _embed(template: str, word: str, item: Item) -> tuple[str, int]:
    """The sentence and the value's offset in it."""
    before, after = template.replace("{label}", word).split("{v}")
    if template.startswith("{label}"):
        before = before[:1].upper() + before[1:]
    return before + item.before + item.value + item.after + after, len(before) + len(item.before)


def _sample(item: Item, locale: str, rng: random.Random) -> Sample:
    choices = FIELDS[item.kind][LANGUAGE[locale]]
    if item.named_only:
        choices = [choice for choice in choices if choice[0] == "named"]
    framing, template = rng.choice(choices)
    word = rng.choice(LABEL_WORDS[item.scheme]) if "{label}" in template else ""
    text, start = _embed(template, word, item)
    label = Label(
        item.kind,
        start,
        start + len(item.value),
        item.value,
        locale,
        item.scheme,
        item.form,
        framing,
        item.validity,
        item.printable,
    )
    return Sample(text, locale, (label,))


def corpus(n: int = 60, seed: int = SEED, locales: Sequence[str] = LOCALES) -> list[Sample]:
    """The labelled sentences, the same for the same ``n``, ``seed`` and Faker version."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for index, locale in enumerate(locales):
        fake = Faker(locale)
        fake.seed_instance(seed + index)
        samples.extend(_sample(item, locale, rng) for item in items(locale, fake, rng, n))
    return samples


# --- Decoys -------------------------------------------------------------------------------

MONTHS = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)

Fakes = dict[str, Faker]


def _digits(rng: random.Random, count: int) -> str:
    return str(rng.randrange(1, 10)) + "".join(str(rng.randrange(10)) for _ in range(count - 1))


def _order(rng: random.Random, _: Fakes) -> str:
    return rng.choice(
        (
            f"#{_digits(rng, rng.randrange(5, 9))}",
            f"ORD-{_digits(rng, 8)}",
            f"{_digits(rng, 4)}-{_digits(rng, 4)}-{_digits(rng, 2)}",
            f"{_digits(rng, 3)}-{_digits(rng, 7)}-{_digits(rng, 7)}",  # Amazon
            _digits(rng, 10),
            _digits(rng, 8),
        )
    )


def _invoice(rng: random.Random, _: Fakes) -> str:
    return rng.choice(
        (
            f"INV-2024-{_digits(rng, 5)}",
            f"RE-2024/{_digits(rng, 4)}",
            f"FA{_digits(rng, 8)}",
            f"No. {_digits(rng, 6)}",
            f"{rng.randrange(2019, 2026)}-{_digits(rng, 6)}",
        )
    )


def _date(rng: random.Random, _: Fakes) -> str:
    y, m, d = rng.randrange(1990, 2031), rng.randrange(1, 13), rng.randrange(1, 29)
    month = MONTHS[m - 1]
    return rng.choice(
        (
            *(f"{y}-{m:02d}-{d:02d}", f"{d:02d}/{m:02d}/{y}", f"{d:02d}.{m:02d}.{y}"),
            *(f"{d} {month} {y}", f"{m}/{d}/{y}", f"{y}/{m:02d}/{d:02d}", f"{month} {d}, {y}"),
            *(f"{y}年{m}月{d}日", f"{d}.{m}.{y}", f"{y}{m:02d}{d:02d}"),
        )
    )


def _time(rng: random.Random, _: Fakes) -> str:
    h, m, s = rng.randrange(24), rng.randrange(60), rng.randrange(60)
    return rng.choice(
        (
            *(f"{h:02d}:{m:02d}", f"{h:02d}:{m:02d}:{s:02d}", f"{h}h{m:02d}"),
            f"{h % 12 + 1}:{m:02d} {rng.choice(('am', 'pm'))}",
            f"{h:02d}:{m:02d}:{s:02d}.{rng.randrange(1000):03d}",
        )
    )


def _version(rng: random.Random, _: Fakes) -> str:
    a, b, c = rng.randrange(20), rng.randrange(30), rng.randrange(50)
    return rng.choice(
        (
            *(f"{a}.{b}.{c}", f"{a}.{b}.{c}-rc{rng.randrange(1, 6)}", f"v{a}.{b}.{c}", f"{a}.{b}"),
            f"10.0.{rng.randrange(10000, 26000)}.{rng.randrange(1000, 5000)}",
            f"{rng.randrange(2018, 2026)}.{rng.randrange(1, 13):02d}.{c}",
        )
    )


def _price(rng: random.Random, _: Fakes) -> str:
    units, cents = rng.randrange(1, 99999), rng.randrange(100)
    grouped = f"{units:,}"
    return rng.choice(
        (
            *(f"${grouped}.{cents:02d}", f"€{grouped.replace(',', '.')},{cents:02d}"),
            *(
                f"£{units}.{cents:02d}",
                f"¥{grouped}",
                f"R$ {grouped.replace(',', '.')},{cents:02d}",
            ),
            *(f"₹{grouped}", f"{grouped.replace(',', ' ')} €", f"USD {units}.{cents:02d}"),
        )
    )


def _nine_digits(rng: random.Random, _: Fakes) -> str:
    return _digits(rng, 9)


def _non_luhn16(rng: random.Random, _: Fakes) -> str:
    while luhn.is_valid(digits := rng.choice("3456") + _digits(rng, 15)):
        pass
    return rng.choice((digits, _grouped(digits, (4,) * 4, " "), _grouped(digits, (4,) * 4, "-")))


def _tracking(rng: random.Random, _: Fakes) -> str:
    letters = "ABCDEFGHJKLMNPRSTUVWXYZ"
    return rng.choice(
        (
            "1Z" + "".join(rng.choice(letters + "0123456789") for _ in range(6)) + _digits(rng, 10),
            _grouped("94" + _digits(rng, 20), (4,) * 6, " "),  # USPS, 22 digits
            _digits(rng, 12),  # FedEx
            _grouped(_digits(rng, 12), (4, 4, 4), " "),
            _digits(rng, 10),  # DHL Express
            rng.choice(letters) + rng.choice(letters) + _digits(rng, 9) + "GB",  # Royal Mail S10
            "JD" + _digits(rng, 18),  # DHL eCommerce
        )
    )


def _isbn(rng: random.Random, fakes: Fakes) -> str:
    fake = fakes["en_US"]
    return rng.choice((fake.isbn13(), fake.isbn10(), fake.isbn13().replace("-", "")))


def _ean(rng: random.Random, fakes: Fakes) -> str:
    return rng.choice((fakes["de_DE"].ean13(), fakes["de_DE"].ean8()))


POSTCODE_LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "zh_CN", "pt_BR", "en_IN", "it_IT")


def _postcode(rng: random.Random, fakes: Fakes) -> str:
    return str(fakes[rng.choice(POSTCODE_LOCALES)].postcode())


DECOYS: dict[str, tuple[Callable[[random.Random, Fakes], str], Templates]] = {
    "order number": (
        _order,
        templates("""
        en - Your order {v} has shipped.
        de - Ihre Bestellung {v} wurde versandt.
        fr - Votre commande {v} a été expédiée.
        zh - 您的订单{v}已发货。
        es - Tu pedido {v} ha sido enviado.
    """),
    ),
    "invoice id": (
        _invoice,
        templates("""
        en - Invoice {v} is due on Friday.
        de - Die Rechnung {v} ist fällig.
        fr - La facture {v} est à régler.
        zh - 发票{v}已开具。
        it - La fattura {v} è stata pagata.
    """),
    ),
    "date": (
        _date,
        templates("""
        en - The meeting is on {v}.
        de - Der Termin ist am {v}.
        fr - Rendez-vous le {v}.
        zh - 会议定于{v}举行。
        pt - A reunião é em {v}.
    """),
    ),
    "time": (
        _time,
        templates("""
        en - See you at {v} in the lobby.
        de - Wir treffen uns um {v}.
        fr - Rendez-vous à {v}.
        zh - {v}开会。
    """),
    ),
    "version": (
        _version,
        templates("""
        en - Upgrade to version {v} before deploying.
        en - Build {v} fixes the crash.
        de - Bitte auf Version {v} aktualisieren.
    """),
    ),
    "price": (
        _price,
        templates("""
        en - The total is {v}.
        de - Der Preis beträgt {v}.
        fr - Le total est de {v}.
        zh - 总价{v}。
        pt - O valor é {v}.
    """),
    ),
    "9-digit id": (
        _nine_digits,
        templates("""
        en - Ticket {v} was closed.
        de - Kundennummer {v} ist gesperrt.
        fr - Référence client {v}.
        zh - 客户编号{v}。
        es - Expediente {v} cerrado.
    """),
    ),
    "16-digit non-Luhn": (
        _non_luhn16,
        templates("""
        en - Reference {v} was processed.
        de - Transaktion {v} wurde gebucht.
        fr - Numéro de dossier {v}.
    """),
    ),
    "tracking number": (
        _tracking,
        templates("""
        en - Your parcel {v} is out for delivery.
        de - Sendungsnummer {v}
        fr - Numéro de suivi {v}.
        zh - 快递单号{v}。
    """),
    ),
    "ISBN": (
        _isbn,
        templates("""
        en - ISBN {v}
        en - The book (ISBN {v}) is out of print.
        de - Das Buch mit der ISBN {v} ist vergriffen.
    """),
    ),
    "EAN barcode": (
        _ean,
        templates("""
        en - Barcode {v} scanned.
        de - Artikel {v} ist nicht vorrätig.
    """),
    ),
    "postcode": (
        _postcode,
        templates("""
        en - Ship it to postcode {v}, please.
        de - PLZ {v}
        fr - Code postal : {v}
        zh - 邮编{v}。
        pt - CEP {v}
    """),
    ),
}
"""Values that are not personal data, and sentences in several languages to put them in."""


def decoys(per_type: int = 100, seed: int = SEED) -> list[Sample]:
    """Sentences holding values that are not personal data."""
    rng = random.Random(seed + 1)
    fakes = {locale: Faker(locale) for locale in POSTCODE_LOCALES}
    for index, fake in enumerate(fakes.values()):
        fake.seed_instance(seed + 100 + index)
    samples = []
    for name, (make, table) in DECOYS.items():
        choices = [(language, template) for language, rows in table.items() for _, template in rows]
        for _ in range(per_type):
            language, template = rng.choice(choices)
            samples.append(Sample(template.replace("{v}", make(rng, fakes)), language, decoy=name))
    return samples


# --- Scoring ------------------------------------------------------------------------------


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


@dataclass
class Recall:
    n: int = 0
    found: int = 0
    found_any: int = 0
    partial: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, hit: bool, hit_any: bool, partial: bool, example: str) -> None:
        self.n += 1
        self.found += hit
        self.found_any += hit_any
        self.partial += partial
        if not hit and len(self.misses) < EXAMPLES:
            self.misses.append(example)

    def summary(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "recall": _ratio(self.found, self.n),
            "recall_any_kind": _ratio(self.found_any, self.n),
            "partial": self.partial,
            "misses": self.misses,
        }


@dataclass
class Precision:
    true: int = 0
    wrong_kind: int = 0  # on another kind's value: a catch for privacy, a wrong label
    false: int = 0  # on no personal value at all
    neutral: int = 0  # on a labelled non-value ("not a NINO"): counted neither way
    examples: list[str] = field(default_factory=list)

    def add(self, other: Precision) -> None:
        self.true += other.true
        self.wrong_kind += other.wrong_kind
        self.false += other.false
        self.neutral += other.neutral
        self.examples.extend(other.examples[: EXAMPLES - len(self.examples)])

    @property
    def findings(self) -> int:
        return self.true + self.wrong_kind + self.false

    def summary(self) -> dict[str, Any]:
        return {
            "findings": self.findings,
            "precision": _ratio(self.true, self.findings),
            "precision_any_kind": _ratio(self.true + self.wrong_kind, self.findings),
            "wrong_kind": self.wrong_kind,
            "false": self.false,
            "neutral": self.neutral,
            "false_examples": self.examples,
        }


def _covers(finding: Finding, label: Label) -> bool:
    return finding.start <= label.start and finding.end >= label.end


def _overlaps(finding: Finding, label: Label) -> bool:
    return finding.start < label.end and label.start < finding.end


def _describe(findings: Iterable[Finding]) -> str:
    return ", ".join(f"{f.kind}[{f.scheme}] {f.value!r}" for f in findings) or "nothing"


@dataclass
class Score:
    """Tallies of one run of a finder over samples; ``report`` makes them JSON."""

    kinds: tuple[str, ...]
    recall: dict[str, dict[str, Recall]] = field(default_factory=lambda: defaultdict(dict))
    precision: dict[tuple[str, str], Precision] = field(default_factory=dict)
    decoys: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def _recall(self, table: str, key: str) -> Recall:
        return self.recall[table].setdefault(key, Recall())

    def run(self, sample: Sample, find: Callable[[str], list[Finding]]) -> None:
        """``find`` on one sample; a sample it raises on counts as found nothing."""
        try:
            findings = find(sample.text)
        except Exception as exc:  # a crash is a result here: counted, shown, never hidden
            self.errors.append(f"{type(exc).__name__}: {exc} on {sample.text!r}")
            findings = []
        self.add(sample, findings)

    def add(self, sample: Sample, findings: list[Finding]) -> None:
        self._add_labels(sample, findings)
        self._add_findings(sample, findings)
        if sample.decoy:
            self._add_decoy(sample, findings)

    def _add_labels(self, sample: Sample, findings: list[Finding]) -> None:
        """Recall: whether a finding covers each labelled value."""
        for label in sample.labels:
            if label.kind not in self.kinds:
                continue
            hit = any(f.kind == label.kind and _covers(f, label) for f in findings)
            hit_any = any(_covers(f, label) for f in findings)
            near = [f for f in findings if _overlaps(f, label)]
            example = f"{label.shown()!r} in {sample.text!r} → {_describe(near)}"
            outcome = (hit, hit_any, bool(near) and not hit_any, example)
            if label.validity == VALID:
                self._recall("kind", label.kind).add(*outcome)
                self._recall("kind_locale", f"{label.kind} {label.locale}").add(*outcome)
                self._recall("format", f"{label.kind} {label.scheme} {label.form}").add(*outcome)
                self._recall("framing", f"{label.kind} {label.framing}").add(*outcome)
            else:
                key = f"{label.kind} {label.scheme} {label.locale}: {label.validity}"
                self._recall("invalid", key).add(*outcome)

    def _add_findings(self, sample: Sample, findings: list[Finding]) -> None:
        """Precision: whether each finding lies on a labelled value of its kind."""
        locale = f"decoy.{sample.locale}" if sample.decoy else sample.locale
        for finding in findings:
            if finding.kind not in self.kinds:
                continue
            tally = self.precision.setdefault((finding.kind, locale), Precision())
            under = [label for label in sample.labels if _overlaps(finding, label)]
            if any(label.kind == finding.kind and not label.neutral for label in under):
                tally.true += 1
            elif under and all(label.neutral for label in under):
                tally.neutral += 1
            else:
                if under:
                    tally.wrong_kind += 1
                else:
                    tally.false += 1
                if len(tally.examples) < EXAMPLES:
                    on = f"on {under[0].kind} " if under else ""
                    tally.examples.append(
                        f"{finding.scheme} {on}{finding.value!r} in {sample.text!r}"
                    )

    def _add_decoy(self, sample: Sample, findings: list[Finding]) -> None:
        """A decoy sentence is flagged if any finding lies in it."""
        row = self.decoys.setdefault(
            sample.decoy, {"n": 0, "flagged": 0, "by_kind": {}, "examples": []}
        )
        flagged = [f for f in findings if f.kind in self.kinds]
        row["n"] += 1
        row["flagged"] += bool(flagged)
        for kind in {f.kind for f in flagged}:
            row["by_kind"][kind] = row["by_kind"].get(kind, 0) + 1
        if flagged and len(row["examples"]) < EXAMPLES:
            row["examples"].append(f"{_describe(flagged)} in {sample.text!r}")

    def recall_of(self, kind: str, locales: Iterable[str]) -> Recall:
        total = Recall()
        for locale in locales:
            row = self.recall["kind_locale"].get(f"{kind} {locale}")
            if row is not None:
                total.n += row.n
                total.found += row.found
                total.found_any += row.found_any
                total.partial += row.partial
                total.misses.extend(row.misses[: EXAMPLES - len(total.misses)])
        return total

    def precision_of(self, kind: str, locales: Iterable[str] | None = None) -> Precision:
        total = Precision()
        wanted = None if locales is None else set(locales)
        for (found_kind, locale), tally in sorted(self.precision.items()):
            if found_kind == kind and (wanted is None or locale in wanted):
                total.add(tally)
        return total

    def report(self) -> dict[str, Any]:
        recall = {
            table: {key: rows[key].summary() for key in sorted(rows)}
            for table, rows in self.recall.items()
        }
        kinds = {
            kind: {
                **recall.get("kind", {}).get(kind, Recall().summary()),
                **self.precision_of(kind).summary(),
            }
            for kind in self.kinds
        }
        kind_locale = {}
        for key, row in recall.get("kind_locale", {}).items():
            kind, locale = key.split(" ")
            kind_locale[key] = {**row, **self.precision_of(kind, [locale]).summary()}
        decoy_rows = {
            name: {**row, "rate": _ratio(row["flagged"], row["n"])}
            for name, row in sorted(self.decoys.items())
        }
        return {
            "kinds": kinds,
            "kind_locale": kind_locale,
            "formats": recall.get("format", {}),
            "framing": recall.get("framing", {}),
            "invalid": recall.get("invalid", {}),
            "decoys": decoy_rows,
            "errors": {"count": len(self.errors), "examples": self.errors[:EXAMPLES]},
        }


def score(
    samples: Iterable[Sample], find: Callable[[str], list[Finding]], kinds: Sequence[str]
) -> Score:
    """Run ``find`` on every sample."""
    tallies = Score(tuple(kinds))
    for sample in samples:
        tallies.run(sample, find)
    return tallies


def goals(report: dict[str, Any], claimed_locales: Iterable[str] | None = None) -> list[str]:
    """One line per claimed format and kind: recall and precision against the goals."""
    wanted = None if claimed_locales is None else set(claimed_locales)
    lines = []
    rows = (
        report["formats"]
        if wanted is None
        else {k: v for k, v in report["kind_locale"].items() if k.split(" ")[1] in wanted}
    )
    for key, row in rows.items():
        ok = row["recall"] is not None and row["recall"] >= RECALL_GOAL
        lines.append(f"{'ok  ' if ok else 'FAIL'} recall {key}: {row['recall']} (n={row['n']})")
    for kind, row in report["kinds"].items():
        if row["precision"] is None:
            continue
        ok = row["precision"] >= PRECISION_GOAL
        lines.append(
            f"{'ok  ' if ok else 'FAIL'} precision {kind}: {row['precision']}"
            f" (findings={row['findings']})"
        )
    return lines


# --- Latency ------------------------------------------------------------------------------

PROSE = (
    "Thanks for getting back to me so quickly about the delivery.",
    "The team reviewed the proposal and agreed on the next steps.",
    "We would like to move the workshop to the larger room upstairs.",
    "Could you please send over the updated slides before the call?",
    "Everything else about the order looks fine and the customer is happy.",
    "Let me know whether the new schedule works for everyone involved.",
    "The weather delayed the shipment, but it should arrive this week.",
    "I have attached the signed contract and the notes from our meeting.",
)


def _text(pieces: Iterable[str], length: int) -> str:
    text = ""
    for piece in pieces:
        if len(text) >= length:
            break
        text += piece + " "
    return text[:length]


def latency_texts(samples: Sequence[Sample], decoy_samples: Sequence[Sample]) -> dict[str, str]:
    """200- and 2,000-character texts: prose with a few values, prose with none, decoys."""
    rng = random.Random(SEED + 2)
    valued = [
        s.text
        for s in samples
        if s.locale in NER_LOCALES
        and s.labels[0].kind in PATTERN_KINDS
        and s.labels[0].validity == VALID
    ]
    decoy_texts = [s.text for s in decoy_samples]

    def values() -> Iterator[str]:
        while True:  # a value after every second sentence of prose
            yield rng.choice(PROSE)
            yield rng.choice(valued)
            yield rng.choice(PROSE)

    def prose() -> Iterator[str]:
        while True:
            yield rng.choice(PROSE)

    def decoy() -> Iterator[str]:
        while True:
            yield rng.choice(decoy_texts)

    return {
        f"{name} {length}": _text(make(), length)
        for length in (200, 2000)
        for name, make in (("values", values), ("no values", prose), ("decoys", decoy))
    }


def timed(
    function: Callable[[str], object], text: str, rounds: int, warm_up: int = 20
) -> dict[str, float]:
    for _ in range(warm_up):
        function(text)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        function(text)
        samples.append((time.perf_counter() - started) * 1000.0)
    return percentiles(samples)


# --- The run ------------------------------------------------------------------------------


def pattern_section(
    samples: list[Sample], decoy_samples: list[Sample], detector: Detector
) -> dict[str, Any]:
    tallies = score([*samples, *decoy_samples], detector.detect, PATTERN_KINDS)
    report = tallies.report()
    return {**report, "goals": goals(report)}


DECOY_REGION = {"en": "US", "de": "DE", "fr": "FR", "zh": "CN", "es": "ES", "pt": "BR", "it": "IT"}


def hinted_phone_section(samples: list[Sample], decoy_samples: list[Sample]) -> dict[str, Any]:
    """Phone numbers when the request names its locale: the locale's region as the only
    national-format hint (``standard_recognisers((region,))``) instead of the twelve defaults."""
    detectors: dict[str, Detector] = {}
    tallies = Score(("PHONE",))
    for sample in [*samples, *decoy_samples]:
        region = REGION.get(sample.locale) or DECOY_REGION[sample.locale]
        if region not in detectors:
            detectors[region] = Detector(standard_recognisers((region,)))
        tallies.run(sample, detectors[region].detect)
    report = tallies.report()
    return {
        "kinds": report["kinds"],
        "kind_locale": report["kind_locale"],
        "decoys": report["decoys"],
        "errors": report["errors"],
    }


def ner_section(
    samples: list[Sample],
    decoy_samples: list[Sample],
    detector: Detector,
    texts: dict[str, str],
    rounds: int,
    per_locale: int,
) -> dict[str, Any]:
    if not NameFinder.available():
        return {"installed": False}
    finder = NameFinder()
    started = time.perf_counter()
    finder.find("warm up")
    load_s = round(time.perf_counter() - started, 2)
    rng = random.Random(SEED + 3)
    subset: list[Sample] = []
    for locale in LOCALES:
        for kind in NER_KINDS:
            rows = [s for s in samples if s.locale == locale and s.labels[0].kind == kind]
            subset.extend(rows[:per_locale])
    others = [s for s in samples if s.labels[0].kind not in NER_KINDS]
    subset.extend(rng.sample(others, min(len(others), 10 * per_locale)))
    subset.extend(rng.sample(decoy_samples, min(len(decoy_samples), 5 * per_locale)))

    def find(text: str) -> list[Finding]:
        return merge(detector.detect(text), finder.find(text))

    started = time.perf_counter()
    tallies = score(subset, find, NER_KINDS)
    scoring_s = round(time.perf_counter() - started, 2)
    report = tallies.report()
    english = [*NER_LOCALES, "decoy.en"]
    report["kinds_claimed"] = {
        kind: {
            **tallies.recall_of(kind, NER_LOCALES).summary(),
            **tallies.precision_of(kind, english).summary(),
        }
        for kind in NER_KINDS
    }
    claimed = {"kind_locale": report["kind_locale"], "kinds": report["kinds_claimed"]}
    latency = {
        name: timed(finder.find, texts[name], rounds, warm_up=3)
        for name in ("values 200", "values 2000")
    }
    return {
        "installed": True,
        "load_s": load_s,
        "texts_scored": len(subset),
        "scoring_s": scoring_s,
        **report,
        "goals": goals(claimed, NER_LOCALES),
        "latency_ms": latency,
    }


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{value:6.3f}"


def print_report(result: dict[str, Any]) -> None:
    patterns = result["patterns"]
    print(f"corpus: {result['corpus']}")
    header = (
        f"{'':34} {'n':>5} {'recall':>6} {'any':>6} {'part':>4} {'finds':>5} {'prec':>6} {'any':>6}"
    )
    print("\n== patterns, valid values, per kind (precision over corpus + decoys)\n" + header)
    for kind, row in patterns["kinds"].items():
        print(
            f"{kind:34} {row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}"
            f" {row['partial']:4d} {row['findings']:5d} {_pct(row['precision'])}"
            f" {_pct(row['precision_any_kind'])}"
        )
    print(f"\n== kind x locale below goal (recall < {RECALL_GOAL} or precision < {PRECISION_GOAL})")
    for key, row in patterns["kind_locale"].items():
        if (row["recall"] or 0) < RECALL_GOAL or (row["precision"] or 1) < PRECISION_GOAL:
            print(
                f"{key:34} {row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}"
                f" {row['partial']:4d} {row['findings']:5d} {_pct(row['precision'])}"
            )
            for miss in row["misses"][:3]:
                print(f"    miss {miss}")
            for example in row["false_examples"][:3]:
                print(f"    false {example}")
    print("\n== formats below goal")
    for key, row in patterns["formats"].items():
        if (row["recall"] or 0) < RECALL_GOAL:
            print(f"{key:34} {row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}")
    print("\n== recall by framing")
    for key, row in patterns["framing"].items():
        print(f"{key:34} {row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}")
    print("\n== generated values their library refuses (or not a NINO): found = flagged")
    for key, row in patterns["invalid"].items():
        print(f"{row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}  {key}")
    print("\n== decoys: sentences flagged")
    for name, row in patterns["decoys"].items():
        print(f"{name:22} {row['n']:5d} flagged {row['flagged']:4d}  rate {_pct(row['rate'])}")
        for example in row["examples"][:3]:
            print(f"    {example}")
    errors = patterns["errors"]
    print(f"\n== detect raised on {errors['count']} sentences")
    for example in errors["examples"]:
        print(f"    {example}")
    hinted = result["phone_hint_is_locale"]
    phone, flagged = hinted["kinds"]["PHONE"], sum(r["flagged"] for r in hinted["decoys"].values())
    default = patterns["kinds"]["PHONE"]
    default_flagged = sum(row["by_kind"].get("PHONE", 0) for row in patterns["decoys"].values())
    print(
        f"\n== PHONE, the twelve default regions vs the locale's region as the only hint:"
        f" recall {_pct(default['recall'])} vs {_pct(phone['recall'])}, precision"
        f" {_pct(default['precision'])} vs {_pct(phone['precision'])}, decoy sentences flagged"
        f" {default_flagged} vs {flagged}"
    )
    for key, row in hinted["kind_locale"].items():
        print(f"    {key:20} recall {_pct(row['recall'])}  precision {_pct(row['precision'])}")
    print("\n== disguised values: recall folded vs as written (any kind in brackets)")
    for name, section in result["disguised"].items():
        print(f"  {name} ({section['sentences']} sentences)")
        for kind, row in section["folded"].items():
            if kind == "misses":
                continue
            plain = section["as written"][kind]
            print(
                f"    {kind:10} n {row['n']:5d}  {_pct(row['recall'])}"
                f" ({_pct(row['recall_any_kind'])})  vs {_pct(plain['recall'])}"
                f" ({_pct(plain['recall_any_kind'])})"
            )
    failures = [line for line in patterns["goals"] if line.startswith("FAIL")]
    print(f"\n== goals: {len(patterns['goals']) - len(failures)} ok, {len(failures)} failed")
    for line in failures:
        print("  " + line)
    print("\n== latency of Detector.scan, a text not seen before (ms)")
    for name, row in result["latency_ms"].items():
        print(f"{name:16} p50 {row['p50']:8.4f}  p99 {row['p99']:8.4f}  mean {row['mean']:8.4f}")
    for name, rows in result["latency_by_recogniser_ms"].items():
        top = sorted(rows.items(), key=lambda item: -item[1]["p50"])[:4]
        print(
            f"  {name}, slowest recognisers (p50): "
            + ", ".join(f"{scheme} {row['p50']:.3f}" for scheme, row in top)
        )
    ner = result["ner"]
    if ner.get("installed"):
        print(
            f"\n== NER (Presidio + spaCy), loaded in {ner['load_s']} s, {ner['texts_scored']} texts"
        )
        print(header)
        for key, row in ner["kind_locale"].items():
            print(
                f"{key:34} {row['n']:5d} {_pct(row['recall'])} {_pct(row['recall_any_kind'])}"
                f" {row['partial']:4d} {row['findings']:5d} {_pct(row['precision'])}"
            )
        for kind, row in ner["kinds_claimed"].items():
            print(f"{kind} precision, English texts: {_pct(row['precision'])} of {row['findings']}")
            for example in row["false_examples"][:3]:
                print(f"    false {example}")
        for line in ner["goals"]:
            if line.startswith("FAIL"):
                print("  " + line)
        for name, row in ner["latency_ms"].items():
            p50, p99, mean = row["p50"], row["p99"], row["mean"]
            print(f"NER {name:12} p50 {p50:8.3f}  p99 {p99:8.3f}  mean {mean:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="Values of each kind per locale.")
    parser.add_argument("--decoys", type=int, default=100, help="Sentences per decoy type.")
    parser.add_argument("--rounds", type=int, default=2000, help="Rounds per latency text.")
    parser.add_argument("--ner-rounds", type=int, default=200)
    parser.add_argument("--ner-n", type=int, default=40, help="Names and places per locale.")
    parser.add_argument("--no-ner", action="store_true")
    args = parser.parse_args()
    from bench.privacydisguise import disguised_section  # it reads this module's corpus

    started = time.perf_counter()
    detector = default_detector()
    samples, decoy_samples = corpus(args.n), decoys(args.decoys)
    texts = latency_texts(samples, decoy_samples)
    result: dict[str, Any] = {
        "corpus": {
            "seed": SEED,
            "n_per_kind_and_locale": args.n,
            "decoys_per_type": args.decoys,
            "sentences": len(samples),
            "decoy_sentences": len(decoy_samples),
            "locales": LOCALES,
            "versions": {
                name: version(name) for name in ("Faker", "phonenumbers", "python-stdnum")
            },
        },
        "goals": {"recall": RECALL_GOAL, "precision": PRECISION_GOAL},
        "patterns": pattern_section(samples, decoy_samples, detector),
        "phone_hint_is_locale": hinted_phone_section(samples, decoy_samples),
        "disguised": disguised_section(samples, detector, PATTERN_KINDS),
        "latency_ms": {
            # scan, not detect: detect remembers a clean text, and one text timed again and
            # again would time the memo
            name: timed(detector.scan, text, args.rounds)
            for name, text in texts.items()
        },
        "latency_texts": {name: len(text) for name, text in texts.items()},
        "latency_by_recogniser_ms": {
            name: {
                f"{r.kind} {getattr(r, 'scheme', 'phone')}": timed(
                    r.find, texts[name], 100, warm_up=5
                )
                for r in detector.recognisers
            }
            for name in ("values 2000", "decoys 2000")
        },
    }
    result["ner"] = (
        {"skipped": True}
        if args.no_ner
        else ner_section(samples, decoy_samples, detector, texts, args.ner_rounds, args.ner_n)
    )
    result["seconds"] = round(time.perf_counter() - started, 1)
    path = write_result("privacy", result)
    print_report(result)
    print(f"\nwrote {path} in {result['seconds']} s")


if __name__ == "__main__":
    main()
