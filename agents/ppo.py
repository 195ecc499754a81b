"""PPOAgent: a trained PPO / MaskablePPO actor behind the policy interface.

By default it loads the project's safe checkpoint format (:mod:`kairos_gym.agents.checkpoint`:
``policy.json`` + ``policy.npz`` + ``normalize.json``; nothing unpickled, no Stable-Baselines3 import)
and acts with its :class:`GreedyActor`. A Stable-Baselines3 zip (and the ``vecnormalize.pkl`` beside it)
loads only with ``trust_checkpoint=True``: such files carry pickles, and unpickling runs any code stored
in them.

``predict(observation, state, episode_start, deterministic, action_masks)`` returns ``(action, state)``
as SB3 does: the masked argmax of the actor's logits (``deterministic=True``), or a draw from their
softmax with the policy's own generator (``deterministic=False``; a trusted SB3 model samples as SB3
does). A ``maskable_dqn`` checkpoint holds a Q-network: its outputs are values, not logits, so it acts greedily
only (``deterministic=False`` is refused). Observations are normalised with the checkpoint's statistics first.

``decide(ctx)`` (the simulator's policy hook) needs the environment's observation encoder and action
decoder. Given a ``scenario``, PPOAgent builds them from ``kairos_gym.env`` exactly as
:class:`kairos_gym.env.KairosEnv` does (``ObservationLayout(...).encode``, flat or dict after the model's
observation space; ``ActionLayout(...).decision`` and ``.mask``), so a model trained in the environment
runs through :func:`kairos_gym.agents.runner.run_policy` like any baseline. They can also be passed explicitly:
``obs_builder(ctx) -> observation``, ``action_decoder(ctx, action) -> Decision`` and optionally
``mask_builder(ctx) -> mask``. Without either, ``decide`` raises NotImplementedError. A model whose action
count is that of the scenario with ``deflection.largest_safe_action: true`` (1 + D x (K + 1); trained so by
``kairos_train/KairosGeneral-v0``, train/domain.py) gets that action layout on a scenario without it: the same
observation, plus the LargestSafe deflection per decode node (which Kairos and the ``-ls`` baselines use anyway).

A safe checkpoint whose ``policy.json`` has ``inputs: observation+kairos`` (:mod:`kairos_gym.agents.inputs`) gets,
after the observation, the one-hot of the action a :class:`~kairos_gym.agents.kairos.Kairos` built for the same
scenario (so on its information track) takes on the same context (``kairos_feature``; only a feature: the agent's
own masked action is applied). A checkpoint without the key is ``observation`` (the observation alone, as before);
an unknown ``inputs`` value is refused when the checkpoint loads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from kairos_gym.agents.base import BasePolicy
from kairos_gym.agents.checkpoint import GreedyActor, load_policy, require_trust, resolve_checkpoint
from kairos_gym.agents.inputs import KairosFeature, extra_size
from kairos_gym.agents.kairos import build_model

from kairos_gym.errors import ConfigError
from kairos_gym.scenario import ScenarioConfig, load_scenario
from kairos_gym.sim.hook import Decision, DecisionContext

__all__ = ["DEFAULT_CHECKPOINT", "GENERAL_CHECKPOINT", "DistilledOracle", "GreedyActor", "PPOAgent"]

ALGOS = ("auto", "maskable_ppo", "ppo")
ALGO_CLASS = {"maskable_ppo": "MaskablePPO", "ppo": "PPO", "maskable_dqn": "MaskableDQN"}
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "ppo-kairos-v0" / "policy.json"
"""The shipped agent (agents/checkpoints/ppo-kairos-v0/README.md, safe format): used when no path is given."""
GENERAL_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "distilled-oracle" / "policy.json"
"""The general agent distilled from the Oracle (agents/checkpoints/distilled-oracle/README.md): ``distilled-oracle``."""


class PPOAgent(BasePolicy):
    """A trained PPO / MaskablePPO actor (safe checkpoint; an SB3 zip only with ``trust_checkpoint``)."""

    name = "ppo"

    def __init__(
        self,
        scenario: Any = None,
        seed: int | None = 0,
        path: str | Path | None = None,
        algo: str = "auto",
        device: str = "cpu",
        obs_builder: Callable[[DecisionContext], Any] | None = None,
        action_decoder: Callable[[DecisionContext, Any], Decision] | None = None,
        mask_builder: Callable[[DecisionContext], Any] | None = None,
        oracle: bool = False,
        model: Any = None,
        trust_checkpoint: bool = False,
    ) -> None:
        super().__init__(seed)
        where = f"policy {self.name}"
        if algo not in ALGOS:
            raise ConfigError(where, "algo", algo, "one of " + ", ".join(ALGOS))
        if not isinstance(trust_checkpoint, bool):
            raise ConfigError(where, "trust_checkpoint", trust_checkpoint, "true or false")
        self.model: Any = None  # a Stable-Baselines3 model: only from a trusted zip or ``model=``
        self.obs_normalizer: Any = None  # its VecNormalize (trusted zip only)
        self.actor: GreedyActor | None = None
        if model is not None:
            self.model = model
        else:
            if path is None and DEFAULT_CHECKPOINT.is_file():
                path = DEFAULT_CHECKPOINT
            if path is None:
                raise ConfigError(where, "path", None, "the path of a checkpoint folder (policy.json)")
            kind, target = resolve_checkpoint(path, where)
            if kind == "safe":
                self.actor = load_policy(target)
                if algo not in ("auto", self.actor.algo):
                    raise ConfigError(where, "algo", algo, f"auto or {self.actor.algo} (the checkpoint's policy.json)")
            else:
                require_trust(target, trust_checkpoint, where)
                from kairos_gym.agents.sb3_checkpoint import load_model

                self.model, self.obs_normalizer = load_model(target, device, algo=algo, trust_checkpoint=True)
        if self.model is not None:
            from kairos_gym.agents.sb3_checkpoint import actor_from_sb3

            try:  # the fast greedy path, when the model is an MLP on flat observations
                self.actor = actor_from_sb3(self.model, self.obs_normalizer)
            except ConfigError:
                self.actor = None
            self.maskable = type(self.model).__name__ == "MaskablePPO"
        else:
            assert self.actor is not None
            self.maskable = self.actor.maskable
        self.path = None if path is None else str(path)
        self.oracle_obs = bool(oracle)
        self.env_adapter_error: str | None = None
        self.kairos_feature: KairosFeature | None = None  # inputs observation+kairos: the feature's Kairos
        if obs_builder is None and action_decoder is None and scenario is not None:
            obs_builder, action_decoder, mask_builder = self._env_adapters(load_scenario(scenario), mask_builder)
        self.obs_builder = obs_builder
        self.action_decoder = action_decoder
        self.mask_builder = mask_builder

    def _spaces(self) -> tuple[bool, tuple[int, ...] | None, int | None]:
        """(dict observation?, flat observation shape, action count) of the model."""
        if self.model is None:
            assert self.actor is not None
            return False, (self.actor.observation_size,), self.actor.action_count
        space = getattr(self.model, "observation_space", None)
        shape = getattr(space, "shape", None)
        n = getattr(getattr(self.model, "action_space", None), "n", None)
        return type(space).__name__ == "Dict", None if shape is None else tuple(shape), None if n is None else int(n)

    def _env_adapters(self, sc: ScenarioConfig, mask_builder: Any) -> tuple[Any, Any, Any]:
        """Observation encoder, action decoder and mask of the Gymnasium env for scenario ``sc``."""
        try:
            from kairos_gym.env.actions import ActionLayout
            from kairos_gym.env.observation import ObservationLayout

            model = build_model(sc)
            obs_layout = ObservationLayout(sc, oracle=self.oracle_obs, max_context=model.model.max_context)
            act_layout = ActionLayout(sc)
        except Exception as e:  # the env package is optional for the baselines: report, do not fail
            self.env_adapter_error = f"{type(e).__name__}: {e}"
            return None, None, mask_builder
        dict_obs, shape, n_actions = self._spaces()
        inputs = self.actor.inputs if self.model is None and self.actor is not None else "observation"
        if n_actions is not None and n_actions != act_layout.n and not act_layout.largest_safe:
            # a model trained with deflection.largest_safe_action (train/domain.py): the same observation, one
            # more action per decode node (deflect with the LargestSafe schedule, as Kairos does); recognised by
            # its action count, 1 + D x (K + 1), which no layout without the action has
            ls_layout = ActionLayout(sc.with_overrides({"deflection": {"largest_safe_action": True}}))
            if n_actions == ls_layout.n:
                act_layout = ls_layout
        # the checkpoint's input layout (policy.json inputs): the observation, then observation+kairos's one-hot
        extra = extra_size(inputs, act_layout.n)
        if shape is not None and extra:
            shape = (shape[0] - extra,)
        if not dict_obs and shape is not None and shape != (obs_layout.size,) and sc.faults.enabled:
            # a model trained without faults on a fault scenario: its observation has no availability group (the
            # mask still closes a down decode node's actions, and the prefill path never picks a down node)
            plain = ScenarioConfig.from_dict({k: v for k, v in sc.to_dict().items() if k != "faults"},
                                             f"scenario {sc.name!r} without faults")
            plain_layout = ObservationLayout(plain, oracle=self.oracle_obs, max_context=model.model.max_context)
            if shape == (plain_layout.size,):
                obs_layout = plain_layout
        if not dict_obs and shape is not None and shape != (obs_layout.size,):
            raise ConfigError(f"policy {self.name}", "path", self.path,
                              f"a model trained on this scenario's observation ({obs_layout.size} features; the model "
                              f"expects shape {shape}" + (f" plus {extra} for its inputs {inputs})" if extra else ")"))
        if n_actions is not None and n_actions != act_layout.n:
            raise ConfigError(f"policy {self.name}", "path", self.path,
                              f"a model trained on this scenario's action space ({act_layout.n} actions; the model "
                              f"has {n_actions})")
        buf = np.zeros(obs_layout.size, dtype=np.float32)
        mask = np.zeros(act_layout.n, dtype=np.int8)
        # observation+kairos: Kairos built for the scenario as given (its track; on a fault scenario, the faults too),
        # deciding on the very context the policy sees; refused here if the layout lacks its LargestSafe action
        self.kairos_feature = KairosFeature(sc, act_layout) if inputs == "observation+kairos" else None
        feature = self.kairos_feature

        def obs_builder(ctx: DecisionContext) -> Any:
            flat = obs_layout.encode(ctx, buf)
            if feature is not None:
                return np.concatenate([flat, feature.encode(ctx)])
            return obs_layout.to_dict(flat) if dict_obs else flat.copy()

        def action_decoder(ctx: DecisionContext, action: Any) -> Decision:
            return act_layout.decision(int(np.asarray(action).reshape(-1)[0]))

        def masks(ctx: DecisionContext) -> Any:
            return act_layout.mask(ctx, mask).astype(bool)

        return obs_builder, action_decoder, (mask_builder if mask_builder is not None else masks)

    def _predict_observation(self, observation: Any, state: Any, episode_start: Any, deterministic: bool,
                             action_masks: Any) -> tuple[Any, Any]:
        """The model's action for an environment observation."""
        if isinstance(observation, np.ndarray) and self.actor is not None and (deterministic or self.model is None):
            if not deterministic and self.actor.algo == "maskable_dqn":
                raise ConfigError(f"policy {self.name}", "deterministic", False, "True for a maskable_dqn checkpoint "
                                  "(a Q-network's outputs are values, not an action distribution to sample)")
            if deterministic:
                return np.int64(self.actor.act(observation, action_masks)), state
            return np.int64(self.actor.sample(observation, action_masks, self.rng)), state
        if self.model is None:
            raise ConfigError(f"policy {self.name}", "observation", type(observation).__name__,
                              "a flat numpy observation (the safe checkpoint format is an MLP on flat observations)")
        if self.obs_normalizer is not None and getattr(self.obs_normalizer, "norm_obs", False):
            observation = self.obs_normalizer.normalize_obs(observation)
        if self.maskable:
            return self.model.predict(observation, state=state, episode_start=episode_start,
                                      deterministic=deterministic, action_masks=action_masks)
        return self.model.predict(observation, state=state, episode_start=episode_start, deterministic=deterministic)

    def _decide(self, ctx: DecisionContext) -> Decision:
        if self.obs_builder is None or self.action_decoder is None:
            why = f" (kairos_gym.env adapters unavailable: {self.env_adapter_error})" if self.env_adapter_error else ""
            raise NotImplementedError(
                "PPOAgent.decide(ctx) needs the Gymnasium environment's observation encoder and action decoder"
                f"{why}: build the agent with a scenario (make_policy('ppo', scenario, path=...)), or pass "
                "obs_builder=(ctx -> observation), action_decoder=(ctx, action -> Decision) and optionally "
                "mask_builder=(ctx -> mask), or run the agent inside the environment with "
                "predict(observation, action_masks=...)."
            )
        obs = self.obs_builder(ctx)
        masks = self.mask_builder(ctx) if self.mask_builder is not None else None
        action, _ = self.predict(obs, deterministic=True, action_masks=masks)
        return self.action_decoder(ctx, action)

    def describe(self) -> dict[str, Any]:
        algo = type(self.model).__name__ if self.model is not None else ALGO_CLASS[self.actor.algo]  # type: ignore[union-attr]
        return {**super().describe(), "path": self.path, "algo": algo}


class DistilledOracle(PPOAgent):
    """``distilled-oracle``: :class:`PPOAgent` with the general agent's checkpoint (:data:`GENERAL_CHECKPOINT`: the
    rollout Oracle distilled into a 128x128 Tanh MLP over the benchmark's train split that also reads the one-hot
    of Kairos's action on the same track, train/distill.py, configs/ppo/distill-kairos-label.yaml) as its
    default ``path``; everything else is PPOAgent's (safe format, 13 actions: the LargestSafe deflection is
    offered on any task)."""

    name = "distilled-oracle"

    def __init__(self, scenario: Any = None, seed: int | None = 0, path: str | Path | None = None,
                 algo: str = "auto", device: str = "cpu", obs_builder: Any = None, action_decoder: Any = None,
                 mask_builder: Any = None, oracle: bool = False, model: Any = None,
                 trust_checkpoint: bool = False) -> None:
        super().__init__(scenario, seed, GENERAL_CHECKPOINT if path is None and model is None else path, algo,
                         device, obs_builder, action_decoder, mask_builder, oracle, model, trust_checkpoint)
