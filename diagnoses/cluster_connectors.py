"""A cluster's connectors, built from its configuration (``Cluster``, ``Source``), and the checks that
refuse a configuration they could not be built from.

A check builds the connector with its own settings reader (``connectors.settings_reader``), so a bad
setting is refused when it is saved, with the setting named, exactly as it would fail at the next poll.
The scheduler receives the cluster's name as its ``cluster`` setting. A kind is one of
``connectors.base.KINDS`` (or an old name of one, ``ALIASES``) or a dotted path listed in
``FAULTLINE_CONNECTOR_PATHS``: configuration never imports code that the deployment did not allow. A
cluster whose connector is ``uploads`` has no scheduler: its attempts arrive as uploaded bundles.
"""

from django.conf import settings
from django.core.exceptions import ValidationError

from connectors.base import KINDS, ConnectorError, UnusableKind, build, canonical_kind
from connectors.settings_reader import SettingError

UPLOADS = "uploads"  # no scheduler: the cluster's attempts arrive as uploaded bundles
DEMO_SCHEDULER = "demo"  # connectors/demo.py: a watched folder whose drains are recorded, never run (make run's demo)
OLD_NAMES = {"localfiles": UPLOADS}  # what ``uploads`` was called before


def connector_name(kind: str) -> str:
    """The name a cluster's connector or a source's kind is stored under (an old name becomes the new one)."""
    return OLD_NAMES.get(kind) or canonical_kind(kind)


def backoff_seconds(failures: int, base: float) -> float:
    """How long to leave a connector alone after ``failures`` failures in a row: ``base`` doubled per
    failure, at most ``FAULTLINE_BACKOFF_MAX`` seconds (or ``base`` when that is longer)."""
    return min(max(base, settings.FAULTLINE_BACKOFF_MAX), base * 2**failures)


def allowed_kinds(role: str) -> list[str]:
    return [kind for kind, (kind_role, _) in KINDS.items() if kind_role == role] + list(
        settings.FAULTLINE_CONNECTOR_PATHS
    )


def scheduler_of(cluster):
    """The cluster's scheduler connector (raises ``ConnectorError``)."""
    return _build(cluster.connector, "scheduler", cluster.name, _scheduler_settings(cluster))


def source_of(source):
    """A log or metric source's connector (raises ``ConnectorError``)."""
    return _build(source.kind, source.role, source.name, source.settings)


def _scheduler_settings(cluster):
    if not isinstance(cluster.scheduler_settings, dict):
        return cluster.scheduler_settings  # the settings reader names the problem
    return {**cluster.scheduler_settings, "cluster": cluster.name}


def _build(kind: str, role: str, name: str, values):
    if canonical_kind(kind) not in allowed_kinds(role):
        raise UnusableKind(f"{kind!r} is not a {role} connector here (choose {', '.join(allowed_kinds(role))})")
    return build(kind, name, values, role=role)


def check_cluster(cluster) -> None:
    """Raise ``ValidationError`` naming the field (and the setting) when the scheduler cannot be built."""
    if not cluster.has_scheduler:
        if cluster.scheduler_settings:
            raise ValidationError({"scheduler_settings": f"a cluster without a scheduler ({UPLOADS}) has no settings"})
        if cluster.enabled:
            raise ValidationError({"enabled": "discovery needs a scheduler: choose the cluster's connector"})
        return
    if isinstance(cluster.scheduler_settings, dict) and "cluster" in cluster.scheduler_settings:
        raise ValidationError(
            {"scheduler_settings": "leave out the setting 'cluster': the scheduler gets the cluster's name"}
        )
    _check(lambda: scheduler_of(cluster), kind_field="connector", settings_field="scheduler_settings")


def check_source(source) -> None:
    if source.cluster is not None and not source.cluster.has_scheduler:
        raise ValidationError(
            "a cluster without a scheduler gathers nothing: its attempts arrive as bundles; choose its connector"
        )
    _check(lambda: source_of(source), kind_field="kind", settings_field="settings")


def _check(build_connector, *, kind_field: str, settings_field: str) -> None:
    try:
        build_connector()
    except UnusableKind as exc:
        raise ValidationError({kind_field: str(exc)}) from None
    except SettingError as exc:
        # params name the setting for the API's error path; % is escaped for Django's interpolation
        error = ValidationError(str(exc).replace("%", "%%"), code="invalid_setting", params={"setting": exc.setting})
        raise ValidationError({settings_field: error}) from None
    except ConnectorError as exc:
        raise ValidationError({settings_field: str(exc)}) from None
