"""The phases of a game pipeline: train the roles of a game, evaluate them, select.

Covers: `train_game` (sparring.phases.game_loop.run_game with no evaluation of its own: the adapters
and the per-step history into a model folder), `evaluate_game` (the same held-out episodes
played by the base model (fresh adapters: LoRA B = 0 is the base) and by the trained adapters;
per-role rewards, the game's summary, the gain of each trainable role, a reward-curve figure and
a markdown table) and `select_game` (register the trained adapters under
`<selection.registered_model>-<game>@<alias>` when no trainable role got worse on held-out
episodes, else keep the base and say why).
Does not cover: the loop itself (sparring.engine), KFP (components/), the code duel's phases.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from sparring import backends, tracking
from sparring.config import Config
from sparring.engine.game import configured_roles
from sparring.evaluation import headline
from sparring.evaluation.report import log_to_mlflow, pyplot
from sparring.games.registry import check
from sparring.phases.game_loop import build_arena, evaluate, run_game

ADAPTERS = "adapters"


def train_game(cfg: Config, out_dir: str) -> dict[str, Any]:
    """Train the roles of `cfg.game` for `game.steps` steps; write adapters and metrics.json."""
    train_cfg = dataclasses.replace(cfg, game=dataclasses.replace(cfg.game, eval_episodes=0))
    result = run_game(train_cfg, out_dir)
    last = result["history"][-1] if result["history"] else {}
    return {"steps": float(len(result["history"])), **last}


def evaluate_game(cfg: Config, model_dir: str, out_dir: str) -> dict[str, Any]:
    """Held-out episodes by the base and by the trained adapters; report.json, report.md and
    rewards.png in out_dir. Returns flat metrics (reward per role, gain per trainable role)."""
    game = check(cfg)
    roles = configured_roles(game, cfg.game)
    base = cfg.game.model or cfg.models.answerer.name
    backend = backends.get(cfg.backend)
    results: dict[str, dict[str, Any]] = {}
    for label, init in (("base", None), ("trained", str(Path(model_dir) / ADAPTERS))):
        policy = backend.load_policy(cfg, base, [r.id for r in roles], init)
        arena = build_arena(cfg, game, policy)
        try:
            results[label], _ = evaluate(arena, game, max(cfg.game.eval_episodes, 1))
        finally:
            if game.sandbox is not None:
                game.sandbox.close()
    trained_roles = [r.id for r in roles if r.trainable]
    gains = {
        role: round(results["trained"].get(f"reward/{role}", 0.0)
                    - results["base"].get(f"reward/{role}", 0.0), 6)
        for role in trained_roles
    }  # fmt: skip
    history = json.loads((Path(model_dir) / "metrics.json").read_text()).get("history", [])
    report = {"game": game.name, **results, "gain": gains, "history": history}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    (out / "report.md").write_text(report_markdown(report))
    plot_rewards(history, out / "rewards.png")
    log_to_mlflow(out)  # report.md and rewards.png on the phase's MLflow run, when one is open
    metrics: dict[str, Any] = {}
    for label in ("base", "trained"):
        for key, value in results[label].items():
            if isinstance(value, (int, float)):
                metrics[f"{label}/{key}"] = value
    metrics.update({f"gain/{role}": g for role, g in gains.items()})
    return metrics


def report_markdown(report: dict[str, Any]) -> str:
    keys = sorted(set(report["base"]) | set(report["trained"]))
    lines = [
        f"# {report['game']}: held-out episodes, base vs trained",
        "",
        "| metric | base | trained |",
        "| --- | --- | --- |",
    ]
    base, trained = report["base"], report["trained"]
    lines += [f"| {key} | {base.get(key, '')} | {trained.get(key, '')} |" for key in keys]
    lines += ["", "Gain of each trainable role: " + json.dumps(report["gain"])]
    return "\n".join(lines) + "\n"


def plot_rewards(history: list[dict[str, Any]], path: Path) -> None:
    """Mean reward per role at each training step."""
    plot_games({"": history}, path)


def plot_games(histories: dict[str, list[dict[str, Any]]], path: str | Path) -> Path:
    """One panel per game (title = its name): mean reward per role at each training step."""
    plt = pyplot()
    n = len(histories)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, (name, history) in zip(axes.flat, histories.items(), strict=False):
        roles = sorted({k[7:] for row in history for k in row if k.startswith("reward/")})
        for role in roles:
            ys = [row.get(f"reward/{role}") for row in history]
            ax.plot(range(1, len(ys) + 1), ys, marker="o", label=role)
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.set_ylabel("mean reward")
        if roles:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def select_game(
    cfg: Config, model_dir: str, report_dir: str, out_dir: str, parent_run_id: str
) -> dict[str, Any]:
    """Register the trained adapters when no trainable role lost reward on held-out episodes."""
    report = json.loads((Path(report_dir) / "report.json").read_text())
    gains = report["gain"]
    worse = sorted(role for role, g in gains.items() if g < 0)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    score = sum(gains.values()) / len(gains) if gains else 0.0
    if worse:
        reason = f"held-out reward fell for {', '.join(worse)}: kept the base"
        (out / "NOT_PROMOTED.txt").write_text(reason + "\n")
        return {"promoted": 0.0, "score": score, "reason": reason}
    shutil.copytree(Path(model_dir), out, dirs_exist_ok=True)
    named = dataclasses.replace(
        cfg,
        selection=dataclasses.replace(
            cfg.selection, registered_model=f"{cfg.selection.registered_model}-{report['game']}"
        ),
    )
    version = ""
    if parent_run_id:
        version = tracking.register_champion(named, str(out), parent_run_id, score)
    return {"promoted": 1.0, "score": score, "version": version, "reason": "no role got worse"}


def game_headline(report_dir: str, result: dict[str, Any]) -> list[tuple[str, float, int]]:
    """The headline metrics of a game run the report and select's decision give
    (sparring.evaluation.headline.from_game_report)."""
    report = json.loads((Path(report_dir) / "report.json").read_text())
    return headline.from_game_report(report, result)
