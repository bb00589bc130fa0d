"""Red-blue: a defender writes a solution, an attacker looks for an input that breaks it; zero-sum.

Covers: the `RedBlue` game on the bundled problems. The defender (blue) writes the function; the
attacker (red) sees the problem and that code and writes one call `f(...)` with literal
arguments (read with `ast.literal_eval`, never run in this process). An attack is valid when its
arguments have the kinds of some baseline test's call (an int where a list belongs is outside
the problem) and the reference, run on it in the sandbox, returns a value with a literal
spelling (an input on which the reference raises or times out is invalid: no win). It succeeds
when the defender disagrees: `assert f(args) == <the reference's value>` fails on the
defender's code (wrong value, exception, timeout). Rewards: attacker +1 / defender -1 when it
succeeds, -1 / +1 otherwise (an invalid attack included). Forfeit: a defender whose code earns
no honest credit on the problem's own tests (does not parse, trivial code, no discriminating
test passed: dataset_rl.HonestGrader) gets -1; the attacker is not called and gets no reward, as
no attack was needed and a 0 would enter its GRPO group as if it had played. A sandbox failure
gives no reward to anyone.
Does not cover: anything outside the episode (sparring.engine). Pure.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Sequence
from typing import Any

from sparring import problems
from sparring.engine.arena import Arena
from sparring.engine.core import Episode, EpisodeState, Role, Rollout, Rubric
from sparring.engine.game import EVAL_POOL, TRAIN_POOL, Game
from sparring.games.dataset_rl import HonestGrader, solve_prompt
from sparring.problems import prompts
from sparring.problems.programs import extract_code, fenced_blocks
from sparring.problems.trivial import argument_count
from sparring.sandbox.oracle import literal_source

MAX_CALL_CHARS = 300  # bigger inputs attack the sandbox's limits, not the defender's logic
ATTACKER_SYSTEM = "You are a tester. You find inputs on which buggy functions give wrong answers."


def literal_call(text: str, name: str) -> ast.Call | None:
    """The first call `name(...)` with only literal positional arguments in the completion's
    code (its python blocks, else the whole text); None when there is none."""
    blocks = [body for lang, body in fenced_blocks(text) if lang in ("", "python", "py")]
    for source in [*blocks, text]:
        try:
            tree = ast.parse(source.strip())
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if _calls(node, name) and not node.keywords and arguments(node) is not None:
                return node
    return None


def _calls(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def arguments(call: ast.Call) -> tuple | None:
    try:
        return tuple(ast.literal_eval(arg) for arg in call.args)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def kinds(args: tuple) -> tuple[str, ...]:
    """Type names of the arguments, ints and floats alike (a test's 3 may stand for 3.0)."""
    return tuple("number" if type(a) in (int, float) else type(a).__name__ for a in args)


def in_domain(problem: problems.Problem, args: tuple) -> bool:
    """The arguments have the kinds of some baseline test's call (or, with no such call, the
    signature's number of parameters)."""
    calls = [literal_call(test, problem.function_name) for test in problem.baseline_tests]
    known = {kinds(arguments(call)) for call in calls if call is not None}
    if not known:
        return len(args) == argument_count(problem.function_signature)
    return kinds(args) in known


class DuelEpisode(Episode):
    def __init__(self, grader: HonestGrader) -> None:
        self.grader = grader
        self.rubric = Rubric.of(zero_sum)

    async def rollout(self, arena: Arena, artifact: Any, state: EpisodeState) -> EpisodeState:
        name = artifact.function_name
        answer = await self.act(arena, state, "defender", solve_prompt(artifact))
        credit = await asyncio.to_thread(self.grader.grade, artifact, answer)
        code = extract_code(answer, name)
        if credit is None or credit.reward is None:
            state.data.update(outcome=None, why="sandbox failure")
            return state
        if not credit.reward or code is None:  # unparsed, trivial, or no discriminating test
            state.data.update(outcome="forfeit", why="")
            return state
        prompt = (
            f"{artifact.description.strip()}\n\nSomeone wrote this solution:\n```python\n{code}```"
            f"\n\nFind an input on which it returns a wrong answer or crashes. Write one call "
            f"`{name}(...)` with literal arguments in one ```python block, nothing else."
        )
        call = literal_call(await self.act(arena, state, "attacker", prompt), name)
        outcome, why = await asyncio.to_thread(self.judge, artifact, code, call)
        state.data.update(outcome=outcome, why=why)
        return state

    def judge(
        self, problem: problems.Problem, code: str, call: ast.Call | None
    ) -> tuple[str | None, str]:
        """("broken" | "held" | None (sandbox failure), why an attack was invalid or "")."""
        if call is None:
            return "held", "no literal call"
        source = ast.unparse(call)
        if len(source) > MAX_CALL_CHARS or not in_domain(problem, arguments(call)):
            return "held", "input outside the problem"
        (reference,) = self.grader.sandbox.evaluate(problem.reference_solution, [source])
        if reference.outcome == "infra_error":
            return None, "sandbox failure"
        expected = literal_source(reference.value) if reference.ok else None
        if expected is None:
            return "held", "the reference rejects the input"
        # the reference must pass the very test the defender is judged on (float spelling, a
        # test the sandbox's planner refuses): then only the defender's code can fail it
        test = [f"assert {source} == {expected}"]
        on_reference, on_defender = self.grader.sandbox.run_many(
            [(problem.reference_solution, test), (code, test)]
        )
        if on_reference.infra_error or on_defender.infra_error:
            return None, "sandbox failure"
        if not on_reference.results[0].passed:
            return "held", "the reference rejects the input"
        return ("held" if on_defender.results[0].passed else "broken"), ""


def zero_sum(rollout: Rollout, arena: Arena) -> dict[str, float]:
    outcome = rollout.extras["outcome"]
    if outcome is None:
        return {}
    if outcome == "forfeit":
        return {"defender": -1.0}
    attacker = 1.0 if outcome == "broken" else -1.0
    return {"attacker": attacker, "defender": -attacker}


class RedBlue(Game):
    name = "red_blue"
    description = "a defender writes code, an attacker finds an input that breaks it (zero-sum)"
    roles = (
        Role("defender", prompts.ANSWERER_SYSTEM, temperature=1.0, max_tokens=192,
             stop_at_fence=True),
        Role("attacker", ATTACKER_SYSTEM, temperature=1.0, max_tokens=96, stop_at_fence=True),
    )  # fmt: skip
    episode = "duel"
    needs_sandbox = True
    option_names = (("eval_fraction", 0.1),)  # share of the bundled set held out

    def setup(self, arena: Arena) -> None:
        arena.add_episode(self.episode, DuelEpisode(HonestGrader(self.sandbox)))
        train, held_out = problems.split(
            problems.load_bundled(), self.option("eval_fraction"), self.seed
        )
        arena.store.extend(TRAIN_POOL, train)
        arena.store.extend(EVAL_POOL, held_out)

    def summarize(self, rollouts: Sequence[Rollout]) -> dict[str, Any]:
        outcomes = [r.extras["outcome"] for r in rollouts if r.extras["outcome"] is not None]
        played = [o for o in outcomes if o != "forfeit"]
        invalid = [r for r in rollouts if r.extras["why"] and r.extras["outcome"] is not None]
        return {
            "attack_success_rate": round(played.count("broken") / (len(played) or 1), 4),
            "invalid_attack_share": round(len(invalid) / (len(played) or 1), 4),
            "forfeit_rate": round(outcomes.count("forfeit") / (len(outcomes) or 1), 4),
        }
