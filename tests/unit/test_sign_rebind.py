"""``sign-bundles`` re-binds a smoke result to the signed bytes only when it judged exactly the
unsigned bytes (:func:`bundlegraph.release.signone.rebind_smoke`), and publish's reader then finds it for
the signed bundle and for no other bytes."""

from __future__ import annotations

import json

from bundlegraph.release.signone import rebind_smoke
from bundlegraph.schemas.smoke_status import read_status, sidecar


def test_a_smoke_for_the_unsigned_bytes_travels_to_the_signed_ones(tmp_path):
    unsigned, signed = tmp_path / "u" / "b.zip", tmp_path / "s" / "b.zip"
    unsigned.parent.mkdir()
    signed.parent.mkdir()
    assert not rebind_smoke(unsigned, signed, "u" * 64, "s" * 64)  # no smoke: nothing to re-bind
    sidecar(unsigned).write_text(json.dumps({"status": "passed", "how": "native", "bundle_sha256": "x" * 64}))
    assert not rebind_smoke(unsigned, signed, "u" * 64, "s" * 64)  # a smoke of other bytes: not re-bound
    assert not sidecar(signed).exists()
    sidecar(unsigned).write_text(json.dumps({"status": "passed", "how": "native", "bundle_sha256": "u" * 64}))
    assert rebind_smoke(unsigned, signed, "u" * 64, "s" * 64)
    rec = json.loads(sidecar(signed).read_text())
    assert rec["bundle_sha256"] == "s" * 64 and rec["unsigned_sha256"] == "u" * 64 and "sign-bundles" in rec["rebound"]
    st = read_status(signed, "s" * 64)
    assert st is not None and st.summary() == "passed (native)"
    assert read_status(signed, "u" * 64) is None
