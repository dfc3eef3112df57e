"""A mix source's records (issue 31): the tag is derived from the pins as the fork's pipeline
derives it, upstream_tag comes from the base, and a release of one upstream build has no mix
tag; each refusal names the key and the value expected."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from bundlegraph.schemas.adapters import adapter
from bundlegraph.schemas.records import MixPin, PullPin, Release, mix_tag

A = "a" * 40
B = "b" * 40


def _release(tag: str, prs: list[dict], **more: object) -> dict:
    return {
        "tag": tag,
        "paired_runtime_tag": "b6990",
        "source_repo": "ggml-org/llama.cpp",
        "default_legs": ["x"],
        "source": {
            "kind": "mix",
            "url": "https://github.com/ggml-org/llama.cpp.git",
            "base": {"tag": "b11642", "commit": A, "sha256": "0" * 64},
            "prs": prs,
        },
        **more,
    }


def test_the_tag_is_the_first_seven_hex_of_the_sha256_of_the_newline_joined_pins():
    pins = [
        PullPin(repo="ggml-org/llama.cpp", number=24423, sha=B),
        PullPin(repo="ggml-org/llama.cpp", number=7, sha=A),
    ]
    text = f"ggml-org/llama.cpp#24423:{B}\nggml-org/llama.cpp#7:{A}"
    assert mix_tag("b11642", pins) == "b11642-mix-" + hashlib.sha256(text.encode()).hexdigest()[:7]
    assert mix_tag("b11642", pins[::-1]) != mix_tag("b11642", pins)  # the merge order is part of it
    assert mix_tag("b11642", []) == "b11642"


def test_a_mix_release_takes_its_upstream_tag_from_the_base_and_its_tag_from_the_pins():
    pr = {"repo": "ggml-org/llama.cpp", "number": 24423, "sha": B, "title": "DiffusionGemma visual server"}
    tag = mix_tag("b11642", [PullPin(**pr)])
    rel = adapter(Release).validate_python(_release(tag, [pr]))
    assert isinstance(rel.source, MixPin) and rel.upstream_tag == "b11642" and rel.build_number == 11642
    assert rel.source_ref_kind == "mix" and rel.source.prs[0].url == "https://github.com/ggml-org/llama.cpp/pull/24423"
    assert adapter(Release).validate_python(rel.dump()) == rel  # its JSON form round-trips
    base_only = adapter(Release).validate_python(_release("b11642", []))
    assert base_only.source_ref_kind == "tag"


def test_a_stated_tag_or_upstream_tag_the_pins_contradict_is_refused():
    pr = {"repo": "ggml-org/llama.cpp", "number": 24423, "sha": B}
    want = mix_tag("b11642", [PullPin(**pr)])
    with pytest.raises(ValidationError, match=f"but the base b11642 with 1 pinned pull request is '{want}'"):
        adapter(Release).validate_python(_release("b11642-mix-0c1e570", [pr]))
    with pytest.raises(ValidationError, match="a mix source's upstream build is its \\[source.base\\] tag"):
        adapter(Release).validate_python(_release(want, [pr], upstream_tag="b11643"))
    with pytest.raises(ValidationError, match="a pull request is listed twice"):
        adapter(Release).validate_python(_release(want, [pr, pr]))


def test_a_release_of_one_upstream_build_has_no_mix_tag():
    rel = {
        "tag": "b11642-mix-0c1e570",
        "upstream_tag": "b11642",
        "paired_runtime_tag": "b6990",
        "source_repo": "ggml-org/llama.cpp",
        "default_legs": ["x"],
        "source": {"kind": "git", "url": "u", "commit": A},
    }
    with pytest.raises(ValidationError, match="names a mix, but the source \\(kind 'git'\\) merges no pull request"):
        adapter(Release).validate_python(rel)
    ok = adapter(Release).validate_python({**rel, "tag": "b11642"})
    assert ok.source_ref_kind == "tag"
    assert adapter(Release).validate_python({**rel, "tag": "b11642", "upstream_tag": "b11641"}).source_ref_kind == "ref"


def test_a_bad_base_key_is_named_by_its_toml_path(tmp_path):
    from bundlegraph.specs.validation import format_validation

    bad = _release("b11642", [])
    bad["source"]["base"]["tag"] = "11642"
    with pytest.raises(ValidationError) as e:
        adapter(Release).validate_python(bad)
    lines = format_validation(tmp_path / "release.toml", e.value, Release)
    assert any(l.startswith(f"{tmp_path / 'release.toml'}: source.base.tag: String should match") for l in lines), lines


def test_a_pin_of_another_repository_than_the_one_its_head_is_fetched_from_is_refused_naming_both():
    """Pull request heads are fetched from [source] url (source_repo's refs/pull/<n>/head), so a
    pin naming another repository would put a repository into merged_prs that the code did not
    come from (issue 40, item 6)."""
    pr = {"repo": "evil/llama.cpp", "number": 24423, "sha": B}
    tag = mix_tag("b11642", [PullPin(**pr)])
    with pytest.raises(ValidationError) as e:
        adapter(Release).validate_python(_release(tag, [pr]))
    msg = str(e.value)
    assert "source.prs[0].repo: 'evil/llama.cpp', but its head is fetched from [source] url" in msg, msg
    assert "https://github.com/ggml-org/llama.cpp.git (source_repo 'ggml-org/llama.cpp')" in msg, msg
    ok = {"repo": "ggml-org/llama.cpp", "number": 24423, "sha": B}
    other_url = _release(mix_tag("b11642", [PullPin(**ok)]), [ok])
    other_url["source"]["url"] = "https://github.com/evil/llama.cpp.git"
    with pytest.raises(
        ValidationError,
        match="source.url: 'https://github.com/evil/llama.cpp.git' is repository "
        "evil/llama.cpp, but source_repo is 'ggml-org/llama.cpp'",
    ):
        adapter(Release).validate_python(other_url)


def test_a_title_is_not_part_of_the_merge_message_nor_of_the_source_cache_key(tmp_path):
    from bundlegraph.pipeline.mix import merge_message
    from bundlegraph.pipeline.source import plan_source

    pr = {"repo": "ggml-org/llama.cpp", "number": 24423, "sha": B}
    tag = mix_tag("b11642", [PullPin(**pr)])
    plain = adapter(Release).validate_python(_release(tag, [pr]))
    titled = adapter(Release).validate_python(_release(tag, [{**pr, "title": "DiffusionGemma visual server"}]))
    assert isinstance(titled.source, MixPin) and isinstance(plain.source, MixPin)
    assert (
        merge_message(titled.source.prs[0])
        == merge_message(plain.source.prs[0])
        == (f"Merge ggml-org/llama.cpp#24423 at {B}")
    )
    assert plan_source(titled, tmp_path) == plan_source(plain, tmp_path)  # cache entry and task key alike
