"""An outage's line names the fault without a stack frame (spark_consumers/errors.py)."""

from __future__ import annotations

from spark_consumers.errors import fault_text, reduced_message

# As Spark 4 words a query that the batch's Python callback ended (the frames shortened).
ENDED_BY_THE_CALLBACK = (
    "[STREAM_FAILED] Query [id = bf75, runId = b5df] terminated with exception: "
    "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in "
    "foreach batch sink. Reason: An exception was raised by the Python Proxy. Return Message: "
    "Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/py4j/clientserver.py", line 644, in _call_proxy\n'
    "    return_value = getattr(self.pool[obj_id], method)(*params)\n"
    "                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    '  File "/repo/spark_consumers/job.py", line 167, in run_batch\n'
    "    driver.advance(rows, timer)\n"
    "collection_manager.storage.replication.ReplicasBehindError: only 0 of the 1 replicas "
    "required (CM_REDIS_REPLICA_ACKS) confirmed the writes\n"
    "\n=== Streaming Query ===\n"
    "Identifier: [id = bf75, runId = b5df]\n"
)


class StreamingQueryException(Exception):
    pass


def test_a_query_ended_by_its_callback_is_named_by_the_callbacks_error() -> None:
    text = fault_text(StreamingQueryException(ENDED_BY_THE_CALLBACK))
    assert text == (
        "StreamingQueryException: collection_manager.storage.replication.ReplicasBehindError: "
        "only 0 of the 1 replicas required (CM_REDIS_REPLICA_ACKS) confirmed the writes"
    )
    assert "Traceback" not in text and "File " not in text


def test_of_chained_tracebacks_the_last_error_is_the_one_named() -> None:
    chained = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "b.py", line 2, in g\n'
        "ConnectionError: Redis went away\n"
    )
    assert reduced_message(chained) == "ConnectionError: Redis went away"


def test_a_message_without_a_traceback_gives_its_first_line() -> None:
    assert reduced_message("Connection refused\n  at org.apache.Foo\n") == "Connection refused"
    assert fault_text(TimeoutError()) == "TimeoutError"
