"""PyPTO's conftest surface, for suites migrating from PyPTO's in-tree harness.

Opt in from a conftest (or run with ``--pypto-alias``, which loads it)::

    pytest_plugins = ["pytest_pypto.compat"]

and PyPTO's tests run unchanged except for their imports (README, "Migrating a
PyPTO suite"; the import rule maps ``pypto.<path>`` to
``pytest_pypto.compat.pypto.<path>`` and ``harness.core.harness`` to
``pytest_pypto.compat.harness``).

What carries over from the conftest of PyPTO's system tests:

- ``test_config`` and ``test_runner`` are **session-scoped**, as PyPTO's are, so a
  suite's own session or module fixture may request them.  ``test_config`` is the
  RunConfig of the item's cell (a test requesting it runs once per requested cell)
  with PyPTO's DFX options applied.  ``test_runner.run(case)`` returns a
  `RunResult` (``.passed``, ``.error``) and never raises for a failing case.
- The platform a case runs on: the case's own (``Case(platform=platform)``, PyPTO's
  ``get_platform()``), else the test's ``platform`` parameter, else its cell.  A
  test parametrized over ``PLATFORMS`` is therefore not multiplied again: it runs
  once per requested cell, with the platform as its id.
- ``device_ids``: the devices onboard tests may lease (``--pypto-device`` /
  ``--device``).
- PyPTO's option spellings: ``--platform`` (a comma list of platform strings),
  ``--device``, ``--save-kernels``, ``--kernels-dir``, ``--dump-passes`` and
  ``--codegen-only`` map onto ``--pypto-*``; the DFX and pipeline switches
  (``--enable-dep-gen``, ``--enable-chip-swimlane``, ``--dump-args``, ...) are
  accepted and land in ``test_config``'s fields, with no effect on the simulator.
- ``result.error`` of a failing case is our full report (worst elements, platform,
  seed, repro command); the failure class is recorded in ``user_properties``.

The package itself is cheap to import (it only names its plugin module,
`pytest_pypto.compat.plugin`, which pytest loads when the package is registered), so
``pytest_pypto.compat.alias`` and the compat surface load without the plugin's
session machinery; the toolchain and numpy load only when a fixture is used.
"""

pytest_plugins = ["pytest_pypto.compat.plugin"]
