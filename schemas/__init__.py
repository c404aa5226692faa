"""Avro schemas of the wire protocol and of the introspection collections.

``requests.avsc`` is the request union; ``rows/*.avsc`` are the row schemas of the
built-in introspection collections; :mod:`schemas.codec` encodes and decodes requests.
"""
