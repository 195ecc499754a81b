"""KV-cache transfer between a prefill node and a decode node.

A transfer of ``n`` bytes takes ``setup_s + n / bandwidth`` alone on its link. Concurrent transfers
on one link share its bandwidth equally (processor sharing); the setup phase (handshake, block
allocation) is pure latency and does not use bandwidth. Bytes are GQA/MLA-aware: the caller passes
``prompt_tokens * model.kv_bytes_per_token``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kairos_gym.errors import ConfigError


@dataclass(frozen=True)
class TransferConfig:
    """KV-transfer knobs. Units: bytes/s and seconds.

    Defaults: a 200 Gb/s InfiniBand NIC per prefill node (25 GB/s line rate) at 70% achieved
    efficiency (17.5 GB/s), and 5 ms of connector setup per transfer (handshake, block allocation).
    Both are calibration knobs: report sensitivity when they matter.
    """

    bandwidth_bytes_per_s: float = 17.5e9
    setup_s: float = 0.005
    enabled: bool = True

    def __post_init__(self) -> None:
        if not (self.bandwidth_bytes_per_s > 0 and self.bandwidth_bytes_per_s < float("inf")):
            raise ConfigError("transfer", "bandwidth_bytes_per_s", self.bandwidth_bytes_per_s, "a finite number > 0")
        if not (self.setup_s >= 0 and self.setup_s < float("inf")):
            raise ConfigError("transfer", "setup_s", self.setup_s, "a finite number >= 0 (seconds)")

    def time_alone(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` on an otherwise idle link."""
        return self.setup_s + nbytes / self.bandwidth_bytes_per_s


class FairShareLink:
    """A link whose bandwidth is shared equally by the transfers on it (processor sharing).

    Pure bookkeeping, no clock of its own: the caller advances it to the current time before every
    change and asks for the next completion. Transfer ids are ints.
    """

    __slots__ = ("_last", "_remaining", "bandwidth", "version")

    def __init__(self, bandwidth_bytes_per_s: float) -> None:
        self.bandwidth = float(bandwidth_bytes_per_s)
        self._remaining: dict[int, float] = {}
        self._last = 0.0
        self.version = 0  # bumped on every change; stale completion events carry an old version

    def __len__(self) -> int:
        return len(self._remaining)

    def advance(self, now: float) -> None:
        """Move the link's progress forward to ``now`` (seconds)."""
        n = len(self._remaining)
        if n and now > self._last:
            done = (now - self._last) * self.bandwidth / n
            rem = self._remaining
            for k in rem:
                rem[k] -= done
        self._last = max(self._last, now)

    def add(self, tid: int, nbytes: float, now: float) -> None:
        """Start moving ``nbytes`` for transfer ``tid`` at ``now``."""
        self.advance(now)
        self._remaining[tid] = float(nbytes)
        self.version += 1

    def remove(self, tid: int, now: float) -> None:
        """Finish transfer ``tid`` at ``now``."""
        self.advance(now)
        del self._remaining[tid]
        self.version += 1

    def next_completion(self) -> tuple[float, int] | None:
        """(time, tid) of the transfer that completes first if nothing changes, else None."""
        remaining = self._remaining
        if not remaining:
            return None
        rem, tid = min([(v, k) for k, v in remaining.items()])  # least remaining; ties: smallest id
        if rem < 0.0:
            rem = 0.0
        return self._last + rem * len(remaining) / self.bandwidth, tid

    def state(self) -> tuple[float, dict[int, float], int]:
        """A copy of the link's state (for snapshots)."""
        return self._last, dict(self._remaining), self.version

    def set_state(self, state: tuple[float, dict[int, float], int]) -> None:
        """Restore a state from :meth:`state`."""
        self._last, rem, self.version = state
        self._remaining = dict(rem)
