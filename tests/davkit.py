"""A real WebDAV server on 127.0.0.1 for ccache's remote storage: WsgiDAV (PyPI ``wsgidav``, with
``cheroot``) serving a directory, anonymous read-write, in a subprocess of its own.

ccache's HTTP storage does not create collections (its wiki, "HTTP storage"), and WsgiDAV answers
a PUT into a missing one with 409: the tests use ``layout=flat`` (every entry straight under the
URL's path) and create that one directory first."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


@contextmanager
def webdav(root: Path, *collections: str):
    """Serve ``root`` (``collections`` created under it) and yield its base URL
    (``http://127.0.0.1:<port>``); the server is stopped on exit. Fails (AssertionError with its
    log) when it does not start within 20 s."""
    for c in collections:
        (root / c).mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = root.parent / f"wsgidav-{port}.log"
    exe = BIN / "wsgidav"
    assert exe.is_file(), f"wsgidav is not installed: {sys.executable} -m pip install wsgidav cheroot"
    p = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port), "-r", str(root), "--auth", "anonymous", "--no-config", "-q"],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < deadline, (
                    f"wsgidav did not start: {log.read_text(errors='replace')[-2000:]}"
                )
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
