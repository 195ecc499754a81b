"""Scenario configuration: frozen dataclasses loaded and validated from YAML (``configs/scenarios``).

A scenario is everything a run needs besides the policy and the seed: the cluster (nodes, model, GPU,
TP, batching), the P->D link, the SLOs, the deflection menu and the workload. See
``docs/scenarios.md`` for every field with its default. Bad input raises :class:`ConfigError` naming
the file/section, the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kairos_gym.configs import SCENARIO_DIR
from kairos_gym.errors import ConfigError, check_keys
from kairos_gym.faults import REENTRY_DEFAULT, FaultsConfig
from kairos_gym.latency.calibration import default_calibration
from kairos_gym.latency.presets import check_tp, get_model, gpu_presets, model_presets
from kairos_gym.workload import TraceArrival, WorkloadConfig
from kairos_gym.workload.rules import (
    BANDWIDTH,
    MAX_BETA,
    MAX_SETUP_S,
    MAX_TBT_SLO_S,
    MAX_TTFT_SLO_S,
    OPTIONAL_PERIOD_S,
    POSITIVE_INT,
    TEXT,
    Number,
    Text,
)
from kairos_gym.yaml_io import load_yaml_file

SCENARIO_DIRS = (SCENARIO_DIR,)
"""Where shipped scenarios are looked up by name: ``configs/scenarios`` (package data of ``kairos_gym.configs``)."""


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of strings."""

    options: tuple[str, ...]

    def allowed(self) -> str:
        return "one of " + ", ".join(self.options)

    def check(self, where: str, name: str, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise ConfigError(where, name, value, self.allowed())
        return value


@dataclass(frozen=True)
class Flag:
    """A boolean (true/false)."""

    def allowed(self) -> str:
        return "true or false"

    def check(self, where: str, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ConfigError(where, name, value, self.allowed())
        return value


FLAG = Flag()
FRACTION = Number(low=0.0)  # further bounded in cross checks

# Upper bounds of the cluster's size fields, checked when the config is built, before the simulator allocates
# anything from them. Generous for real deployments, small enough that a typo cannot exhaust memory.
MAX_NODES = 1024
"""Most prefill nodes, and most decode nodes (each: per-node state, views and observation entries; a decision
costs O(nodes x menu)). Real P/D deployments run a handful to a few dozen nodes per pool."""
MAX_PREFILL_TOKEN_BUDGET = 1 << 20
"""Largest ``prefill_token_budget`` (1,048,576 tokens). The step-latency pricer tabulates one entry per token of
the largest step (about 220 MB at this bound); vLLM's ``max_num_batched_tokens`` is usually 2k to 16k."""
MAX_DECODE_BATCH = 1 << 16
"""Largest ``decode_max_batch`` (65,536 requests): sizes the pricer's per-sequence table; vLLM's ``max_num_seqs``
defaults to 256."""
MAX_KV_BLOCK_TOKENS = 1 << 16
"""Largest ``kv_block_tokens`` (65,536 tokens); vLLM uses blocks of 16 to 128 tokens."""

NODES = Number(integer=True, low=1, high=MAX_NODES)
DECISION_POINTS = ("arrival", "arrival+pull")
"""Values of ``deflection.decision_points``: arrival only (the paper's), or arrivals and pulls (a freed slot)."""


class _Plain:
    """Base for config sections without a ``kind``: one rule per scalar field."""

    RULES: ClassVar[dict[str, Any]]
    WHERE: ClassVar[str]

    def __post_init__(self) -> None:
        for name, rule in self.RULES.items():
            object.__setattr__(self, name, rule.check(self.WHERE, name, getattr(self, name)))
        self.cross_check(self.WHERE)

    def cross_check(self, where: str) -> None:
        """Checks involving several fields."""

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Any:
        if d is None:
            d = {}
        if not isinstance(d, Mapping):
            raise ConfigError(where, "(section)", d, "a mapping of key: value lines")
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        check_keys(where, dict(d), names)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in d:
                continue
            raw = d[f.name]
            rule = cls.RULES.get(f.name)
            kwargs[f.name] = rule.check(where, f.name, raw) if rule is not None else cls.parse_extra(where, f.name, raw)
        obj = cls.__new__(cls)
        defaults = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory())  # type: ignore[misc]
                    for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        defaults.update(kwargs)
        for k, v in defaults.items():
            object.__setattr__(obj, k, v)
        obj.cross_check(where)
        return obj

    @classmethod
    def parse_extra(cls, where: str, name: str, raw: Any) -> Any:
        raise ConfigError(where, name, raw, "no such field")

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else (dict(v) if isinstance(v, Mapping) else v)
        return out


@dataclass(frozen=True)
class ClusterConfig(_Plain):
    """The serving cluster.

    Attributes:
        prefill_nodes, decode_nodes: node counts (default 2P2D), each 1 to :data:`MAX_NODES` (1024).
        model, gpu, tp: step-latency presets (each node is ``tp`` GPUs of ``gpu`` serving ``model``; ``tp`` is
            1, 2, 4 or 8 and must divide the model's attention heads).
        prefill_token_budget: tokens per prefill step, 1 to :data:`MAX_PREFILL_TOKEN_BUDGET` (1,048,576);
            prompts longer than what is left of the budget are chunked (vLLM chunked prefill).
        max_deflections_per_node: deflected prefills in flight per decode node (default 1).
        kv_reserve_frac: share of GPU memory kept for activations, not KV cache.
        decode_max_batch: most requests decoding at once on a node (vLLM ``max_num_seqs``), 1 to
            :data:`MAX_DECODE_BATCH` (65,536).
        ttft_includes_transfer: True (vLLM P/D proxy): on the prefill path the first token is
            produced by the decode node after the KV arrives; False: by the prefill node.
        overlong: a request whose prompt + output exceeds the model's context or a decode node's KV
            capacity: ``error`` (default: the run refuses the workload, naming the request) or
            ``reject`` (the request is rejected at arrival and counted in ``n_rejected``).
        memory_policy: decode-node KV memory. ``reserve`` (default): a request reserves KV for its prompt
            + all output tokens when its decode node is chosen, so memory can never run out mid-decode
            and nothing is preempted. ``swap`` (vLLM-style): KV is held in blocks of
            ``kv_block_tokens`` and grows as tokens are generated; when the next step would not fit, the
            most recently admitted request is preempted by swapping its KV to host memory, and swapped
            back (at ``swap_bandwidth_bytes_per_s``, PCIe) before new work once memory frees.
        swap_order: the ``swap`` policy's order. ``fifo`` (default, vLLM FCFS): the
            latest-arrived batch member is preempted first and the earliest-arrived swapped request comes back
            first, so no request starves. ``lifo``: the most recently admitted
            member is preempted and the most recently swapped request comes back first (starves the oldest).
        kv_block_tokens: KV block size in tokens (``swap`` policy), 1 to :data:`MAX_KV_BLOCK_TOKENS` (65,536).
        swap_bandwidth_bytes_per_s: GPU <-> host bandwidth for swapping KV (default 20 GB/s, PCIe 4 x16).
        calibration: overrides of step-latency calibration parameters by name.
    """

    WHERE: ClassVar[str] = "cluster"
    RULES: ClassVar[dict[str, Any]] = {
        "prefill_nodes": NODES, "decode_nodes": NODES, "model": TEXT, "gpu": TEXT,
        "tp": POSITIVE_INT, "prefill_token_budget": Number(integer=True, low=1, high=MAX_PREFILL_TOKEN_BUDGET),
        "max_deflections_per_node": Number(integer=True, low=0), "kv_reserve_frac": FRACTION,
        "decode_max_batch": Number(integer=True, low=1, high=MAX_DECODE_BATCH),
        "ttft_includes_transfer": FLAG, "overlong": Choice(("error", "reject")),
        "memory_policy": Choice(("reserve", "swap")), "swap_order": Choice(("fifo", "lifo")),
        "kv_block_tokens": Number(integer=True, low=1, high=MAX_KV_BLOCK_TOKENS),
        "swap_bandwidth_bytes_per_s": BANDWIDTH,
    }
    prefill_nodes: int = 2
    decode_nodes: int = 2
    model: str = "deepseek-v2-lite"
    gpu: str = "a100-80gb"
    tp: int = 1
    prefill_token_budget: int = 2048
    max_deflections_per_node: int = 1
    kv_reserve_frac: float = 0.1
    decode_max_batch: int = 256
    ttft_includes_transfer: bool = True
    overlong: str = "error"
    memory_policy: str = "reserve"
    swap_order: str = "fifo"
    kv_block_tokens: int = 16
    swap_bandwidth_bytes_per_s: float = 20e9
    calibration: Mapping[str, float] = field(default_factory=dict)

    def cross_check(self, where: str) -> None:
        if self.model not in model_presets():
            raise ConfigError(where, "model", self.model, f"one of {sorted(model_presets())}")
        if self.gpu not in gpu_presets():
            raise ConfigError(where, "gpu", self.gpu, f"one of {sorted(gpu_presets())}")
        try:
            check_tp(get_model(self.model), self.tp)
        except ConfigError as e:  # named here, with the file, rather than later by the latency model
            raise ConfigError(where, "tp", self.tp, e.allowed) from None
        if not self.kv_reserve_frac < 1.0:
            raise ConfigError(where, "kv_reserve_frac", self.kv_reserve_frac, "a fraction in [0, 1)")
        if self.max_deflections_per_node > 1:
            raise ConfigError(where, "max_deflections_per_node", self.max_deflections_per_node,
                              "0 or 1 (one deflected prefill in flight per decode node, docs/DOMAIN.md s2)")
        default_calibration().with_overrides(dict(self.calibration), where=f"{where}.calibration")

    @classmethod
    def parse_extra(cls, where: str, name: str, raw: Any) -> Any:
        if name == "calibration":
            if not isinstance(raw, Mapping):
                raise ConfigError(where, name, raw, "a mapping of calibration parameter: value")
            return dict(raw)
        return super().parse_extra(where, name, raw)


@dataclass(frozen=True)
class TransferSection(_Plain):
    """P->D KV transfer: ``setup_s + bytes / bandwidth``, fair-shared per prefill node's NIC.

    Defaults: 200 Gb/s InfiniBand at 70% (17.5 GB/s) and 5 ms setup. Set ``enabled: false`` to make
    transfers instantaneous (an idealised interconnect).
    """

    WHERE: ClassVar[str] = "transfer"
    RULES: ClassVar[dict[str, Any]] = {"bandwidth_bytes_per_s": BANDWIDTH,
                                       "setup_s": Number(low=0.0, high=MAX_SETUP_S), "enabled": FLAG}
    bandwidth_bytes_per_s: float = 17.5e9
    setup_s: float = 0.005
    enabled: bool = True


MAX_BURN_IN_REQUESTS = 10_000_000
"""Largest ``slo.burn_in_requests``: a workload generated whole holds at most this many requests (MAX_REQUESTS)."""


@dataclass(frozen=True)
class SLOConfig(_Plain):
    """Service-level objectives (seconds).

    Defaults: TTFT 1.0 s (about 10x an unloaded prefill + transfer of a 2k-token prompt, the Mooncake
    convention) and TBT 0.1 s (about 10x an unloaded decode step, between Sarathi-Serve's strict 5x and
    relaxed 25x). A request attains its SLO when TTFT <= ttft_s and its largest token gap <= tbt_s.

    ``burn_in_requests`` (default 0) is a warm start: the first that many requests (in arrival order) are simulated
    but not scored, so the score (``slo_attainment``, ``goodput_rps``, the ``misses`` reward, the Oracle's
    objective) is taken over the requests after them, on a cluster that is already loaded. At most
    :data:`MAX_BURN_IN_REQUESTS`; it must leave at least one request scored, and needs exact metrics
    (``metrics.mode: exact``). Omitted from :meth:`to_dict` when 0, so a scenario without one reads as before.
    """

    WHERE: ClassVar[str] = "slo"
    RULES: ClassVar[dict[str, Any]] = {"ttft_s": Number(low=0.0, low_open=True, high=MAX_TTFT_SLO_S),
                                       "tbt_s": Number(low=0.0, low_open=True, high=MAX_TBT_SLO_S),
                                       "burn_in_requests": Number(integer=True, low=0, high=MAX_BURN_IN_REQUESTS)}
    ttft_s: float = 1.0
    tbt_s: float = 0.1
    burn_in_requests: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not self.burn_in_requests:
            del out["burn_in_requests"]  # the default: absent, so older scenarios' dicts (and cache keys) stay
        return out


@dataclass(frozen=True)
class DeflectionConfig(_Plain):
    """Deflection options offered to policies.

    Attributes:
        chunk_menu: chunk sizes (tokens, powers of two: off-tile sizes cost extra on GPUs).
        beta: LargestSafe keeps every step within beta x the TBT SLO.
        largest_safe_action: also offer, per decode node, an action that chunks by LargestSafe.
        decision_points: when a policy is asked. ``arrival`` (default, the paper's): once per arriving request.
            ``arrival+pull``: also whenever a decode node's deflection slot frees, about ONE queued request whose
            prefill has not started (the simulator nominates it): pull it to the freed node or leave it in its
            queue (docs/scenarios.md, "Decision points"). Native engine only.
    """

    WHERE: ClassVar[str] = "deflection"
    RULES: ClassVar[dict[str, Any]] = {"beta": Number(low=0.0, low_open=True, high=MAX_BETA),
                                       "largest_safe_action": FLAG, "decision_points": Choice(DECISION_POINTS)}
    chunk_menu: tuple[int, ...] = (128, 256, 512, 1024, 2048)
    beta: float = 1.0
    largest_safe_action: bool = False
    decision_points: str = "arrival"

    def cross_check(self, where: str) -> None:
        self.parse_extra(where, "chunk_menu", list(self.chunk_menu))

    @classmethod
    def parse_extra(cls, where: str, name: str, raw: Any) -> Any:
        if name == "chunk_menu":
            allowed = "a non-empty list of distinct powers of two from 16 to 16384 (tokens)"
            if not isinstance(raw, (list, tuple)) or not raw:
                raise ConfigError(where, name, raw, allowed)
            for v in raw:
                if isinstance(v, bool) or not isinstance(v, int) or v < 16 or v > 16384 or v & (v - 1):
                    raise ConfigError(where, name, raw, allowed)
            if len(set(raw)) != len(raw):
                raise ConfigError(where, name, raw, allowed)
            return tuple(sorted(raw))
        return super().parse_extra(where, name, raw)


MAX_STALENESS_S = 3600.0
"""Largest ``information.staleness_s`` (seconds): one hour, far beyond any dispatcher refresh period."""
MAX_MODEL_ERROR = 1.0
"""Largest ``information.model_error`` (a MAPE of 100%: the factor floor 0.05 binds often well below it)."""
INFORMATION_TRACKS = ("exact", "realistic")


@dataclass(frozen=True)
class InformationConfig(_Plain):
    """What the simulator serves to policies (DecisionContext and the env observation): the information track.

    Attributes:
        track: ``exact`` (default): every policy sees the true, fresh node state and exact predictions.
            ``realistic`` (the paper's limitations): the central dispatcher's copy of the node state,
            refreshed when ``now - last_refresh >= staleness_s`` plus the dispatcher's own decisions since, and
            every prediction about a node multiplied by ``1 + e`` with ``e ~ Normal(0, model_error sqrt(pi/2))``
            (``E|e| = model_error``), the factor floored at 0.05, drawn from the run's generator (docs/env.md).
        staleness_s: refresh period of the dispatcher's copy (seconds, 0 to :data:`MAX_STALENESS_S`; default
            0.1 s, the paper's). Read only in the realistic track.
        model_error: mean absolute relative error of every served prediction (0 to :data:`MAX_MODEL_ERROR`;
            default 0.10, the paper's 10% MAPE). Read only in the realistic track.
    """

    WHERE: ClassVar[str] = "information"
    RULES: ClassVar[dict[str, Any]] = {"track": Choice(INFORMATION_TRACKS),
                                       "staleness_s": Number(low=0.0, high=MAX_STALENESS_S),
                                       "model_error": Number(low=0.0, high=MAX_MODEL_ERROR)}
    track: str = "exact"
    staleness_s: float = 0.1
    model_error: float = 0.10

    @property
    def realistic(self) -> bool:
        """True on the realistic track."""
        return self.track == "realistic"




MAX_WAITING_BOUND = 10_000_000
"""Largest ``overload.admission_max_waiting`` (requests): the most requests a run holds (workload MAX_REQUESTS)."""


@dataclass(frozen=True)
class OverloadConfig(_Plain):
    """Overload control (every field null = off, the default).

    Attributes:
        admission_max_waiting: reject an arrival when this many admitted requests already wait for their
            first token (1 to :data:`MAX_WAITING_BOUND`).
        admission_max_ttft_s: reject an arrival when its best predicted prefill-path TTFT (the smallest
            ``ttft_prefill_s`` of its decision context: queue wait + prefill alone + transfer) exceeds this (s).
        timeout_s: a request with no first token this long after its arrival times out (s): it is removed
            and counted in ``n_timed_out`` (see docs/reliability.md for where it is removed from).

    A rejected request never reaches a decision (the policy and the env do not see it); it is counted in
    ``n_rejected`` (and ``n_rejected_admission``).
    """

    WHERE: ClassVar[str] = "overload"
    RULES: ClassVar[dict[str, Any]] = {
        "admission_max_waiting": Number(integer=True, low=1, high=MAX_WAITING_BOUND, optional=True),
        "admission_max_ttft_s": OPTIONAL_PERIOD_S,
        "timeout_s": OPTIONAL_PERIOD_S,
    }
    admission_max_waiting: int | None = None
    admission_max_ttft_s: float | None = None
    timeout_s: float | None = None

    @property
    def enabled(self) -> bool:
        """Is any overload control on?"""
        return any(v is not None for v in (self.admission_max_waiting, self.admission_max_ttft_s, self.timeout_s))


MIN_METRICS_WINDOW, MAX_METRICS_WINDOW = 1 << 6, 1 << 24
"""Bounds of ``metrics.window`` (a power of two): 64 to 16,777,216 request slots (~230 bytes each)."""


@dataclass(frozen=True)
class MetricsConfig(_Plain):
    """How a run keeps its metrics.

    Attributes:
        mode: ``exact`` (default): every request's record is kept and the summary is computed from them
            (memory grows ~1.4 KB per request). ``streaming``: a request's figures are folded into running sums
            and sketches when it settles and its record dropped, so memory stays flat however long the run;
            counts and means are exact, percentiles within ``relative_accuracy`` (docs/reliability.md). No
            per-request table (``--requests-csv`` streams rows to disk instead), no pickling.
        window: streaming: request slots held at once, a power of two from 64 to 16,777,216 (default 65,536).
            A request arriving while the one ``window`` requests before it is still in flight is an error.
        relative_accuracy: streaming: the percentiles' relative error bound alpha, in [0.0001, 0.1].
    """

    WHERE: ClassVar[str] = "metrics"
    RULES: ClassVar[dict[str, Any]] = {
        "mode": Choice(("exact", "streaming")),
        "window": Number(integer=True, low=MIN_METRICS_WINDOW, high=MAX_METRICS_WINDOW),
        "relative_accuracy": Number(low=0.0001, high=0.1),
    }
    mode: str = "exact"
    window: int = 1 << 16
    relative_accuracy: float = 0.01

    def cross_check(self, where: str) -> None:
        if self.window & (self.window - 1):
            raise ConfigError(where, "window", self.window, "a power of two from 64 to 16,777,216")


SCENARIO_KEYS = ("name", "description", "cluster", "transfer", "slo", "deflection", "workload", "information",
                 "overload", "metrics", "faults")


@dataclass(frozen=True)
class ScenarioConfig:
    """A whole scenario. Build with :func:`load_scenario` or :meth:`from_dict`."""

    name: str = "custom"
    description: str = ""
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    transfer: TransferSection = field(default_factory=TransferSection)
    slo: SLOConfig = field(default_factory=SLOConfig)
    deflection: DeflectionConfig = field(default_factory=DeflectionConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    information: InformationConfig = field(default_factory=InformationConfig)
    overload: OverloadConfig = field(default_factory=OverloadConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    faults: FaultsConfig = field(default_factory=FaultsConfig)  # kairos_gym/faults.py (docs/reliability.md)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "scenario") -> ScenarioConfig:
        """Strictly validated construction from a parsed dict."""
        if not isinstance(d, Mapping):
            raise ConfigError(where, "(document)", d, "a mapping with keys " + ", ".join(SCENARIO_KEYS))
        check_keys(where, dict(d), SCENARIO_KEYS)
        name = d.get("name", "custom")
        Text().check(where, "name", name)
        desc = d.get("description", "")
        if not isinstance(desc, str):
            raise ConfigError(where, "description", desc, "a string")
        cluster = ClusterConfig.from_dict(d.get("cluster"), f"{where}: cluster")
        faults = FaultsConfig.from_dict(d.get("faults"), f"{where}: faults")
        faults.cross_check(f"{where}: faults", cluster.prefill_nodes, cluster.decode_nodes)
        overload = OverloadConfig.from_dict(d.get("overload"), f"{where}: overload")
        workload = WorkloadConfig.from_dict(d.get("workload") or {}, f"{where}: workload")
        metrics = MetricsConfig.from_dict(d.get("metrics"), f"{where}: metrics")
        # a workload generated whole (exact metrics, or a trace replay) keeps MAX_REQUESTS; streaming metrics
        # generate synthetic arrivals in chunks (kairos_gym/workload/chunked.py): MAX_STREAMED_REQUESTS
        if metrics.mode == "exact" or isinstance(workload.arrival, TraceArrival):
            workload.check_whole_size(f"{where}: workload")
        slo = SLOConfig.from_dict(d.get("slo"), f"{where}: slo")
        if slo.burn_in_requests:
            if metrics.mode != "exact":
                raise ConfigError(f"{where}: slo", "burn_in_requests", slo.burn_in_requests,
                                  "0 with metrics.mode streaming (a burn-in needs exact metrics)")
            sizes = [x for x in (workload.effective_num_requests, workload.max_requests) if x is not None]
            n = min(sizes) if sizes else None  # a trace or duration_s: known when generated (Simulator.reset)
            if n is not None and slo.burn_in_requests >= n:
                raise ConfigError(f"{where}: slo", "burn_in_requests", slo.burn_in_requests,
                                  f"fewer than the workload's {n} requests (at least one must be scored)")
        return cls(
            name=name,
            description=desc,
            cluster=cluster,
            transfer=TransferSection.from_dict(d.get("transfer"), f"{where}: transfer"),
            slo=slo,
            deflection=DeflectionConfig.from_dict(d.get("deflection"), f"{where}: deflection"),
            workload=workload,
            information=InformationConfig.from_dict(d.get("information"), f"{where}: information"),
            overload=overload,
            metrics=metrics,
            faults=faults,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict that :meth:`from_dict` turns back into an equal scenario (``faults`` only when it has any
        event or generator, or a non-default ``reentry``: a scenario without faults has none)."""
        out = {
            "name": self.name, "description": self.description, "cluster": self.cluster.to_dict(),
            "transfer": self.transfer.to_dict(), "slo": self.slo.to_dict(), "deflection": self.deflection.to_dict(),
            "workload": self.workload.to_dict(), "information": self.information.to_dict(),
            "overload": self.overload.to_dict(), "metrics": self.metrics.to_dict(),
        }
        if self.faults.enabled or self.faults.reentry != REENTRY_DEFAULT:
            out["faults"] = self.faults.to_dict()
        return out

    def with_overrides(self, overrides: Mapping[str, Any]) -> ScenarioConfig:
        """A copy with sections deep-merged from ``overrides`` (e.g. ``{"slo": {"tbt_s": 0.05}}``)."""
        return ScenarioConfig.from_dict(_deep_merge(self.to_dict(), overrides), f"scenario {self.name!r} + overrides")


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in, section by section. A section whose override names another
    ``kind`` (e.g. a trace instead of gamma arrivals) is replaced, not merged."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        if isinstance(v, Mapping) and isinstance(old, Mapping) and v.get("kind", old.get("kind")) == old.get("kind"):
            out[k] = _deep_merge(old, v)
        else:
            out[k] = v
    return out


def scenario_names() -> list[str]:
    """Names of the shipped scenarios (``configs/scenarios/*.yaml``)."""
    names: set[str] = set()
    for d in SCENARIO_DIRS:
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def load_scenario(spec: str | Path | Mapping[str, Any] | ScenarioConfig = "bursty") -> ScenarioConfig:
    """A scenario from a shipped name, a YAML path, a dict or a ScenarioConfig."""
    if isinstance(spec, ScenarioConfig):
        return spec
    if isinstance(spec, Mapping):
        return ScenarioConfig.from_dict(spec, "scenario (dict)")
    if not isinstance(spec, (str, Path)):
        raise ConfigError("scenario", "scenario", spec, "a scenario name, a YAML path or a dict")
    text = str(spec)
    path = Path(text)
    if not (text.endswith((".yaml", ".yml")) or path.exists()):
        for d in SCENARIO_DIRS:
            cand = d / f"{text}.yaml"
            if cand.is_file():
                path = cand
                break
        else:
            raise ConfigError("scenario", "scenario", text, f"a shipped scenario name ({', '.join(scenario_names())}) "
                              "or a path to a YAML file")
    if not path.is_file():
        raise ConfigError("scenario", "scenario", text, "an existing YAML file or a shipped scenario name "
                          f"({', '.join(scenario_names())})")
    data = load_yaml_file(path)
    if data is None:
        raise ConfigError(str(path), "(file)", "empty (no YAML content, comments only)",
                          "a mapping of scenario sections (start from a shipped one, e.g. "
                          "configs/scenarios/bursty.yaml; `{}` asks for every default)")
    return ScenarioConfig.from_dict(data, str(path))
