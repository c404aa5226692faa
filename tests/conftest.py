"""The Hypothesis profile of every test run.

No deadline: a property test's examples share two cores with Spark, Kafka and another
xdist worker, and an example that is merely slow there is not a failure (the tests that
set ``max_examples`` alone kept Hypothesis's 200 ms deadline). A failure prints the blob
that reproduces it, since the example database under ``.hypothesis/`` does not outlive a
fresh clone. Each test keeps its own number of examples.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.load_profile("ci")
