"""The Kubernetes API through the official client, with timeouts, retries and the raw JSON shapes.

Responses are read as the API's JSON (``_preload_content=False``), so the connector works with the
documented field names (``containerStatuses``, ``lastTransitionTime``) whatever the client version.
404 raises ``NotFound`` (a missing source, not an error); 429 and 5xx are retried; other 4xx are permanent.

Settings: ``kubeconfig`` (a file; ``context`` picks one of its contexts), or ``in_cluster: true``, or
``host`` with the secret ``token`` (``token_env``/``token_file``) and ``ca_file``/``verify_tls``;
``timeout`` (seconds per request, default 30), ``retries`` (default 3), ``backoff`` (default 1).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from urllib.parse import quote

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from connectors.base import ConnectorError
from connectors.settings_reader import Settings


class NotFound(ConnectorError):
    def __init__(self, message: str):
        super().__init__(message, permanent=True)


class KubernetesApi:
    def __init__(self, reader: Settings, *, sleep: Callable[[float], None] = time.sleep):
        self.name = reader.connector
        configuration = client.Configuration()
        kubeconfig, context = reader.text("kubeconfig"), reader.text("context")
        in_cluster, host = reader.boolean("in_cluster", False), reader.text("host")
        token, ca_file, verify = reader.secret("token"), reader.text("ca_file"), reader.boolean("verify_tls", True)
        if sum(bool(x) for x in (kubeconfig, in_cluster, host)) != 1:
            raise reader.error("host", "or kubeconfig or in_cluster: exactly one must be given")
        try:
            if kubeconfig:
                config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
            elif in_cluster:
                config.load_incluster_config(client_configuration=configuration)
        except (ConfigException, OSError) as exc:
            raise ConnectorError(
                f"{self.name}: cannot load the Kubernetes configuration: {exc}", permanent=True
            ) from None
        if host:
            configuration.host = host.rstrip("/")
            configuration.verify_ssl = verify
            if ca_file:
                configuration.ssl_ca_cert = ca_file
            if token:
                configuration.api_key = {"authorization": token}
                configuration.api_key_prefix = {"authorization": "Bearer"}
        configuration.retries = False
        self.timeout = reader.number("timeout", 30.0, minimum=0.1)
        self.retries = reader.integer("retries", 3)
        self.backoff = reader.number("backoff", 1.0)
        self.sleep = sleep
        api_client = client.ApiClient(configuration)
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    def call(self, what: str, method, *args, max_bytes: int | None = None, **kwargs) -> bytes:
        """The raw body of one API call, retried while transient; with ``max_bytes``, at most ``max_bytes + 1`` bytes
        of it (so that the caller can tell a longer body)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = method(*args, _preload_content=False, _request_timeout=self.timeout, **kwargs)
                if max_bytes is None:
                    return response.data
                try:
                    return response.read(max_bytes + 1)
                finally:
                    response.release_conn()
            except ApiException as exc:
                if exc.status == 404:
                    raise NotFound(f"{self.name}: {what}: not found") from None
                transient = exc.status == 429 or exc.status >= 500
                problem = f"HTTP {exc.status} {_status_message(exc.body)}"
            except urllib3.exceptions.HTTPError as exc:
                transient, problem = True, f"request failed: {exc}"
            if not transient or attempt > self.retries:
                tries = f" (after {attempt} tries)" if attempt > 1 else ""
                raise ConnectorError(f"{self.name}: {what}: {problem}{tries}", permanent=not transient)
            self.sleep(self.backoff * 2 ** (attempt - 1))

    def node_log_file(self, node: str, path: str, **kwargs):
        """``GET /api/v1/nodes/{node}/proxy/logs/{path}``: a file (or, for a path ending in ``/``, the listing of a
        folder) under the node's ``/var/log``, served by its kubelet (``enableSystemLogHandler``, on by default).
        The path keeps its slashes: the client's own proxy call would encode them as ``%2F``."""
        resource = f"/api/v1/nodes/{quote(node, safe='')}/proxy/logs/{quote(path)}"
        return self.core.api_client.call_api(
            resource, "GET", header_params={"Accept": "*/*"}, auth_settings=["BearerToken"],
            _return_http_data_only=True, **kwargs,
        )  # fmt: skip

    def patch_node(self, node: str, patch: dict, **kwargs):
        """``PATCH /api/v1/nodes/{node}`` with a strategic merge patch (the client's own ``patch_node`` would label a
        JSON object a JSON Patch, which the API server refuses)."""
        return self.core.api_client.call_api(
            f"/api/v1/nodes/{quote(node, safe='')}", "PATCH", body=patch, auth_settings=["BearerToken"],
            header_params={"Accept": "application/json", "Content-Type": "application/strategic-merge-patch+json"},
            _return_http_data_only=True, **kwargs,
        )  # fmt: skip

    def json(self, what: str, method, *args, **kwargs) -> dict:
        body = self.call(what, method, *args, **kwargs)
        try:
            document = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConnectorError(f"{self.name}: {what}: malformed JSON ({exc})", permanent=True) from None
        if not isinstance(document, dict):
            raise ConnectorError(f"{self.name}: {what}: expected a JSON object", permanent=True)
        return document

    def items(self, what: str, method, *args, **kwargs) -> list[dict]:
        """All items of a list call, following ``metadata.continue``."""
        items, token = [], None
        while True:
            extra = {"_continue": token} if token else {}
            document = self.json(what, method, *args, limit=500, **extra, **kwargs)
            page = document.get("items")
            if not isinstance(page, list):
                raise ConnectorError(f"{self.name}: {what}: the list has no items", permanent=True)
            items.extend(item for item in page if isinstance(item, dict))
            token = (document.get("metadata") or {}).get("continue")
            if not token:
                return items


def _status_message(body: object) -> str:
    """The ``message`` of a Kubernetes ``Status`` body, or the body's start."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        return str(json.loads(text).get("message", text))[:300]
    except (ValueError, AttributeError):
        return text[:300]
