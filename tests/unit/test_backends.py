"""The backends' registry (:mod:`bundlegraph.schemas.backend`) and the OS table (:mod:`bundlegraph.core.platforms`):
the facts are the ones the stages used to spell themselves, the stages read them from the tables,
and a backend added to the registry reaches them without an edit to any stage module (issue 42)."""

from __future__ import annotations

import sys
import types

import pytest

from bundlegraph.core.platforms import PLATFORMS, platform
from bundlegraph.schemas import backend as backends
from bundlegraph.schemas.backend import BACKENDS, Backend, backend, driver_owners, library_file, registry_problems


def test_every_backend_module_has_the_protocols_attributes():
    want = set(Backend.__annotations__)
    for b in BACKENDS:
        assert not want - set(vars(b)), (b.NAME, want - set(vars(b)))
    # the five the house began with come first; a backend added later sorts after them by ORDER
    assert [b.NAME for b in BACKENDS][:5] == ["cpu", "cuda", "vulkan", "hip", "metal"]
    assert [b.NAME for b in backends.GPU_BACKENDS][:4] == ["cuda", "vulkan", "hip", "metal"]
    assert [b.ORDER for b in BACKENDS] == sorted(b.ORDER for b in BACKENDS)
    assert registry_problems(BACKENDS) == []


def test_the_install_kinds_are_the_installers_in_its_order():
    """unsloth==2026.10.9's kinds (docs/installer-contract.md), in the order they were listed
    before the registry (the spec errors and the coverage report list them in this order)."""
    from bundlegraph.schemas.installer import INSTALL_KINDS, InstallKind, kind_for

    installers = (
        "cpu",
        "cuda",
        "vulkan",
        "hip",
        "metal",
    )  # a backend of ours beyond these has kinds the installer lacks
    assert [k for k in INSTALL_KINDS.values() if k.backend in installers] == [
        InstallKind("linux-cpu", "linux", ("x64",), "cpu"),
        InstallKind("linux-arm64", "linux", ("arm64",), "cpu"),
        InstallKind("linux-cuda", "linux", ("x64",), "cuda"),
        InstallKind("linux-arm64-cuda", "linux", ("arm64",), "cuda"),
        InstallKind("linux-vulkan", "linux", ("x64", "arm64"), "vulkan"),
        InstallKind("linux-rocm", "linux", ("x64",), "hip"),
        InstallKind("windows-cpu", "windows", ("x64",), "cpu"),
        InstallKind("windows-arm64", "windows", ("arm64",), "cpu"),
        InstallKind("windows-cuda", "windows", ("x64",), "cuda"),
        InstallKind("windows-arm64-cuda", "windows", ("arm64",), "cuda"),
        InstallKind("windows-vulkan", "windows", ("x64",), "vulkan"),
        InstallKind("windows-arm64-vulkan", "windows", ("arm64",), "vulkan"),
        InstallKind("windows-rocm", "windows", ("x64",), "hip"),
        InstallKind("macos-x64", "macos", ("x64",), "cpu"),
        InstallKind("macos-arm64", "macos", ("arm64",), "metal"),
    ]
    assert kind_for("windows", "arm64", "cuda") == "windows-arm64-cuda"
    assert kind_for("linux", "x64", "hip") == "linux-rocm" and kind_for("macos", "arm64", "metal") == "macos-arm64"
    # the installer has no linux-arm64-vulkan: one kind serves both Linux arches
    assert kind_for("linux", "arm64", "vulkan") == kind_for("linux", "x64", "vulkan") == "linux-vulkan"
    assert INSTALL_KINDS["linux-vulkan"].serves("linux", "arm64", "vulkan")
    assert not INSTALL_KINDS["linux-vulkan"].serves("windows", "x64", "vulkan")
    with pytest.raises(KeyError, match="no install kind for linux/x64/rocm"):
        kind_for("linux", "x64", "rocm")


def test_the_cuda_facts_the_stages_read_come_from_the_cuda_module():
    from bundlegraph.checks import closure, systemdlls
    from bundlegraph.pipeline import verify
    from bundlegraph.pipeline.smoke import judges

    cuda = backend("cuda")
    assert {o: library_file(cuda, o) for o in ("linux", "windows")} == {
        "linux": "libggml-cuda.so",
        "windows": "ggml-cuda.dll",
    }
    assert verify.BACKENDS["linux"][:4] == (
        "libggml-cuda.so",
        "libggml-vulkan.so",
        "libggml-hip.so",
        "libggml-metal.so",
    )
    assert "libggml-metal.dylib" in verify.BACKENDS["macos"]
    assert judges.DRIVERS == {"linux": "libcuda.so.1", "windows": "nvcuda.dll"} and judges.DRIVER == "libcuda.so.1"
    assert judges.CPU_BACKENDS == {
        "linux": "libggml-cpu*.so",
        "windows": "ggml-cpu*.dll",
        "macos": "libggml-cpu*.dylib",
    }
    vk = backend("vulkan")
    assert {"nvcuda.dll": cuda, "vulkan-1.dll": vk}.items() <= driver_owners("windows").items()
    assert {"libcuda.so.1": cuda, "libvulkan.so.1": vk}.items() <= driver_owners("linux").items()
    # the closure checks and the Windows DLL list keep no copy of the driver's names
    assert not hasattr(closure, "LINUX_DRIVER") and not hasattr(systemdlls, "CUDA_DRIVER_DLLS")
    assert not systemdlls.is_windows_dll("nvcuda.dll")


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(KeyError, match="unknown backend 'rocm': expected one of cpu, cuda, vulkan, hip, metal"):
        backend("rocm")
    with pytest.raises(KeyError, match="unknown os 'darwin': expected one of linux, windows, macos"):
        platform("darwin")


def test_each_os_names_its_files_archive_and_loader_variable_once():
    lin, win = PLATFORMS["linux"], PLATFORMS["windows"]
    assert (lin.library("ggml-cuda"), lin.library_glob("llama"), lin.program("llama-server")) == (
        "libggml-cuda.so",
        "libllama.so*",
        "llama-server",
    )
    assert (win.library("ggml-cuda"), win.library_glob("llama"), win.program("llama-server")) == (
        "ggml-cuda.dll",
        "llama.dll",
        "llama-server.exe",
    )
    assert (lin.archive, lin.binary, lin.loader_var, lin.fold) == (".tar.gz", "ELF", "LD_LIBRARY_PATH", False)
    assert (win.archive, win.binary, win.loader_var, win.fold) == (".zip", "PE", "PATH", True)


def test_every_real_leg_is_named_by_the_tables():
    """Each leg of ``bundles/``: a registered backend, the install kind its backend declares for
    its os/arch, and the archive of its OS in its bundle name."""
    from pathlib import Path

    from bundlegraph.schemas.installer import kind_for
    from bundlegraph.specs.loader import load_matrix

    m = load_matrix(Path(__file__).resolve().parents[2] / "bundles")
    assert m.legs
    for leg, s in m.legs.items():
        assert backend(s.backend).INSTALL_KINDS[(s.os, s.arch)] == s.install_kind == kind_for(s.os, s.arch, s.backend)
        assert s.bundle_name("t").endswith(platform(s.os).archive), leg


# -- a fake GPU backend -------------------------------------------------------------------------


def _fake() -> types.ModuleType:
    """A GPU backend module as a new backend would write it (no stage module knows its name)."""
    m = types.ModuleType("bundlegraph.backends.fakegpu")
    m.NAME = "fakegpu"
    m.ORDER = 90
    m.TITLE = "FakeGPU"
    m.GPU = True
    m.LIBRARY = "ggml-fakegpu"
    m.DRIVERS = {"linux": "libfakedrv.so.1", "windows": "FakeDrv.dll"}
    m.DRIVER_WHAT = "the FakeGPU driver"
    m.INSTALL_KINDS = {("linux", "x64"): "linux-fakegpu", ("windows", "x64"): "windows-fakegpu"}
    m.RUNTIME_GLOBS = {"windows": ("fakert64_*.dll",)}
    m.CPU_FALLBACK = frozenset({("linux", "x64")})
    m.SPEC_TABLE = None  # its legs need no table of their own (a real one names it and holds its record in spec.py)
    m.SDK = None
    m.COMPILER = "fakecc"  # the machine-file [binaries] entry its legs' toolchains must name
    m.COMPILED_BY_DRIVER = False
    m.SMOKE = "fakegpu_smoke_side"  # its smoke side's module (imported by the smoke stage only)
    m.REQUIRED_PROGRAMS = ()
    m.HOST_GPUS = ()
    m.CMAKE_OPTION = "GGML_FAKEGPU"
    m.CMAKE_TARGETS_KEY = None
    m.table_targets = lambda table: (table, ())
    m.required_files = lambda os_name, targets: ()
    return m


def test_a_module_that_lacks_a_member_of_the_protocol_is_named_not_a_traceback():
    m = _fake()
    del m.required_files, m.CMAKE_OPTION
    assert registry_problems((*BACKENDS, m)) == [
        "backend fakegpu: lacks CMAKE_OPTION, required_files (the Backend protocol)"
    ]


def test_facts_state_only_their_own_choices_and_the_rest_is_completed(tmp_path, monkeypatch):
    """A backend's ``__init__`` leaves out what is nothing for it: :func:`complete` gives it the
    defaults, its folder's name and its folder's ``sdk``/``smoke`` modules (found, not imported),
    and keeps every member the facts set, even one equal to no default."""
    from bundlegraph.schemas.backend import DEFAULTS, complete, no_required_files, no_table_targets

    pkg = tmp_path / "tinygpu"
    pkg.mkdir()
    (pkg / "smoke.py").write_text("raise AssertionError('complete() must not import the smoke side')\n")
    m = types.ModuleType("bundlegraph.backends.tinygpu")
    m.__path__ = [str(pkg)]
    m.ORDER, m.TITLE, m.GPU, m.LIBRARY = 70, "TinyGPU", True, "ggml-tinygpu"
    m.INSTALL_KINDS = {("linux", "x64"): "linux-tinygpu"}
    m.DRIVERS = {"linux": "libtiny.so.1"}
    m.COMPILER = "tinycc"
    m.HOST_GPUS = ("tiny",)
    monkeypatch.setitem(sys.modules, m.__name__, m)
    b = complete(m)
    assert b is m and b.NAME == "tinygpu"
    assert (b.SMOKE, b.SDK) == ("bundlegraph.backends.tinygpu.smoke", None)  # no sdk.py in the folder
    assert "bundlegraph.backends.tinygpu.smoke" not in sys.modules
    assert (b.DRIVERS, b.COMPILER, b.HOST_GPUS) == ({"linux": "libtiny.so.1"}, "tinycc", ("tiny",))  # kept
    assert (b.SPEC_TABLE, b.CMAKE_OPTION, b.COMPILED_BY_DRIVER, b.RUNTIME_GLOBS) == (None, None, False, {})
    assert b.table_targets is no_table_targets and b.required_files is no_required_files
    assert not set(DEFAULTS) - set(vars(b))
    assert registry_problems((*BACKENDS, b)) == []
    # two completed modules never share a mutable default
    other = complete(types.ModuleType("bundlegraph.backends.othergpu"))
    assert other.RUNTIME_GLOBS == {} and other.RUNTIME_GLOBS is not b.RUNTIME_GLOBS
    assert (other.NAME, other.SDK, other.SMOKE) == ("othergpu", None, None)  # a plain module: no folder


def test_the_real_backends_leave_their_defaults_out():
    """What a backend's facts write is a choice: no real backend's ``__init__`` spells a default
    (the member as :data:`~bundlegraph.schemas.backend.DEFAULTS` would set it, its folder's name, or
    its own ``sdk``/``smoke`` module), so a copied folder carries no line that says nothing."""
    import ast
    from pathlib import Path

    from bundlegraph.schemas.backend import DEFAULTS

    spelled = []
    for b in BACKENDS:
        init = Path(b.__file__)
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            target = (
                node.target
                if isinstance(node, ast.AnnAssign)
                else (node.targets[0] if isinstance(node, ast.Assign) else None)
            )
            if not isinstance(target, ast.Name):
                continue
            name, value = target.id, getattr(b, target.id)
            default = {"NAME": init.parent.name}.get(name, DEFAULTS[name]() if name in DEFAULTS else object())
            if name in ("SDK", "SMOKE") and value == f"{b.__name__}.{name.lower()}":
                default = value
            if value == default:
                spelled.append(f"{init.parent.name}: {name}")
    assert not spelled, spelled


@pytest.fixture
def fake_registered(monkeypatch):
    """The registry with the fake backend added, as one more entry of the tuple would add it."""
    fake = _fake()
    table = (*BACKENDS, fake)
    assert registry_problems(table) == []
    monkeypatch.setattr(backends, "BACKENDS", table)
    monkeypatch.setattr(backends, "BY_NAME", {b.NAME: b for b in table})
    monkeypatch.setattr(backends, "BACKEND_NAMES", tuple(b.NAME for b in table))
    monkeypatch.setattr(backends, "GPU_BACKENDS", tuple(b for b in table if b.GPU))
    return fake


def test_a_fake_gpu_backend_reaches_the_install_kinds_and_the_installers_file_list(fake_registered):
    from bundlegraph.schemas.installer import INSTALL_KINDS, InstallKind, kind_for, required_patterns

    assert INSTALL_KINDS["linux-fakegpu"] == InstallKind("linux-fakegpu", "linux", ("x64",), "fakegpu")
    # its kinds come after the backends before it on each OS (it sorts last: ORDER 90)
    assert [k for k in INSTALL_KINDS if k.startswith("linux-")][-1] == "linux-fakegpu"
    assert list(INSTALL_KINDS).index("linux-fakegpu") > list(INSTALL_KINDS).index("linux-rocm")
    assert kind_for("windows", "x64", "fakegpu") == "windows-fakegpu"
    assert required_patterns("windows-fakegpu", None)[-2:] == ["ggml-fakegpu.dll", "fakert64_*.dll"]
    assert required_patterns("linux-fakegpu", None)[-1] == "libggml-fakegpu.so*"
    assert "ggml-fakegpu.dll" not in required_patterns("windows-cuda", None)
    assert library_file(backend("fakegpu"), "linux") == "libggml-fakegpu.so"


def test_a_fake_gpu_backends_driver_is_known_to_the_closure_check(fake_registered):
    """Its driver is not "missing" but a GPU driver that only its own legs may import (the check
    compares case-insensitively on Windows)."""
    from bundlegraph.checks import closure
    from bundlegraph.checks.elf import ELFInfo
    from bundlegraph.checks.pe import PEImport, PEInfo

    assert driver_owners("windows")["fakedrv.dll"] is fake_registered
    pe = PEInfo(0x8664, "x64", (PEImport("FAKEDRV.DLL", ("fkInit",), ()),), frozenset(), frozenset(), {})
    assert [f.line() for f in closure.pe_closure({"ggml-fakegpu.dll": pe}, ["ggml-fakegpu.dll"], driver_of="cuda")] == [
        "ggml-fakegpu.dll: imports: FAKEDRV.DLL: the FakeGPU driver DLL, which only FakeGPU legs may import "
        "[chain: ggml-fakegpu.dll -> FAKEDRV.DLL (unresolved)]"
    ]
    elf = ELFInfo("EM_X86_64", "x64", "ET_DYN", None, ("libfakedrv.so.1",), (), (), {}, {}, frozenset())
    assert [f.reason for f in closure.elf_closure({"libggml-fakegpu.so": elf}, ["libggml-fakegpu.so"])] == [
        "libfakedrv.so.1: the FakeGPU driver library, which only FakeGPU legs may need "
        "[chain: libggml-fakegpu.so -> libfakedrv.so.1 (unresolved)]"
    ]


def test_the_installers_kinds_follow_the_registrys_tuple(monkeypatch):
    """Registered, the fake adds its two kinds; gone, it leaves no trace (the kinds are derived
    from the registry's tuple at each look-up, never copied)."""
    from bundlegraph.schemas.installer import INSTALL_KINDS

    before = len(INSTALL_KINDS)
    with monkeypatch.context() as m:
        m.setattr(backends, "BACKENDS", (*BACKENDS, _fake()))
        assert len(INSTALL_KINDS) == before + 2 and "windows-fakegpu" in INSTALL_KINDS
    assert len(INSTALL_KINDS) == before and "windows-fakegpu" not in INSTALL_KINDS


def test_registry_problems_name_each_fault():
    bad = _fake()
    bad.INSTALL_KINDS = {
        ("linux", "x64"): "linux-cuda",
        ("solaris", "arm64"): "solaris-fakegpu",
        ("windows", "x64"): "any-fakegpu",
        ("linux", "arm64"): "any-fakegpu",
    }
    bad.DRIVERS = {"linux": "libfakedrv.so.1", "windows": "FakeDrv.dll"}
    bad.SPEC_TABLE = "cuda"
    bad.SMOKE = None
    bad.COMPILER = None
    assert registry_problems((*BACKENDS, bad)) == [
        "two backends share a spec table: ['cuda']",
        "two backends share an install kind: ['linux-cuda']",
        "an install kind serves two OSes: ['any-fakegpu']",
        "backend fakegpu: unknown os ['solaris']: expected one of linux, windows, macos",
        "backend fakegpu: a GPU backend with no driver for ['solaris']",
        "backend fakegpu: a GPU backend with no compiler (COMPILER) whose driver does not compile its device code "
        "either (COMPILED_BY_DRIVER)",
        "backend fakegpu: a GPU backend with no smoke side (SMOKE)",
    ]
    # one whose driver compiles its device code (OpenCL C, Metal) needs no compiler
    jit = _fake()
    jit.COMPILER = None
    jit.COMPILED_BY_DRIVER = True
    assert registry_problems((*BACKENDS, jit)) == []
    # a backend that ships its runtime (HIP) needs no driver library on the host
    ships = _fake()
    ships.DRIVERS = {}
    ships.SHIPS_RUNTIME = True
    assert registry_problems((*BACKENDS, ships)) == []


def test_the_vulkan_backend_reaches_the_kinds_the_files_and_the_closure_from_its_module():
    """Vulkan is one module plus its registry entry: its library and loader names per OS, its
    kinds and the installer's file list derive from it, and the closure check allows its loader
    to Vulkan legs only."""
    from bundlegraph.checks import closure
    from bundlegraph.checks.pe import PEImport, PEInfo
    from bundlegraph.schemas.installer import required_patterns

    vk = backend("vulkan")
    assert (vk.GPU, vk.SPEC_TABLE, vk.TITLE) == (True, "vulkan", "Vulkan")  # type: ignore[attr-defined]
    assert {o: library_file(vk, o) for o in ("linux", "windows")} == {
        "linux": "libggml-vulkan.so",
        "windows": "ggml-vulkan.dll",
    }
    assert required_patterns("linux-vulkan", None)[-1] == "libggml-vulkan.so*"
    assert required_patterns("windows-arm64-vulkan", None)[-1] == "ggml-vulkan.dll"
    assert "ggml-vulkan.dll" not in required_patterns("windows-cuda", None)
    pe = PEInfo(0x8664, "x64", (PEImport("VULKAN-1.DLL", ("vkCreateInstance",), ()),), frozenset(), frozenset(), {})
    files = {"ggml-vulkan.dll": pe}
    assert closure.pe_closure(files, list(files), driver_of="vulkan") == []
    assert [f.reason for f in closure.pe_closure(files, list(files), driver_of="cuda")] == [
        "VULKAN-1.DLL: the Vulkan loader DLL, which only Vulkan legs may import "
        "[chain: ggml-vulkan.dll -> VULKAN-1.DLL (unresolved)]"
    ]


def test_a_backends_spec_table_rules_are_its_own_plug_in_and_validation_names_no_table():
    """Issue 53: a backend's spec-table rules live in its package (``rules.py``), found by
    :func:`bundlegraph.schemas.backend.plug_in` like its verify rows; the validation loop asks the leg's
    backend for them and reads no backend's table itself."""
    import inspect

    from bundlegraph.specs import validation

    found = {b.NAME: backends.plug_in(b, "rules") for b in BACKENDS}
    assert {n for n, m in found.items() if m is not None} >= {"cuda", "hip", "metal"}
    for name, mod in found.items():
        if mod is not None:
            assert mod.__name__ == f"bundlegraph.backends.{name}.rules" and callable(mod.problems)
    assert backends.plug_in(backend("cpu"), "verify") is None  # a part the package lacks
    fake = types.ModuleType("bundlegraph.backends.fakeplain")  # a plain module has no parts
    assert backends.plug_in(fake, "rules") is None  # type: ignore[arg-type]
    src = inspect.getsource(validation)
    for table in backends.spec_tables():
        assert f"s.{table}" not in src and f"spec.{table}" not in src, table


def test_a_backend_reads_its_own_table_through_its_typed_reader():
    """Issue 53: :class:`~bundlegraph.schemas.records.BundleSpec` declares no backend's table; a
    backend's ``TableReader`` gives its own legs' table typed, None for another leg, and names the
    leg when asked for a table it does not have or one of another type."""
    from pathlib import Path

    from bundlegraph.backends.cuda.spec import CUDA, CudaSpec
    from bundlegraph.backends.hip.spec import HIP
    from bundlegraph.schemas.record_base import TableReader
    from bundlegraph.specs.loader import load_matrix

    legs = load_matrix(Path(__file__).resolve().parents[2] / "bundles").legs
    cu, cpu = legs["windows-arm64-cuda13-portable"], legs["windows-arm64-cpu"]
    assert isinstance(CUDA.of(cu), CudaSpec) and CUDA.of(cu) is getattr(cu, "cuda")
    assert [a.cmake for a in CUDA.of(cu).archs] == list(CUDA.of(cu).cmake_archs)
    assert CUDA.get(cpu) is None and HIP.get(cu) is None
    with pytest.raises(TypeError, match="windows-arm64-cpu: the leg has no \\[cuda\\] table"):
        CUDA.of(cpu)
    with pytest.raises(TypeError, match="windows-arm64-cuda13-portable: \\[cuda\\] is a CudaSpec, not HipSpec"):
        TableReader("cuda", HIP.rec).get(cu)
    with pytest.raises(ValueError, match="SPEC_TABLE None"):
        TableReader(None, CudaSpec)
