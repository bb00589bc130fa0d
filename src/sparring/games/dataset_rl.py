"""Dataset RL: plain GRPO on programming problems with a verifiable reward (no opponent).

Covers: the `DatasetRL` game. One role, `solver`, answers a problem of the bundled set (the
train part of a deterministic split, `problems.split` on the ids with the seed); each problem
is played `group_size` times as one GRPO group. Reward: the code duel's honest answerer credit
(`code_duel.score_answers`: the difficulty-weighted share of the tests no trivial solution
passes; code that does not parse, or whose results equal a trivial solution's, earns 0; a
sandbox failure gives no reward at all, not 0). Held out: the split's other part, or HumanEval
(option `humaneval_eval`). Also the pieces proposer_solver and red_blue reuse: `HonestGrader`
(a problem's trivial results computed once, on first use, then its answers' credit) and
`SolveEpisode` (one answer to one problem, graded).
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

from sparring import problems, rewards
from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.errors import SparringError
from sparring.problems import prompts
from sparring.rewards import code_duel


class HonestGrader:
    """Honest credit of answers. A problem's trivial results (sparring.problems.trivial) are
    computed on
    its first answer and kept: running the whole family on every problem at setup costs ~10 s
    of sandbox on 2 cores. Thread-safe: episodes call it through `asyncio.to_thread`."""

    def __init__(self, sandbox: Any, recent: int = 8) -> None:
        self.sandbox = sandbox
        self.cache = code_duel.ResultCache()  # GRPO groups repeat answers: run each pair once
        self.recent: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=recent))
        self._graded: dict[str, problems.Problem] = {}
        self._lock = threading.Lock()

    def with_trivial(self, problem: problems.Problem) -> problems.Problem | None:
        """`problem` with `trivial_passes` filled; None when the sandbox failed."""
        known = self._graded.get(problem.id)  # the usual case: no waiting on another's run
        if known is not None:
            return known
        with self._lock:  # one computation per problem, even for a group arriving at once
            if problem.id not in self._graded:
                try:
                    (done,) = problems.compute_trivial_passes([problem], self.sandbox)
                except SparringError:
                    return None
                self._graded[problem.id] = done
            return self._graded[problem.id]

    def grade(self, problem: problems.Problem, completion: str) -> rewards.AnswererCredit | None:
        graded = self.with_trivial(problem)
        if graded is None:
            return None
        (credit,) = code_duel.score_answers([graded], [completion], self.sandbox, self.cache)
        if credit.reward is not None:
            self.recent[problem.id].append(credit.reward)
        return credit


def solve_prompt(problem: problems.Problem) -> str:
    """The answerer's task (its system prompt is the role's)."""
    return prompts.answerer_messages(problem)[-1]["content"]


class SolveEpisode(Episode):
    """The `solver` answers one problem; extras: its credit (None: no signal) and why."""

    def __init__(self, grader: HonestGrader) -> None:
        self.grader = grader
        self.rubric = Rubric.of(honest_credit)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        answer = await self.act(arena, state, "solver", solve_prompt(artifact))
        credit = await asyncio.to_thread(self.grader.grade, artifact, answer)
        state.data["problem_id"] = artifact.id
        state.data["credit"] = None if credit is None else credit.reward
        if credit is not None:
            state.data.update(parsed=credit.parsed, solved=credit.strict, trivial=credit.trivial)
        return state


def honest_credit(rollout: Rollout, arena: Arena) -> dict[str, float]:
    credit = rollout.extras.get("credit")
    return {} if credit is None else {"solver": credit}


def solve_summary(extras: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Solve rate (every test passes), mean honest credit, parse rate, share of trivial code."""
    graded = [e for e in extras if e.get("credit") is not None]
    n = len(graded) or 1
    return {
        "solve_rate": round(sum(bool(e["solved"]) for e in graded) / n, 4),
        "honest_credit": round(sum(e["credit"] for e in graded) / n, 4),
        "parse_rate": round(sum(bool(e["parsed"]) for e in graded) / n, 4),
        "trivial_share": round(sum(bool(e["trivial"]) for e in graded) / n, 4),
    }


SOLVER = Role(
    "solver", prompts.ANSWERER_SYSTEM, temperature=1.0, max_tokens=192, stop_at_fence=True
)


class DatasetRL(Game):
    name = "dataset_rl"
    description = "plain GRPO: a solver answers dataset problems, paid by honest sandbox credit"
    roles = (SOLVER,)
    episode = "solve"
    needs_sandbox = True
    option_names = (
        ("eval_fraction", 0.1),  # share of the bundled set held out
        ("max_problems", 0.0),  # training problems kept (0: all)
        ("humaneval_eval", 0.0),  # 1: hold out HumanEval instead of the split's part
        ("humaneval_limit", 0.0),  # HumanEval problems loaded (0: all 164)
    )

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, SolveEpisode(HonestGrader(self.sandbox)))
        bundled = problems.load_bundled()
        train, held_out = problems.split(bundled, self.option("eval_fraction"), self.seed)
        arena.store.extend(TRAIN_POOL, train[: int(self.option("max_problems")) or None])
        if self.option("humaneval_eval"):
            held_out = problems.load_humaneval(int(self.option("humaneval_limit")))
        arena.store.extend(EVAL_POOL, held_out)

    def summarize(self, rollouts: Sequence[Rollout]) -> dict[str, Any]:
        return solve_summary([r.extras for r in rollouts])
