"""``simpler.task_interface``: the per-run call config."""

from pytest_pypto.ir.runtime_facade import CallConfig, ChipCallable

__all__ = ["CallConfig", "ChipCallable"]
