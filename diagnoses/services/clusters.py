"""Configuring clusters: a cluster's scheduler and its log and metric sources, checked by building their
connectors (``diagnoses.cluster_connectors``), saved without touching discovery's state or a source's
health unless their connector changed. The admin, the API and ``manage.py cluster add`` all call these."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from diagnoses.models import Cluster, Source


def cluster_configure(*, cluster: Cluster | None = None, sources: list[dict] | None = None, **fields) -> Cluster:
    """Create or change a cluster's configuration (``Cluster.CONFIGURATION`` fields) and, when ``sources``
    is given, replace its log and metric sources (``{role, name, kind, settings}`` each; a source kept
    by name keeps its health). Every problem is raised at once as a ``ValidationError`` whose keys are
    field paths (``scheduler_settings``, ``sources.1.settings``), each naming the setting at fault."""
    cluster = cluster or Cluster()
    for name, value in fields.items():
        setattr(cluster, name, value)
    errors: dict[str, list] = {}
    try:
        cluster.full_clean(exclude=[f.name for f in Cluster._meta.fields if f.name not in Cluster.CONFIGURATION])
    except ValidationError as exc:
        errors.update(exc.error_dict)
    rows: list[Source] = []
    if sources is not None:
        kept = {source.name: source for source in cluster.sources.all()} if cluster.pk else {}
        for index, item in enumerate(sources):
            row = kept.pop(item.get("name"), None) or Source()
            row.cluster = cluster
            for name in ("role", "name", "kind", "settings"):
                setattr(row, name, item.get(name, getattr(row, name)))
            rows.append(row)
            row.position = index
            try:
                row.full_clean(exclude=["cluster"], validate_constraints=False)
            except ValidationError as exc:
                errors.update({f"sources.{index}.{field}": problems for field, problems in exc.error_dict.items()})
            if [other.name for other in rows].count(row.name) > 1:
                errors[f"sources.{index}.name"] = [ValidationError(f"a second source named {row.name!r}")]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        cluster_save(cluster=cluster)
        if sources is not None:
            cluster.sources.exclude(pk__in=[row.pk for row in rows if row.pk]).delete()
            for row in rows:
                source_save(source=row)
    return cluster


def cluster_save(*, cluster: Cluster) -> None:
    """Save a cluster's configuration only (a poll ending meanwhile keeps its state). A changed scheduler
    is due at once, without backoff, and from a fresh cursor when its kind changed."""
    fields = list(Cluster.CONFIGURATION)
    before = Cluster.objects.filter(pk=cluster.pk).values("connector", "scheduler_settings").first()
    if before and (before["connector"], before["scheduler_settings"]) != (
        cluster.connector,
        cluster.scheduler_settings,
    ):
        cluster.next_poll, cluster.failures = None, 0
        fields += ["next_poll", "failures"]
        if before["connector"] != cluster.connector:
            cluster.cursor = ""
            fields.append("cursor")
    cluster.save(update_fields=fields if before else None)


def source_save(*, source: Source) -> None:
    """Save a source's configuration only; a changed kind or settings ends its backoff."""
    fields = list(Source.CONFIGURATION)
    before = Source.objects.filter(pk=source.pk).values("kind", "settings").first()
    if before and (before["kind"], before["settings"]) != (source.kind, source.settings):
        source.failures, source.retry_after = 0, None
        fields += ["failures", "retry_after"]
    source.save(update_fields=fields if before else None)
