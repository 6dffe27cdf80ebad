"""A connector's settings (a JSON object from the cluster's configuration), read with typed checks.

Every problem is a permanent ``ConnectorError`` naming the connector and the setting. Secrets are
never settings themselves: ``token_env`` names an environment variable and ``token_file`` a file
that holds the secret ``token``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from connectors.base import ConnectorError


class Settings:
    def __init__(self, connector: str, values: Mapping | None):
        if values is None:
            values = {}
        if not isinstance(values, Mapping):
            raise ConnectorError(f"{connector}: settings must be a JSON object", permanent=True)
        self.connector = connector
        self.values = dict(values)
        self.read: set[str] = set()

    def error(self, key: str, problem: str) -> ConnectorError:
        return ConnectorError(f"{self.connector}: setting {key!r} {problem}", permanent=True)

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
        if key in self.values:
            raise self.error(key, f"must not hold the secret itself: use {key}_env or {key}_file")
        if env_name and file_name:
            raise self.error(f"{key}_env", f"and {key}_file are exclusive")
        if env_name:
            value = os.environ.get(env_name)
            if not value:
                raise ConnectorError(
                    f"{self.connector}: environment variable {env_name} (setting {key}_env) is not set", permanent=True
                )
            return value
        if file_name:
            try:
                return Path(file_name).read_text().strip()
            except OSError as exc:
                raise ConnectorError(
                    f"{self.connector}: cannot read {file_name} (setting {key}_file): {exc.strerror}", permanent=True
                ) from None
        return None

    def finish(self) -> None:
        """Reject settings nothing read: a misspelt key must not be ignored silently."""
        unknown = sorted(set(self.values) - self.read)
        if unknown:
            raise self.error(unknown[0], "is not a setting of this connector")
