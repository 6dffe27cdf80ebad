"""Typed readers for settings that come from the environment."""

import ipaddress
import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"Set the {name} environment variable")
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():  # unset or empty: the default
        return default
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_choices(name: str, default: list[str], choices: tuple[str, ...]) -> list[str]:
    """A comma-separated list of some of ``choices``, in the order given."""
    values = env_list(name, default)
    unknown = [value for value in values if value not in choices]
    if unknown or not values:
        raise ImproperlyConfigured(
            f"{name} must list one or more of {', '.join(choices)}, not {(unknown or [''])[0]!r}"
        )
    return values


def env_secret_key(name: str, fallback_file: Path) -> str:
    """The secret key from the environment; else one generated once and kept in ``fallback_file``.

    The file keeps sessions valid across restarts of the embedded default; production sets the variable.
    """
    value = os.environ.get(name)
    if value:
        return value
    try:
        return fallback_file.read_text().strip()
    except FileNotFoundError:
        fallback_file.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        fallback_file.write_text(key)
        fallback_file.chmod(0o600)
        return key


def env_secret_file(name: str) -> str:
    """A secret from the variable ``name``, or from the file the variable ``<name>_FILE`` names; empty when unset."""
    value = os.environ.get(name, "")
    path = os.environ.get(f"{name}_FILE")
    if value and path:
        raise ImproperlyConfigured(f"Set {name} or {name}_FILE, not both")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE names {path}, which cannot be read: {exc.strerror}") from None
    return value


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Networks (comma-separated CIDR, or single addresses) from the variable ``name``; none when unset."""
    try:
        return [ipaddress.ip_network(item, strict=False) for item in env_list(name, [])]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must list networks in CIDR notation: {exc}") from None
