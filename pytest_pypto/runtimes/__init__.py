# SPDX-License-Identifier: Apache-2.0
"""Runtimes that plug into `pytest_pypto.runtime.protocol` from outside the bundled toolchain.

``pypto``: the adapter that compiles and runs with a real PyPTO installation
(entry point ``pypto`` of the group ``pytest_pypto.runtimes``).  Nothing here is
imported unless a cell asks the registry for such a runtime.
"""
