"""train_answerer: one GRPO phase of the answerer on the problems plus the validated test bank.

`phase`: the phase's name in `plan_phases` (e.g. `r01-p03-answerer`): it fixes the step count
and seeds the draws, as in the plain runner; the MLflow child run shows its `phase_label`.
`launcher`: "task" trains in this task's pod; "trainjob" (the cluster pipeline when
`kubernetes.trainer.nodes > 1`) runs the phase as a Kubeflow Trainer TrainJob and waits for it.
"""

from kfp.dsl import Dataset, Input, Metrics, Model, Output


def train_answerer(
    config_yaml: str,
    parent_run_id: str,
    round_index: int,
    phase: str,
    data: Input[Dataset],
    bank: Input[Dataset],
    init_model: Input[Model],
    model: Output[Model],
    metrics: Output[Metrics],
    launcher: str = "task",
):
    from sparring.cluster import launch  # handed down: sparring.cluster sits above the phases
    from sparring.phases import table

    return table.run_task("train-answerer", locals(), trainjob=launch.run_phase)
