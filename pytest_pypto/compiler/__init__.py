"""The bundled compiler: passes and checks over the IR, then codegen to an artifact.

Entry point: `pytest_pypto.compiler.api.compile` (also `pytest_pypto.compile`).
"""
