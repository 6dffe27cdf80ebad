"""Leads and the template store (docs/leads.md): in the analysis task, an attempt's mined templates are counted into
the store, and when the rules did not settle the attempt (unattributed or ambiguous) its leads are ranked with the
store's counts of normal lines and recorded with the diagnosis, in its transaction. On request, any diagnosis gets
leads too (``leads_request``).

The failure patterns are the templates among the top ``PATTERN_LEADS`` leads of attempts: ``Template.attempts``,
``TemplateCluster`` and ``TemplateDay`` count them, moved in the same transaction as the attempt's current diagnosis
(a re-analysis that attributes the attempt takes it out of its patterns).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import F, Max
from django.utils import timezone

from diagnoses.models import Attempt, Diagnosis, Lead, LeadSet, Template, TemplateCluster, TemplateDay
from diagnoses.selectors import attempt_context
from leads import Mined, mine_attempt, rank
from leads.mining import NORMAL_ROLES, Explained, mine

logger = logging.getLogger(__name__)
PATTERN_LEADS = LeadSet.PATTERN_LEADS
UNSETTLED = (Diagnosis.Outcome.UNATTRIBUTED, Diagnosis.Outcome.AMBIGUOUS)


def leads_record(*, diagnosis: Diagnosis, mined: Mined, first: bool) -> LeadSet | None:
    """Count the attempt's templates into the store and, when the rules did not settle it, record its leads as the
    attempt's current ones. Call it in the transaction that records ``diagnosis`` as the attempt's current one."""
    attempt = diagnosis.attempt
    stored = templates_count(mined=mined, attempt=attempt, counted=first)
    if not first:  # a first diagnosis has no leads before it
        leads_retire(attempt_id=attempt.pk)
    if diagnosis.outcome not in UNSETTLED:
        return None
    return _lead_set_create(diagnosis=diagnosis, mined=mined, stored=stored, requested=False, first=first)


def leads_request(*, attempt: Attempt) -> LeadSet | None:
    """Leads for the attempt's current diagnosis when it has none (the rules settled it): shown on its page, in no
    pattern. The lines the rules matched are its stored node events. None without a diagnosis."""
    diagnosis = attempt.current_diagnosis
    if diagnosis is None:
        return None
    existing = LeadSet.objects.filter(diagnosis=diagnosis).first()
    if existing is not None:
        return existing
    events = diagnosis.events.values_list("ref", "text", "role")
    explained = Explained.of((ref, text, role in NORMAL_ROLES) for ref, text, role in events)
    with attempt_context(attempt) as context:
        mined = mine(context, explained, settled=diagnosis.outcome == Diagnosis.Outcome.ATTRIBUTED)
    with transaction.atomic():
        existing = LeadSet.objects.filter(diagnosis=diagnosis).first()
        if existing is not None:
            return existing
        stored = templates_count(mined=mined, attempt=attempt, counted=False)  # there (a diagnosis from before them)
        # the store counted this attempt's own lines when it was analysed: the rarity is the other attempts'
        stored = {key: (pk, max(0, normal - mined.templates[key].normal)) for key, (pk, normal) in stored.items()}
        return _lead_set_create(diagnosis=diagnosis, mined=mined, stored=stored, requested=True, first=False)


def leads_current(*, attempt_id: int, diagnosis_id: int) -> None:
    """Make the lead set of ``diagnosis_id`` (if any) the attempt's current one: an older diagnosis became current
    again (a rollback)."""
    leads_retire(attempt_id=attempt_id)
    lead_set = LeadSet.objects.filter(diagnosis_id=diagnosis_id).select_related("attempt").first()
    if lead_set is not None:
        LeadSet.objects.filter(pk=lead_set.pk).update(current=True)
        if not lead_set.requested:
            _count(lead_set, +1)


def leads_retire(*, attempt_id: int) -> None:
    """The attempt's current leads are no longer current: out of their patterns."""
    for lead_set in LeadSet.objects.filter(attempt_id=attempt_id, current=True).select_related("attempt"):
        LeadSet.objects.filter(pk=lead_set.pk).update(current=False)
        if not lead_set.requested:
            _count(lead_set, -1)


def attempt_mine(*, context, events, settled: bool) -> Mined | None:
    """The attempt's templates (``leads.mine_attempt``); None, logged, when mining fails: the analysis goes on."""
    try:
        return mine_attempt(context, events, settled=settled)
    except Exception:
        logger.exception(
            "mining the templates of attempt %s/%s failed", context.attempt.cluster, context.attempt.job_id
        )
        return None


def templates_count(*, mined: Mined, attempt: Attempt, counted: bool = True) -> dict[str, tuple[int, int]]:
    """Add the attempt's templates to the store, in one statement (keys in order: no deadlock between workers), their
    lines only when ``counted`` (a re-analysis only makes sure they are there); the id of each and the normal lines
    it had in the store before, by key."""
    if not mined.templates:
        return {}
    table = Template._meta.db_table
    least, greatest = ("LEAST", "GREATEST") if connection.vendor == "postgresql" else ("MIN", "MAX")
    rows = []
    for key in sorted(mined.templates):
        template = mined.templates[key]
        first = template.first
        lines, normal = (template.lines, template.normal) if counted else (0, 0)
        rows.append((key, template.text, first.kind, first.stream[:100], lines, normal, attempt.end, attempt.end))
    values = ", ".join(["(%s, %s, %s, %s, %s, %s, 0, %s, %s, 'new')"] * len(rows))
    sql = (
        f"INSERT INTO {table} (key, text, kind, stream, lines, normal_lines, attempts, first_seen, last_seen, status) "
        f"VALUES {values} ON CONFLICT (key) DO UPDATE SET lines = {table}.lines + excluded.lines, "
        f"normal_lines = {table}.normal_lines + excluded.normal_lines, "
        f"first_seen = {least}({table}.first_seen, excluded.first_seen), "
        f"last_seen = {greatest}({table}.last_seen, excluded.last_seen) RETURNING id, key, normal_lines"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row])
        return {key: (pk, normal - (mined.templates[key].normal if counted else 0)) for pk, key, normal in cursor}


def _lead_set_create(
    *, diagnosis: Diagnosis, mined: Mined, stored: dict[str, tuple[int, int]], requested: bool, first: bool
) -> LeadSet:
    normal = {key: count for key, (_pk, count) in stored.items()}
    leads = rank(mined, normal, LeadSet.KEPT)
    ids = {key: pk for key, (pk, _count) in stored.items()}
    pattern_ids = sorted({ids[lead.template.key] for lead in leads[:PATTERN_LEADS]})
    day_counts = _days_add(pattern_ids) if first and not requested else {}
    lead_set = LeadSet.objects.create(
        diagnosis=diagnosis,
        attempt_id=diagnosis.attempt_id,
        requested=requested,
        current=not requested,
        templates=Template.objects.aggregate(last=Max("pk"))["last"] or 0,
    )
    Lead.objects.bulk_create(
        Lead(
            lead_set=lead_set,
            position=position,
            template_id=ids[lead.template.key],
            score=lead.score,
            why=lead.why,
            normal=normal.get(lead.template.key, 0),
            node=(lead.template.first.node or "")[:255],
            stream=lead.template.first.stream[:100],
            ref=f"{lead.template.first.file}:{lead.template.first.line}"[:500],
            text=lead.template.first.text,
            time=None if lead.template.first.time is None else datetime.fromtimestamp(lead.template.first.time, UTC),
            day_attempts=day_counts.get(ids[lead.template.key]) if position <= PATTERN_LEADS else None,
        )
        for position, lead in enumerate(leads, 1)
    )
    if not requested:
        _count(lead_set, +1, ids=pattern_ids)
    return lead_set


def _count(lead_set: LeadSet, step: int, ids: list[int] | None = None) -> None:
    """Move the attempt into (+1) or out of (-1) the patterns of its lead set's first ``PATTERN_LEADS`` leads."""
    if ids is None:
        ids = list(lead_set.leads.filter(position__lte=PATTERN_LEADS).values_list("template_id", flat=True))
    ids = sorted(set(ids))
    if not ids:
        return
    Template.objects.filter(pk__in=ids).update(attempts=F("attempts") + step)
    cluster_id = lead_set.attempt.cluster_id
    if step > 0:
        _add_one(TemplateCluster, "cluster_id", cluster_id, ids)
    else:
        TemplateCluster.objects.filter(template_id__in=ids, cluster_id=cluster_id).update(attempts=F("attempts") - 1)


def _days_add(ids: list[int]) -> dict[int, int]:
    """Count a first analysis into its patterns' day; their attempts that day by template id."""
    return _add_one(TemplateDay, "day", timezone.now().astimezone(UTC).date(), ids)


def _add_one(model, column: str, value, template_ids: list[int]) -> dict[int, int]:
    """Add one to ``attempts`` of the rows (template, ``column`` = ``value``) of ``template_ids``, creating them, in
    one statement; their ``attempts`` now, by template id."""
    if not template_ids:
        return {}
    table = model._meta.db_table
    rows = ", ".join(["(%s, %s, 1)"] * len(template_ids))
    sql = (
        f"INSERT INTO {table} (template_id, {column}, attempts) VALUES {rows} "
        f"ON CONFLICT (template_id, {column}) DO UPDATE SET attempts = {table}.attempts + 1 "
        "RETURNING template_id, attempts"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [item for pk in template_ids for item in (pk, value)])
        return dict(cursor.fetchall())


def pattern_update(*, pattern: Template, by, assignee=..., status: str | None = None) -> Template:
    """Assign a pattern to a person (None: to no one) and/or set its status (``known``: known, no rule wanted, so
    that it stops surfacing; ``new``: surface again). ``ValueError`` names a bad status."""
    if status is not None and status not in Template.Status.values:
        raise ValueError(f"status: not one of {', '.join(Template.Status.values)}: {status!r}")
    fields = {"changed_by": by, "changed": timezone.now()}
    if assignee is not ...:
        fields["assignee"] = assignee
    if status is not None:
        fields["status"] = status
    Template.objects.filter(pk=pattern.pk).update(**fields)
    pattern.refresh_from_db()
    return pattern
