"""The secret canary (issue 51, item 1): the stand-in's llama.cpp tree changed the way an upstream
commit or a pinned pull request could change it, so that build code dumps the environment it
sees, and the findings: every secret (by name or by value) in a dump or a file.

Used by ``tests/integration/test_secret_canary.py`` (a local build, each form of the remote
cache's URL) and ``tests/integration/test_workflows_under_act.py`` (the release workflow under
act, with the release's secrets set as act secrets).

What dumps: cmake at configure time (``configure-cmake-<random>.env``), a program the build
compiles and runs where it is no cross build (``build-program-<pid>.env``; the compilers run with
that very environment, ninja starts both) and every program that loads ``libggml-base`` (``smoke-program-<pid>.env``: the smoke's).
"""

from __future__ import annotations

from pathlib import Path

SECRET_PREFIXES = ("AZURE_", "BUNDLEGRAPH_SIGN_", "ACTIONS_", "BUNDLEGRAPH_EXTRA_")
"""Name prefixes that are secret whatever their value: a dump must hold none of them."""
SECRET_NAMES = ("BUNDLEGRAPH_CACHE_REMOTE", "CCACHE_REMOTE_STORAGE", "CCACHE_SECONDARY_STORAGE", "GITHUB_TOKEN")
"""Names that are secret whatever their value: the remote cache's URL (it carries the credential)
in bundlegraph's and ccache's spelling, and the GitHub token. (Not a prefix: the release sets
``BUNDLEGRAPH_CACHE_REMOTE_MODE=read-only``, a setting build code may see.)"""

DUMP_KINDS = ["build-program", "configure-cmake", "smoke-program"]
"""The dumps a canary build leaves, by kind (sorted)."""

CANARY_C = r"""
#include <stdio.h>
#include <unistd.h>
extern char ** environ;
static void canary_dump(const char * who) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%ld.env", CANARY_DIR, who, (long) getpid());
    FILE * f = fopen(path, "w");
    if (!f) return;
    for (char ** e = environ; *e; e++) fprintf(f, "%s\n", *e);
    fclose(f);
}
#ifdef CANARY_MAIN
int main(void) { canary_dump("build-program"); return 0; }
#else
__attribute__((constructor)) static void canary_loaded(void) { canary_dump("smoke-program"); }
#endif
"""


def plant(src: Path, dumps: Path) -> None:
    """Add the canary to the llama.cpp tree ``src`` (the stand-in's ``minillama``): each dump is
    written into ``dumps`` (an absolute path, compiled into the programs)."""
    (src / "src" / "canary.c").write_text(CANARY_C, encoding="utf-8")
    d = dumps.as_posix()
    cmake = (src / "CMakeLists.txt").read_text(encoding="utf-8")
    cmake += f"""
# the canary (tests/integration/test_secret_canary.py): what build code sees
string(RANDOM LENGTH 9 ALPHABET 0123456789 canary_id)
execute_process(COMMAND "${{CMAKE_COMMAND}}" -E environment OUTPUT_FILE "{d}/configure-cmake-${{canary_id}}.env")
if(NOT CMAKE_CROSSCOMPILING)  # a program the build runs: only where the build machine can run it
add_executable(canary-env src/canary.c)
set_target_properties(canary-env PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${{CMAKE_BINARY_DIR}}/canary")
target_compile_definitions(canary-env PRIVATE CANARY_MAIN CANARY_DIR="{d}")
add_custom_command(OUTPUT "${{CMAKE_BINARY_DIR}}/canary/ran.txt"
    COMMAND canary-env
    COMMAND "${{CMAKE_COMMAND}}" -E touch "${{CMAKE_BINARY_DIR}}/canary/ran.txt"
    VERBATIM)
add_custom_target(canary ALL DEPENDS "${{CMAKE_BINARY_DIR}}/canary/ran.txt")
endif()
target_sources(ggml-base PRIVATE src/canary.c)
target_compile_definitions(ggml-base PRIVATE CANARY_DIR="{d}")
"""
    (src / "CMakeLists.txt").write_text(cmake, encoding="utf-8")


def findings(dumps: Path, tree: Path, values: dict[str, str]) -> list[str]:
    """One line per secret found: ``env <dump>: NAME=VALUE`` for a variable a dump holds that is
    a secret by name or by value, ``file <path>: NAME's value`` for a file under ``tree``
    that holds a secret's value."""
    out = []
    for f in sorted(dumps.glob("*.env")):
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            name, _, value = line.partition("=")
            by_name = name in values or name in SECRET_NAMES or name.startswith(SECRET_PREFIXES)
            if by_name or any(v in value for v in values.values()):
                out.append(f"env  {f.name}: {line}")
    for f in sorted(p for p in tree.rglob("*") if p.is_file() and p.stat().st_size < 64 << 20):
        data = f.read_bytes()
        out += [f"file {f.relative_to(tree)}: {n}'s value" for n, v in values.items() if v.encode() in data]
    return out
