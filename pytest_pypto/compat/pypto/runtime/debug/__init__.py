"""``pypto.runtime.debug``: replaying a build directory (docs/design/plugin.md §16).

``replay`` re-runs an artifact directory on the simulator (as in PyPTO, the package's
``replay`` is the function; the module is ``pypto.runtime.debug.replay`` in
sys.modules); rebuilding device code from ``.pto`` files needs ptoas, which the
bundled toolchain has not (Tier 3 when called).
"""

from pytest_pypto.compat.pypto.runtime.debug import pto_rebuild
from pytest_pypto.compat.pypto.runtime.debug.pto_rebuild import rebuild_kernel_cpp_from_pto
from pytest_pypto.compat.pypto.runtime.debug.replay import invalidate_binary_cache, replay

__all__ = ["invalidate_binary_cache", "pto_rebuild", "rebuild_kernel_cpp_from_pto", "replay"]
