"""A real HTTP server on 127.0.0.1 for download tests (toolkit, source, paired assets): serves bytes by path,
honours ``Range: bytes=N-`` (206 + Content-Range), and plays scripted faults per request.

``faults[path]`` is a list consumed one per request: an int (answer with that status),
``"drop"`` (claim the full length, send half, close), ``"stall"`` (sleep ``stall_s`` before
answering), ``"ignore-range"`` (answer 200 with the whole body). ``requests`` records
``(path, range header)`` for every request, ``authorization`` ``(path, Authorization header)``.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RedistServer:
    def __init__(self, stall_s: float = 3.0) -> None:
        self.files: dict[str, bytes] = {}
        self.faults: dict[str, list] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.authorization: list[tuple[str, str | None]] = []
        self.stall_s = stall_s
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                path = self.path.split("?")[0]
                rng = self.headers.get("Range")
                srv.requests.append((path, rng))
                srv.authorization.append((path, self.headers.get("Authorization")))
                plan = srv.faults.get(path)
                action = plan.pop(0) if plan else None
                if action == "stall":
                    time.sleep(srv.stall_s)
                    action = None
                if isinstance(action, int):
                    body = f"<html><body>error {action}</body></html>".encode()
                    self.send_response(action)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                data = srv.files.get(path)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                if rng and rng.startswith("bytes=") and action != "ignore-range":
                    start = int(rng[6:].split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if action == "drop":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client that gave up (timeouts)
                pass

        self._httpd = Quiet(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._t = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)

    def __enter__(self) -> RedistServer:
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
