"""Issue 19 item 4, first step: are a handful of real ggml-cuda objects byte-reproducible?

Takes a configured CUDA leg's CMake directory (``build/<leg>/cmake`` after ``configure:<leg>``),
reads ninja's exact command for each chosen object (``ninja -t commands``), and compiles it twice,
in two fresh directories side by side (so nvcc's pid-named temporaries differ), with the flags as
configured or with bundlegraph's levers removed (``--without objtemp``, ``--without seed``: the
build before this issue). Prints one line per object (SAME/DIFF, seconds) and writes diffoscope's
report (``--text``) for each pair that differs, when diffoscope is on PATH or beside this Python.

    python bench/repro_objects.py build/linux-arm64-cuda13-blackwell/cmake --out /tmp/repro [--without objtemp seed]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HANDFUL = [
    "argmax.cu.o",
    "softmax.cu.o",
    "topk-moe.cu.o",
    "template-instances/fattn-vec-instance-f16-f16.cu.o",
    "template-instances/mmq-instance-q4_0.cu.o",
]
PREFIX = "ggml/src/ggml-cuda/CMakeFiles/ggml-cuda.dir/"


def command(cmake_dir: Path, obj: str, without: set[str]) -> list[str]:
    out = (
        subprocess.run(
            ["ninja", "-C", str(cmake_dir), "-t", "commands", obj], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    argv = shlex.split(out)
    if "objtemp" in without:
        argv = [a for a in argv if a not in ("-objtemp", "--objdir-as-tempdir")]
    if "seed" in without:
        argv = [a for a in argv if not a.startswith(("-frandom-seed=", "--frandom-seed="))]
    return argv


def compile_in(d: Path, obj: str, argv: list[str]) -> str:
    (d / obj).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(argv, cwd=d, check=True, capture_output=True)
    return hashlib.sha256((d / obj).read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmake_dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--without", nargs="*", default=[], choices=["objtemp", "seed"])
    ap.add_argument("--objects", nargs="*", default=HANDFUL, help=f"object names under {PREFIX}")
    a = ap.parse_args()
    tag = "-".join(["without", *a.without]) if a.without else "as-configured"
    root = a.out / tag
    shutil.rmtree(root, ignore_errors=True)
    diffoscope = shutil.which("diffoscope") or next(
        (str(p) for p in [Path(sys.executable).parent / "diffoscope"] if p.is_file()), None
    )
    rows = []
    for name in a.objects:
        obj = PREFIX + name
        argv = command(a.cmake_dir.resolve(), obj, set(a.without))
        t0 = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            x, y = pool.map(lambda d: compile_in(root / d, obj, argv), ["x", "y"])
        row = {
            "object": name,
            "same": x == y,
            "x": x,
            "y": y,
            "seconds": round(time.monotonic() - t0, 1),
            "seed": next((s for s in argv if s.startswith("-frandom-seed=")), None),
            "objtemp": "-objtemp" in argv,
        }
        if x != y and diffoscope:
            report = a.out / f"diffoscope-{tag}-{re.sub(r'[^A-Za-z0-9._-]', '_', name)}.txt"
            subprocess.run(
                [diffoscope, "--text", str(report), str(root / "x" / obj), str(root / "y" / obj)], capture_output=True
            )
            row["diffoscope"] = str(report)
            row["differing_parts"] = [
                l.strip("│├─ ") for l in report.read_text(errors="replace").splitlines() if re.match(r"^(│ )*├── ", l)
            ][:10]
        rows.append(row)
        print(
            f"{tag} {name}: {'SAME' if x == y else 'DIFF'} {x[:16]} {y[:16]} {row['seconds']}s "
            f"{row.get('differing_parts', '')}",
            flush=True,
        )
    (a.out / f"{tag}.json").write_text(json.dumps(rows, indent=2))
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
