"""What ``sign-bundles`` re-binds a smoke result on: a PE file signed by osslsigncode equals its
unsigned self outside the Authenticode signature (checksum, certificate-table entry, the table and
its padding); one changed byte of code, or a re-signed file with changed code, does not (issue 51).
Real DLLs (clang + lld-link, x64 and ARM64, PE32+) signed with a throwaway CA."""

from __future__ import annotations

import binkit
import pytest
from conftest import require_tools

from bundlegraph.checks.pe_unsigned import content_outside_signature, same_outside_signature


@pytest.mark.parametrize("arch", ["x64", "arm64"])
def test_signing_changes_nothing_outside_the_signature(tmp_path, arch):
    require_tools("clang", "lld-link", "llvm-dlltool", "osslsigncode", "openssl")
    ca = binkit.make_ca(tmp_path / "ca")
    raw = binkit.build_dll(binkit.Dll("ggml-base.dll", arch, exports=("bg_a", "bg_b")), tmp_path / "raw")
    signed = binkit.sign(raw, tmp_path / "signed.dll", ca)
    a, b = raw.read_bytes(), signed.read_bytes()
    assert a != b and len(b) > len(a)
    assert same_outside_signature(a, b) is None
    assert content_outside_signature(b)[: len(a)] == content_outside_signature(a)
    # signed twice (another signature): still the same code
    again = binkit.sign(raw, tmp_path / "again.dll", ca)
    assert same_outside_signature(b, again.read_bytes()) is None
    # a byte of code changed, then signed: a valid signature over other code
    binkit.flip_code_byte(raw)
    other = binkit.sign(raw, tmp_path / "other.dll", ca)
    why = same_outside_signature(a, other.read_bytes())
    assert why is not None and why.startswith("its bytes outside the Authenticode signature changed (first at offset")
    # a signed file altered after signing
    binkit.flip_code_byte(signed)
    assert same_outside_signature(a, signed.read_bytes()) is not None
    assert same_outside_signature(a, b"not a PE") == "not a PE file: DOS header magic 'MZ' not found"
