"""What the reading commands answer, as data: ``status`` (``status.py``), ``replicas list``
(``replicas.py``) and the ``--where`` terms of ``collections query`` (``where.py``).

The command line prints it (``collection_manager/cli``) and the HTTP API serves it
(``collection_manager/http``), so both say the same from one reading.
"""
