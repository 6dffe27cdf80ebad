"""Seek pagination: every row once, in order, forwards and backwards, ties included."""

from datetime import UTC, datetime, timedelta

import pytest

from diagnoses.models import Attempt, Cluster, Job
from pages import paging

pytestmark = pytest.mark.django_db
START = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


@pytest.fixture
def rows():
    """Seven attempts; ends and users repeat so that the primary key breaks ties."""
    cluster = Cluster.objects.create(name="c")
    for n in range(7):
        job = Job.objects.create(cluster=cluster, job_id=str(n), scheduler="slurm")
        Attempt.objects.create(
            cluster=cluster, job=job, number=0, scheduler="slurm", state="FAILED", start=START,
            end=START + timedelta(hours=n // 3), user="ab"[n % 2], record={}, bundle=f"b/{n}",
        )  # fmt: skip
    return Attempt.objects.all()


def walk(queryset, sort: str, size: int) -> list[list[int]]:
    pages, cursor = [], ""
    while True:
        page = paging.seek(queryset, sort=sort, after=cursor, size=size)
        pages.append([row.pk for row in page.rows])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


@pytest.mark.parametrize("sort", ["-end", "end", "user", "-user", "state"])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 50])
def test_forward_pages_hold_every_row_once_in_order(rows, sort, size):
    field = sort.lstrip("-")
    expected = [a.pk for a in sorted(rows, key=lambda a: (getattr(a, field), a.pk), reverse=sort.startswith("-"))]

    pages = walk(rows, sort, size)

    assert [pk for page in pages for pk in page] == expected
    assert all(len(page) == size for page in pages[:-1])


@pytest.mark.parametrize("sort", ["-end", "user"])
def test_previous_pages_lead_back_to_the_first(rows, sort):
    forward = walk(rows, sort, 2)
    page = paging.seek(rows, sort=sort, size=2)
    for _ in forward[:-1]:
        page = paging.seek(rows, sort=sort, after=page.next_cursor, size=2)
    backward = [[row.pk for row in page.rows]]
    while page.previous_cursor:
        page = paging.seek(rows, sort=sort, before=page.previous_cursor, size=2)
        backward.append([row.pk for row in page.rows])

    assert backward[::-1] == forward
    assert page.first


def test_a_cursor_that_cannot_be_read_starts_from_the_first_page(rows):
    first = paging.seek(rows, sort="-end", size=3)

    for cursor in ("nonsense", "W10", "WyJ4IiwgMV0"):  # not base64 JSON; []; ["x", 1]
        page = paging.seek(rows, sort="-end", after=cursor, size=3)
        assert [r.pk for r in page.rows] == [r.pk for r in first.rows]
        assert page.first


def test_the_count_stops_at_the_cap(rows, monkeypatch):
    assert (paging.seek(rows, sort="-end").count, paging.seek(rows, sort="-end").count_capped) == (7, False)
    monkeypatch.setattr(paging, "COUNT_CAP", 5)

    page = paging.seek(rows, sort="-end")

    assert (page.count, page.count_capped) == (5, True)
