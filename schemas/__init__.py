"""Avro schemas of the wire protocol and of the introspection collections."""
