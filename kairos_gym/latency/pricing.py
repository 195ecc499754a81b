"""Fast pricing of deflection options on a decode node (the Kairos chunk sweep, the env's features).

The step-latency model separates into additive terms (see :mod:`kairos_gym.latency.model`):

``step(T, S, P, A, R) = F(T, S) + K * P + G(A, R)``

with ``T`` tokens, ``S`` sampling sequences, ``P`` decode pairs (sum of context + 1), prefill pairs
``A`` and prefill KV reads ``R``. ``F`` is memoised on integer ``(T, S)``, the decode-attention term
is exactly linear in ``P``, and the prefill-attention term ``G`` of a chunk is memoised on
``(chunk, prefix)``. Pricing a whole chunk schedule then costs a few dictionary look-ups per chunk.
All times in seconds, sizes in tokens. The pricer is the simulator's hot path: it calls the model's
unchecked kernels (``_cost_agg``, ``_lm_head_cost``, ``_pf_attention_time``/``_cost``) with the aggregates it
builds itself, so the public methods' input checks cost nothing per event.

The C++ core (``kairos_gym._core.Pricer``) prices from the same numbers: :meth:`ChunkPricer.compile` exports the
tables and constants as a :class:`CostTables` (sized up front for a scenario by :func:`table_sizes`), and
:func:`core_pricer` builds the core's twin, whose results are bit for bit this class's (tests/core/test_pricer.py).
Python stays the owner of the formulas: the core never recomputes a table entry.
"""

from __future__ import annotations

import atexit
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kairos_gym.errors import ConfigError
from kairos_gym.latency.model import StepLatencyModel
from kairos_gym.latency.presets import MAX_TOKENS

MenuTerm = tuple[int, int, int, int, float, float, float]
"""One menu size's prompt-only terms: (chunk, n_full, remainder, n_chunks, first_attn_s, full_attn_s, rest_attn_s)."""

MEMO_LIMIT = 200_000
"""Entries kept in the attention memo before it is cleared (bounded memory on long runs)."""

MAX_TABLE_INDEX = MAX_TOKENS
"""Largest index :meth:`ChunkPricer.compile` tabulates (tokens of a step, sampling sequences of a step):
16,777,216, the latency model's MAX_TOKENS; the native pricer refuses prices past it (ConfigError)."""

MIN_TABLE_TOKENS = 4096
"""The token tables always cover [0, 4096] (ChunkPricer's initial size)."""
MIN_TABLE_SEQS = 512
"""The sequence tables always cover [0, 512]."""


def table_sizes(decode_max_batch: int, prefill_token_budget: int, menu: Iterable[int]) -> tuple[int, int]:
    """The largest (token index, sequence index) a scenario's pricing reaches: ``(max(4096, budget, B + cmax),
    max(512, B + 1, budget))`` with ``B`` the decode batch cap and ``cmax`` the largest chunk of ``menu``.

    A decode step with a chunk prices ``F(B + c, B + 1)``, a decode-only one ``F(B, B)``, a prefill step of at most
    ``budget`` tokens ``F(tokens, chunks)`` with at most ``budget`` chunks. Tables compiled to these bounds never
    grow during a run of that scenario; a context built by hand may still reach past them (the tables then grow,
    see :func:`core_pricer`)."""
    b, budget = int(decode_max_batch), int(prefill_token_budget)
    cmax = max((int(c) for c in menu), default=0)
    return max(MIN_TABLE_TOKENS, budget, b + cmax), max(MIN_TABLE_SEQS, b + 1, budget)


@dataclass(frozen=True)
class StepConstants:
    """The constants of :meth:`StepLatencyModel.step_time_fast` (already divided by the achievable rates:
    seconds per token, per FLOP-equivalent unit, of weight reads), for the native ``model_time``. ``gemms``
    holds one ``(count, fc, w, am)`` per dense GEMM shape; the ``moe_*`` fields are 0 without MoE layers."""

    fixed_s: float
    ew_ar_tok: float
    gemms: tuple[tuple[float, float, float, float], ...]
    lm_fc: float
    lm_wm: float
    adec_c: float
    moe: bool
    moe_p: float
    moe_inv_p: float
    moe_fc: float = 0.0
    moe_e: float = 0.0
    moe_miss: float = 0.0
    moe_shared: float = 0.0
    moe_wm: float = 0.0
    moe_am: float = 0.0

    @classmethod
    def of(cls, m: StepLatencyModel) -> StepConstants:
        moe = bool(m._moe_layers)
        extra = dict(moe_fc=m._moe_fc, moe_e=m._moe_E, moe_miss=m._moe_miss, moe_shared=m._moe_shared,
                     moe_wm=m._moe_wm, moe_am=m._moe_am) if moe else {}
        return cls(fixed_s=m._fixed, ew_ar_tok=m._ew_ar_tok, gemms=tuple(tuple(g) for g in m._fast_gemms),
                   lm_fc=m._lm_fc, lm_wm=m._lm_wm, adec_c=m._adec_c, moe=moe, moe_p=m._p_moe,
                   moe_inv_p=m._inv_p_moe, **extra)


@dataclass(frozen=True, eq=False)
class CostTables:
    """Everything the native pricer reads, exported by :meth:`ChunkPricer.compile` (arrays read-only, float64).

    ``F(T, S) = g[T] + l[S]`` is a step of ``T`` tokens and ``S`` sampling sequences without attention
    (seconds); ``gc``/``lc`` hold the same split as (seconds, FLOPs, compute seconds) rows. ``kdec`` is ``K``,
    the decode-attention seconds per decode pair (``kdec_cost`` the same as (s, FLOPs, compute s)). The
    prefill-attention term of ``pf`` pairs reading ``kv`` KV tokens is ``((pf * apf_c)**p + (kv * kv_m)**p)**inv_p``
    seconds and ``pf * attn_pf_pair`` FLOPs at ``peak_c_attn_pf`` FLOP/s. ``step`` holds the constants of the
    scalar step time (:class:`StepConstants`). ``menu`` is the pricer's chunk menu (tokens), the sizes with
    attention prefix sums."""

    g: np.ndarray  # float64 [T]
    gc: np.ndarray  # float64 [T, 3]
    l: np.ndarray  # noqa: E741 (the L table)  float64 [S]
    lc: np.ndarray  # float64 [S, 3]
    kdec: float
    kdec_cost: tuple[float, float, float]
    apf_c: float
    kv_m: float
    p: float
    inv_p: float
    attn_pf_pair: float
    peak_c_attn_pf: float
    step: StepConstants
    menu: tuple[int, ...]

    @property
    def n_tokens(self) -> int:
        """Entries of the token tables: indices 0 .. n_tokens - 1."""
        return int(self.g.shape[0])

    @property
    def n_seqs(self) -> int:
        """Entries of the sequence tables: indices 0 .. n_seqs - 1."""
        return int(self.l.shape[0])


def _frozen(rows: Any) -> np.ndarray:
    a = np.array(rows, dtype=np.float64)
    a.flags.writeable = False
    return a


class ChunkPricer:
    """Prices steps of a decode node that carry one deflected prefill chunk.

    The decode batch is described by ``n_decode`` requests and ``dec_pairs`` (sum of their context + 1);
    during a multi-chunk schedule every decode request gains one token per step, so ``dec_pairs``
    grows by ``n_decode`` per step.
    """

    __slots__ = ("_alone", "_attn", "_cmax", "_cum", "_g", "_gc", "_kdec", "_kdec_cost", "_l", "_lc", "_menu",
                 "_menu_t", "_terms", "model")

    def __init__(self, model: StepLatencyModel, menu: tuple[int, ...] = (128, 256, 512, 1024, 2048)) -> None:
        self.model = model
        self._menu = frozenset(menu)
        self._menu_t = tuple(menu)
        self._terms: dict[int, tuple[MenuTerm, ...]] = {}  # prompt -> menu_terms(prompt, menu)
        self._alone: dict[tuple[int, int], float] = {}  # (prompt, budget) -> prefill_alone
        self._cmax = max(menu)
        # F(T, S) = G[T] + L[S]: the LM head is the only term that depends on S (tables grown on demand)
        self._g: list[float] = []
        self._l: list[float] = []
        self._gc: list[tuple[float, float, float]] = []  # the same split for (seconds, FLOPs, compute s)
        self._lc: list[tuple[float, float, float]] = []
        self._grow(4096, 512)
        self._attn: dict[tuple[int, int], float] = {}
        self._cum: dict[int, list[float]] = {c: [0.0] for c in menu}
        # K: seconds per decode pair (the decode-attention term is homogeneous of degree 1 in P).
        self._kdec = model.step_time_fast(0.0, 0.0, 1.0, 0.0, 0.0) - model.step_time_fast(0.0, 0.0, 0.0, 0.0, 0.0)
        z = model._cost_agg(0.0, 0.0, 0.0, 0.0, 0.0)
        one = model._cost_agg(0.0, 0.0, 1.0, 0.0, 0.0)
        self._kdec_cost = (one[0] - z[0], one[1] - z[1], one[2] - z[2])

    def compile(self, n_tokens: int, n_seqs: int) -> CostTables:
        """The tables and constants of this pricer as a :class:`CostTables` covering token indices
        ``[0, n_tokens]`` and sequence indices ``[0, n_seqs]`` (at least: the tables grow as :meth:`_grow` does,
        to the larger of the index + 1 and twice their size, and never shrink). The exported numbers are this
        pricer's own table entries. Indices are integers in [0, :data:`MAX_TABLE_INDEX`] (ConfigError otherwise,
        before anything is allocated)."""
        for field, v in (("n_tokens", n_tokens), ("n_seqs", n_seqs)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= MAX_TABLE_INDEX:
                raise ConfigError("pricer tables", field, v, f"an integer in [0, {MAX_TABLE_INDEX:,}] (a table index)")
        self._grow(int(n_tokens), int(n_seqs))
        m = self.model
        return CostTables(
            g=_frozen(self._g), gc=_frozen(self._gc), l=_frozen(self._l), lc=_frozen(self._lc),
            kdec=self._kdec, kdec_cost=self._kdec_cost, apf_c=m._apf_c, kv_m=m._kv_m, p=m._p, inv_p=m._inv_p,
            attn_pf_pair=m._attn_pf_pair, peak_c_attn_pf=m._peak_c_attn_pf, step=StepConstants.of(m),
            menu=self._menu_t)

    def base_cost(self, n_tokens: int, n_seqs: int) -> tuple[float, float, float]:
        """F(T, S) as (seconds, FLOPs, compute seconds) (for utilization accounting; table look-ups)."""
        try:
            g = self._gc[n_tokens]
            ll = self._lc[n_seqs]
        except IndexError:
            self._grow(n_tokens, n_seqs)
            g = self._gc[n_tokens]
            ll = self._lc[n_seqs]
        return g[0] + ll[0], g[1] + ll[1], g[2] + ll[2]

    @property
    def decode_pair_cost(self) -> tuple[float, float, float]:
        """(seconds, FLOPs, compute seconds) per decode pair: all exactly linear in the pairs."""
        return self._kdec_cost

    def attn_time(self, pf_pairs: float, kv_read: float) -> float:
        """Prefill-attention seconds of aggregated chunks (time only, not memoised)."""
        return self.model._pf_attention_time(pf_pairs, kv_read)

    def attn_cost(self, pf_pairs: float, kv_read: float) -> tuple[float, float, float]:
        """Prefill-attention (seconds, FLOPs, compute seconds) of aggregated chunks (not memoised)."""
        if pf_pairs <= 0.0:
            return 0.0, 0.0, 0.0
        return self.model._pf_attention_cost(pf_pairs, kv_read)

    def _grow(self, n_tokens: int, n_seqs: int) -> None:
        """Extend the tables so that G covers [0, n_tokens] and L covers [0, n_seqs] (vectorised)."""
        m = self.model
        if n_tokens >= len(self._g):
            t = np.arange(max(n_tokens + 1, 2 * len(self._g)), dtype=float)
            tt, ff, cc = (np.broadcast_to(np.asarray(x, dtype=float), t.shape)
                          for x in m._cost_agg(t, 0.0, 0.0, 0.0, 0.0))
            lt, lf, lc = m._lm_head_cost(0.0)
            g = tt - lt
            self._g = g.tolist()
            self._gc = list(zip(g.tolist(), (ff - lf).tolist(), (cc - lc).tolist(), strict=True))
        if n_seqs >= len(self._l):
            self._lc = [m._lm_head_cost(float(s)) for s in range(max(n_seqs + 1, 2 * len(self._l)))]
            self._l = [x[0] for x in self._lc]

    def base(self, n_tokens: int, n_seqs: int) -> float:
        """F(T, S): everything but attention, in seconds (table look-ups)."""
        try:
            return self._g[n_tokens] + self._l[n_seqs]
        except IndexError:
            self._grow(n_tokens, n_seqs)
            return self._g[n_tokens] + self._l[n_seqs]

    def attn(self, chunk: int, prefix: int) -> float:
        """G: prefill-attention seconds of one chunk of ``chunk`` tokens after ``prefix`` cached (memoised;
        the memo is cleared when it passes ``MEMO_LIMIT`` entries, so memory stays bounded)."""
        key = (chunk, prefix)
        v = self._attn.get(key)
        if v is None:
            v = self.model._pf_attention_time(chunk * (prefix + (chunk + 1) / 2.0), float(prefix + chunk))
            if len(self._attn) >= MEMO_LIMIT:
                self._attn.clear()
            self._attn[key] = v
        return v

    @property
    def sec_per_decode_pair(self) -> float:
        """K: decode-attention seconds per (context + 1) token of the decode batch."""
        return self._kdec

    def step(self, n_decode: int, dec_pairs: float, chunk: int, prefix: int) -> float:
        """Seconds of one step: the decode batch plus one chunk (``chunk`` may be 0)."""
        if chunk <= 0:
            if n_decode == 0:
                return 0.0
            return self.base(n_decode, n_decode) + self._kdec * dec_pairs
        return self.base(n_decode + chunk, n_decode + 1) + self._kdec * dec_pairs + self.attn(chunk, prefix)

    def _cum_attn(self, chunk: int, n: int) -> float:
        """Sum of attn(chunk, i * chunk) for i < n (memoised prefix sums; menu sizes only)."""
        cum = self._cum[chunk]
        while len(cum) <= n:
            i = len(cum) - 1
            cum.append(cum[-1] + self.attn(chunk, i * chunk))
        return cum[n]

    def fixed_schedule(self, n_decode: int, dec_pairs: float, prompt: int, chunk: int,
                       done: int = 0) -> tuple[float, float, int]:
        """Deflect the rest of a ``prompt`` (``done`` tokens already built) in chunks of ``chunk``.

        Returns ``(first_step_s, total_s, n_chunks)``, holding the decode batch size fixed and growing
        its contexts by one token per step. O(1) for menu sizes starting at a chunk boundary (prefix
        sums of the attention term); a plain loop otherwise.
        """
        rest = prompt - done
        if rest <= 0:
            return 0.0, 0.0, 0
        if chunk in self._cum and done % chunk == 0:
            n_full, r = divmod(rest, chunk)
            n = n_full + (1 if r else 0)
            i0 = done // chunk
            c1 = chunk if rest >= chunk else rest
            kd = self._kdec
            first = self.base(n_decode + c1, n_decode + 1) + kd * dec_pairs + self.attn(c1, done)
            total = kd * (n * dec_pairs + n_decode * n * (n - 1) / 2.0)
            if n_full:
                total += n_full * self.base(n_decode + chunk, n_decode + 1)
                total += self._cum_attn(chunk, i0 + n_full) - self._cum_attn(chunk, i0)
            if r:
                total += self.base(n_decode + r, n_decode + 1) + self.attn(r, done + n_full * chunk)
            return first, total, n
        total = 0.0
        first = 0.0
        k = done
        i = 0
        kd = self._kdec
        while k < prompt:
            c = chunk if prompt - k >= chunk else prompt - k
            s = self.base(n_decode + c, n_decode + 1) + kd * (dec_pairs + i * n_decode) + self.attn(c, k)
            if i == 0:
                first = s
            total += s
            k += c
            i += 1
        return first, total, i

    def prefill_alone(self, prompt: int, budget: int) -> float:
        """Seconds to prefill ``prompt`` tokens alone on a prefill node, in steps of at most ``budget``
        (memoised; cleared past ``MEMO_LIMIT`` entries)."""
        key = (prompt, budget)
        t = self._alone.get(key)
        if t is not None:
            return t
        t = 0.0
        done = 0
        while done < prompt:
            c = budget if prompt - done > budget else prompt - done
            t += self.base(c, 1) + self.attn(c, done)
            done += c
        if len(self._alone) >= MEMO_LIMIT:
            self._alone.clear()
        self._alone[key] = t
        return t

    def menu_terms(self, prompt: int, menu: tuple[int, ...]) -> tuple[MenuTerm, ...]:
        """The decode-batch-independent part of :meth:`menu_schedules` for a ``prompt``: per menu size ``c``,
        ``(c, n_full, r, n, first_attn_s, full_attn_s, rest_attn_s)`` with ``prompt = n_full c + r`` in
        ``n`` chunks; ``first_attn_s`` the first chunk's attention, ``full_attn_s`` the attention of the
        ``n_full`` full chunks, ``rest_attn_s`` that of the remainder. Compute once per decision, then price
        every decode node with :meth:`menu_rows`. Memoised per prompt for the pricer's own menu."""
        own_menu = menu is self._menu_t or menu == self._menu_t
        if own_menu:
            hit = self._terms.get(prompt)
            if hit is not None:
                return hit
        out = []
        for c in menu:
            n_full, r = divmod(prompt, c)
            n = n_full + (1 if r else 0)
            if n_full:
                cum = self._cum[c]
                full = cum[n_full] if len(cum) > n_full else self._cum_attn(c, n_full)
                out.append((c, n_full, r, n, self.attn(c, 0), full, self.attn(r, n_full * c) if r else 0.0))
            else:
                out.append((c, 0, r, 1, self.attn(r, 0), 0.0, 0.0))
        terms = tuple(out)
        if own_menu:
            if len(self._terms) >= MEMO_LIMIT:
                self._terms.clear()
            self._terms[prompt] = terms
        return terms

    def menu_rows(self, n_decode: int, dec_pairs: float, terms: tuple[MenuTerm, ...],
                  wait_s: float = 0.0) -> tuple[list[float], list[float]]:
        """:meth:`menu_schedules` of one decode node from the prompt's :meth:`menu_terms`:
        ``(first_step_s per size, wait_s + total_s per size)`` (``wait_s``: time until the schedule can
        start, e.g. the rest of the step in progress)."""
        try:
            g, ll = self._g, self._l
            kd = self._kdec
            l1 = ll[n_decode + 1]
            dp = kd * dec_pairs
            firsts: list[float] = []
            totals: list[float] = []
            for c, n_full, r, n, a_first, a_full, a_rest in terms:
                if n_full:
                    bc = g[n_decode + c] + l1
                    firsts.append(bc + dp + a_first)
                    total = n_full * bc + a_full
                    if r:
                        total += g[n_decode + r] + l1 + a_rest
                else:
                    total = g[n_decode + r] + l1 + a_first
                    firsts.append(total + dp)
                totals.append(wait_s + (total + kd * (n * dec_pairs + n_decode * n * (n - 1) / 2.0)))
            return firsts, totals
        except IndexError:  # the tables grow on demand (as in base()), then the same computation again
            self._grow(n_decode + self._cmax, n_decode + 1)
            return self.menu_rows(n_decode, dec_pairs, terms, wait_s)

    def menu_schedules(self, n_decode: int, dec_pairs: float, prompt: int,
                       menu: tuple[int, ...]) -> tuple[list[float], list[float]]:
        """:meth:`fixed_schedule` from prefix 0 for every menu size at once (the env's features, the
        decision context): ``(first_step_s per size, total_s per size)``. Same numbers, less overhead."""
        return self.menu_rows(n_decode, dec_pairs, self.menu_terms(prompt, menu))

    def largest_safe(self, n_decode: int, dec_pairs: float, prompt: int, budget_s: float,
                     menu_desc: tuple[int, ...], done: int = 0) -> tuple[bool, float, list[int]]:
        """Greedy LargestSafe schedule (docs/DOMAIN.md section 2): chunk by chunk, the largest size in
        ``menu_desc`` (sizes in decreasing order) whose step fits in ``budget_s``; the last chunk is the
        remainder when smaller. Returns ``(feasible, total_s, chunk_sizes)``; infeasible when even the
        smallest size does not fit at some chunk. Step time only grows along the schedule, so the
        chosen size never increases and the scan keeps its place in the menu.
        """
        try:
            kd = self._kdec
            g, ll = self._g, self._l
            l1 = ll[n_decode + 1]
            aget = self._attn.get
            total = 0.0
            k = done
            i = 0
            j = 0
            sizes: list[int] = []
            n_menu = len(menu_desc)
            while k < prompt:
                rest = prompt - k
                pairs = dec_pairs + i * n_decode
                while True:
                    if j >= n_menu:
                        return False, total, sizes
                    c = menu_desc[j]
                    if c > rest:
                        c = rest
                    a = aget((c, k))
                    if a is None:
                        a = self.attn(c, k)
                    s = g[n_decode + c] + l1 + kd * pairs + a
                    if s <= budget_s:
                        break
                    if c < menu_desc[j]:  # the remainder itself does not fit: a smaller size might
                        j += 1
                        continue
                    j += 1
                sizes.append(c)
                total += s
                k += c
                i += 1
            return True, total, sizes
        except IndexError:  # the tables grow on demand (as in base()), then the same schedule again
            self._grow(n_decode + menu_desc[0], n_decode + 1)
            return self.largest_safe(n_decode, dec_pairs, prompt, budget_s, menu_desc, done)

    def cache_size(self) -> int:
        """Attention entries memoised so far (for diagnostics)."""
        return len(self._attn)


def core_pricer(pricer: ChunkPricer, n_tokens: int = MIN_TABLE_TOKENS, n_seqs: int = MIN_TABLE_SEQS) -> Any:
    """The core's twin of ``pricer`` (``kairos_gym._core.Pricer``): the same methods, bit-identical results.

    Its tables are ``pricer.compile(n_tokens, n_seqs)`` (size them with :func:`table_sizes`). Growth rule: a
    price that needs an index past them calls ``pricer.compile`` for tables covering it (doubling, as
    :meth:`ChunkPricer._grow`; counted in the native pricer's ``grow_count``); indices past
    :data:`MAX_TABLE_INDEX` are a ConfigError. Arguments are checked (negative counts, non-finite aggregates:
    ConfigError), and the floating-point inputs follow Python's int semantics for integral values below 2^50."""
    from kairos_gym.compiled import core

    return core().Pricer(pricer.compile(n_tokens, n_seqs), pricer.compile)


SHARED_PRICERS_MAX = 64
"""Most distinct (latency model, menu) keys :func:`shared_pricer` keeps; past it the cache starts over."""
_SHARED: dict[tuple[Hashable, tuple[int, ...]], ChunkPricer] = {}
_SHARED_CORE: dict[tuple[Hashable, tuple[int, ...], int, int], Any] = {}


@atexit.register
def _drop_shared() -> None:
    """Release the shared core pricers before the interpreter's teardown (nanobind would report them leaked)."""
    _SHARED_CORE.clear()
    _SHARED.clear()


def shared_pricer(key: Hashable, model: StepLatencyModel, menu: tuple[int, ...], n_tokens: int = MIN_TABLE_TOKENS,
                  n_seqs: int = MIN_TABLE_SEQS) -> tuple[ChunkPricer, Any]:
    """A :class:`ChunkPricer` of ``model`` and ``menu`` and its :func:`core_pricer` twin with tables covering
    ``[0, n_tokens]`` x ``[0, n_seqs]``, built once per distinct ``(key, menu)`` (and table size) in a process and
    then reused: ``key`` must name ``model`` exactly (the Simulator passes its cluster's model, GPU, tensor
    parallelism and calibration overrides), so a reused pricer is the one ``model`` would build.

    Sharing changes no result: every table entry and memoised price is a pure function of the model and the menu
    (the memos only save recomputation; the core copies its pricer per simulator and grows its own tables). It
    saves the table build (about 30 ms per simulator on the 2P2D presets), which dominates building a simulator per
    episode (train/domain.py)."""
    menu = tuple(int(c) for c in menu)
    if len(_SHARED) >= SHARED_PRICERS_MAX and (key, menu) not in _SHARED:
        _SHARED.clear()
        _SHARED_CORE.clear()
    pricer = _SHARED.get((key, menu))
    if pricer is None:
        pricer = _SHARED[(key, menu)] = ChunkPricer(model, menu)
    ck = (key, menu, int(n_tokens), int(n_seqs))
    cp = _SHARED_CORE.get(ck)
    if cp is None:
        cp = _SHARED_CORE[ck] = core_pricer(pricer, n_tokens, n_seqs)
    return pricer, cp
