"""The package version, in a module of its own so that the package's modules can read it
without importing the package face (pyproject.toml reads it from here too)."""

__version__ = "0.2.0"
