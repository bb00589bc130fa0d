"""The docs' "write a new game" example (docs/engine.md, which the README links to) is real:
extracted from the page, saved as a module, named as `module:Class`, and played and trained
through the engine with a scripted policy."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from sparring.config import ConfigError, load_config
from sparring.engine.local import ScriptedPolicy
from sparring.games.registry import check
from sparring.phases.game_loop import run_game

ENGINE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "engine.md"


@pytest.fixture
def riddles_module(tmp_path, monkeypatch):
    text = ENGINE_PAGE.read_text()
    match = re.search(r"<!-- example: riddles\.py.*?-->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/engine.md lost its riddles example"
    code = match.group(1)
    assert len(code.strip().splitlines()) <= 70  # "about 50 lines" of game
    (tmp_path / "riddles_example.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "riddles_example:Riddles"
    sys.modules.pop("riddles_example", None)


def scripted() -> ScriptedPolicy:
    solver_calls = []

    def answer(adapter, prompt):
        if adapter == "proposer":  # a riddle about keys leaks its answer
            word = "keys" if "keys" in prompt else "time"
            return f"RIDDLE: What runs but never walks, like keys? ANSWER: {word}"
        solver_calls.append(prompt)
        return "time" if len(solver_calls) % 2 else "river"  # every other solver is right

    return ScriptedPolicy(answer)


def test_the_readme_game_trains_with_per_level_credit(riddles_module):
    cfg = load_config(
        overrides=[f"game.name={riddles_module}", "game.steps=2", "game.group_size=2"]
    )
    assert check(cfg).name == "riddles"
    policy = scripted()
    result = run_game(cfg, policy=policy, progress=False)
    assert result["after"]["reward/solver"] == 0.5
    records = [r for batch in policy.trained for r in batch]
    assert {r.role for r in records} == {"proposer", "solver"}
    # half of each riddle's solvers are right: against their siblings, +1 and -1
    assert sorted({r.advantage for r in records if r.role == "solver"}) == [-1.0, 1.0]
    proposer = [r for r in records if r.role == "proposer"]
    # solved half the time: the most a riddle earns; a leaked answer spawns no solvers, earns 0
    assert {r.reward for r in proposer if "keys" not in r.messages[-1]["content"]} == {1.0}
    assert {r.reward for r in proposer if "keys" in r.messages[-1]["content"]} <= {0.0}


def test_a_module_class_that_is_not_a_game_is_refused():
    cfg = load_config(overrides=["game.name=json:JSONDecoder"])
    with pytest.raises(ConfigError, match="not a subclass"):
        check(cfg)
    with pytest.raises(ConfigError, match="cannot import"):
        check(load_config(overrides=["game.name=nosuchmodule:Game"]))
