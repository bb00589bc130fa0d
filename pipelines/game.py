"""The game DAG: train the roles of a game -> evaluate (base vs trained, held out) -> select.

`build_game_pipeline(cfg, local)` is what `pipelines.selfplay.build_pipeline` returns when the
config names a game (`game.name`), so `sparring compile`, `run`, `submit` and `schedule` work for
games unchanged. The same Kubernetes settings as the code duel's pipeline apply
(`pipelines.common.Tasks`): training resources on train_game, light ones on evaluate and select,
Secrets as environment, an exit task that closes the MLflow parent run however the run ends.
"""

# No `from __future__ import annotations`: KFP reads the pipeline signature's real types.
from kfp import dsl

from components import make_components
from pipelines.common import Tasks, config_line, pipeline_name
from sparring.config import Config


def build_game_pipeline(cfg: Config, local: bool = False):
    c = make_components(cfg)
    t = Tasks(cfg)
    config_text = config_line(cfg)

    @dsl.pipeline(
        name=pipeline_name(cfg),
        description=(
            f"Sparring game {cfg.game.name}: {cfg.game.steps} steps of "
            f"{cfg.game.episodes_per_step}x{cfg.game.group_size} episodes, {cfg.game.credit} "
            f"credit, config digest {cfg.digest()}"
        ),
    )
    def game(config_yaml: str = config_text, parent_run_id: str = "", kfp_run_id: str = ""):
        run_key = kfp_run_id if local else dsl.PIPELINE_JOB_ID_PLACEHOLDER
        fin = c.finalize(config_yaml=config_yaml, parent_run_id=parent_run_id, kfp_run_id=run_key)
        t.light(fin, "close the MLflow run", cache=False)
        with dsl.ExitHandler(fin, name=f"game-{cfg.game.name}"):
            train = c.train_game(
                config_yaml=config_yaml, parent_run_id=parent_run_id, kfp_run_id=run_key
            )
            t.training(train, f"train the roles of {cfg.game.name}")
            run_id = train.outputs["Output"]
            ev = c.evaluate_game(
                config_yaml=config_yaml, parent_run_id=run_id, model=train.outputs["model"]
            )
            t.light(ev, "evaluate (base vs trained)", retry=True)
            sel = c.select_game(
                config_yaml=config_yaml,
                parent_run_id=run_id,
                model=train.outputs["model"],
                report=ev.outputs["report"],
            )
            t.light(sel, "select & register")

    return game
