"""evaluate: held-out pass@k, bank pass rate, cross-play and hacking signals of every snapshot."""

from kfp.dsl import Artifact, Dataset, Input, Metrics, Output


def evaluate(
    config_yaml: str,
    parent_run_id: str,
    data: Input[Dataset],
    snapshots: Input[Artifact],
    bank: Input[Dataset],
    report: Output[Artifact],
    metrics: Output[Metrics],
):
    from sparring import tracking
    from sparring.phases import evaluate as phase
    from sparring.phases import kfp_io
    from sparring.problems import datasets
    from sparring.rewards.bank import bank_file

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    if phase.writer_only(cfg):  # no answerer task follows the last validation to log it
        from sparring.phases.validate import validation_metrics

        validation = validation_metrics(bank.path)  # the sandbox task has no MLflow credentials
        if validation is not None:
            with tracking.phase_run(cfg, parent_run_id, "validate-tests", cfg.rounds) as val:
                val.log(validation)
    with tracking.phase_run(cfg, parent_run_id, "evaluate", kfp_io.final_round(cfg)) as run:
        kfp_io.log_problem_sets(run, cfg, data.path, datasets.EVALUATION)
        result = run.log(
            phase.evaluate(
                cfg, data.path, snapshots.path, bank_file(bank.path), report.path, parent_run_id
            )
        )
    kfp_io.to_kfp_metrics(metrics, result)
