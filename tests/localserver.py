"""A real HTTP server on 127.0.0.1 for download tests, serving files from a dict and able
to misbehave on purpose (status codes, truncation, stalls) for a bounded number of requests.
It stops when the test ends (context manager)."""

from __future__ import annotations

import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    """``files``: path -> bytes. ``faults``: path -> deque of actions applied to successive
    requests: an int status, ``"truncate"`` (send half, claim all), ``("stall", seconds)``.
    ``hits``: path -> request count. ``url(path)`` gives the full URL."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.faults: dict[str, deque] = {}
        self.hits: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output quiet
                pass

            def do_GET(self):  # noqa: N802
                path = self.path.split("?")[0]
                server.hits[path] = server.hits.get(path, 0) + 1
                body = server.files.get(path)
                q = server.faults.get(path)
                action = q.popleft() if q else None
                if isinstance(action, int):
                    self.send_response(action)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if isinstance(action, tuple) and action[0] == "stall":
                    time.sleep(action[1])
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and action is None:
                    start = int(rng[6:].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                payload = body[start:]
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if action == "truncate":
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{path}"

    def __enter__(self) -> "LocalServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
