"""A connector's settings (a JSON object from the cluster's configuration), read with typed checks.

Every problem is a permanent ``SettingError`` naming the connector and the setting. Secrets are
never settings themselves: ``token_env`` names an environment variable and ``token_file`` a file
that holds the secret ``token``; a setting that looks like a secret (``password``, ``api_key``, an
``Authorization`` header, a URL with a password) is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from connectors.base import ConnectorError

# A setting or header whose name holds one of these words (``-`` read as ``_``) would hold a secret.
SECRET_WORDS = ("password", "passwd", "secret", "token", "api_key", "apikey", "private_key", "credential",
                "authorization", "cookie")  # fmt: skip


class SettingError(ConnectorError):
    """One setting is wrong; ``setting`` names it (for a form or an API error that points at it)."""

    def __init__(self, message: str, setting: str):
        super().__init__(message, permanent=True)
        self.setting = setting


class Settings:
    def __init__(self, connector: str, values: Mapping | None):
        if values is None:
            values = {}
        if not isinstance(values, Mapping):
            raise ConnectorError(f"{connector}: settings must be a JSON object", permanent=True)
        self.connector = connector
        self.values = dict(values)
        self.read: set[str] = set()
        secrets = plain_secrets(self.values)
        if secrets:
            raise self.error(*secrets[0])

    def error(self, key: str, problem: str) -> SettingError:
        return SettingError(f"{self.connector}: setting {key!r} {problem}", key)

    def _get(self, key: str, default, required: bool):
        self.read.add(key)
        if key not in self.values or self.values[key] is None:
            if required:
                raise self.error(key, "is required")
            return default
        return self.values[key]

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self._get(key, default, required)
        if value is not None and not isinstance(value, str):
            raise self.error(key, "must be a string")
        return value

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self._get(key, default, False)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
            raise self.error(key, f"must be a number of at least {minimum:g}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self._get(key, default, False)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(key, f"must be an integer of at least {minimum}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key, default, False)
        if not isinstance(value, bool):
            raise self.error(key, "must be true or false")
        return value

    def texts(self, key: str, default: list[str] | tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self._get(key, list(default), False)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
            raise self.error(key, "must be a list of non-empty strings")
        return tuple(value)

    def mapping(self, key: str, default: Mapping[str, str] | None = None, *, required: bool = False) -> dict[str, str]:
        value = self._get(key, dict(default or {}), required)
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
        ):
            raise self.error(key, "must be an object mapping names to strings")
        return dict(value)

    def secret(self, key: str) -> str | None:
        """The secret ``key`` read from the variable named by ``<key>_env`` or the file named by ``<key>_file``."""
        env_name = self.text(f"{key}_env")
        file_name = self.text(f"{key}_file")
        if env_name and file_name:
            raise self.error(f"{key}_env", f"and {key}_file are exclusive")
        if env_name:
            value = os.environ.get(env_name)
            if not value:
                raise self.error(f"{key}_env", f"names the environment variable {env_name}, which is not set")
            return value
        if file_name:
            try:
                return Path(file_name).read_text().strip()
            except OSError as exc:
                raise self.error(f"{key}_file", f"names {file_name}, which cannot be read: {exc.strerror}") from None
        return None

    def finish(self) -> None:
        """Reject settings nothing read: a misspelt key must not be ignored silently."""
        unknown = sorted(set(self.values) - self.read)
        if unknown:
            raise self.error(unknown[0], "is not a setting of this connector")


def plain_secrets(values: Mapping) -> list[tuple[str, str]]:
    """The settings that would store a secret in plain text, each with the problem: a setting or a
    ``headers`` entry named like a secret, or a URL that carries a password."""
    found = []
    for key, value in values.items():
        name = str(key)
        if _secret_name(name) and not name.endswith(("_env", "_file")):
            stem = "password" if "pass" in name.lower() else "token"
            found.append((name, f"must not hold a secret: name an environment variable ({stem}_env) or a file "
                                f"({stem}_file) that holds it"))  # fmt: skip
        elif name == "headers" and isinstance(value, Mapping):
            found.extend(
                (f"headers.{header}", "must not hold a secret: use token_env or token_file (sent as a Bearer token)")
                for header in value
                if _secret_name(str(header))
            )
        elif isinstance(value, str) and "://" in value and _url_password(value):
            found.append((name, "must not hold a password in the URL: use username with password_env or password_file"))
    return found


def _secret_name(name: str) -> bool:
    normal = name.lower().replace("-", "_")
    return any(word in normal for word in SECRET_WORDS)


def _url_password(value: str) -> bool:
    try:
        return urlsplit(value).password is not None
    except ValueError:
        return False
