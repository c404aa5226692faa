"""The ``collection-manager`` command line: ``main`` parses, one module per command group."""
