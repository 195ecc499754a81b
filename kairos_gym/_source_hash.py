"""Print the FNV-1a 64-bit hash (hex) of the native core's sources: src/core and src/bindings, *.cpp and *.hpp,
in sorted path order, each as its relative path, a NUL, its bytes, a NUL. CMake bakes it into the build
(``_core.build_info()["source_hash"]``); ``kairos_gym.compiled`` recomputes it in a checkout to detect a stale
editable build. Runs standalone (stdlib only), as CMake does: ``python kairos_gym/_source_hash.py REPO_ROOT``."""

from __future__ import annotations

import sys
from pathlib import Path

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK = (1 << 64) - 1


def source_hash(root: Path) -> str:
    h = FNV_OFFSET
    files = sorted(p for d in ("src/core", "src/bindings") for p in (root / d).glob("*")
                   if p.suffix in (".cpp", ".hpp"))
    for p in files:
        for chunk in (p.relative_to(root).as_posix().encode("utf-8"), b"\0", p.read_bytes(), b"\0"):
            for byte in chunk:
                h = ((h ^ byte) * FNV_PRIME) & MASK
    return f"{h:016x}"


if __name__ == "__main__":
    print(source_hash(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
