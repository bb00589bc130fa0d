"""`run_game`: the engine's training loop for one game, the same locally and in a KFP task.

Covers: building the arena (the game's roles with the config's overrides, its episodes and
artifacts, a sandbox when the game runs code), the policy (the backend's base model with one
adapter per role) and the client: in process, or with `serving.mode: server` a running server's
(sparring.serving.game: each role's adapter published as a new version after every update,
records older than `serving.max_staleness` versions dropped), all in one event loop; a
held-out evaluation before training (frozen episodes, never trained on); `game.steps` steps
of: play `episodes_per_step x group_size` episodes, assign credit, build the records of
trainable roles, one policy update per role; the same evaluation after; per-step metrics
(reward mean and spread per role, the share of groups with no signal, records, grad norms,
seconds) to MLflow when a run is active and to a progress bar; and the result folder:
`adapters/<role>/` (Sparring LoRA artifacts), `metrics.json` (history, evaluation
before/after, the game's summary), written atomically.
Does not cover: the games (sparring.games), the model library (sparring.backends), KFP.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sparring import backends, tracking
from sparring.engine.arena import Arena
from sparring.engine.core import Rollout
from sparring.engine.credit import levels, make_credit
from sparring.engine.game import Game, configured_roles
from sparring.engine.local import LocalClient, Policy
from sparring.games.registry import check
from sparring.sandbox import Sandbox, SandboxLimits
from sparring.sandbox.gate import require_isolation
from sparring.serving.game import GameServer
from sparring.storage import atomic_dir


def reward_stats(roots: Sequence[Rollout], trainable_only: bool = False) -> dict[str, float]:
    """Mean and spread of each role's reward, and the share of GRPO groups (per level) in which
    every member got the same reward: such a group teaches nothing."""
    by_role: dict[str, list[float]] = defaultdict(list)
    groups: dict[tuple, list[float]] = defaultdict(list)
    for level in levels(roots):
        for rollout, group in level:
            if trainable_only and not rollout.is_trainable:
                continue
            for role, reward in rollout.rewards.items():
                by_role[role].append(reward)
                groups[(role, group)].append(reward)
    out: dict[str, float] = {}
    for role, values in sorted(by_role.items()):
        out[f"reward/{role}"] = round(statistics.fmean(values), 6)
        out[f"reward_std/{role}"] = round(statistics.pstdev(values), 6)
        role_groups = [v for (r, _), v in groups.items() if r == role and len(v) > 1]
        if role_groups:
            flat = sum(1 for v in role_groups if max(v) - min(v) < 1e-9)
            out[f"flat_group_share/{role}"] = round(flat / len(role_groups), 6)
    return out


def build_arena(cfg: Any, game: Game, policy: Policy, client: Any = None) -> Arena:
    """The arena of `game`: roles with overrides, judge adapter, episodes; sampling through
    `client` (a server's), or in process from `policy`."""
    client = client if client is not None else LocalClient(policy, seed=cfg.seed)
    arena = Arena(client, concurrency=cfg.game.concurrency, seed=cfg.seed)
    for role in configured_roles(game, cfg.game):
        arena.add_role(role)
    arena.judge_adapter = cfg.game.judge or None
    if game.needs_sandbox:
        require_isolation(cfg)  # says which bwrap, or stops in one line before any episode
        game.sandbox = Sandbox(SandboxLimits.from_config(cfg.sandbox))
    game.setup(arena)
    return arena


def evaluate(arena: Arena, game: Game, episodes: int) -> tuple[dict[str, Any], list[Rollout]]:
    """Held-out episodes (not trainable): reward per role, and the game's own summary."""
    return asyncio.run(_evaluate(arena, game, episodes))


async def _evaluate(arena: Arena, game: Game, episodes: int) -> tuple[dict[str, Any], list]:
    if episodes <= 0:
        return {}, []
    rollouts = await arena.generate_rollouts(game.eval_requests(arena, episodes))
    return {**reward_stats(rollouts), **game.summarize(rollouts)}, rollouts


def run_game(
    cfg: Any,
    out_dir: str | None = None,
    *,
    init_dir: str | None = None,
    policy: Policy | None = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train the roles of `cfg.game`; returns {"history", "before", "after", "roles", ...} and
    writes it (with the adapters) to `out_dir` when given. `policy` replaces the backend's (tests
    use a scripted one); `init_dir` holds adapters of an earlier run to start from."""
    game = check(cfg)
    roles = configured_roles(game, cfg.game)
    base = cfg.game.model or cfg.models.answerer.name
    if policy is None:
        policy = backends.get(cfg.backend).load_policy(cfg, base, [r.id for r in roles], init_dir)
    with tempfile.TemporaryDirectory(prefix="sparring-served-") as served_dir:
        result = asyncio.run(
            _play(cfg, game, policy, base, served_dir, on_step=on_step, progress=progress)
        )
    result["roles"] = [{"id": r.id, "trainable": r.trainable} for r in roles]
    if out_dir:
        _write(out_dir, policy, result, cfg)
    return result


async def _play(cfg, game, policy, base, served_dir, *, on_step, progress) -> dict[str, Any]:
    """Evaluate, train, evaluate, in one event loop (a server's client lives in one loop)."""
    server = None
    if cfg.serving.mode == "server":
        server = GameServer(cfg, policy, base, served_dir)
        server.publish({"game": game.name, "seed": cfg.seed})  # version 1: the starting adapters
    arena = build_arena(cfg, game, policy, server.client if server else None)
    credit = make_credit(cfg.game.credit)
    try:
        before, _ = await _evaluate(arena, game, cfg.game.eval_episodes)
        history = await _train(cfg, game, arena, credit, policy, server, on_step, progress)
        after, last_eval = await _evaluate(arena, game, cfg.game.eval_episodes)
    finally:
        if game.sandbox is not None:
            game.sandbox.close()
        if server is not None:
            await server.aclose()
    return {
        "game": game.name,
        "history": history,
        "before": before,
        "after": after,
        "policy_version": policy.version,
        "model_calls": {str(k): v for k, v in arena.calls.items()},
        "examples": [_example(r) for r in last_eval[:3]],
    }


async def _train(cfg, game, arena, credit, policy, server, on_step, progress) -> list[dict]:
    history: list[dict[str, float]] = []
    bar = tqdm(range(cfg.game.steps), desc=f"{game.name}", unit="step", disable=not progress)
    for step in bar:
        start = time.perf_counter()
        requests = game.requests(arena, cfg.game.episodes_per_step, cfg.game.group_size)
        rollouts = await arena.generate_rollouts(requests)
        played = time.perf_counter() - start
        credit.assign(rollouts)
        records = arena.records(rollouts)
        metrics: dict[str, float] = {**reward_stats(rollouts, trainable_only=True)}
        if server is not None:
            for role in sorted({r.role for r in records}):  # the versions the server answered
                versions = [r.policy_version for r in records if r.role == role]
                metrics[f"sampled_version/{role}"] = statistics.fmean(versions)
            records, stale = server.fresh(records)
            metrics["stale_dropped"] = float(stale)
        metrics["records"] = float(len(records))
        metrics["nonzero_advantage_share"] = (
            round(sum(1 for r in records if abs(r.advantage) > 1e-9) / len(records), 6)
            if records
            else 0.0
        )
        if records and not cfg.dry_run:
            metrics.update(policy.train(records))
            if server is not None:
                server.publish({"game": game.name, "seed": cfg.seed, "step": step + 1})
        metrics["play_seconds"] = round(played, 3)
        metrics["step_seconds"] = round(time.perf_counter() - start, 3)
        history.append(metrics)
        _log(metrics, step)
        if on_step is not None:
            on_step(step, metrics)
        bar.set_postfix({k[7:]: v for k, v in metrics.items() if k.startswith("reward/")})
    return history


def _log(metrics: dict[str, float], step: int) -> None:
    """Per-step metrics into the phase's MLflow run (buffered through an outage), when there
    is one; a bare `run_game` (tests, scripts) logs nowhere."""
    if "mlflow" not in sys.modules:  # nothing opened a run: do not import MLflow for nothing
        return
    if tracking.active():
        tracking.log_metrics(metrics, step=step + 1)


def _example(rollout: Rollout) -> dict[str, Any]:
    return {
        "rewards": rollout.rewards,
        "steps": [{"role": s.role, "completion": s.completion[:400]} for s in rollout.steps[:6]],
    }


def _write(out_dir: str, policy: Policy, result: dict[str, Any], cfg: Any) -> None:
    with atomic_dir(out_dir) as tmp:
        save = getattr(policy, "save", None)
        if save is not None:
            save(str(Path(tmp) / "adapters"), {"game": result["game"], "seed": cfg.seed})
        (Path(tmp) / "metrics.json").write_text(json.dumps(result, indent=1, default=str))
