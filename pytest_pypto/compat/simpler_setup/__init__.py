"""``simpler_setup``: the tools package of PyPTO's runtime backend, on the simulator
(docs/design/plugin.md §16).  Here: ``tools.dump_viewer`` reads the argument dump (runtime/argdump.py), and
``torch_interop`` makes runtime tensor arguments of torch tensors.  The compat plugin
and the ``pypto`` alias map ``import simpler_setup`` here when no real one is installed
(compat/alias.py)."""

from pytest_pypto.compat.simpler_setup import tools, torch_interop

__all__ = ["tools", "torch_interop"]
