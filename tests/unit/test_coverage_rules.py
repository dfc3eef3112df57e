"""The release's coverage rules ([coverage] of release.toml): validated on load with one line per
problem, judged by rule kind on the specs (what `bundlegraph plan` says) and on what a release
offers (what publish refuses on), each missing bundle named with its rule."""

from __future__ import annotations

import shutil

import pytest
from conftest import ROOT

from bundlegraph.core.errors import SpecError
from bundlegraph.installer.coverage import Offer, offers_of_specs, rule_problems
from bundlegraph.schemas.records import CoverageRules, EqualClasses, RequiredBundles
from bundlegraph.specs.loader import load_matrix

STANDIN = ROOT / "tests" / "data" / "bundles"

FORK = CoverageRules(
    equal_classes=[
        EqualClasses(
            platforms=["linux-x64", "windows-x64"], lines=["cuda12", "cuda13"], classes=["older", "newer", "portable"]
        )
    ],
    required=[RequiredBundles(platforms=["linux-x64", "windows-x64"], profiles=["cuda12-legacy"])],
)


def offer(plat: str, profile: str) -> Offer:
    line, _, klass = profile.partition("-") if profile.startswith("cuda") else (None, "", profile)
    ext = ".zip" if plat.startswith("windows") else ".tar.gz"
    return Offer(plat, line, klass, profile, f"app-b1-{plat}-{profile}{ext}")


def full_cuda() -> list[Offer]:
    return [
        offer(p, f"{line}-{k}")
        for p in ("linux-x64", "windows-x64")
        for line in ("cuda12", "cuda13")
        for k in ("older", "newer", "portable")
    ] + [offer(p, "cuda12-legacy") for p in ("linux-x64", "windows-x64")]


def test_the_fork_matrix_meets_the_fork_rules_and_each_missing_bundle_is_named():
    assert rule_problems(FORK, full_cuda(), prefix="app", tag="b1") == []
    offers = [o for o in full_cuda() if o.name != "app-b1-windows-x64-cuda12-newer.zip"]
    offers = [o for o in offers if o.name != "app-b1-linux-x64-cuda12-legacy.tar.gz"]
    probs = rule_problems(FORK, offers, prefix="app", tag="b1")
    assert len(probs) == 2, probs
    assert probs[0].startswith("coverage.equal_classes[0]: windows-x64: app-b1-windows-x64-cuda12-newer.zip is missing")
    assert "cuda12 [older, portable]; cuda13 [newer, older, portable]" in probs[0]
    assert probs[1] == (
        "coverage.required[0]: app-b1-linux-x64-cuda12-legacy.tar.gz is missing "
        "(profile cuda12-legacy on linux-x64 is required)"
    )


def test_equal_classes_must_not_be_empty_and_ignores_other_classes():
    # legacy and blackwell are not among the compared classes: the sets are empty on both lines
    offers = [offer("linux-x64", "cuda12-legacy"), offer("linux-x64", "cuda13-blackwell")]
    rules = CoverageRules(equal_classes=[FORK.equal_classes[0].replace(platforms=["linux-x64"])])
    (p,) = rule_problems(rules, offers, prefix="app", tag="b1")
    assert p.startswith("coverage.equal_classes[0]: linux-x64: no bundle of class older/newer/portable on any of")
    assert "app-b1-linux-x64-cuda12-older.tar.gz" in p and "app-b1-linux-x64-cuda13-portable.tar.gz" in p
    # a release without rules is judged by none
    assert rule_problems(None, [], prefix="app", tag="b1") == []


def standin_copy(tmp_path):
    d = tmp_path / "bundles"
    shutil.copytree(STANDIN, d)
    shutil.copytree(ROOT / "bundles" / "locks", d / "locks", dirs_exist_ok=True)
    return d


def test_the_real_release_meets_the_forks_rules_and_breaks_them_by_name_without_a_class(tmp_path):
    real = load_matrix(ROOT / "bundles")
    rel = real.release
    assert rel.coverage is not None and rel.coverage.fingerprint is None  # no brand yet (release.toml says why)
    # issue 43's 12 x64 CUDA legs make the fork's gate hold
    assert rule_problems(rel.coverage, offers_of_specs(real), prefix=rel.bundle_prefix, tag=rel.tag) == []
    t = rel.tag
    drop = (
        "linux-x64-cuda12-legacy",
        "windows-x64-cuda12-legacy",
        "linux-x64-cuda12-portable",
        "windows-x64-cuda12-portable",
    )
    less = type(real)(real.root, rel, {k: v for k, v in real.legs.items() if k not in drop}, real.files)
    probs = rule_problems(rel.coverage, offers_of_specs(less), prefix=rel.bundle_prefix, tag=rel.tag)
    for name in (f"app-{t}-linux-x64-cuda12-legacy.tar.gz", f"app-{t}-windows-x64-cuda12-legacy.zip"):
        assert any(name in p and p.startswith("coverage.required[0]") for p in probs), probs
    for name in (f"app-{t}-linux-x64-cuda12-portable.tar.gz", f"app-{t}-windows-x64-cuda12-portable.zip"):
        assert any(name in p and p.startswith("coverage.equal_classes[0]") for p in probs), probs
    assert not any("-cpu." in p for p in probs)  # every CPU leg is there
    standin = load_matrix(standin_copy(tmp_path))
    r = standin.release
    assert r.coverage is not None and r.coverage.required
    assert rule_problems(r.coverage, offers_of_specs(standin), prefix=r.bundle_prefix, tag=r.tag) == []
    dropped = {k: v for k, v in standin.legs.items() if k != "mini-linux-x64-cpu"}
    m = type(standin)(standin.root, standin.release, dropped, standin.files)
    assert rule_problems(r.coverage, offers_of_specs(m), prefix=r.bundle_prefix, tag=r.tag) == [
        "coverage.required[0]: app-b42-linux-x64-cpu.tar.gz is missing (profile cpu on linux-x64 is required)"
    ]


@pytest.mark.parametrize(
    ("table", "line"),
    [
        (
            '[coverage]\nfingerprint = "say \\"hi\\""\n',
            "release.toml: coverage.fingerprint: String should match pattern",
        ),
        ("[[coverage.required]]\nplatforms = ['linux-x86']\nprofiles = ['cpu']\n", "coverage.required.0.platforms.0:"),
        (
            "[[coverage.equal_classes]]\nplatforms = ['linux-x64']\nlines = ['cuda13']\nclasses = ['older']\n",
            "coverage.equal_classes.0.lines: List should have at least 2 items",
        ),
        (
            "[[coverage.required]]\nplatform = ['linux-x64']\nprofiles = ['cpu']\n",
            "coverage.required.0.platform: unknown key",
        ),
        (
            "[[coverage.required]]\nplatforms = ['linux-x64', 'linux-x64']\nprofiles = ['cpu']\n",
            "coverage.required.0.platforms: holds duplicates",
        ),
    ],
)
def test_bad_rules_are_refused_in_one_line_naming_the_key(tmp_path, table, line):
    d = standin_copy(tmp_path)
    rel = d / "release.toml"
    text = rel.read_text()
    rel.write_text(text[: text.index("[[coverage.required]]")] + table)
    with pytest.raises(SpecError) as e:
        load_matrix(d)
    lines = str(e.value).splitlines()
    hit = [x for x in lines if line in x]
    assert hit and "release.toml" in hit[0], str(e.value)


def test_a_tool_printing_build_infos_line_with_an_imported_target_is_not_judged():
    """Measured on a real Linux build of llama.cpp: llama-gguf-split prints "built with %s for %s"
    itself and imports _Z18llama_build_targetv from libllama-common.so, which holds the target."""
    from bundlegraph.checks.brand import BUILD_INFO_LINE, WHOLE, unbranded

    fp = "Compiled by the Unsloth team"
    marks = {
        "libllama-common.so": frozenset({BUILD_INFO_LINE, fp.encode()}),
        "llama-gguf-split": frozenset({BUILD_INFO_LINE}),
    }
    assert unbranded(marks, fp, whole=True, importers=frozenset({"llama-gguf-split"})) == []
    (f,) = unbranded(marks, fp, whole=False)
    assert (f.file, f.check) == ("llama-gguf-split", "brand")
    bare = {"libllama-common.so": frozenset({BUILD_INFO_LINE})}
    assert [x.file for x in unbranded(bare, fp, whole=True)] == ["libllama-common.so", WHOLE]
