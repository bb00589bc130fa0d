"""`sparring.cluster.entry` with the answerer's reward replaced by the completion's length.

A random tiny model never writes passing code, so the real reward is 0 everywhere and GRPO
would not move the weights; a length reward has variance, so the ranks' gradients differ and
data-parallel training has something to keep in sync. Run as a script (torchrun or python)
with the entry point's arguments. It keeps the real reward function's interface (`rewards`,
`history`, `by_problem`), which the answerer phase reads after training. Used by
tests/integration/test_cluster_distributed.py.
"""

from __future__ import annotations

import sys
from collections import defaultdict


class LengthReward:
    __name__ = "length_reward"

    def __init__(self, sandbox, rewards_cfg, coach=None, reserve=None):
        # the real constructor's keywords: the answerer phase always passes coach and reserve
        self.rewards: list[float] = []
        self.history: list[dict[str, float]] = []
        # the answerer phase reads which problems the trainer sampled from the reward function
        self.by_problem: dict[str, list[float]] = defaultdict(list)

    def __call__(self, prompts, completions, problem_id=None, **kwargs):
        out = [float(len(c[-1]["content"] if isinstance(c, list) else c)) for c in completions]
        self.rewards.extend(out)
        for pid, value in zip(problem_id or [], out, strict=False):
            self.by_problem[pid].append(value)
        return out


if __name__ == "__main__":
    from sparring.cluster import entry
    from sparring.phases import answerer
    from sparring.rewards import code_duel

    # both names: the phase binds the class at import (`from ... import AnswererRewardFn`)
    code_duel.AnswererRewardFn = answerer.AnswererRewardFn = LengthReward
    sys.exit(entry.main(sys.argv[1:]))
