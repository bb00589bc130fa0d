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
    from sparring import tracking
    from sparring.phases import kfp_io, table
    from sparring.phases.schedule import label_of
    from sparring.problems import datasets

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    label = label_of(cfg, phase, "generator", round_index)
    with tracking.phase_run(cfg, parent_run_id, f"train-{label}", round_index) as run:
        kfp_io.log_problem_sets(run, cfg, data.path, datasets.TRAINING)
        if launcher == "trainjob":  # kubernetes.trainer.nodes > 1: a Kubeflow Trainer TrainJob
            from sparring.cluster import launch

            result = run.log(
                launch.run_phase(
                    cfg, "train-generator", round_index, phase_name=phase,
                    inputs={"data": data.uri, "frozen_answerer": frozen_answerer.uri,
                            "init_model": init_model.uri},
                    outputs={"model": model.path, "tests.jsonl": tests.path,
                             "frozen_solutions.jsonl": frozen_solutions.path},
                    output_uri=model.uri,
                )
            )  # fmt: skip
        else:
            paths = {
                "data": data.path,
                "frozen_answerer": frozen_answerer.path,
                "init_model": init_model.path,
            }
            outs = {
                "model": model.path,
                "tests": tests.path,
                "frozen_solutions": frozen_solutions.path,
            }
            result = run.log(
                table.run("train-generator", cfg, round_index, paths, outs, phase)
            )  # fmt: skip
    kfp_io.to_kfp_metrics(metrics, result)
