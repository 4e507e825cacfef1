"""``simpler``: PyPTO's runtime backend package (its chip and level-3 workers), on the
simulator (docs/design/plugin.md §16, docs/design/distributed.md §8).

PyPTO runs compiled programs through ``simpler``; code that drives it by hand
(``simpler.worker.Worker(level=2, ...)``, ``register(compiled.chip_callable)``,
``run(cid, orch_args, call_config)``, or ``Worker(level=3, ...)`` with ``TaskArgs``)
gets this stand-in when no real ``simpler`` is installed: the compat plugin and the ``pypto`` alias map ``import simpler`` here
(compat/alias.py), never over a real installation.
"""

from pytest_pypto.compat.simpler import task_interface, worker

__all__ = ["task_interface", "worker"]
