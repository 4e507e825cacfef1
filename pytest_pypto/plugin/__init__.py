"""pytest-pypto's pytest plugin: one module per concern, each with its own hooks and
its own stash state, as pytest's own ``_pytest`` modules are.

=================  ===========================================================
module             concern
=================  ===========================================================
``options``        ``--pypto-*`` options, ini keys, env mirrors, resolution
``cells``          markers, one item per cell, the skips of ruled-out cells
``fixtures``       ``pypto_platform``, ``pypto_config``, ``pypto_device``, ``pypto_runner``
``seeds``          per-test seeds, ``pypto_rng``, the repro line of a failure
``paths``          ``--pypto-kernels-dir``/``--pypto-cache-dir`` checks, kept dirs
``cache``          the session's compile cache, its warning and summary line
``devices``        NPUs found and leased; the report header's first line
``emulation``      ``--pypto-emulate-onboard``: emulated cells' ids, labels, skips
``runtimes``       ``--pypto-runtime``, ``pypto_requires``, runtimes line, close
``context``        the session context lent to the harness library
``codegen_only``   ``--pypto-codegen-only``: the running test, compiled counts
``ledger``         the coverage ledger and ``--pypto-require``
``htmlreport``     pytest-html extras of failed kernel tests; the ledger table
``remote``         artifacts kept by xdist workers elsewhere; the failure section
``failures``       readable tracebacks, failure classes in ``user_properties``
``workers``        the one road from xdist workers to the controller
``keys``           every stash key, report property and payload key
=================  ===========================================================

The list below is the registration order, which orders hooks of equal priority
(pluggy calls the later-registered first): the header reads devices, cache,
runtimes; configure checks runtimes, then paths, then the cache; the summary shows
the ledger, the remote artifacts, the cache line, then (trylast) broken runtimes.

Importing this package stays cheap (no numpy, compiler or runtime): the plugin
loads in every pytest run.  The compat plugin is loaded by name only, never
imported here.

Each module's docstring says ``PYTEST_DONT_REWRITE``: the modules import one another,
so in an editable install (where pytest does not mark the package for assertion
rewriting up front) listing a module that is already imported would warn; plugin
code has no asserts worth rewriting.
"""

pytest_plugins = [
    "pytest_pypto.lint.hooks",  # the lint stage's own collection hooks
    "pytest_pypto.plugin.options",
    "pytest_pypto.plugin.cells",
    "pytest_pypto.plugin.devices",
    "pytest_pypto.plugin.emulation",
    "pytest_pypto.plugin.cache",
    "pytest_pypto.plugin.paths",
    "pytest_pypto.plugin.runtimes",
    "pytest_pypto.plugin.remote",
    "pytest_pypto.plugin.ledger",
    "pytest_pypto.plugin.htmlreport",
    "pytest_pypto.plugin.codegen_only",
    "pytest_pypto.plugin.workers",
    "pytest_pypto.plugin.failures",
    "pytest_pypto.plugin.seeds",
    "pytest_pypto.plugin.fixtures",
    "pytest_pypto.plugin.context",
]
