"""validate_tests: run generated tests in the sandbox image; survivors join the test bank.

Runs without the S3 and MLflow secrets: its metrics travel in the output bank folder
(validation.json) and the next answerer phase logs them to MLflow."""

from kfp.dsl import Dataset, Input, Metrics, Output


def validate_tests(
    config_yaml: str,
    round_index: int,
    data: Input[Dataset],
    tests: Input[Dataset],
    frozen_solutions: Input[Dataset],
    bank_in: Input[Dataset],
    bank: Output[Dataset],
    metrics: Output[Metrics],
):
    from sparring.phases import table

    return table.run_task("validate-tests", locals())
