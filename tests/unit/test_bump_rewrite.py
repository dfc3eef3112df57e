"""``bundlegraph bump`` rewrites release.toml in place: the tag and [source.base]'s tag, commit and
sha256, nothing else (comments, pins and their order kept); a file without them is named."""

from __future__ import annotations

import pytest

from bundlegraph.core.errors import BundleGraphError
from bundlegraph.release.upstream import rewrite_release

TEXT = """# a comment
tag = "b42-mix-1234567"  # derived
paired_runtime_tag = "b42"

[source]
kind = "mix"
url = "git://x/y"

[source.base]  # the base
tag = "b42"
commit = "{a}"
sha256 = "{z}"

[[source.prs]]
repo = "o/r"
number = 1
sha = "{b}"
""".format(a="a" * 40, b="b" * 40, z="0" * 64)


def test_only_the_tag_and_the_base_change():
    out = rewrite_release(TEXT, "b43-mix-7654321", "b43", "c" * 40, "1" * 64)
    assert out.splitlines()[1] == 'tag = "b43-mix-7654321"  # derived'
    assert 'tag = "b43"' in out and f'commit = "{"c" * 40}"' in out and f'sha256 = "{"1" * 64}"' in out
    assert f'sha = "{"b" * 40}"' in out and 'paired_runtime_tag = "b42"' in out  # the pin and the rest kept
    assert [l for l in out.splitlines() if l.startswith("#") or "[" in l] == [
        l for l in TEXT.splitlines() if l.startswith("#") or "[" in l
    ]


def test_a_file_without_a_base_is_named():
    with pytest.raises(BundleGraphError, match="bump found no source.base.commit, source.base.sha256, source.base.tag"):
        rewrite_release('tag = "b1"\n[source]\nkind = "git"\n', "b2", "b2", "c" * 40, "1" * 64)
