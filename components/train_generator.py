"""train_generator: one GRPO phase of the test generator against a frozen answerer snapshot.

`phase`: the phase's name in `plan_phases` (e.g. `r01-p01-generator`): it fixes the step count
and seeds the draws, as in the plain runner; the MLflow child run shows its `phase_label`.
`launcher`: "task" trains in this task's pod; "trainjob" (the cluster pipeline when
`kubernetes.trainer.nodes > 1`) runs the phase as a Kubeflow Trainer TrainJob and waits for it.
"""

from kfp.dsl import Dataset, Input, Metrics, Model, Output


def train_generator(
    config_yaml: str,
    parent_run_id: str,
    round_index: int,
    phase: str,
    data: Input[Dataset],
    frozen_answerer: Input[Model],
    init_model: Input[Model],
    model: Output[Model],
    tests: Output[Dataset],
    frozen_solutions: Output[Dataset],
    metrics: Output[Metrics],
    launcher: str = "task",
):
    from sparring.cluster import launch  # handed down: sparring.cluster sits above the phases
    from sparring.phases import table

    return table.run_task("train-generator", locals(), trainjob=launch.run_phase)
