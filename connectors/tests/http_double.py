"""A local HTTP server in a thread for the APIs that cannot run here (Loki, Kubernetes) and the endpoints Faultline
calls (webhooks).

``respond(request)`` returns ``(status, headers, body)``; every request (GET, POST, PATCH, with its body) is kept in
``requests``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""

    def json(self):
        return json.loads(self.body)


class HttpDouble:
    def __init__(self, respond):
        self.respond = respond
        self.requests: list[Request] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # the names http.server calls
                self.answer("GET")

            def do_POST(self):
                self.answer("POST")

            def do_PATCH(self):
                self.answer("PATCH")

            def answer(self, method: str):
                parts = urlsplit(self.path)
                params = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = Request(method, parts.path, params, dict(self.headers), body)
                double.requests.append(request)
                status, headers, body = double.respond(request)
                if not isinstance(body, bytes):
                    body = json.dumps(body).encode() if not isinstance(body, str) else body.encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
