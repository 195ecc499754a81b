"""Writing an output file all at once or not at all: every report, JSON, CSV and plot a command writes goes
through :func:`open_output` (or :func:`write_text`).

The content is written to a temporary file beside the target (same folder, so the rename stays on one file
system), flushed, and renamed over the target (``os.replace``: atomic on POSIX). A write that fails (a full disk,
a quota, a lost mount) removes the temporary file, leaves any earlier file at the target untouched, and raises one
:class:`WriteError` naming the flag and the path: the command prints it as one line. ``os.devnull`` is written
directly (it cannot be replaced).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kairos_gym.errors import ConfigError


class WriteError(ConfigError):
    """An output could not be written (after its path passed the checks made before the run)."""

    def __init__(self, where: str, flag: str, path: str | os.PathLike, reason: str) -> None:
        super().__init__(where, flag, str(path), f"a path that can be written ({reason}; nothing was written there)")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def open_output(path: str | os.PathLike, mode: str = "w", *, where: str, flag: str, **kwargs: Any,
                ) -> Iterator[IO[Any]]:
    """A file object to write ``path``'s whole content into (``mode`` ``"w"`` or ``"wb"``; ``kwargs`` as for
    :func:`open`, e.g. ``newline=""``, ``encoding``). On leaving the block the content replaces ``path``; on an
    error nothing is left behind and :class:`WriteError` names the path."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_output: mode {mode!r} (w or wb)")
    target = Path(path)
    if os.path.abspath(target) == os.path.abspath(os.devnull):
        with open(target, mode, **kwargs) as f:
            yield f
        return
    if mode == "w":
        kwargs.setdefault("encoding", "utf-8")
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; an output gets the usual permissions
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise WriteError(where, flag, target, e.strerror or type(e).__name__) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_text(path: str | os.PathLike, text: str, *, where: str, flag: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`open_output`."""
    with open_output(path, "w", where=where, flag=flag) as f:
        f.write(text)


def save_figure(fig: Any, path: str | os.PathLike, *, where: str, flag: str, dpi: int = 110) -> None:
    """Save a matplotlib figure as PNG to ``path`` through :func:`open_output`."""
    with open_output(path, "wb", where=where, flag=flag) as f:
        fig.savefig(f, format="png", dpi=dpi)


def write_bytes(path: str | os.PathLike, data: bytes, *, where: str, flag: str) -> None:
    """Write ``data`` to ``path`` through :func:`open_output`."""
    with open_output(path, "wb", where=where, flag=flag) as f:
        f.write(data)


__all__ = ["WriteError", "open_output", "save_figure", "write_bytes", "write_text"]
