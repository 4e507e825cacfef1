"""Op entries, one module per family; importing this package registers them all.

Every public module of this package (name not starting with ``_``) is an op family
and is imported here, in name order, so adding a family is adding a file.
Importing stays numpy-free: numpy loads on the first compute.
"""

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_mod}")
