"""Unit tests of the verify table (:mod:`bundlegraph.verification`): a new check is one row, and it
runs through ``verify:<leg>`` without an edit of the stage module; each row sees only the policy
fields its key lists; a bad table is refused. No processes, no network."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from bundlegraph.backends.cuda import verify as cuda
from bundlegraph.checks import Failure
from bundlegraph.core.errors import VerifyError
from bundlegraph.schemas.archs import parse_arch
from bundlegraph.schemas.backend import BACKEND_NAMES
from bundlegraph.specs.loader import load_matrix
from bundlegraph.verification import VerifyPolicy, rows, table, verify_path
from bundlegraph.verification.rows import READ_KEY, FileRow, Row

ROOT = Path(__file__).resolve().parents[2]
CPU_LEG = "linux-arm64-cpu"
CUDA_LEG = "windows-arm64-cuda13-portable"


def _stage(workdir: Path, leg: str):
    from bundlegraph.graph.context import Context, Filters
    from bundlegraph.pipeline import verify as vstage

    ctx = Context(load_matrix(ROOT / "bundles"), [CPU_LEG, CUDA_LEG], Filters())
    plan = {p.full_name: p for p in vstage.plans(ctx)}[f"verify:{leg}"]
    from bundlegraph.core import paths

    tree = paths.build_dir(leg) / "cmake" / "bin"
    tree.mkdir(parents=True)
    (tree / "notes.txt").write_text("a built tree with one text file\n")
    return plan, paths.build_dir(leg) / "verify.json"


def test_a_fake_generic_row_runs_through_verify_for_a_leg(workdir, monkeypatch):
    seen: list[VerifyPolicy] = []

    def no_notes(s: rows.Subject, p: VerifyPolicy) -> rows.Outcome:
        seen.append(p)
        return [Failure(n, "fake", f"{p.os} bundles carry no notes") for n in s.names if n.endswith(".txt")], {
            "fake": len(s.names)
        }

    fake = Row("fake", no_notes, ("os",), "required")
    monkeypatch.setattr(rows, "ROWS", (*rows.ROWS, fake))
    plan, report_path = _stage(workdir, CPU_LEG)
    with pytest.raises(VerifyError) as e:
        plan.apply(plan.prepared())
    assert "notes.txt: fake: linux bundles carry no notes" in e.value.failures
    report = json.loads(report_path.read_text())
    assert report["bundle"]["fake"] == 1
    # the row saw its key's field and nothing else: the leg's arch and required files are at their defaults
    (p,) = seen
    assert p.os == "linux" and p.arch is None and p.required == () and p.external == ()
    # its phase puts it with the required files, before the info JSON
    names = [r.name for r in table.rows_for()]
    assert names.index("required") < names.index("fake") < names.index("info")


def test_a_fake_backend_row_runs_for_its_backends_legs_only(workdir, monkeypatch):
    ran: list[str] = []

    def fake_cuda(s: rows.Subject, p: VerifyPolicy) -> rows.Outcome:
        ran.append(",".join(p.cmake_archs))
        return [Failure("bundle", "fake-cuda", f"checked archs {','.join(p.cmake_archs)}")], {}

    fake = Row("fake-cuda", fake_cuda, ("archs", "cuda"), "loading", gate=lambda p: p.cuda)
    monkeypatch.setitem(table.registry_rows(), "cuda", (*cuda.ROWS, fake))
    plan, _ = _stage(workdir, CUDA_LEG)
    with pytest.raises(VerifyError) as e:
        plan.apply(plan.prepared())
    assert e.value.failures[-1] == "bundle: fake-cuda: checked archs 120,121"
    assert ran == ["120,121"]
    cpu_plan, _ = _stage(workdir, CPU_LEG)
    with pytest.raises(VerifyError) as e:
        cpu_plan.apply(cpu_plan.prepared())
    assert ran == ["120,121"] and not any("fake-cuda" in line for line in e.value.failures)


def test_cuda_rows_are_the_cuda_backends_and_gate_on_its_fields(tmp_path):
    assert [r.name for r in table.registry_rows()["cuda"]] == ["gpu-code", "ptx-isa", "cuda-major"]
    assert table.registry_rows()["cpu"] == ()
    (tmp_path / "llama-cli").write_bytes(b"")
    # archs promised, no backend library: the CUDA row says so; a policy without archs skips it
    promised = verify_path(tmp_path, VerifyPolicy(os="linux", archs=(parse_arch("120"),)))
    assert promised.lines() == [
        "libggml-cuda.so: gpu-code: the leg promises CUDA archs 120 but the bundle has no libggml-cuda.so"
    ]
    plain = verify_path(tmp_path, VerifyPolicy(os="linux"))
    assert plain.ok and plain.bundle == {"fatbin": {}}


def test_file_rows_see_each_files_bytes(tmp_path):
    (tmp_path / "a.txt").write_text("built in /home/builder/work/x\n")
    (tmp_path / "b.txt").write_text("nothing\n")
    r = verify_path(tmp_path, VerifyPolicy(host_paths=(("work directory", "/home/builder/work"),)))
    assert [(f.file, f.check) for f in r.failures] == [("a.txt", "host-path")]
    assert isinstance(next(x for x in rows.ROWS if x.name == "host-path"), FileRow)


def test_every_policy_field_is_in_some_rows_key():
    """The keys are the whole story: every field of the policy is read by the reader or by a row,
    and no row reads a field its key does not list (``policy.only``)."""
    consumed = set(READ_KEY) | {k for r in table.rows_for() for k in r.key}
    assert consumed == {f.name for f in fields(VerifyPolicy)}
    p = VerifyPolicy(os="windows", arch="arm64", backend_dl=True).only(("os",))
    assert (p.os, p.arch, p.backend_dl) == ("windows", None, False)
    with pytest.raises(KeyError, match="no field"):
        p.only(("nope",))


def test_a_bad_table_is_refused():
    def nothing(s: rows.Subject, p: VerifyPolicy) -> rows.Outcome:
        return [], {}

    bad = (
        Row("files", nothing, (), "files"),
        Row("odd", nothing, ("colour",), "late"),
    )
    probs = table.table_problems((*rows.ROWS, *bad), {"cpu": ()})
    assert probs == [
        f"backend rows for ['cpu']: expected one entry per backend {sorted(BACKEND_NAMES)}",
        "two verify rows share a name: ['files']",
        "verify row odd: phase 'late': expected one of " + ", ".join(rows.PHASES),
        "verify row odd: key ['colour']: not verify policy fields",
    ]
    assert table.table_problems(rows.ROWS, table.registry_rows()) == []
    with pytest.raises(RuntimeError, match="verify table: two verify rows share a name"):
        table.rows_for((*rows.ROWS, bad[0]))


def test_a_backends_rows_are_found_by_its_name_and_its_field_stays_out_of_the_key():
    """A backend's rows are the ROWS of the verification module named after it (no edit to the
    table); the policy's ``backend`` is checked against the registry and left out of
    :meth:`VerifyPolicy.to_json`, so no verify key of an existing leg changes."""
    from bundlegraph.backends.cuda import verify as cuda
    from bundlegraph.backends.vulkan import verify as vulkan
    from bundlegraph.core.errors import BundleGraphError

    assert table.backend_rows(("cpu", "cuda", "vulkan")) == {"cpu": (), "cuda": cuda.ROWS, "vulkan": vulkan.ROWS}
    assert table.backend_rows(("rows", "nosuchbackend")) == {"rows": (), "nosuchbackend": ()}
    assert [r.name for r in table.registry_rows()["vulkan"]] == ["vulkan-library", "vulkan-loader", "vulkan-shaders"]
    p = VerifyPolicy(os="linux", backend="vulkan")
    assert "backend" not in p.to_json() and p.to_json() == VerifyPolicy(os="linux").to_json()
    assert p.backends == ("libggml-vulkan.so",) and VerifyPolicy(os="linux", cuda=True).driver_of == "cuda"
    with pytest.raises(BundleGraphError, match="backend 'nosuchbackend': expected one of " + ", ".join(BACKEND_NAMES)):
        VerifyPolicy(backend="nosuchbackend")
    with pytest.raises(BundleGraphError, match="a leg has one backend"):
        VerifyPolicy(backend="vulkan", cuda=True)
    # the Vulkan rows gate on the backend: a CPU or CUDA policy never runs them
    assert not any(r.gate(VerifyPolicy(os="linux", cuda=True)) for r in vulkan.ROWS)
