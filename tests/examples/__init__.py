"""The documentation's examples as tests: every code example in README.md and docs/**/*.md.

The convention, for doc writers. Each fenced block of a language that runs (``sh``,
``bash``, ``shell``, ``console``, ``python``, ``py``) carries a marking on the line right
before its opening fence (an HTML comment: GitHub shows nothing of it):

- ``<!-- example: run -->``: ``make test`` runs it from the repo root, with ``.venv/bin``
  first on ``PATH``, against the local services (as after ``collection-manager infra up``),
  and fails when it exits non-zero, times out, or prints a traceback, an ``error:`` line or
  one of Spark's notices of nothing wrong (``runner.NOTICES``).
  Shell blocks run in ``bash -e``; Python blocks as a script of ``.venv/bin/python``. A
  command ending in ``&`` runs in the background and is stopped when the block ends.
- ``<!-- example: illustration -->``: shown, never run: it needs what a test run has not
  (a Spark cluster, a Docker engine, root, a host name), or shows a synopsis.

Options after ``run``, separated by commas:

- ``fresh-state``: the block runs in an empty state directory with no service configured
  (it starts and stops services of its own, as ``infra up`` ... ``infra down`` does).
- ``continues``: a block that goes on from the previous block of its page and language
  (the two run as one script, as a reader pastes them one after the other into one shell
  or interpreter: what the first started in the background still runs); the first
  block's options hold for the whole.
- ``slow``: the example starts minutes of services of its own (a replicated deployment),
  so it runs in ``make test-slow``, not in ``make test``.
- ``session``: the start of a reader's session (the README's tour), which
  ``tests/integration/test_second_session.py`` runs whole and goes on with (what a user
  does next, before the block that stops it all) instead of the docs' runner.
- ``timeout N``: it may take ``N`` seconds to end (or to get ready, with ``until``)
  instead of the runner's default.
- ``until TEXT``: the block's last command runs until stopped (``consume``, ``tail -f``, a
  stream's ``awaitTermination()``): it passes once TEXT is in its output, and then it is
  interrupted as by Ctrl-C and must end quietly (exit 0 or 130).

Fences of other languages (``toml``, ``yaml``) and fences without a language (diagrams,
output) are not run and need no marking. A runnable fence without one fails the unit test
``tests/unit/test_doc_examples.py``, with its file and line.
"""
