"""train/selection.py: the train-side selection set between two distilled students and its three criteria."""

from __future__ import annotations

import pytest
from kairos_gym.train import distill
from kairos_gym.train.envs import TRAIN_SEED_MIN
from kairos_gym.train.selection import (
    COLLAPSE,
    TOLERANCE,
    decide,
    label_seeds,
    p_beats,
    selection_cases,
    selection_seeds,
)

from kairos_gym.benchmark.suite import SUITE
from kairos_gym.cli.main import main
from kairos_gym.errors import ConfigError

CFG = distill.load_config("configs/ppo/distill.yaml")


def test_label_seeds_are_the_seeds_distill_run_labels(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    seen: list[int] = []

    class Stop(Exception):
        pass

    def capture(jobs, student=None, log=None, backend=None):
        seen.extend(int(j.instance.seed) for j in jobs)
        raise Stop

    monkeypatch.setattr(distill, "collect", capture)
    with pytest.raises(Stop):
        distill.run(CFG, tmp_path / "run")
    assert len(seen) == 90 and set(seen) == label_seeds(CFG)


def test_the_selection_set_is_train_side_unlabelled_and_honest_about_traces() -> None:
    cells = selection_cases(CFG, 7)
    assert len(cells) == len(CFG.families) * len(CFG.tiers) * 2
    labelled = label_seeds(CFG)
    test_side = {(t.family, t.tier): t for t in SUITE}
    for cell in cells:
        task = test_side[(cell.family, cell.tier)]
        for c in cell.cases:
            assert c.track == cell.track and c.largest_safe
            if task.windows:
                assert c.instance.window_s == task.train[-1].window_s  # the never-labelled validation window
                assert all(c.instance.window_s != i.window_s for i in task.test)
            else:
                assert c.instance.seed >= TRAIN_SEED_MIN and c.instance.seed not in labelled
        # a trace window on the exact track does not depend on the seed: one run, not seven copies of it
        assert len(cell.cases) == (1 if task.windows and cell.track == "exact" else 7)
    assert selection_cases(CFG, 7) == cells  # deterministic
    assert [c.instance.seed for c in selection_cases(CFG, 3)[0].cases] == [c.instance.seed for c in cells[0].cases][:3]


def test_selection_seeds_skip_excluded_ones() -> None:
    first = selection_seeds(5, set())
    assert selection_seeds(4, {first[1]}) == [first[0], *first[2:5]]


def test_p_beats_counts_ties_half() -> None:
    assert p_beats([1.0, 0.5, 0.2, 0.3], [0.9, 0.5, 0.4, 0.3]) == pytest.approx((1 + 0.5 + 0 + 0.5) / 4)


def _scores(cand: float, inc: float, kairos: float = 0.5, cells: int = 6, n: int = 4) -> dict:
    out = {}
    for track in ("exact", "realistic"):
        for k in range(cells):
            # per instance: candidate and incumbent shifted around Kairos, a little spread so ties are rare
            out[f"t{k}@{track}"] = {"kairos": [kairos + 0.01 * i for i in range(n)],
                                    "candidate": [cand + 0.01 * i + 0.001 * k for i in range(n)],
                                    "incumbent": [inc + 0.01 * i - 0.001 * k for i in range(n)]}
    return out


def test_decide_ships_a_candidate_that_beats_kairos_more_often() -> None:
    r = decide(_scores(0.52, 0.49))
    assert r["realistic"]["candidate"]["p_beats_kairos"] == 1.0 and r["realistic"]["incumbent"]["p_beats_kairos"] == 0
    assert r["ship"] and all(r["criteria"].values())


def test_decide_refuses_each_failed_criterion() -> None:
    same = decide(_scores(0.52, 0.52))  # no difference in P(> kairos): its interval is not above 0
    assert not same["criteria"]["1_p_beats_kairos_above"] and not same["ship"]
    s = _scores(0.52, 0.49)
    s["t0@realistic"]["candidate"] = [0.5 - COLLAPSE - 0.05] * 4  # a new collapse of the candidate
    r = decide(s)
    assert r["realistic"]["candidate"]["collapses"] == ["t0@realistic"] and not r["criteria"]["2_no_more_collapses"]
    s = _scores(0.52, 0.49)
    for k in range(6):  # on the exact track: wins more often, but loses mean SLO attainment beyond the tolerance
        s[f"t{k}@exact"]["candidate"] = [0.51, 0.52, 0.53, 0.54]
        s[f"t{k}@exact"]["incumbent"] = [0.51 + 4 * TOLERANCE + 0.3] * 4
    r = decide(s)
    assert not r["criteria"]["3_mean_slo_within_tolerance"] and not r["ship"]


def test_bad_flags_are_refused_before_any_run(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["select", "--candidate", str(tmp_path / "nope")]) == 2
    assert "--candidate" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--instances"):
        selection_cases(CFG, 0)
    assert main(["select", "--candidate", "agents/checkpoints/distilled-oracle", "--instances", "5e2"]) == 2
    assert "--instances" in capsys.readouterr().err
