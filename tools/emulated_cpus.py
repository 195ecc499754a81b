"""The emulation job: the golden results must not depend on the CPU features of this machine.

    .venv/bin/python tools/emulated_cpus.py [--out DIR] [--no-tests]      # or: make emulated

Discovers what this machine's libraries dispatch on, then runs ``kairos-gym verify`` (with ``--dump``) and the
golden bit-identity tests once per emulated CPU, each in a fresh process with the features hidden:

- ``glibc``: ``GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA`` (and ``-AVX512F`` where /proc/cpuinfo lists it):
  glibc's libm picks its non-FMA exp/log/pow code, as on a CPU without them;
- ``numpy``: ``NPY_DISABLE_CPU_FEATURES`` = every SIMD target numpy found on this machine and dispatches on
  (``numpy._core._multiarray_umath.__cpu_dispatch__`` that ``__cpu_features__`` marks present). numpy refuses to
  hide its baseline (``__cpu_baseline__``, X86_V2 on x86-64: a RuntimeError at import), so only dispatched
  targets are listed: numpy then runs its baseline loops, the code of the oldest CPU it supports;
- ``all``: both together, and torch's scalar kernels (``ATEN_CPU_CAPABILITY=default``: no result path runs
  torch since the trained agents act through the core's MLP forward, so this guards against one coming back).

Each emulated run must pass the tests, say ``equal`` for every verify stage, and dump arrays equal to the
default run's, bit for bit (the tool prints, per emulation, the arrays that differ and by how many ulps, as
compare_stages.py does). Before each run a probe checks that the emulation took effect (numpy's found targets
are gone; glibc's active feature bits changed, from ``ld.so --list-diagnostics``). Exit status 0 when every
emulation passes, 1 otherwise. On a machine where there is nothing to hide for an emulation (no dispatched
numpy target found; not x86-64 for glibc) that emulation is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_TESTS = (
    "tests/golden",
    "tests/core/test_engine.py",
    "tests/core/test_link.py",
    "tests/core/test_run_stats.py",
    "tests/core/test_event_queue.py",
    "tests/core/test_env_step.py",
    "tests/sim/test_reentry.py::test_reentry_prefill_reproduces_the_results_before_reentry_decisions",
    "tests/sim/test_swap_fairness.py",
    "tests/benchmark/test_oracle_cache.py",
    "tests/env/test_env_snapshot.py",
    "tests/test_verify.py",
    "tests/core/test_portable_math.py",
)
"""The bit-identity tests against recorded data (those whose figures pass through libm or numpy's SIMD code, and
tests/test_verify.py),
about 40 s per run on an idle core."""
HIDING = ("GLIBC_TUNABLES", "NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY")
"""The variables an emulation sets: removed from the default run's environment."""
LD_SO = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")


# ---------------------------------------------------------------------------- discovery
def numpy_found() -> list[str]:
    """numpy's dispatched SIMD targets present on this CPU (what NPY_DISABLE_CPU_FEATURES may hide)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]


def cpu_flags() -> set[str]:
    """The CPU's flags from /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def emulations() -> tuple[dict[str, dict[str, str]], list[str]]:
    """The emulated CPUs as ``{name: extra environment}`` and the notes of the skipped ones."""
    out: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    flags = cpu_flags()
    if platform.machine() in ("x86_64", "AMD64"):
        hide = ["-AVX2", "-FMA"] + (["-AVX512F"] if "avx512f" in flags else [])
        out["glibc"] = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=" + ",".join(hide)}
    else:
        notes.append(f"glibc: skipped (glibc.cpu.hwcaps names x86-64 features; this is {platform.machine()})")
    found = numpy_found()
    if found:
        out["numpy"] = {"NPY_DISABLE_CPU_FEATURES": " ".join(found)}
    else:
        notes.append("numpy: skipped (numpy found no dispatched SIMD target on this CPU: it runs its baseline)")
    # torch's kernels: only with the others (a run of its own would cost a third more; it is the one emulation
    # without a dependence found so far: ATEN_CPU_CAPABILITY=default alone passed on an AVX-512 machine)
    out["all"] = {**{k: v for env in out.values() for k, v in env.items()}, "ATEN_CPU_CAPABILITY": "default"}
    return out, notes


# ---------------------------------------------------------------------------- probes
PROBE = """
import json
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
print(json.dumps({"numpy_found": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]}))
"""


def glibc_active(env: dict[str, str]) -> str | None:
    """glibc's active CPU feature words under ``env`` (``ld.so --list-diagnostics``), None if unavailable."""
    for ld in LD_SO:
        if Path(ld).exists():
            r = subprocess.run([ld, "--list-diagnostics"], env=env, capture_output=True, text=True)
            if r.returncode == 0:
                return "\n".join(x for x in r.stdout.splitlines() if ".active[" in x)
    return None


def probe(extra: dict[str, str], env: dict[str, str], base: dict[str, str]) -> list[str]:
    """Problems with an emulation's environment ``env`` (empty: it took effect)."""
    problems: list[str] = []
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"the probe failed: {r.stderr.strip().splitlines()[-1:]}"]
    found = json.loads(r.stdout)["numpy_found"]
    if "NPY_DISABLE_CPU_FEATURES" in extra and found:
        problems.append(f"numpy still uses {found}")
    if "GLIBC_TUNABLES" in extra:
        default, now = glibc_active(base), glibc_active(env)
        if default is not None and default == now:
            problems.append("glibc's active CPU features did not change (GLIBC_TUNABLES ignored?)")
    return problems


# ---------------------------------------------------------------------------- comparison
def compare(a_path: Path, b_path: Path, limit: int = 8) -> tuple[int, list[str]]:
    """How many arrays of two verify dumps differ, and the first ``limit`` of them as compare_stages.py prints
    them (entries, max ulps, first index)."""
    a, b = np.load(a_path), np.load(b_path)
    lines: list[str] = []
    for k in [*a.files, *(x for x in b.files if x not in a.files)]:
        if k not in a.files or k not in b.files:
            lines.append(f"{k}: only in {'default' if k in a.files else 'emulated'}")
            continue
        x, y = a[k], b[k]
        if x.shape != y.shape:
            lines.append(f"{k}: shapes {x.shape} vs {y.shape}")
        elif x.dtype.kind == "f":
            diff = ~((x == y) | (np.isnan(x) & np.isnan(y)))
            if diff.any():
                ulps = np.abs(x[diff].view(np.int64) - y[diff].view(np.int64))
                lines.append(f"{k}: {int(diff.sum())} of {x.size} differ, max {int(ulps.max())} ulp, first at "
                             f"{np.argwhere(diff)[0].tolist()}")
        elif (x != y).any():
            lines.append(f"{k}: {int((x != y).sum())} of {x.size} differ")
    return len(lines), lines[:limit] + ([f"... and {len(lines) - limit} more arrays"] if len(lines) > limit else [])


# ---------------------------------------------------------------------------- the job
def run(cmd: list[str], env: dict[str, str], log: Path) -> tuple[int, float]:
    t0 = time.perf_counter()
    with log.open("w") as f:
        rc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode
    return rc, time.perf_counter() - t0


def verify_cmd(out: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "kairos_gym.cli", "verify", "--dump", str(out / f"{name}.npz"),
            "--json", str(out / f"{name}.json")]


def emulate(name: str, extra: dict[str, str], base: dict[str, str], out: Path, tests: bool) -> tuple[bool, list[str]]:
    """One emulated CPU: the probe, ``kairos-gym verify --dump`` and the golden tests; (passed, report lines)."""
    env = {**base, **extra}
    what = " ".join(f"{k}={v!r}" for k, v in extra.items())
    problems = probe(extra, env, base)
    if problems:
        return False, [f"{name:<7} NOT EMULATED: {'; '.join(problems)}  [{what}]"]
    vrc, vs = run(verify_cmd(out, name), env, out / f"{name}.verify.log")
    parts = [f"verify {'ok' if vrc == 0 else f'exit {vrc}'} ({vs:.0f} s)"]
    ok = vrc == 0
    if tests:
        trc, ts = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *GOLDEN_TESTS], env,
                      out / f"{name}.tests.log")
        tail = (out / f"{name}.tests.log").read_text().strip().splitlines()[-1:]
        parts.append(f"tests {'ok' if trc == 0 else 'FAILED'} ({ts:.0f} s: {tail[0] if tail else '?'})")
        ok = ok and trc == 0
    if (out / f"{name}.npz").exists() and (out / "default.npz").exists():
        n, diff = compare(out / "default.npz", out / f"{name}.npz")
    else:
        n, diff = 1, ["no dump to compare"]
    parts.append("dump equal to default" if not n else f"dump: {n} arrays differ from default")
    ok = ok and not n
    lines = [f"{name:<7} {'ok' if ok else 'FAILED'}: {', '.join(parts)}  [{what}]"]
    if vrc != 0 and (out / f"{name}.json").exists():
        res = json.loads((out / f"{name}.json").read_text())
        lines += [f"          stage {r['stage']}: {r.get('detail', '')}" for r in res["stages"]
                  if r["status"] == "DIFFERS"]
    lines += [f"          {line}" for line in diff]
    return ok, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the dumps and logs (default: a temporary folder, kept on failure)")
    ap.add_argument("--no-tests", action="store_true", help="run only `kairos-gym verify` under each emulation")
    ap.add_argument("--jobs", type=int, default=2, help="emulations run at once (default 2)")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kairos-emulated-"))
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in HIDING}
    emus, notes = emulations()
    print(f"emulated CPUs: {platform.machine()}, numpy {np.__version__} found {numpy_found() or 'nothing'} to "
          f"dispatch on; folder {out}", flush=True)
    for n in notes:
        print(f"  {n}")
    t_start = time.perf_counter()
    rc, secs = run(verify_cmd(out, "default"), base, out / "default.verify.log")
    print(f"{'default':<7} verify {'ok' if rc == 0 else f'exit {rc}'} ({secs:.0f} s)  [no emulation]", flush=True)
    failed = [] if rc == 0 else ["default"]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # each emulation is its own processes
        jobs = {name: pool.submit(emulate, name, extra, base, out, not args.no_tests) for name, extra in emus.items()}
        for name, job in jobs.items():
            ok, lines = job.result()
            print("\n".join(lines), flush=True)
            if not ok:
                failed.append(name)
    print(f"emulated CPUs: {'all ' + str(len(emus)) + ' equal' if not failed else 'FAILED: ' + ', '.join(failed)} "
          f"({time.perf_counter() - t_start:.0f} s; logs and dumps in {out})")
    if not failed and not args.out:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        print("(folder removed: every emulation passed)")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
