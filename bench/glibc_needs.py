"""The highest GLIBC and GLIBCXX versions a bundle's ELF files need (issue 50: the floors the
bundles really need, per leg), read with bundlegraph's own ELF reader (any architecture; no objdump).

    python bench/glibc_needs.py dist/app-b11642-linux-x64-cpu.tar.gz [...]

Prints, per bundle: its sha256, then ``GLIBC_2.34 (libc.so.6, pthread_create) in libggml-base.so``
for the highest of each family.
"""

from __future__ import annotations

import hashlib
import sys
import tarfile
from pathlib import Path

from bundlegraph.checks.elf import is_elf, read_elf
from bundlegraph.checks.glibc import highest_needs, parse_version


def needs(bundle: Path) -> dict[str, tuple[str, str, str | None, str]]:
    """Family -> (version, library, symbol, file) of the highest need over the bundle's ELF files."""
    best: dict[str, tuple[str, str, str | None, str]] = {}
    with tarfile.open(bundle) as t:
        for m in t.getmembers():
            f = t.extractfile(m) if m.isfile() else None
            data = f.read() if f else b""
            if not is_elf(data):
                continue
            for fam, n in highest_needs(read_elf(data, m.name)).items():
                if fam not in best or parse_version(n.version) > parse_version(best[fam][0]):
                    best[fam] = (n.version, n.library, n.symbol, Path(m.name).name)
    return best


def main(argv: list[str]) -> int:
    for a in argv:
        p = Path(a)
        print(p.name, hashlib.sha256(p.read_bytes()).hexdigest())
        for fam, (v, lib, sym, f) in sorted(needs(p).items()):
            print(f"  {fam}_{v} ({lib}, {sym}) in {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
