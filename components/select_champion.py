"""select: choose the best snapshot, register it as the champion, persist the test bank, copy
the run's headline metrics onto the MLflow parent run (sparring.evaluation.headline), and finish
it."""

from kfp.dsl import Artifact, Dataset, Input, Metrics, Model, Output


def select(
    config_yaml: str,
    parent_run_id: str,
    report: Input[Artifact],
    snapshots: Input[Artifact],
    bank: Input[Dataset],
    champion: Output[Model],
    metrics: Output[Metrics],
) -> str:
    """Returns the registered model version ("" when nothing was promotable)."""
    from sparring import tracking
    from sparring.evaluation import headline
    from sparring.phases import kfp_io
    from sparring.phases import select as phase
    from sparring.rewards.bank import bank_file

    cfg = kfp_io.config_from_yaml(config_yaml, parent_run_id)
    with tracking.phase_run(cfg, parent_run_id, "select", kfp_io.final_round(cfg)) as run:
        result = run.log(
            phase.select_and_register(
                cfg, report.path, snapshots.path, bank_file(bank.path), champion.path,
                parent_run_id,
            )
        )  # fmt: skip
        run.log_params({"selection_reason": str(result.get("reason", ""))[:2000]})
        if parent_run_id:  # the last phase: the run's headline numbers onto the parent run
            headline.log_headline(cfg, run, parent_run_id, phase.headline(cfg, report.path, result))
    if parent_run_id:
        tracking.finish_parent_run(cfg, parent_run_id)  # the pipeline run is complete
    kfp_io.to_kfp_metrics(metrics, result)
    champion.metadata["reason"] = str(result.get("reason", ""))
    return str(result.get("version", ""))
