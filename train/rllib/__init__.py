"""RLlib support (docs/scale-out.md): a registered env creator whose observation carries the action mask, a
masking RLModule for PPO on Ray's new API stack, and ``kairos-gym train --backend rllib``.

Nothing here imports Ray at ``import kairos_gym.train.rllib``; the submodules that need it (:mod:`.module`,
:mod:`.train`) import it themselves, and :mod:`.env` needs only gymnasium.
"""

from __future__ import annotations

from kairos_gym.train.rllib.env import ENV_NAME, MaskedObservation, make_masked_env

__all__ = ["ENV_NAME", "MaskedObservation", "make_masked_env"]
