"""Domain randomisation over the suite's train split (kairos_gym.train.domain)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from kairos_gym.train import domain as D
from kairos_gym.train.envs import TRAIN_SEED_MIN

from kairos_gym.benchmark.suite import SUITE, TIER_NAMES, TRACKS
from kairos_gym.env.core import KairosEnv
from kairos_gym.errors import ConfigError
from kairos_gym.scenario import load_scenario
from kairos_gym.workload import generate

SPEC = D.DomainSpec.parse()


def _overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_draws_are_never_test_or_validation_instances() -> None:
    rng = np.random.default_rng(123)
    tasks = {(t.family, t.tier): t for t in SUITE}
    seen = set()
    for _ in range(2000):
        d = D.draw(SPEC, rng)
        seen.add((d.family, d.tier, d.track))
        assert SPEC.load[0] <= d.load <= SPEC.load[1]
        task = tasks[(d.family, d.tier)]
        inst = d.instance
        assert inst not in task.test and inst != D.validation_instance(task)
        if task.windows:
            assert inst.window_s in [i.window_s for i in task.train[:-1]]
            assert not any(_overlaps(inst.window_s, i.window_s) for i in task.test)
        else:
            assert inst.window_s is None and inst.seed >= TRAIN_SEED_MIN
            assert inst.seed not in [i.seed for i in (*task.test, *task.train)]
    assert len(seen) == len(SPEC.families) * len(TIER_NAMES) * len(TRACKS)  # every combination is drawn


def test_validation_cases_are_held_out_train_instances() -> None:
    cases = D.validation_cases(SPEC)
    assert len(cases) == len(SPEC.families) * len(TIER_NAMES) * len(TRACKS)
    tasks = {(t.family, t.tier): t for t in SUITE}
    for c in cases:
        task = tasks[(c.family, c.tier)]
        assert c.instance in task.train and c.instance not in task.test
        sc = c.scenario()
        assert sc.information.track == c.track
        assert (sc.slo.ttft_s, sc.slo.tbt_s) == (task.base().slo.ttft_s, task.base().slo.tbt_s)


def test_scale_load_multiplies_every_rate() -> None:
    g = load_scenario("bursty")
    assert D.scale_load(g, 1.0) is g
    assert D.scale_load(g, 1.25).workload.arrival.rate == pytest.approx(22.0 * 1.25)
    m = D.scale_load(load_scenario("regime-shift"), 0.5).workload.arrival
    assert (m.rate_on, m.rate_off) == pytest.approx((15.0, 4.0))
    t = D.scale_load(load_scenario("azure-code"), 1.2).workload.arrival
    assert t.rate_scale == pytest.approx(7.2)
    a = generate(load_scenario("decode-bound").workload, np.random.default_rng(0))
    b = generate(D.scale_load(load_scenario("decode-bound"), 2.0).workload, np.random.default_rng(0))
    assert len(a) == len(b)
    np.testing.assert_allclose(b.arrival_s, a.arrival_s / 2.0)  # same draws, twice the rate
    np.testing.assert_array_equal(b.prompt_tokens, a.prompt_tokens)


def test_reset_seed_reproduces_the_episode_and_the_slos_reach_the_observation() -> None:
    def episode(seed: int) -> tuple[dict, list[np.ndarray], list[float]]:
        env = gym.make(D.DOMAIN_ENV_ID, disable_env_checker=True, tiers=["strict", "relaxed"])
        obs, info = env.reset(seed=seed)
        obs_l, rew = [obs], []
        inner = env.unwrapped.env
        slo = inner.scenario.slo
        names = env.unwrapped.feature_names()
        assert obs[names.index("ttft_slo")] == pytest.approx(slo.ttft_s / (slo.ttft_s + 1.0), rel=1e-6)
        assert obs[names.index("tbt_slo")] == pytest.approx(slo.tbt_s / (slo.tbt_s + 0.1), rel=1e-6)
        for k in range(60):
            mask = env.unwrapped.action_masks()
            obs, r, te, tr, _ = env.step(int(np.flatnonzero(mask)[k % int(mask.sum())]))
            obs_l.append(obs)
            rew.append(r)
            if te or tr:
                break
        return info["domain"], obs_l, rew

    d1, o1, r1 = episode(7)
    d2, o2, r2 = episode(7)
    assert d1 == d2 and r1 == r2
    assert all(np.array_equal(a, b) for a, b in zip(o1, o2, strict=True))
    draws = {tuple(sorted(episode(s)[0].items())) for s in range(6)}
    assert len(draws) == 6  # other seeds, other draws


def test_observation_is_the_kairos_env_layout_on_every_family() -> None:
    env = D.DomainEnv()
    for fam in SPEC.families:
        k = KairosEnv(D.task_base(fam, "strict", "realistic"))
        assert k.observation_space == env.observation_space and k.action_space == env.action_space
        assert k.feature_names() == env.feature_names()


def test_a_family_with_another_layout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = D.task_base

    def other(family: str, tier: str, track: str, largest_safe: bool = False, suite: str = "v1"):
        sc = real(family, tier, track, largest_safe, suite)
        return sc.with_overrides({"deflection": {"chunk_menu": [256, 512]}}) if family == "kv-pressure" else sc

    monkeypatch.setattr(D, "task_base", other)
    with pytest.raises(ConfigError, match="families = 'kv-pressure'"):
        D.DomainEnv()
    D.DomainEnv(families=["bursty", "decode-bound"])  # without it: fine


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"families": ["bursty", "nope"]}, "families"),
    ({"families": "bursty"}, "families"),
    ({"tiers": ["strict", "strict"]}, "tiers"),
    ({"tracks": ["fast"]}, "tracks"),
    ({"load": [1.3, 0.7]}, "load"),
    ({"load": [0.0, 1.0]}, "load"),
    ({"load": [1.0, 9.0]}, "load"),
    ({"load": 1.0}, "load"),
    ({"episode_window": 100}, "episode_window"),
])
def test_bad_domain_arguments(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=f": {field} = "):
        D.check_kwargs(kwargs)
    with pytest.raises(ConfigError, match=f": {field} = "):
        D.DomainEnv(**kwargs)


# ---------------------------------------------------------------------------------------------- training
GENERAL = Path(__file__).resolve().parents[2] / "configs" / "ppo" / "general.yaml"


def test_general_config_parses_and_round_trips() -> None:
    from kairos_gym.train.config import load_config, parse_config

    cfg = load_config(GENERAL)
    assert cfg.env_id == D.DOMAIN_ENV_ID and cfg.algo == "maskable_ppo" and cfg.eval.seeds == []
    spec = D.spec_from_kwargs(cfg.env_kwargs)  # the shipped recipe draws from the whole train side, with LargestSafe
    assert (spec.families, spec.tiers, spec.tracks, spec.load, spec.largest_safe) == (
        SPEC.families, SPEC.tiers, SPEC.tracks, SPEC.load, True)
    again = parse_config(cfg.to_yaml_dict(), source="copy")
    assert again.env_kwargs == cfg.env_kwargs and again.eval == cfg.eval


@pytest.mark.parametrize(("patch", "field"), [
    ({"env_kwargs": {"tiers": ["loose"]}}, "tiers"),
    ({"env_kwargs": {"scenario": "bursty"}}, "scenario"),
    ({"eval": {"freq": 10, "seeds": [100]}}, "eval.seeds"),
    ({"eval": {"freq": 10, "env_id": "kairos_gym/Kairos-v0"}}, "eval.env_id"),
])
def test_general_config_refuses_what_the_domain_does_not_take(patch: dict, field: str) -> None:
    from kairos_gym.train.config import parse_config

    with pytest.raises(ConfigError, match=f"{field} = "):
        parse_config({D.DOMAIN_ENV_ID: {"n_envs": 1, **patch}}, source="t.yaml")


def test_training_logs_the_normalized_score_of_the_held_out_cases(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from kairos_gym.train.config import parse_config
    from kairos_gym.train.trainer import train

    kw = {"families": ["azure-code", "long-tail"], "tiers": ["default"], "tracks": ["realistic"]}
    cfg = parse_config({D.DOMAIN_ENV_ID: {
        "n_envs": 2, "n_timesteps": 512, "n_steps": 128, "batch_size": 128, "n_epochs": 1,
        "policy_kwargs": "dict(net_arch=dict(pi=[16], vf=[16]))", "env_kwargs": kw,
        "eval": {"freq": 256}, "checkpoint_freq": 0}}, source="t.yaml")
    meta = train(cfg, tmp_path, progress=False, command="test")
    hist = [json.loads(line) for line in (tmp_path / "eval_history.jsonl").read_text().splitlines()]
    assert [h["timesteps"] for h in hist] == [256, 512]
    cases = D.validation_cases(D.spec_from_kwargs(kw))
    assert sorted(hist[-1]["cases"]) == sorted(c.label for c in cases) == ["azure-code@realistic",
                                                                              "long-tail@realistic"]
    from kairos_gym.agents.checkpoint import load_policy

    best = json.loads((tmp_path / "best" / "eval.json").read_text())
    actor = load_policy(tmp_path / "best")  # the weights and statistics of the best evaluation
    scores = []
    for c in cases:  # recomputed independently: anchors, the actor's run, the normalisation
        nd = D.run_reference(c, "no-deflect")["slo_attainment"]
        ref = D.run_reference(c, "kairos-exact")["slo_attainment"]
        x = D.run_actor(actor, c)["slo_attainment"]
        got = best["cases"][c.label]
        assert (got["no_deflect"], got["reference"], got["slo_attainment"]) == (nd, ref, x)
        scores.append(None if ref - nd < 0.01 else (x - nd) / (ref - nd))
    kept = [s for s in scores if s is not None]
    assert kept, "no case with headroom: the test would not check the normalisation"
    assert best["normalized_score"] == pytest.approx(float(np.mean(kept)))
    assert meta["best_eval"]["normalized_score"] == best["normalized_score"] == max(
        h["normalized_score"] for h in hist)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    logged = [e.value for e in acc.Scalars("kairos/normalized_score")]
    assert logged == pytest.approx([h["normalized_score"] for h in hist])
    assert "kairos/kairos_normalized_score_realistic" in acc.Tags()["scalars"]


def test_train_command_reports_the_validation_score_and_refuses_bad_domain_config(tmp_path: Path, capsys) -> None:
    pytest.importorskip("sb3_contrib")
    from kairos_gym.cli.main import main

    cfg = tmp_path / "g.yaml"
    body = ("  n_envs: 1\n  n_timesteps: 128\n  n_steps: 64\n  batch_size: 64\n  n_epochs: 1\n"
            "  policy_kwargs: \"dict(net_arch=dict(pi=[8], vf=[8]))\"\n  checkpoint_freq: 0\n  eval: {freq: 128}\n"
            "  env_kwargs: {families: [azure-code], tiers: [default], tracks: [exact]}\n")
    cfg.write_text(f"{D.DOMAIN_ENV_ID}:\n" + body, encoding="utf-8")
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    best = json.loads((tmp_path / "run" / "best" / "eval.json").read_text())
    assert f"normalized_score {best['normalized_score']:.4g} (kairos " in out
    bad = body.replace("tracks: [exact]", "tracks: [exact, fuzzy]")
    cfg.write_text(f"{D.DOMAIN_ENV_ID}:\n" + bad, encoding="utf-8")
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "run2"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kairos-gym train: error:") and "tracks = 'fuzzy'" in err
    assert not (tmp_path / "run2").exists()  # refused before any work


def test_a_largest_safe_checkpoint_runs_on_the_leaderboards_tasks(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from kairos_gym.agents.checkpoint import load_policy
    from kairos_gym.agents.policy_file_loader import policy_from_checkpoint, run_checked
    from kairos_gym.train.config import parse_config
    from kairos_gym.train.trainer import train

    env = D.DomainEnv(families=["bursty"], largest_safe_action=True)
    plain = D.DomainEnv(families=["bursty"])
    assert env.action_space.n == 13 and plain.action_space.n == 11 and env.observation_space == plain.observation_space
    kw = {"families": ["azure-code"], "tiers": ["default"], "tracks": ["exact"], "largest_safe_action": True}
    cfg = parse_config({D.DOMAIN_ENV_ID: {
        "n_envs": 1, "n_timesteps": 256, "n_steps": 128, "batch_size": 128, "n_epochs": 1, "ent_coef": 0.0,
        "policy_kwargs": "dict(net_arch=dict(pi=[16], vf=[16]))", "env_kwargs": kw, "eval": {"freq": 256},
        "checkpoint_freq": 0}}, source="t.yaml")
    train(cfg, tmp_path, progress=False, command="test")
    actor = load_policy(tmp_path / "best")
    assert actor.action_count == 13
    case = D.validation_cases(D.spec_from_kwargs(kw))[0]
    trained = D.run_actor(actor, case)  # in the training env's layout (LargestSafe offered)
    task_sc = case.instance.scenario(D.task_base("azure-code", "default", "exact"))  # the leaderboard's scenario
    assert not task_sc.deflection.largest_safe_action
    ext = policy_from_checkpoint(str(tmp_path / "best"))
    summary = run_checked(ext, task_sc, case.instance.seed)
    assert {k: summary[k] for k in trained} == trained  # the same decisions through the leaderboard's path


def test_the_same_seed_trains_the_same_run(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from kairos_gym.train.config import parse_config
    from kairos_gym.train.trainer import train

    def run(out: Path, seed: int) -> list[dict]:
        cfg = parse_config({D.DOMAIN_ENV_ID: {
            "n_envs": 2, "n_timesteps": 256, "n_steps": 64, "batch_size": 64, "n_epochs": 1, "seed": seed,
            "policy_kwargs": "dict(net_arch=dict(pi=[8], vf=[8]))", "checkpoint_freq": 0, "eval": {"freq": 256},
            "env_kwargs": {"families": ["azure-code", "kv-pressure"], "tiers": ["strict"], "tracks": ["realistic"]}}},
            source="t.yaml")
        train(cfg, out, progress=False, command="test")
        return [json.loads(line) for line in (out / "eval_history.jsonl").read_text().splitlines()]

    a, b, c = run(tmp_path / "a", 3), run(tmp_path / "b", 3), run(tmp_path / "c", 4)
    assert a == b
    assert a[-1]["cases"] != c[-1]["cases"]


def test_the_domain_env_trains_on_every_backend_native_by_default():
    """The native vector env of the domain (train/domain_vec.py: a new scenario per env and episode) is the domain
    config's default backend; dummy and subproc stay; anything else is one ConfigError naming the field."""
    from kairos_gym.train.config import parse_config
    from kairos_gym.train.domain import DOMAIN_ENV_ID

    from kairos_gym.errors import ConfigError

    body = {"algo": "maskable_ppo", "n_envs": 1, "n_timesteps": 64, "n_steps": 32, "batch_size": 32}
    assert parse_config({DOMAIN_ENV_ID: body}).vec_backend == "native"
    for backend in ("native", "dummy", "subproc"):
        assert parse_config({DOMAIN_ENV_ID: {**body, "vec_backend": backend}}).vec_backend == backend
    with pytest.raises(ConfigError) as e:
        parse_config({DOMAIN_ENV_ID: {**body, "vec_backend": "ray"}})
    assert e.value.field == "vec_backend"


def test_the_default_domain_leaves_the_fault_families_out_and_they_train_alone():
    """fault-shift's observation has the availability group (62 features, not 57): the default domain is every family
    without faults; fault-shift alone is a domain of its own; mixed with another layout it is one ConfigError."""
    assert D.default_families() == tuple(f for f in D.family_names() if f != "fault-shift")
    assert "fault-shift" in D.family_names()
    assert D.DomainSpec.parse().families == D.default_families()
    env = D.DomainEnv(families=["fault-shift"])
    obs, _ = env.reset(seed=0)
    assert obs.shape == (62,)
    with pytest.raises(ConfigError) as e:
        D.DomainEnv(families=["bursty", "fault-shift"])
    assert e.value.field == "families" and "62" in str(e.value)


def test_the_v2_domain_draws_seen_families_only_on_warm_instances() -> None:
    import numpy as np
    from kairos_gym.train.domain import DomainSpec, draw, validation_cases

    from kairos_gym.benchmark.suite_v2 import BURN_IN, SCORED
    from kairos_gym.errors import ConfigError

    spec = DomainSpec.parse(suite="v2")
    assert spec.families == ("bursty", "regime-shift", "decode-bound", "kv-pressure")  # fault-shift: its own layout
    assert spec.tiers == ("default",)
    rng = np.random.default_rng(3)
    for _ in range(8):
        d = draw(spec, rng)
        sc = d.scenario()
        assert d.suite == "v2" and d.instance.seed >= 10_000
        assert sc.slo.burn_in_requests == BURN_IN and sc.workload.num_requests == BURN_IN + SCORED
    assert {c.instance.seed for c in validation_cases(spec)} == {1004}
    for bad in ({"families": ["arxiv-summ"]}, {"tiers": ["strict"]}, {"suite": "v3"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            DomainSpec.parse(**{"suite": "v2", **bad})
