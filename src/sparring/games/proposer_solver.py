"""Proposer-solver: the proposer writes new problems, solvers attempt them; the proposer is paid
for problems at the solvers' frontier, and those problems become the solvers' curriculum.

Covers: the `ProposerSolver` game. A `propose` episode shows the proposer a seed problem (an
easy one of the bundled set's train split: the median easy problem is ~200 tokens as JSON) and
parses its answer (prompts.extract_problem) into a Problem. Gate: the signature names a
function, the proposal is not a copy of its seed, the reference passes all of its own tests in
the sandbox, and some test fails every trivial solution (a proposal whose every test some
trivial solution passes is no problem at all). A valid proposal spawns `solvers` child `solve`
episodes (dataset_rl.SolveEpisode: honest credit on the proposal's tests, trivial code earns
0), which GRPO credit compares only with their siblings. Proposer: `goldilocks_reward` of the
solvers' mean credit (1 at `target`, 0 when all or none solve), 0 for an invalid proposal, no
reward when the sandbox failed. A proposal from a training seed that earns at least `band`
joins the `proposed` pool; each step also replays `replay` of them to a group of `solvers`,
drawn by weight = goldilocks of the solvers' recent credit on it (mastered and hopeless
problems fade). Held out: proposals on held-out seeds (never added to the pool).
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sparring import problems, rewards
from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeRequest, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.games.dataset_rl import SOLVER, HonestGrader, SolveEpisode
from sparring.problems import prompts
from sparring.problems.programs import extract_code

PROPOSED_POOL = "proposed"


def as_problem(text: str, seed: problems.Problem) -> tuple[problems.Problem | None, str]:
    """(the proposed Problem, "") or (None, why it is not one) before running anything."""
    data = prompts.extract_problem(text)
    if data is None:
        return None, "unparsed"
    name = problems.function_name_of(data["function_signature"])
    defined = bool(name) and extract_code(data["reference_solution"], name) is not None
    if not defined or not data["baseline_tests"]:
        return None, "no function or tests"
    # the prompt shows the seed as JSON: echoing it back (or renaming it) is not a new problem
    if rewards.jaccard(data["description"], seed.description) >= 0.8 or (
        rewards.jaccard(data["reference_solution"], seed.reference_solution) >= 0.9
    ):
        return None, "copy of the seed"
    key = hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
    return problems.Problem(id=f"proposed-{key}", tags=["proposed", seed.id], **data), ""


class ProposeEpisode(Episode):
    def __init__(self, game: ProposerSolver, grader: HonestGrader) -> None:
        self.game, self.grader = game, grader
        self.rubric = Rubric.of(self.goldilocks)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        prompt = prompts.proposer_messages(artifact)[-1]["content"]
        proposal, why = as_problem(await self.act(arena, state, "proposer", prompt), artifact)
        if proposal is not None:
            why = await asyncio.to_thread(self.gate, proposal)
        state.data.update(valid=not why, why=why, pass_rate=None)
        if why:
            return state
        solves = [EpisodeRequest("solve", proposal) for _ in range(self.game.solvers)]
        state.children.extend(await arena.generate_rollouts(solves))
        credits = [child.extras.get("credit") for child in state.children]
        if any(c is None for c in credits):
            return state  # a solver's sandbox failed: no signal for the proposer
        state.data["pass_rate"] = sum(credits) / len(credits)
        reward = rewards.goldilocks_reward(state.data["pass_rate"], self.game.target)
        self.game.add_to_pool(arena, artifact, proposal, reward)
        return state

    def gate(self, proposal: problems.Problem) -> str:
        """Empty for a valid proposal, else why not ("sandbox failure": no signal)."""
        report = self.grader.sandbox.run(proposal.reference_solution, proposal.baseline_tests)
        if report.infra_error:
            return "sandbox failure"
        if report.pass_rate != 1.0:
            return "reference fails its tests"
        graded = self.grader.with_trivial(proposal)
        if graded is None:
            return "sandbox failure"
        mask, _ = rewards.credit_view(len(proposal.baseline_tests), graded.trivial_passes)
        return "" if any(mask) else "trivial code passes every test"

    def goldilocks(self, rollout: Rollout, arena: Arena) -> dict[str, float]:
        extras = rollout.extras
        if not extras["valid"]:
            return {} if extras["why"] == "sandbox failure" else {"proposer": 0.0}
        if extras["pass_rate"] is None:
            return {}
        return {"proposer": rewards.goldilocks_reward(extras["pass_rate"], self.game.target)}


class ProposerSolver(Game):
    name = "proposer_solver"
    description = "a proposer writes problems for sandbox-verified solvers; goldilocks reward"
    # the proposer writes a ```json block, which the fence stop (python blocks) does not end
    roles = (Role("proposer", prompts.PROPOSER_SYSTEM, temperature=1.0, max_tokens=256), SOLVER)
    episode = "propose"
    needs_sandbox = True
    option_names = (
        ("solvers", 4.0),  # solver attempts per proposal (and per replayed problem)
        ("target", 0.5),  # the solvers' pass rate the proposer aims at
        ("band", 0.5),  # goldilocks reward a proposal needs to join the solvers' pool
        ("replay", 1.0),  # pooled proposals replayed to the solvers per step
        ("eval_fraction", 0.1),  # share of the bundled set held out
    )

    def setup(self, arena: Arena) -> None:
        self.solvers = max(1, int(self.option("solvers")))
        self.target, self.band = self.option("target"), self.option("band")
        self.grader = HonestGrader(self.sandbox)
        arena.add_episode(self.episode, ProposeEpisode(self, self.grader))
        arena.add_episode("solve", SolveEpisode(self.grader))
        easy = [p for p in problems.load_bundled() if p.difficulty == "easy"]
        train, held_out = problems.split(easy, self.option("eval_fraction"), self.seed)
        self.train_ids = {p.id for p in train}
        arena.store.extend(TRAIN_POOL, train)
        arena.store.extend(EVAL_POOL, held_out)

    def add_to_pool(
        self, arena: Arena, seed: problems.Problem, proposal: problems.Problem, reward: float
    ) -> None:
        """A proposal at the solvers' frontier joins their pool, once (a group often repeats
        one); proposals on held-out seeds never reach training."""
        if reward < self.band or seed.id not in self.train_ids:
            return
        if proposal.id not in {p.id for p in arena.store.items(PROPOSED_POOL)}:
            arena.store.add(PROPOSED_POOL, proposal, weight=reward)

    def requests(self, arena: Arena, episodes: int, group_size: int) -> list[EpisodeRequest]:
        out = super().requests(arena, episodes, group_size)
        replay = int(self.option("replay"))
        arena.store.reweight(PROPOSED_POOL, self._frontier_weight)
        pooled = arena.store.items(PROPOSED_POOL)
        # every pooled problem mastered or hopeless: replaying one would teach nothing
        if replay <= 0 or not any(self._frontier_weight(p, 1.0) > 0 for p in pooled):
            return out
        for j, problem in enumerate(arena.store.sample(PROPOSED_POOL, replay)):
            out += [EpisodeRequest("solve", problem, group=("replay", j))] * self.solvers
        return out

    def _frontier_weight(self, problem: problems.Problem, weight: float) -> float:
        recent = self.grader.recent.get(problem.id)
        if not recent:
            return weight
        return rewards.goldilocks_reward(sum(recent) / len(recent), self.target) or 0.0

    def summarize(self, rollouts: Sequence[Rollout]) -> dict[str, Any]:
        proposals = [r.extras for r in rollouts if r.episode == self.episode]
        rates = [e["pass_rate"] for e in proposals if e["pass_rate"] is not None]
        n = len(proposals) or 1
        in_band = [r for r in rates if rewards.goldilocks_reward(r, self.target) >= self.band]
        return {
            "valid_proposal_share": round(sum(e["valid"] for e in proposals) / n, 4),
            "solver_pass_rate": round(sum(rates) / len(rates), 4) if rates else 0.0,
            "in_band_share": round(len(in_band) / n, 4),
        }
