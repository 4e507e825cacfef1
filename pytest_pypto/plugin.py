"""pytest hooks of pytest-pypto (options, markers, cells, skips, ledger).

Only hooks live here; the logic is in the stage it belongs to, imported lazily so
that loading the plugin in every pytest run stays cheap.
"""

# The lint stage registers its own collection hooks (cheap to import).
pytest_plugins = ["pytest_pypto.lint.hooks"]
