"""Sums kept in rows and added to in one statement (``INSERT ... ON CONFLICT DO UPDATE SET n = n + excluded.n``), so
that processes adding at once lose nothing: the daily rollups of the verdicts (``services/verdict_days.py``) and the
event counts (``services/event_counts.py``)."""

from django.db import connection


def sums_add(table: str, keys: tuple[str, ...], sums: tuple[str, ...], rows: list[tuple]) -> None:
    """Add each row's ``sums`` to the stored row of its ``keys`` (made when missing), in one statement. The caller
    gives the rows in key order, so that two transactions adding to the same rows lock them in the same order."""
    if not rows:
        return
    columns = ", ".join(keys + sums)
    values = ", ".join(["(" + ", ".join(["%s"] * len(keys + sums)) + ")"] * len(rows))
    added = ", ".join(f"{name} = {table}.{name} + excluded.{name}" for name in sums)
    sql = f"INSERT INTO {table} ({columns}) VALUES {values} ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {added}"
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row])
