"""Thin KFP components, one per row of the phase table (sparring.phases.table.PHASES): each body
imports the table and runs its row, `table.run_task("<row>", locals())`; the row's task
(sparring.phases.kfp_tasks) reads the inputs, runs the phase inside its MLflow child run and
writes the outputs and metrics. A component's function is named after its row (`_` for `-`),
which is its task's name in the compiled DAG; the training components also hand the row the
TrainJob launcher (sparring.cluster sits above the phases). tests/unit/test_phase_table.py fails
a component that does anything else.

The plain functions live in this package's modules; `make_components(cfg)` turns them into KFP
components whose `base_image` comes from the config (trainer image; sandbox image for validation;
MLX image when `backend: mlx`). Every component is a lightweight Python component with
`install_kfp_package=False` and no `packages_to_install`: the images ship sparring and kfp, and
`kfp.local.SubprocessRunner(use_venv=False)` runs the same functions in the current environment.
A component's body runs in a process of its own with only what it imports inside it, so every
import stays in the function. Unit tests call `make_components(cfg).<name>.python_func` directly.
"""

from __future__ import annotations

from types import SimpleNamespace

from kfp import dsl

from components.evaluate import evaluate
from components.evaluate_game import evaluate_game
from components.finalize import finalize
from components.init_models import init_models
from components.materialize import materialize
from components.select_champion import select
from components.select_game import select_game
from components.snapshot import snapshot_first, snapshot_next
from components.train_answerer import train_answerer
from components.train_game import train_game
from components.train_generator import train_generator
from components.validate_tests import validate_tests
from components.warm_start import warm_start
from sparring.errors import SparringError
from sparring.phases.table import PHASES

FUNCTIONS = {
    "materialize": materialize,
    "init_models": init_models,
    "warm_start": warm_start,
    "train_answerer": train_answerer,
    "train_generator": train_generator,
    "validate_tests": validate_tests,
    "snapshot_first": snapshot_first,
    "snapshot_next": snapshot_next,
    "evaluate": evaluate,
    "select": select,
    "finalize": finalize,
    "train_game": train_game,
    "evaluate_game": evaluate_game,
    "select_game": select_game,
}


def image_for(cfg, name: str) -> str:
    """The container image of a component under a config."""
    images = cfg.kubernetes.images
    if name == "validate_tests":
        return images.sandbox
    return images.mlx if cfg.backend == "mlx" else images.trainer


def row_of(function_name: str) -> str:
    """The phase table's row a component function runs: its name with `-` for `_`."""
    return function_name.replace("_", "-")


def make_components(cfg) -> SimpleNamespace:
    """KFP components for a config: one attribute per entry of FUNCTIONS, each a row of the
    phase table (a function without one is refused: it could not run)."""
    strays = [name for name in FUNCTIONS if row_of(name) not in PHASES]
    if strays:
        raise SparringError(f"components with no row in sparring.phases.table.PHASES: {strays}")
    return SimpleNamespace(
        **{
            name: dsl.component(func=func, base_image=image_for(cfg, name),
                                install_kfp_package=False)
            for name, func in FUNCTIONS.items()
        }
    )  # fmt: skip
