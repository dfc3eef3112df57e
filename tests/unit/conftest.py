"""Unit tests start no process and open no connection: an autouse guard makes both fail loudly
(a test that needs them belongs in tests/integration)."""

from __future__ import annotations

import socket
import subprocess

import pytest


class _Forbidden(AssertionError):
    pass


def _no(what: str):
    def refuse(*a, **kw):
        raise _Forbidden(f"a unit test may not {what}; move it to tests/integration")
    return refuse


@pytest.fixture(autouse=True)
def _no_processes_or_network(monkeypatch):
    monkeypatch.setattr(subprocess.Popen, "__init__", _no("start a process"))
    monkeypatch.setattr(socket.socket, "connect", _no("open a network connection"))
    monkeypatch.setattr(socket, "create_connection", _no("open a network connection"))
