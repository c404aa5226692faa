"""What the API, the command line's ``--format json`` and the client say, defined once.

Each answer is a frozen dataclass: the catalog's and the fleet's in ``models.py``, the
status in ``status.py``, a read's rows in ``rows.py``. The server and the commands build one
and write :func:`to_json` of it; the OpenAPI document's schemas are made from the same
classes (``schema.py``), and the client turns a document back into one with :func:`decode`,
which checks every field against its type. A field added to a model is in all four at
once; nothing restates a shape by hand.
"""

from collection_manager.answers.decode import ShapeError, decode
from collection_manager.answers.encode import to_json
from collection_manager.answers.fields import Doc
from collection_manager.answers.models import CollectionDetail, CollectionList, ReplicaList
from collection_manager.answers.rows import Rows
from collection_manager.answers.schema import schemas
from collection_manager.answers.status import Status

MODELS = (CollectionList, CollectionDetail, Rows, ReplicaList, Status)
"""The answers the API's operations send (each holds the models it is made of)."""

__all__ = ["MODELS", "Doc", "ShapeError", "decode", "schemas", "to_json"]
