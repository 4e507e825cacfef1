"""Hypothesis profiles of the program fuzzer (ut/fuzz/test_fuzz_programs.py).

``fuzz-fixed``: the deterministic run of the suite (derandomized, no example
database, no deadline); each test sets its own ``max_examples``.
``fuzz-long``: the long run, selected by ``PYPTO_FUZZ_EXAMPLES=<n>`` (examples per
test; random seeds, failures kept in hypothesis' example database).  The variable is
read at import time, before ut/conftest.py clears PYPTO_* variables for each test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES_ENV = "PYPTO_FUZZ_EXAMPLES"
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.function_scoped_fixture]

settings.register_profile("fuzz-fixed", derandomize=True, deadline=None, database=None,
                          suppress_health_check=_QUIET, print_blob=True)
settings.register_profile("fuzz-long", derandomize=False, deadline=None,
                          max_examples=int(os.environ.get(EXAMPLES_ENV) or 5000),
                          suppress_health_check=_QUIET, print_blob=True)
