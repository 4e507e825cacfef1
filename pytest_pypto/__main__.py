"""``python -m pytest_pypto run script.py [ARGS...]``: run a PyPTO script on the bundled
toolchain (docs/design/plugin.md §17).

The script runs as ``python script.py ARGS`` would run it (``__name__ == "__main__"``,
``sys.argv = [script, *ARGS]``, its directory first on ``sys.path``), with
``import pypto`` resolved to the compat surface, the same finder ``--pypto-alias`` and
``PYPTO_ALIAS=1`` install (`pytest_pypto.compat.alias`).  A real PyPTO installation is
never shadowed: the script then runs against it, and a note on stderr says so.
"""

from __future__ import annotations

import os
import runpy
import sys

from pytest_pypto.compat import alias

USAGE = "usage: python -m pytest_pypto run SCRIPT.py [ARGS...]"


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(argv) < 2 or argv[0] != "run":
        print(USAGE, file=sys.stderr)
        return 2
    script, args = argv[1], argv[2:]
    if not os.path.isfile(script):
        print(f"pytest_pypto run: no such script: {script}\n{USAGE}", file=sys.stderr)
        return 2
    if not alias.install() and not alias.active():
        print(f"pytest_pypto run: a real PyPTO is installed at {alias.real_pypto()}; "
              f"running the script against it", file=sys.stderr)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
