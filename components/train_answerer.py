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
    from sparring import tracking
    from sparring.phases import kfp_io, table
    from sparring.phases.schedule import label_of
    from sparring.phases.validate import validation_metrics
    from sparring.problems import datasets

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    label = label_of(cfg, phase, "answerer", round_index)
    validation = validation_metrics(bank.path)  # the sandbox task has no MLflow credentials
    if validation is not None:
        with tracking.phase_run(cfg, parent_run_id, "validate-tests", round_index) as run:
            run.log(validation)
    with tracking.phase_run(cfg, parent_run_id, f"train-{label}", round_index) as run:
        kfp_io.log_problem_sets(run, cfg, data.path, datasets.TRAINING)
        if launcher == "trainjob":  # kubernetes.trainer.nodes > 1: a Kubeflow Trainer TrainJob
            from sparring.cluster import launch

            result = run.log(
                launch.run_phase(
                    cfg, "train-answerer", round_index, phase_name=phase,
                    inputs={"data": data.uri, "bank": bank.uri, "init_model": init_model.uri},
                    outputs={"model": model.path}, output_uri=model.uri,
                )
            )  # fmt: skip
        else:
            paths = {"data": data.path, "bank": bank.path, "init_model": init_model.path}
            result = run.log(
                table.run("train-answerer", cfg, round_index, paths, {"model": model.path}, phase)
            )
    kfp_io.to_kfp_metrics(metrics, result)
