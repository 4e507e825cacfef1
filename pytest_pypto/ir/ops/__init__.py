"""Op entries, one module per family; importing this package registers them all.

Families: memory (load/store/move/create/full), elementwise (binary ops and their
scalar forms), unary, cast, matmul, reduce (row/col reductions), expand
(row_expand_*).  Importing stays numpy-free: numpy loads on the first compute.
"""

from pytest_pypto.ir.ops import (  # noqa: F401
    cast,
    elementwise,
    expand,
    matmul,
    memory,
    reduce,
    unary,
)
