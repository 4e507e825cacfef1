"""``simpler_setup``: the tools package of PyPTO's runtime backend, on the simulator
(docs/design/plugin.md §16).  Only what reads the simulator's own outputs is here:
``tools.dump_viewer`` reads the argument dump (runtime/argdump.py).  The compat plugin
and the ``pypto`` alias map ``import simpler_setup`` here when no real one is installed
(compat/alias.py)."""

from pytest_pypto.compat.simpler_setup import tools

__all__ = ["tools"]
