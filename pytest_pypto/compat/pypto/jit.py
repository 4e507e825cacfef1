"""``pypto.jit``: the `@pl.jit` decorator and its function objects."""

from pytest_pypto.language.jit import JITFunction, jit

__all__ = ["JITFunction", "jit"]
