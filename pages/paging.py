"""Seek (keyset) pagination for the HTML lists: pages by position, never by offset.

A page is read with ``ORDER BY key, pk LIMIT size + 1`` starting after (or before) a cursor that holds
the key and primary key of the row at a page boundary, so reading page 10,000 of a million rows
costs what page 1 costs. The total is counted only up to ``COUNT_CAP`` (counting a million rows on
every request would cost more than the page itself).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

COUNT_CAP = 1_000


@dataclass(frozen=True)
class Page:
    rows: list
    sort: str  # the ordering used, e.g. "-end"
    next_cursor: str | None  # the ``after`` of the next page
    previous_cursor: str | None  # the ``before`` of the previous page
    count: int  # rows in all, counted up to COUNT_CAP
    count_capped: bool  # more than COUNT_CAP rows

    @property
    def first(self) -> bool:
        return self.previous_cursor is None


def seek(
    queryset: QuerySet,
    *,
    sort: str,
    after: str = "",
    before: str = "",
    size: int = 50,
) -> Page:
    """The page of ``queryset`` ordered by ``sort`` (a field name, ``-`` for descending, then the
    primary key in the same direction) that follows the cursor ``after`` or precedes ``before``.

    A cursor that cannot be read (edited by hand, from another sort) starts from the first page.
    """
    descending = sort.startswith("-")
    field = sort.lstrip("-")
    model_field = queryset.model._meta.get_field(field)
    position = _decode(before or after, model_field)
    backwards = bool(before) and position is not None
    ordered = queryset.order_by(*_ordering(field, descending != backwards))
    if position is not None:
        ordered = ordered.filter(_beyond(field, position, descending != backwards))
    rows = list(ordered[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    if backwards:
        rows.reverse()
    has_next = more if not backwards else True
    has_previous = (position is not None) if not backwards else more
    count = count_bounded(queryset)
    return Page(
        rows=rows,
        sort=sort,
        next_cursor=_encode(rows[-1], field) if rows and has_next else None,
        previous_cursor=_encode(rows[0], field) if rows and has_previous else None,
        count=min(count, COUNT_CAP),
        count_capped=count > COUNT_CAP,
    )


def one_page(rows: list, *, sort: str = "-end") -> Page:
    """``rows`` as a list's only page: the lists' table and pager, without other pages (the overview's latest
    failures, a search's attempts)."""
    return Page(rows=rows, sort=sort, next_cursor=None, previous_cursor=None, count=len(rows), count_capped=False)


def count_bounded(queryset: QuerySet) -> int:
    """The number of rows, counted up to ``COUNT_CAP + 1`` (more means "more than COUNT_CAP")."""
    return queryset.order_by()[: COUNT_CAP + 1].count()


def _ordering(field: str, descending: bool) -> list[str]:
    sign = "-" if descending else ""
    return [f"{sign}{field}", f"{sign}pk"]


def _beyond(field: str, position: tuple, descending: bool) -> Q:
    """Rows after ``position`` in this order. The first, redundant, condition bounds the index scan
    (a database cannot derive a bound from the OR alone)."""
    value, pk = position
    op = "lt" if descending else "gt"
    return Q(**{f"{field}__{op}e": value}) & (Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"pk__{op}": pk}))


def _encode(row, field: str) -> str:
    value = getattr(row, field)
    text = json.dumps([value.isoformat() if hasattr(value, "isoformat") else value, row.pk])
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(cursor: str, model_field) -> tuple | None:
    if not cursor:
        return None
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        return model_field.to_python(value), int(pk)
    except (ValueError, TypeError, binascii.Error, ValidationError):
        return None
