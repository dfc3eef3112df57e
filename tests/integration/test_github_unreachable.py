"""A GitHub API that cannot be reached (a closed port on 127.0.0.1) is a download error naming the
URL and the API base, exit 4 as the README's table says: never a traceback, for every command
that talks to the API."""

from __future__ import annotations

import socket

import graphrun
import pytest


@pytest.fixture
def closed_api() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


@pytest.mark.parametrize(
    "args",
    [
        ["upstream"],
        ["release-age", "--repo", "owner/repo"],
        ["verify-release", "--repo", "owner/repo", "--tag", "b1"],
        ["start-release", "b1", "--repo", "owner/repo"],
    ],
)
def test_an_unreachable_api_exits_4_naming_it(tmp_path, closed_api, args):
    r = graphrun.cli(args, workdir=tmp_path, BUNDLEGRAPH_GITHUB_API=closed_api)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and f"(the API base is {closed_api}" in r.stderr, r.stderr


def test_bump_refuses_a_release_that_is_not_a_mix_before_any_request(tmp_path, closed_api):
    r = graphrun.cli(["bump"], workdir=tmp_path, BUNDLEGRAPH_GITHUB_API=closed_api)
    assert r.returncode == 2 and "bump moves a mix source's base" in r.stderr and "kind 'pip-sdist'" in r.stderr
