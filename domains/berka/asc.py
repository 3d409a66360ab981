"""Read the original PKDD'99 `.asc` files into typed rows (pure: no database here).

The files are `;`-separated, double-quoted, CRLF, with a header line. Dates are YYMMDD
integers (card.asc adds ` 00:00:00`), all in the 1900s; a client's birth number encodes the
sex (women have month + 50). Each file is described once by a FileSpec: which header it must
have, which table it fills and how each field converts.
"""
from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from dibench.core.errors import DibenchError

Converter = Callable[[str], Any]


class AscFormatError(DibenchError):
    """A field or header of an .asc file does not have the documented format."""

    hint = "give --path the folder holding the unmodified PKDD'99 .asc files"


def text(raw: str) -> str | None:
    """A code or name; empty and blank strings carry no code, so they become NULL."""
    value = raw.strip()
    return value or None


def integer(raw: str) -> int | None:
    value = raw.strip()
    return int(value) if value else None


def number(raw: str) -> Decimal | None:
    """Decimal amount; '?' marks a missing value in district.asc."""
    value = raw.strip()
    if value in ("", "?"):
        return None
    return Decimal(value)


def whole(raw: str) -> int | None:
    value = raw.strip()
    if value in ("", "?"):
        return None
    return int(value)


def yymmdd(raw: str) -> dt.date:
    """930101 -> 1993-01-01; a trailing time (card.asc: `931107 00:00:00`) is dropped."""
    digits = raw.strip().split(" ", 1)[0]
    if len(digits) != 6 or not digits.isdigit():
        raise ValueError(f"not a YYMMDD date: {raw!r}")
    return dt.date(1900 + int(digits[:2]), int(digits[2:4]), int(digits[4:6]))


def birth_number(raw: str) -> tuple[str, dt.date, str]:
    """'706213' -> ('706213', 1970-12-13, 'F'): the original code, the birth date, the sex."""
    code = raw.strip()
    if len(code) != 6 or not code.isdigit():
        raise ValueError(f"not a YYMMDD birth number: {raw!r}")
    month = int(code[2:4])
    gender = "F" if month > 50 else "M"
    return code, dt.date(1900 + int(code[:2]), month - 50 if month > 50 else month, int(code[4:6])), gender


@dataclass(frozen=True)
class Field:
    source: str          # header name in the .asc file
    convert: Converter   # returns one value, or a tuple spread over several columns
    columns: tuple[str, ...]


def f(source: str, convert: Converter, *columns: str) -> Field:
    return Field(source, convert, columns or (source,))


@dataclass(frozen=True)
class FileSpec:
    file: str
    table: str
    fields: tuple[Field, ...]
    counts: frozenset[int]  # accepted row counts of the original file

    @property
    def header(self) -> list[str]:
        return [fd.source for fd in self.fields]

    @property
    def columns(self) -> list[str]:
        return [c for fd in self.fields for c in fd.columns]


# Load order respects the foreign keys (parents first); district.asc has A1..A16 as header.
FILES: tuple[FileSpec, ...] = (
    FileSpec("district.asc", "district", (
        f("A1", integer, "district_id"), f("A2", text, "district_name"), f("A3", text, "region"),
        f("A4", whole, "inhabitants"), f("A5", whole, "municipalities_lt_500"),
        f("A6", whole, "municipalities_500_1999"), f("A7", whole, "municipalities_2000_9999"),
        f("A8", whole, "municipalities_ge_10000"), f("A9", whole, "cities"), f("A10", number, "urban_ratio"),
        f("A11", whole, "avg_salary"), f("A12", number, "unemployment_1995"), f("A13", number, "unemployment_1996"),
        f("A14", whole, "entrepreneurs_per_1000"), f("A15", whole, "crimes_1995"), f("A16", whole, "crimes_1996"),
    ), frozenset({77})),
    FileSpec("account.asc", "account", (
        f("account_id", integer), f("district_id", integer), f("frequency", text), f("date", yymmdd, "open_date"),
    ), frozenset({4500})),
    FileSpec("client.asc", "client", (
        f("client_id", integer), f("birth_number", birth_number, "birth_number", "birth_date", "gender"),
        f("district_id", integer),
    ), frozenset({5369})),
    FileSpec("disp.asc", "disp", (
        f("disp_id", integer), f("client_id", integer), f("account_id", integer), f("type", text),
    ), frozenset({5369})),
    FileSpec("order.asc", "permanent_order", (
        f("order_id", integer), f("account_id", integer), f("bank_to", text), f("account_to", text),
        f("amount", number), f("k_symbol", text),
    ), frozenset({6471})),
    FileSpec("trans.asc", "trans", (
        f("trans_id", integer), f("account_id", integer), f("date", yymmdd, "trans_date"), f("type", text),
        f("operation", text), f("amount", number), f("balance", number), f("k_symbol", text),
        f("bank", text, "partner_bank"), f("account", text, "partner_account"),
    ), frozenset({99_999, 1_056_320})),  # the shared sample, or the complete original
    FileSpec("loan.asc", "loan", (
        f("loan_id", integer), f("account_id", integer), f("date", yymmdd, "grant_date"), f("amount", number),
        f("duration", integer), f("payments", number), f("status", text),
    ), frozenset({682})),
    FileSpec("card.asc", "card", (
        f("card_id", integer), f("disp_id", integer), f("type", text), f("issued", yymmdd, "issue_date"),
    ), frozenset({892})),
)


def read_rows(path: Path, spec: FileSpec) -> Iterator[tuple[Any, ...]]:
    """Typed rows of one .asc file, in file order; raises AscFormatError naming file and line."""
    with path.open(newline="", encoding="latin-1") as fh:
        reader = csv.reader(fh, delimiter=";", quotechar='"')
        header = next(reader, None)
        if header != spec.header:
            raise AscFormatError(f"{path}: header {header!r} is not the PKDD'99 header {spec.header!r}")
        for line_no, record in enumerate(reader, start=2):
            if len(record) != len(spec.fields):
                raise AscFormatError(f"{path}: line {line_no}: {len(record)} fields, expected {len(spec.fields)}")
            row: list[Any] = []
            for fd, raw in zip(spec.fields, record):
                try:
                    value = fd.convert(raw)
                except (ValueError, InvalidOperation) as exc:
                    raise AscFormatError(f"{path}: line {line_no}: field {fd.source}: {exc}") from exc
                row.extend(value if len(fd.columns) > 1 else (value,))
            yield tuple(row)
