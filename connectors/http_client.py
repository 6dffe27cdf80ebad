"""The HTTP client of the connectors that speak JSON over HTTP (Prometheus, Loki, slurmrestd).

Every request has a timeout, shortened to what is left of the gathering's deadline (``connectors.deadlines``); no try
starts after it. Connection failures, timeouts, 429 and 5xx are transient: retried with
exponential backoff (honouring ``Retry-After``), then raised as a transient ``ConnectorError``. Any
other 4xx is permanent (bad query, bad credentials, wrong URL). A body that is not JSON is retried
too (a proxy may cut a response short), and is permanent when it persists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import requests

from connectors import deadlines
from connectors.base import ConnectorError
from connectors.settings_reader import Settings

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0
ERROR_SNIPPET = 300


class HttpClient:
    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 1.0,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        verify: bool | str = True,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.session = requests.Session()
        self.session.headers.update(headers or {})
        self.session.auth = auth
        self.session.verify = verify

    @classmethod
    def from_settings(cls, settings: Settings, *, default_timeout: float = 10.0) -> HttpClient:
        """Read ``url``, ``timeout``, ``retries``, ``backoff``, ``verify_tls``, ``ca_file``, ``headers``,
        ``tenant`` (``X-Scope-OrgID``), the secret ``token`` (Bearer) and ``username`` with the secret
        ``password`` (Basic)."""
        url = settings.text("url", required=True)
        if not url.startswith(("http://", "https://")):
            raise settings.error("url", "must start with http:// or https://")
        headers = settings.mapping("headers")
        tenant = settings.text("tenant")
        if tenant:
            headers["X-Scope-OrgID"] = tenant
        token = settings.secret("token")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        username = settings.text("username")
        password = settings.secret("password")
        verify: bool | str = settings.boolean("verify_tls", True)
        ca_file = settings.text("ca_file")
        if ca_file and verify:
            verify = ca_file
        return cls(
            settings.connector,
            url,
            timeout=settings.number("timeout", default_timeout, minimum=0.1),
            retries=settings.integer("retries", 3),
            backoff=settings.number("backoff", 1.0),
            headers=headers,
            auth=(username, password or "") if username else None,
            verify=verify,
        )

    def get_json(self, path: str, params: Mapping[str, str] | None = None) -> object:
        """GET ``path`` and decode its JSON body, retrying transient failures."""
        url = f"{self.base_url}{path}"
        attempt = 0
        problem = f"GET {url}: not asked"
        while True:
            attempt += 1
            left = deadlines.remaining()
            if left is not None and left <= 0:
                tries = f"after {attempt - 1} tries, " if attempt > 2 else ""
                raise ConnectorError(f"{self.name}: {problem} ({tries}the gathering's deadline passed)")
            outcome = self._try(url, params, self.timeout if left is None else min(self.timeout, left))
            if outcome.problem is None:
                return outcome.value
            if not outcome.retry or attempt > self.retries:
                tries = f" (after {attempt} tries)" if attempt > 1 else ""
                raise ConnectorError(f"{self.name}: {outcome.problem}{tries}", permanent=outcome.permanent)
            problem = outcome.problem
            wait = outcome.wait if outcome.wait is not None else self.backoff * 2 ** (attempt - 1)
            left = deadlines.remaining()
            self.sleep(wait if left is None else min(wait, left))

    def _try(self, url: str, params, timeout: float) -> _Outcome:
        try:
            response = self.session.get(url, params=params, timeout=timeout)
        except requests.Timeout:
            return _Outcome(problem=f"GET {url} timed out after {timeout:g} s", retry=True)
        except requests.RequestException as exc:
            return _Outcome(problem=f"GET {url} failed: {exc}", retry=True)
        status = response.status_code
        if status in TRANSIENT_STATUSES or status >= 500:
            problem = f"GET {url}: HTTP {status} {_snippet(response)}"
            return _Outcome(problem=problem, retry=True, wait=_retry_after(response))
        if status >= 400:
            return _Outcome(problem=f"GET {url}: HTTP {status} {_snippet(response)}", permanent=True)
        try:
            return _Outcome(value=json.loads(response.content))
        except (ValueError, UnicodeDecodeError) as exc:
            # Retried (a proxy may cut a body short); permanent once it persists (not a JSON API).
            return _Outcome(problem=f"GET {url}: malformed JSON ({exc})", retry=True, permanent=True)


@dataclass(frozen=True)
class _Outcome:
    value: object = None
    problem: str | None = None
    retry: bool = False
    permanent: bool = False
    wait: float | None = None


def _snippet(response: requests.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:ERROR_SNIPPET] + ("…" if len(text) > ERROR_SNIPPET else "")


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return min(float(value), MAX_RETRY_AFTER)
    except ValueError:
        return None
