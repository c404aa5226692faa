"""collection-manager: a replica fleet's introspection data, unified in Redis."""

__version__ = "0.2.0.dev0"
