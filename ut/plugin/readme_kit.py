"""The README's kernel example, for pytester tests that run it as a user would.

Read from README.md itself, so these tests exercise exactly what a reader copies.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    """The README's first ```python block that defines a test, verbatim."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return next(block for block in blocks if "def test_" in block)


README_EXAMPLE = readme_example()
# The imports, sizes and the `Add` program, without the README's test.
ADD_PROGRAM = README_EXAMPLE[: README_EXAMPLE.index("def test_")]
