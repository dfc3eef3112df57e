"""``bundlegraph verify PATH``: check a bundle directory or archive without running it.

``--leg L`` applies exactly what the graph applies to that leg (:func:`~bundlegraph.pipeline.verify.leg_policy`):
with ``--built-tree`` ``verify:L``'s policy on a build output (the build host's paths included: the
cache, work directory, source tree and home directory of this machine, unless the build was
imported with ``built=``), else the package stage's archive check.

Exit status 0 when every check passes, 1 when any fails (each failure on its own line:
``<file>: <check>: <reason>``), 2 for unusable input. ``--leg LEG`` takes the policy from the
leg's spec in ``--bundles``; the other options set or override single fields.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from ..core.errors import BundleGraphError, did_you_mean
from ..pipeline.verify import leg_policy
from ..schemas.archs import Arch, parse_arch
from ..schemas.backend import BACKEND_NAMES
from ..verification import VerifyPolicy, verify_path


def _archs(items: tuple[str, ...]) -> tuple[Arch, ...]:
    """``--archs`` values parsed once, here at the CLI's edge (a bad one is a one-line error)."""
    try:
        return tuple(parse_arch(a) for a in items)
    except ValueError as e:
        raise BundleGraphError(f"--archs: {e}") from None


def _csv(values: list[str] | None) -> tuple[str, ...]:
    return tuple(x.strip() for v in values or [] for x in v.split(",") if x.strip())


def policy_from_args(args: argparse.Namespace) -> VerifyPolicy:
    """The policy the options describe (``--leg`` first, then each option that was given)."""
    policy = VerifyPolicy()
    if args.leg:
        from ..graph.context import Filters, load_context
        from ..specs.loader import load_matrix

        legs = load_matrix(args.bundles).legs
        if args.leg not in legs:
            raise BundleGraphError(
                f"--leg {args.leg}: no such leg{did_you_mean(args.leg, legs)}; legs: {', '.join(legs)}"
            )
        # the graph's own context and policy (verify:<leg> on a built tree, the archive check on a
        # bundle): the same checks, the build host's paths included
        ctx = load_context(args.bundles, Filters.from_env(only_leg=args.leg, only_profile=""))
        policy = leg_policy(ctx, args.leg, built_tree=args.built_tree)
    elif args.built_tree:
        raise BundleGraphError("--built-tree: needs --leg (the leg whose build output PATH is)")
    same = ("os", "arch", "glibc_floor", "glibcxx_floor", "info_file", "driver_floor")  # named as the policy's fields
    changes: dict[str, Any] = {k: getattr(args, k) for k in same if getattr(args, k)}
    if args.archs:
        changes["archs"] = _archs(_csv(args.archs))
    if args.archs or args.cuda:
        changes["cuda"] = True
    if args.backend:
        changes["backend"] = args.backend
    if args.runtime:
        changes["external"] = tuple(dict.fromkeys((*policy.external, *_csv(args.runtime))))
    if args.signing:
        changes["signing_required"] = args.signing == "required"
    if args.trust_root:
        changes["trust_roots"] = tuple(args.trust_root)
    if args.require:
        changes["required"] = tuple(dict.fromkeys((*policy.required, *_csv(args.require))))
    return dataclasses.replace(policy, **changes)


def run(args: argparse.Namespace) -> int:
    report = verify_path(args.path, policy_from_args(args))
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True, default=list))
        return 0 if report.ok else 1
    for line in report.lines():
        print(line)
    for path, summary in report.bundle.get("fatbin", {}).items():
        print(f"fatbin {path}: {summary}")
    n_pe = sum(1 for f in report.files.values() if f["format"] == "pe")
    n_elf = sum(1 for f in report.files.values() if f["format"] == "elf")
    verdict = "OK" if report.ok else f"FAILED: {len(report.failures)} problem(s)"
    print(f"verify {report.subject} ({report.kind}; {n_pe} PE, {n_elf} ELF files): {verdict}")
    return 0 if report.ok else 1


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify", help="check a bundle directory or archive (machine, GPU code, imports, glibc, signatures)"
    )
    p.add_argument("path", help="a bundle directory, .zip or .tar.gz")
    p.add_argument("--leg", help="take the policy from this leg's spec (in --bundles)")
    p.add_argument("--built-tree", action="store_true", help="with --leg: the leg's build output before merge/package")
    p.add_argument("--os", choices=["windows", "linux"])
    p.add_argument("--arch", choices=["x64", "arm64"])
    p.add_argument(
        "--archs",
        action="append",
        metavar="LIST",
        help="CUDA archs in CMake form, comma-separated (120,121 or 86-real,75-virtual)",
    )
    p.add_argument(
        "--cuda", action="store_true", help="a CUDA leg (the driver nvcuda.dll / libcuda.so.1 may be imported)"
    )
    p.add_argument(
        "--backend",
        choices=list(BACKEND_NAMES),
        help="the leg's backend: its driver may be imported (vulkan: the loader vulkan-1.dll / libvulkan.so.1) "
        "and its own verify rows apply",
    )
    p.add_argument(
        "--runtime",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="external runtime files the bundle relies on (MSVCP140.dll ...)",
    )
    p.add_argument(
        "--signing", choices=["required", "optional", "none"], help="'required': every PE must be validly signed"
    )
    p.add_argument("--trust-root", action="append", metavar="PEM", help="also trust this root certificate (tests only)")
    p.add_argument("--glibc-floor", metavar="X.Y")
    p.add_argument("--glibcxx-floor", metavar="X.Y.Z")
    p.add_argument(
        "--driver-floor",
        metavar="X.Y",
        help="the oldest NVIDIA driver (its CUDA version) the bundle is sent to: the fatbins' PTX-only code must "
        "be a PTX ISA it JIT-compiles (--leg sets it for a leg with PTX-only archs)",
    )
    p.add_argument("--require", action="extend", nargs="+", metavar="NAME", help="files that must be present")
    p.add_argument("--info-file", metavar="NAME", help="the info JSON's file name")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)
