"""The documentation's own tooling: its narrative word count (``python -m tests.docs.words``),
the fact checks of its pages against the code (``tests/unit/test_docs_*.py``), and the hook
that makes README.md the home page of the site ``make docs`` builds (``mkdocs.yml``)."""
