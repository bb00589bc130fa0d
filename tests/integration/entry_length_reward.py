"""`sparring.cluster.entry` with the answerer's reward replaced by the completion's length.

A random tiny model never writes passing code, so the real reward is 0 everywhere and GRPO
would not move the weights; a length reward has variance, so the ranks' gradients differ and
data-parallel training has something to keep in sync. Run as a script (torchrun or python)
with the entry point's arguments. Used by tests/integration/test_cluster_distributed.py.
"""

from __future__ import annotations

import sys


class LengthReward:
    __name__ = "length_reward"

    def __init__(self, sandbox, rewards_cfg):
        self.rewards: list[float] = []
        self.history: list[dict[str, float]] = []

    def __call__(self, prompts, completions, **kwargs):
        out = [float(len(c[-1]["content"] if isinstance(c, list) else c)) for c in completions]
        self.rewards.extend(out)
        return out


if __name__ == "__main__":
    from sparring.cluster import entry
    from sparring.rewards import code_duel

    code_duel.AnswererRewardFn = LengthReward
    sys.exit(entry.main(sys.argv[1:]))
