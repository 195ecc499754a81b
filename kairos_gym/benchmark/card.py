"""A checkpoint folder's card (``kairos-gym card DIR``): what the folder records about how it was trained, exported,
validated, selected and scored, read only from its own files and never run.

A safe checkpoint folder (``kairos-gym train --export``, ``kairos-gym distill``, ``kairos-gym convert``;
docs/training.md, "Checkpoints and trust") holds ``policy.json`` (required: a folder without it is not a checkpoint)
and, when the trainer wrote them, ``meta.json`` (commands, seed, steps, times, evaluations; a distilled student's
validation per seed, selection and leaderboard aggregates), ``config.yaml`` (the resolved training config) and
``history.jsonl`` (a distilled student's loss and validation per epoch). Each is read with the project's bounded
readers (:mod:`kairos_gym.json_file`, :mod:`kairos_gym.yaml_io`): no code runs, sizes are capped, and a file that
is there but unreadable is one :class:`~kairos_gym.errors.ConfigError` naming it. "Trained on" and "how" come from
:mod:`kairos_gym.benchmark.trained_on`, as in suite v2's board.

:func:`read_card` returns the parsed content (what ``--json`` writes); :func:`render_card` the text the command
prints. The figures docs/training.md shows of the shipped agents are rendered from ``--json``
(tools/doc_figures.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kairos_gym.errors import ConfigError

WHERE = "card"
MAX_META_BYTES = 4 << 20
"""Largest ``meta.json`` read (bytes; the shipped ones are under 12 KB)."""
MAX_POLICY_BYTES = 1 << 20
"""Largest ``policy.json`` read (bytes; its arrays live in ``policy.npz``, which the card does not read)."""
MAX_HISTORY_BYTES = 4 << 20
"""Largest ``history.jsonl`` read (bytes; the shipped one is 4 KB for 60 epochs)."""
MAX_HISTORY_LINES = 100_000
"""Most lines of ``history.jsonl`` (one per epoch)."""
FILES = ("policy.json", "meta.json", "config.yaml", "history.jsonl")
"""The files a card reads, in that order (only ``policy.json`` is required)."""


def read_card(folder: str | Path) -> dict[str, Any]:
    """The parsed content of checkpoint ``folder``: ``folder``, ``trained_on`` (``families``, ``how``; None where
    the config declares nothing), ``policy``, ``meta``, ``config`` (None where absent) and ``history`` (a list of
    objects, one per line; None where absent). ConfigError: not a folder, no ``policy.json``, or a file present
    but unreadable, too large, or not of its shape (an object per file and per history line)."""
    from kairos_gym.benchmark.trained_on import declared
    from kairos_gym.json_file import read_json_file
    from kairos_gym.yaml_io import load_yaml_file

    p = Path(folder)
    if not p.is_dir() or not (p / "policy.json").is_file():
        raise ConfigError(WHERE, "DIR", str(p), "a checkpoint folder: one with policy.json (kairos-gym train "
                          "--export, distill or convert writes it), e.g. agents/checkpoints/ppo-kairos-v0")
    policy = _object("policy.json", read_json_file(WHERE, "policy.json", p / "policy.json", MAX_POLICY_BYTES,
                                                   "checkpoint policy.json"))
    meta = None
    if (p / "meta.json").exists():
        meta = _object("meta.json", read_json_file(WHERE, "meta.json", p / "meta.json", MAX_META_BYTES,
                                                   "checkpoint meta.json"))
    config = None
    if (p / "config.yaml").exists():
        config = _object("config.yaml", load_yaml_file(p / "config.yaml", f"{WHERE}: config.yaml"))
    history = _history(p / "history.jsonl") if (p / "history.jsonl").exists() else None
    families, how = declared(p)
    return {"folder": str(p), "trained_on": {"families": list(families) if families else None, "how": how},
            "policy": policy, "meta": meta, "config": config, "history": history}


def _object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(WHERE, name, type(value).__name__, "a JSON/YAML object (mapping) at the top level")
    return value


def _history(path: Path) -> list[dict[str, Any]]:
    """``history.jsonl``: one JSON object per non-empty line (bounded: :data:`MAX_HISTORY_BYTES`,
    :data:`MAX_HISTORY_LINES`)."""
    from kairos_gym.json_file import parse_json_text

    if not path.is_file():
        raise ConfigError(WHERE, "history.jsonl", str(path), "a regular file")
    size = path.stat().st_size
    if size > MAX_HISTORY_BYTES:
        raise ConfigError(WHERE, "history.jsonl", f"{size} bytes", f"at most {MAX_HISTORY_BYTES} bytes")
    raw = path.read_bytes()[: MAX_HISTORY_BYTES + 1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(WHERE, "history.jsonl", f"byte 0x{raw[e.start]:02x} at offset {e.start}",
                          "UTF-8 JSON lines") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > MAX_HISTORY_LINES:
        raise ConfigError(WHERE, "history.jsonl", f"{len(lines)} lines", f"at most {MAX_HISTORY_LINES} lines")
    out = []
    for i, line in enumerate(lines, 1):
        row = parse_json_text(WHERE, f"history.jsonl line {i}", line, "object per line")
        if not isinstance(row, dict):
            raise ConfigError(WHERE, f"history.jsonl line {i}", type(row).__name__, "a JSON object per line")
        out.append(row)
    return out


def _num(x: Any, spec: str) -> str:
    """``x`` formatted, or ``–`` where it is not a number."""
    return format(x, spec) if isinstance(x, (int, float)) and not isinstance(x, bool) else "–"


def interval(v: Any, spec: str = ".3f") -> str:
    """``[point, lo, hi]`` as ``point [lo, hi]``."""
    if isinstance(v, list) and len(v) == 3:
        return f"{_num(v[0], spec)} [{_num(v[1], spec)}, {_num(v[2], spec)}]"
    return "–"


EVAL_COLUMNS = (("SLO attainment", "slo_attainment", ".3f"), ("TTFT P95 (s)", "ttft_p95", ".2f"),
                ("TBT violation rate", "tbt_violation_rate", ".2g"), ("deflection rate", "deflection_rate", ".3f"),
                ("normalised score", "normalized_score", ".3f"))
"""The columns of a training run's evaluation table: (header, meta.json key, format)."""


def evaluations(meta: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The evaluations ``meta.json`` records, labelled: the exported one (``best``/``final``), then the last one
    when it is another evaluation."""
    out: list[tuple[str, dict[str, Any]]] = []
    exported, best, last = meta.get("exported_eval"), meta.get("best_eval"), meta.get("last_eval")
    if isinstance(exported, dict):
        out.append((f"{meta.get('exported', 'exported')} (exported)", exported))
    elif isinstance(best, dict):
        out.append(("best", best))
    if isinstance(last, dict) and all(last != e for _, e in out):
        out.append(("last", last))
    return out


def evaluation_table(meta: dict[str, Any]) -> list[str]:
    """The evaluations as Markdown rows: per evaluation the agent's figures, then the reference policy's on the
    same cases (the columns one of them lacks dropped)."""
    evs = evaluations(meta)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for label, ev in evs:
        rows.append((label, _num(ev.get("timesteps"), ",d"), ev))
        for name, ref in (ev.get("reference") or {}).items():
            if isinstance(ref, dict):
                norm = ref.get("normalized", {}).get("all", {}) if isinstance(ref.get("normalized"), dict) else {}
                rows.append((f"{name} (reference)", "", {**ref, "normalized_score": norm.get("mean")}))
    cols = [c for c in EVAL_COLUMNS if any(isinstance(r[2].get(c[1]), (int, float)) for r in rows)]
    lines = ["| evaluation | steps | " + " | ".join(c[0] for c in cols) + " |", "|---|---|" + "---|" * len(cols)]
    lines += [f"| {label} | {steps} | " + " | ".join(_num(ev.get(key), spec) for _, key, spec in cols) + " |"
              for label, steps, ev in rows]
    return lines


def validation_table(meta: dict[str, Any]) -> list[str]:
    """A distilled student's kept epoch per seed (``validation_best``, ``train_seconds``) as Markdown rows."""
    best, secs = meta.get("validation_best"), meta.get("train_seconds")
    lines = ["| seed | kept epoch | gap realistic | worst realistic | win realistic | gap exact | worst exact | "
             "train |", "|---|---|---|---|---|---|---|---|"]
    for seed, v in (best or {}).items():
        t = secs.get(seed) if isinstance(secs, dict) else None
        lines.append(f"| {seed} | {v.get('epoch', '–')} | {_num(v.get('gap_realistic'), '+.4f')} | "
                     f"{_num(v.get('worst_realistic'), '+.4f')} | {_num(v.get('win_realistic'), '.3f')} | "
                     f"{_num(v.get('gap_exact'), '+.4f')} | {_num(v.get('worst_exact'), '+.4f')} | "
                     f"{_num(t, '.0f')} s |")
    return lines


def selection_table(selection: dict[str, Any]) -> list[str]:
    """``kairos-gym select``'s decision (meta.json ``selection``) as Markdown rows, one per track."""
    lines = ["| track | P(> kairos) candidate / incumbent | difference (95% t over the cells) | mean SLO attainment "
             "| collapses (> 0.05 below Kairos) |", "|---|---|---|---|---|"]
    decision = selection.get("decision") or {}
    for track in ("realistic", "exact"):
        d = decision.get(track)
        if not isinstance(d, dict):
            continue
        c, i, diff = d.get("candidate", {}), d.get("incumbent", {}), d.get("p_diff", {})
        coll = " / ".join(", ".join(x.get("collapses") or []).replace(f"@{track}", "") or "none" for x in (c, i))
        lines.append(f"| {track} | {_num(c.get('p_beats_kairos'), '.3f')} / {_num(i.get('p_beats_kairos'), '.3f')} | "
                     f"{_num(diff.get('mean'), '+.3f')} ± {_num(diff.get('half_width'), '.3f')} "
                     f"({diff.get('cells', '–')} cells) | {_num(c.get('mean_slo'), '.4f')} / "
                     f"{_num(i.get('mean_slo'), '.4f')} | {coll} |")
    return lines


def leaderboard_table(board: dict[str, Any]) -> list[str]:
    """The leaderboard aggregates meta.json records (IQM of the normalised score, P(> the comparison), each with
    its 95% interval) as Markdown rows, per track and entry."""
    lines = ["| track | entry | IQM | P(> kairos) |", "|---|---|---|---|"]
    for track, entries in (board.get("aggregates") or {}).items():
        for name, agg in entries.items():
            lines.append(f"| {track} | {name} | {interval(agg.get('iqm'))} | "
                         f"{interval(agg.get('poi_vs_comparison'))} |")
    return lines


def render_card(card: dict[str, Any]) -> str:
    """The card as the command prints it (Markdown: a heading, key lines, then a table per record)."""
    meta, policy, hist = card["meta"] or {}, card["policy"], card["history"]
    fams, how = card["trained_on"]["families"], card["trained_on"]["how"]
    hidden = policy.get("hidden_sizes")
    net = "x".join(str(h) for h in hidden) if isinstance(hidden, list) else "?"
    out = [f"# Checkpoint {card['folder']}", "",
           f"- trained on: {', '.join(fams) if fams else 'undeclared (no readable config.yaml)'}",
           f"- how: {how or 'undeclared'}",
           f"- policy: {policy.get('algo', '?')}, inputs {policy.get('inputs', 'observation')}, "
           f"{policy.get('observation_size', '?')} features -> {net} {policy.get('activation', '?')} -> "
           f"{policy.get('action_count', '?')} actions"
           + (", observation normalised" if policy.get("obs_normalization") else "")]
    if card["meta"] is None:
        out.append("- meta.json: none (a converted checkpoint records no training run)")
    for key, label in (("config", "config"), ("env_id", "env"), ("trainer", "trainer"), ("seed", "seed"),
                       ("hard_label", "hard label"), ("exported", "exported")):
        if key in meta:
            out.append(f"- {label}: {meta[key]}")
    if isinstance(meta.get("timesteps"), int):
        out.append(f"- steps: {meta['timesteps']:,}")
    distill = (card["config"] or {}).get("distill")
    if isinstance(distill, dict):
        out.append(f"- seeds: {', '.join(str(s) for s in distill.get('seeds') or [])}; epochs: "
                   f"{distill.get('epochs', '?')} (validation every {distill.get('eval_every', '?')})")
    if isinstance(meta.get("samples"), int):
        out.append(f"- samples: {meta['samples']:,} from {meta.get('label_instances', '?')} label instances "
                   f"({_num(meta.get('label_seconds'), ',.0f')} s of labels)")
    if isinstance(meta.get("train_seconds"), (int, float)):
        out.append(f"- training: {meta['train_seconds']:,.1f} s (evaluations {_num(meta.get('eval_seconds'), ',.1f')}"
                   " s of it)")
    commands = meta.get("commands") or ([meta["command"]] if isinstance(meta.get("command"), str) else [])
    out += [f"- command: `{c}`" for c in commands]
    if isinstance(meta.get("eval_seeds"), list) and meta["eval_seeds"]:
        out.append(f"- validation seeds: {', '.join(str(s) for s in meta['eval_seeds'])}")
    if evaluations(meta):
        out += ["", "## Evaluations", "", *evaluation_table(meta)]
    if isinstance(meta.get("validation_best"), dict):
        out += ["", "## Validation, the kept epoch per seed", "", *validation_table(meta)]
    if isinstance(meta.get("selection"), dict):
        sel = meta["selection"]
        ship = (sel.get("decision") or {}).get("ship")
        out += ["", "## Selection", "", f"`{sel.get('command', '?')}` (incumbent: {sel.get('incumbent', '?')}; "
                f"ship: {ship})", "", *selection_table(sel)]
    if isinstance(meta.get("leaderboard"), dict):
        lb = meta["leaderboard"]
        out += ["", "## Leaderboard", "", f"`{lb.get('command', '?')}` ({lb.get('date', '?')}, commit "
                f"{str(lb.get('commit', '?'))[:12]})", "", *leaderboard_table(lb)]
    if hist is not None:
        val = [r.get("epoch") for r in hist if "select" in r]
        out += ["", f"## History: {len(hist)} lines" + (f", validation at epochs {', '.join(map(str, val))}"
                                                         if val else "")]
    return "\n".join(out) + "\n"


__all__ = ["FILES", "MAX_HISTORY_BYTES", "MAX_HISTORY_LINES", "MAX_META_BYTES", "MAX_POLICY_BYTES", "WHERE",
           "evaluation_table", "evaluations", "interval", "leaderboard_table", "read_card", "render_card",
           "selection_table", "validation_table"]
