"""What the executors' packed environment holds: the applier's dependencies, no more."""

from __future__ import annotations

from spark_consumers.executor_env import runtime_distributions


def _names() -> set[str]:
    return {str(d.metadata["Name"]).lower().replace("_", "-") for d in runtime_distributions()}


def test_the_consumer_extra_is_packed_since_the_applier_runs_on_arrow_batches() -> None:
    names = _names()
    # The core install's, and the consumer extra's (a core-only list once lost these two,
    # and the executors of a cluster could not run the applier).
    assert {"confluent-kafka", "fastavro", "redis", "orjson", "pandas", "pyarrow"} <= names
    assert "hiredis" in names  # redis[hiredis]: the extra a requirement names
    assert "numpy" in names  # pandas' own, followed transitively


def test_spark_s_own_and_the_other_roles_are_left_out() -> None:
    names = _names()
    assert not names & {"pyspark", "py4j", "collection-manager"}
    # The server's, the benchmarks' and the tests' extras stay on the driver.
    assert not names & {"uvicorn", "swagger-ui-py", "matplotlib", "pytest", "hypothesis"}
