"""`sparring game`: list the games, and train the roles of one in this process.

Covers: `game list [--json]` (every game with its roles, judge, sandbox use and options),
`game plot DIR... -o PNG` (reward curves of finished runs, one panel per game) and
`game run GAME [--config FILE] [--set k=v] [--output DIR]` (sparring.phases.game_loop.run_game with
the held-out evaluation before and after, per-step metrics in an MLflow run unless
`--no-tracking`, adapters and metrics.json in the output folder, a summary at the end). The same
game as a KFP pipeline: `sparring run|compile|submit --config FILE` with `game.name` set.
Does not cover: the games or the loop (sparring.games, sparring.engine).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sparring.cli.common import add_config_args, add_group, output_dir, output_error, output_file


def add_commands(sub) -> None:
    game = add_group(sub, "game", "self-play games of the engine: list them, train one")
    p = game.add_parser(
        "list",
        help="the games, their roles and options",
        description="List the self-play games of the engine: each one's description, its "
        "roles (which train) and its options (game.options).",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_list)

    p = game.add_parser(
        "run",
        help="train the roles of a game in this process",
        description=(
            "Play a game, assign credit per level, update each trainable role's LoRA adapter, "
            "for game.steps steps; held-out episodes are played before and after. The same "
            "game as a pipeline: `sparring run --config FILE` with game.name set."
        ),
    )
    p.add_argument("name", metavar="GAME", help="a game of `sparring game list`")
    add_config_args(p)
    p.add_argument("--output", "-o", metavar="DIR", help="default: local_outputs/games/GAME-TIME")
    p.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")
    p.set_defaults(func=_run)

    p = game.add_parser(
        "plot",
        help="reward curves of finished `game run` folders, one panel each",
        description="Draw each role's mean reward per step of finished `sparring game run` "
        "folders (their metrics.json), one panel per game, into one PNG.",
    )
    p.add_argument("runs", nargs="+", metavar="DIR", help="output folders of `sparring game run`")
    p.add_argument("--output", "-o", required=True, metavar="PNG", help="figure to write")
    p.set_defaults(func=_plot)


def _plot(args: argparse.Namespace) -> int:
    from sparring.errors import SparringError
    from sparring.phases.game import plot_games

    out = output_file(args.output, "--output")
    histories = {}
    for run in args.runs:
        path = Path(run) / "metrics.json"
        if not path.is_file():
            raise SparringError(f"{run}: no metrics.json (not a finished `sparring game run`)")
        data = json.loads(path.read_text())
        histories[data.get("game", Path(run).name)] = data.get("history", [])
    try:
        written = plot_games(histories, out)
    except OSError as exc:
        error = output_error(exc, out, "--output")
        if error is None:
            raise
        raise error from None
    print(f"wrote {written}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from sparring.games.registry import describe

    games = describe()
    if args.json:
        print(json.dumps(games, indent=1))
        return 0
    for g in games:
        roles = ", ".join(r["id"] + ("" if r["trainable"] else " (frozen)") for r in g["roles"])
        extra = " + LLM judge" if g["judge"] else ""
        print(f"{g['name']:16s} {g['description']}\n{'':16s} roles: {roles}{extra}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from sparring.config import load_config
    from sparring.games.registry import check
    from sparring.phases.game_loop import run_game

    cfg = load_config(args.config, [*args.overrides, f"game.name={args.name}"])
    check(cfg)  # one-line errors before any model loads
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = output_dir(args.output or f"{cfg.storage.pipeline_root}/games/{args.name}-{stamp}",
                     "--output" if args.output else "storage.pipeline_root")  # fmt: skip
    if args.no_tracking:
        result = run_game(cfg, str(out))
    else:
        from sparring import tracking
        from sparring.evaluation import headline

        parent = tracking.start_parent_run(cfg, f"game-{args.name}-{stamp}")
        status = "FAILED"
        try:
            with tracking.phase_run(cfg, parent, f"train-{args.name}", 1) as run:
                result = run_game(cfg, str(out))
                run.log({f"after/{k}": v for k, v in result["after"].items()})
                report = {"base": result["before"], "trained": result["after"]}
                headline.log_headline(cfg, run, parent, headline.from_game_report(report, {}))
            status = "FINISHED"
        finally:
            tracking.finish_parent_run(cfg, parent, status)
    print(f"\n== {args.name}: {len(result['history'])} steps, outputs in {out}")
    for label in ("before", "after"):
        rewards = {k: v for k, v in result[label].items() if k.startswith("reward/")}
        print(f"  held-out {label:6s} {json.dumps(rewards)}")
    if not args.no_tracking:
        print(f"MLflow: {tracking.ui_hint(cfg)}")
    return 0
