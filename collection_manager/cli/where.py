"""``--where`` terms of ``collections query``: the parser is ``reading/where.py`` (the HTTP
API's ``where`` takes the same terms); the option's help is the command line's own."""

from __future__ import annotations

from collection_manager.reading.where import (
    OPERATORS,
    SYNTAX,
    literal,
    parse_term,
    parse_where,
    split_term,
)

__all__ = ["HELP", "OPERATORS", "SYNTAX", "literal", "parse_term", "parse_where", "split_term"]

HELP = (
    "keep rows where COLUMN<op>VALUE holds; repeat to require all. Operators: "
    + ", ".join(OPERATORS)
    + " (^= is 'starts with'). VALUE is typed by its column: 42, 0.5, true/false, text; "
    "COLUMN=null and COLUMN!=null test for null (other comparisons never match null). "
    "Default: every row."
)
