"""Signing hook: run the configured signer on the PE files a leg built (and only those),
before packaging.

Configuration comes from the environment (CI secrets), never from a spec:

- ``BUNDLEGRAPH_SIGN_COMMAND``: the signer's argv as a JSON list, e.g.
  ``["trusted-signing-cli", "-e", "{env:SIGN_ENDPOINT}", "-a", "{env:SIGN_ACCOUNT}", "{file}"]``
  or ``["signtool", "sign", "/fd", "sha256", "/f", "cert.pfx", "/p", "{env:PFX_PASS}", "{file}"]``.
  Placeholders: ``{file}`` (the file to sign, in place), ``{out}`` (for signers that write a
  new file, e.g. ``osslsigncode ... -in {file} -out {out}``; it then replaces ``{file}``),
  ``{env:NAME}`` (the value of variable ``NAME``).
- ``BUNDLEGRAPH_SIGN_SECRETS``: comma-separated names of the variables holding credentials.
  Every one must be set and non-empty for signing to happen; their values are masked (``***``)
  in every echoed command and log line (:func:`bundlegraph.core.proc.run` ``secrets=``). Variables
  named in ``{env:NAME}`` placeholders are masked too.

Outcome by the spec's ``signing``: ``none`` -> ``not-required`` (nothing runs); configured and
credentials present -> ``signed``; missing -> ``required`` fails naming the missing variables
(never their values), ``optional`` warns and the bundle is marked ``unsigned`` in its info JSON.
With ``BUNDLEGRAPH_SIGN=later`` ``package`` runs no signer (the bundle says ``pending``) and
``bundlegraph sign-bundles`` (:mod:`bundlegraph.release.signbundles`) calls :func:`sign_files` in a job that
runs no build code.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from ...checks import claims_pe
from ...core import proc
from ...core.errors import BundleGraphError
from ...core.lightclass import frozen
from ...core.report import warn

SignOutcome = Literal["not-required", "signed", "unsigned"]
_ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class SigningError(BundleGraphError):
    """A required-signing leg cannot be signed (no signer configured, credentials missing)."""


@frozen
class SignerConfig:
    """``argv`` template and the names of the credential variables (``secret_vars``)."""

    argv: tuple[str, ...]
    secret_vars: tuple[str, ...]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SignerConfig | None:
        """Read ``BUNDLEGRAPH_SIGN_COMMAND``/``_SECRETS``; None when no command is set. A command
        that is not a JSON list of strings is a :class:`SigningError`."""
        from ...core import settings

        raw = settings.get("SIGN_COMMAND", env)
        if not raw:
            return None
        try:
            argv = json.loads(raw)
        except ValueError:
            argv = None
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise SigningError("BUNDLEGRAPH_SIGN_COMMAND must be a JSON list of strings (the signer's argv)")
        names = tuple(settings.get("SIGN_SECRETS", env) or ())  # the table's list form: one split for both
        refs = tuple(m.group(1) for a in argv for m in _ENV_REF.finditer(a))
        return cls(tuple(argv), tuple(dict.fromkeys(names + refs)))

    def missing(self, env: Mapping[str, str]) -> list[str]:
        """Names of credential variables that are unset or empty."""
        return [n for n in self.secret_vars if not env.get(n)]


def is_pe(path: Path) -> bool:
    """A PE file by name (``.exe``/``.dll``/``.node``) and magic (``MZ``)."""
    if not claims_pe(path.name) or not path.is_file():
        return False
    with open(path, "rb") as f:
        return f.read(2) == b"MZ"


def _expand(arg: str, file: Path, out: Path, env: Mapping[str, str]) -> str:
    arg = arg.replace("{file}", str(file)).replace("{out}", str(out))
    return _ENV_REF.sub(lambda m: env.get(m.group(1), ""), arg)


def sign_files(
    files: list[Path], *, leg: str, signing: str, env: Mapping[str, str] | None = None, log: Path | None = None
) -> SignOutcome:
    """Sign ``files`` in place (copies the caller owns: the leg's own built PE files) according
    to ``signing`` (``none``/``optional``/``required``). Returns the outcome; raises
    :class:`SigningError` for a required leg without signer/credentials and :class:`ToolFailed`
    when the signer fails."""
    env = dict(os.environ) if env is None else dict(env)
    if signing == "none":
        return "not-required"
    pe = [f for f in files if is_pe(f)]
    cfg = SignerConfig.from_env(env)
    missing = ["BUNDLEGRAPH_SIGN_COMMAND"] if cfg is None else cfg.missing(env)
    if missing:
        msg = f"sign:{leg}: signing is {signing} but {', '.join(missing)} is not set"
        if signing == "required":
            raise SigningError(msg + "; provide the signer command and credentials (CI secrets)")
        warn(f"{msg}; the bundle is marked unsigned")
        return "unsigned"
    assert cfg is not None
    secrets = [env[n] for n in cfg.secret_vars if env.get(n)]
    for f in pe:
        out = f.with_name(f.name + ".signed")
        argv = [_expand(a, f, out, env) for a in cfg.argv]
        try:
            proc.run(argv, env=env, log=log, secrets=secrets, what=f"sign:{leg}: {f.name}")
            if "{out}" in "".join(cfg.argv):
                if not out.is_file():
                    raise SigningError(f"sign:{leg}: the signer wrote no {out.name}")
                os.replace(out, f)
        finally:
            out.unlink(missing_ok=True)
    return "signed"
