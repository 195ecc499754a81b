"""Independent random streams: how one run generator feeds several samplers without coupling them.

A workload is *prefix-stable*: its first N requests (arrival time, prompt tokens, output tokens) are the
same whether the workload has N or M > N requests. That needs (1) one stream per quantity, so the number
of draws one sampler makes never shifts another's, and (2) samplers that draw sequentially (element i
depends only on the first draws of its stream, never on the total count). :func:`child_generators`
gives (1); see ``docs/workloads.md`` ("Prefixes and random streams").
"""

from __future__ import annotations

import numpy as np

_SEED_HIGH = 2**63  # child seeds are uniform in [0, 2**63)


def child_generators(rng: np.random.Generator, k: int) -> tuple[np.random.Generator, ...]:
    """``k`` independent generators seeded from ``rng``.

    Consumes exactly ``k`` 64-bit integers from ``rng`` (one ``rng.integers(0, 2**63, size=k)`` call), so
    what ``rng`` yields afterwards does not depend on how much the children draw. Child ``i`` is
    ``np.random.default_rng(seed_i)`` (PCG64 seeded through a SeedSequence).
    """
    seeds = rng.integers(0, _SEED_HIGH, size=k, dtype=np.int64)
    return tuple(np.random.default_rng(int(s)) for s in seeds)
