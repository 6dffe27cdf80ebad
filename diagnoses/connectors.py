"""A cluster's connectors, built from its configuration (``Cluster``, ``Source``), and the checks that
refuse a configuration they could not be built from.

A check builds the connector with its own settings reader (``connectors.settings``), so a bad setting
is refused when it is saved, with the setting named, exactly as it would fail at the next poll. The
scheduler receives the cluster's name as its ``cluster`` setting. A kind is one of
``connectors.base.KINDS`` or a dotted path listed in ``FAULTLINE_CONNECTOR_PATHS``: configuration
never imports code that the deployment did not allow.
"""

from django.conf import settings
from django.core.exceptions import ValidationError

from connectors.base import KINDS, ROLES, ConnectorError, connector_class
from connectors.settings import SettingError


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


class UnusableKind(ConnectorError):
    """The kind is not allowed, cannot be imported, or is not a connector of the role it is given."""

    def __init__(self, message: str):
        super().__init__(message, permanent=True)


def _build(kind: str, role: str, name: str, values):
    if kind not in allowed_kinds(role):
        raise UnusableKind(f"{kind!r} is not a {role} connector here (choose {', '.join(allowed_kinds(role))})")
    try:
        cls = connector_class(kind)
    except ConnectorError as exc:
        raise UnusableKind(str(exc)) from None
    methods = [name for name, value in vars(ROLES[role]).items() if callable(value) and not name.startswith("_")]
    if not all(callable(getattr(cls, method, None)) for method in methods):
        raise UnusableKind(f"{kind!r} is not a {role} connector (it lacks {', '.join(methods)})")
    return cls(name, values)


def check_cluster(cluster) -> None:
    """Raise ``ValidationError`` naming the field (and the setting) when the scheduler cannot be built."""
    if not cluster.has_scheduler:
        if cluster.scheduler_settings:
            raise ValidationError({"scheduler_settings": "a cluster without a scheduler (localfiles) has no settings"})
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


def _check(build, *, kind_field: str, settings_field: str) -> None:
    try:
        build()
    except UnusableKind as exc:
        raise ValidationError({kind_field: str(exc)}) from None
    except SettingError as exc:
        # params name the setting for the API's error path; % is escaped for Django's interpolation
        error = ValidationError(str(exc).replace("%", "%%"), code="invalid_setting", params={"setting": exc.setting})
        raise ValidationError({settings_field: error}) from None
    except ConnectorError as exc:
        raise ValidationError({settings_field: str(exc)}) from None
