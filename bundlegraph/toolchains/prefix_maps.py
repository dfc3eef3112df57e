"""Build-host paths mapped to stable names in every compiled file, so that a bundle's bytes do not
depend on where the download cache, the work directory or the user's home is (issue 32: anyone can
rebuild a release and get our bytes).

Without a map, ``__FILE__`` (ggml's asserts: 155 copies in ``libllama.so`` of the main job) and
debug paths name ``<BUNDLEGRAPH_CACHE>/sources/.../tree/...``. With it they name ``llama.cpp/...``.

The flags, per compiler family (looked up, and measured where this host has the compiler):

- GCC (>= 8) and clang (>= 10), ``clang.exe`` for Windows included: ``-ffile-prefix-map=OLD=NEW``,
  which is ``-fmacro-prefix-map`` (``__FILE__``) and ``-fdebug-prefix-map`` (DWARF) at once. The
  match is a plain string prefix (not per path component). When two maps match:

  - GCC takes the one given **last**: ``gcc/file-prefix-map.cc`` ``add_prefix_map`` pushes each
    option on the front of a list and ``remap_filename`` returns the first list entry that
    matches. Measured, GCC 12.2: ``-ffile-prefix-map=D/a=A -ffile-prefix-map=D/a/b=B`` maps
    ``D/a/b/t.c`` to ``B/t.c``, the reverse order to ``A/b/t.c``.
  - clang takes the **longest** (its maps are a ``std::map`` ordered by ``std::greater``, so
    of two matching prefixes the longer comes first; of two equal ones the first given stays:
    llvm/llvm-project issue 157721). Measured, Debian clang 14.0.6: ``B/t.c`` in both orders.

  So :meth:`PrefixMaps.pairs` lists a root after every root that is a string prefix of it (an
  enclosing root first, the most specific last): both compilers then pick the most specific root,
  whatever the lengths of unrelated roots (a long temp folder and a short toolkit path give the
  same order as the reverse, issue 41).
- nvcc on a GCC host: the same flag through ``-Xcompiler=``, passed on to the host compiler in
  the order given, so GCC's rule above applies; nvcc's host preprocessing then maps
  the device code's ``__FILE__`` too (measured with nvcc 13.0: an object of ``/tmp/.../k.cu``
  with a device ``printf(__FILE__)`` holds no build path at all, and two without the map).
- MSVC ``cl.exe`` (and nvcc on an MSVC host, through ``-Xcompiler=``): ``/d1trimfile:OLD``
  removes the prefix from ``__FILE__`` (the only path a ``/O2`` build without ``/Zi`` embeds).
  cl.exe has no documented ``-ffile-prefix-map``; ``/d1trimfile`` is what Bazel's and sccache's
  MSVC support pass, and it wants the prefix spelled with backslashes. It trims instead of
  renaming, so on MSVC a file is ``\\ggml\\src\\ggml.c`` where GCC writes ``llama.cpp/ggml/src/ggml.c``.
  Which of two matching ``/d1trimfile`` prefixes cl.exe trims is not documented anywhere; either
  one leaves no build-host root in the file (what verify checks), the same order is used. Not
  measured here: this host has no cl.exe.
"""

from __future__ import annotations

import mmap
from pathlib import Path, PureWindowsPath

from ..core.lightclass import frozen

SOURCE = "llama.cpp"
"""The stable name of the llama.cpp source tree (``__FILE__`` becomes ``llama.cpp/ggml/src/...``)."""
BUILD = "build"
"""The stable name of CMake's binary directory (generated sources such as ``build-info.cpp``)."""
TOOLKIT = "cuda"
"""The stable name of the CUDA toolkit's root (its headers' ``__FILE__``)."""
WORK = "work"
"""The stable name of the work directory (anything else under it)."""
CACHE = "cache"
"""The stable name of the download and toolkit cache (anything else under it)."""


ORDER = (WORK, CACHE, BUILD, TOOLKIT, SOURCE)
"""The order of roots that do not enclose one another (:meth:`PrefixMaps.pairs`). Any fixed order
is correct; this one is what the length order gave before issue 41 on the usual layout (a checkout
path shorter than the cache's, the source cache entry's 64-hex name the longest), so the flags,
and with them the configure keys and compiler-cache entries, of such a work directory stay."""


@frozen
class PrefixMaps:
    """Build-host roots and the stable names they get in compiled files: ``roots`` maps each
    stable name to the absolute root it stands for (None when the build has no such root, e.g.
    no toolkit for a CPU leg)."""

    source: Path
    build: Path
    work: Path
    cache: Path
    toolkit: Path | None = None

    def pairs(self) -> list[tuple[str, str]]:
        """``(old, new)`` pairs, old as the compiler sees it (forward slashes). A root comes after
        every other root that is a string prefix of it (the enclosing root first), so that the
        most specific root wins on GCC (last match) and clang (longest match) alike (module
        docstring); otherwise in the fixed order :data:`ORDER`. The order therefore depends on
        how the roots nest, never on their lengths. Roots that coincide keep the most specific
        name (source over build over toolkit over work over cache)."""
        named = [(CACHE, self.cache), (WORK, self.work), (TOOLKIT, self.toolkit), (BUILD, self.build)]
        named.append((SOURCE, self.source))
        seen = {root.as_posix().rstrip("/"): new for new, root in named if root is not None}
        rank = {new: i for i, new in enumerate(ORDER)}

        def enclosing(old: str) -> int:
            # a string prefix, as the compilers match; a root enclosing another has fewer of these
            return sum(1 for other in seen if other != old and old.startswith(other))

        return sorted(seen.items(), key=lambda kv: (enclosing(kv[0]), rank[kv[1]]))

    def record(self) -> dict[str, str]:
        """What a rebuild needs to know: each stable name and the root it replaced here."""
        return {new: old for old, new in self.pairs()}

    def gnu_flags(self) -> list[str]:
        """``-ffile-prefix-map=OLD=NEW`` per root (GCC, clang, ``clang.exe``)."""
        return [f"-ffile-prefix-map={old}={new}" for old, new in self.pairs()]

    def msvc_flags(self) -> list[str]:
        """``/d1trimfile:OLD`` per root, the prefix in backslashes (cl.exe). No trailing backslash:
        a program that quotes the argument again (nvcc passing ``-Xcompiler`` on) would turn
        ``\\"`` into an escaped quote; ``__FILE__`` then starts with one (``\\ggml\\src\\ggml.c``)."""
        return [f"/d1trimfile:{PureWindowsPath(old)}" for old, _new in self.pairs()]


def flag_text(flags: list[str]) -> str:
    """``flags`` as one command-line string for ``CMAKE_<LANG>_FLAGS_INIT``: a flag holding a
    space is double-quoted (ninja runs commands through ``/bin/sh`` on POSIX hosts, and cl.exe and
    nvcc split their command line by the MSVC C runtime's rules on Windows: both honour the
    quotes)."""
    return " ".join(_quoted(f) if (" " in f or "\t" in f) else f for f in flags)


def _quoted(flag: str) -> str:
    """``flag`` in double quotes; trailing backslashes doubled, as the MSVC C runtime reads
    ``\\"`` as a backslash and a closing quote (``/d1trimfile:C:\\a b\\`` ends in one)."""
    stripped = flag.rstrip("\\")
    return '"' + stripped + "\\" * (2 * (len(flag) - len(stripped))) + '"'


def _find(data: bytes | bytearray | memoryview | mmap.mmap, needle: bytes) -> bool:
    """Whether ``needle`` occurs in ``data`` (``in`` tests single items of an mmap or memoryview)."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    return data.find(needle) != -1


def embedded(
    data: bytes | bytearray | memoryview | mmap.mmap, roots: tuple[tuple[str, str], ...]
) -> list[tuple[str, str]]:
    """The ``(what, root)`` pairs of ``roots`` whose root ``data`` names as a directory (the
    root followed by a slash or backslash), in either slash form and, for a Windows path, either
    case of its drive letter. Roots shorter than 4 characters are ignored (``/`` would match
    everything). Returns the pairs found, in the order given."""
    out = []
    for what, root in roots:
        r = root.rstrip("/\\")
        if len(r) < 4:
            continue
        forms = {r.replace("\\", "/") + "/", r.replace("/", "\\") + "\\"}
        if r[1:2] == ":":
            forms |= {f[0].swapcase() + f[1:] for f in list(forms)}
        if any(_find(data, f.encode("utf-8", "surrogateescape")) for f in forms):
            out.append((what, root))
    return out
