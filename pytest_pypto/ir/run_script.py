"""``<artifact>/debug/run.py``: the re-runner every artifact ships (docs/design/artifact.md §10).

A directory an artifact is written to holds a small script that runs it again on the
simulator, so a kept or replayed build needs no test around it::

    python <artifact>/debug/run.py [--platform a5sim]

Its inputs come from ``_inline_inputs`` (random tensors of the entry's shapes and
dtypes, zeros for Out tensors, a placeholder value for scalars), and after the run
``_user_compare`` receives the arguments with the results written in place: both are
the user's to edit.  The script needs torch and this package; it calls
``pytest_pypto.run`` on its artifact directory.  Rendered from the manifest alone.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.dtypes import DTYPES

__all__ = ["RUN_SCRIPT", "render_run_script"]

RUN_SCRIPT = "debug/run.py"


def _torch_dtype(name: str) -> str:
    dtype = DTYPES.get(name)
    storage = getattr(dtype, "storage", None)
    return f"torch.{storage}" if storage and storage.isidentifier() else "torch.float32"


def _input_line(arg: Any) -> str:
    dtype = DTYPES.get(arg.dtype)
    if arg.kind == "scalar":
        value = "1.0" if dtype is not None and dtype.is_float else "1"
        return f"{arg.name} = {value}  # scalar ({arg.dtype}): set its value"
    shape = tuple(d if isinstance(d, int) else 1 for d in arg.shape)
    note = "  # dynamic dims set to 1: edit" if len(shape) != sum(
        isinstance(d, int) for d in arg.shape) else ""
    torch_dtype = _torch_dtype(arg.dtype)
    if arg.direction == "Out":
        return f"{arg.name} = torch.zeros({shape!r}, dtype={torch_dtype}){note}"
    if dtype is not None and dtype.kind == "bool":
        return f"{arg.name} = torch.randint(0, 2, {shape!r}, dtype={torch_dtype}){note}"
    if dtype is not None and not dtype.is_float:
        return f"{arg.name} = torch.randint(0, 8, {shape!r}, dtype={torch_dtype}){note}"
    return f"{arg.name} = torch.randn({shape!r}, dtype={torch_dtype}){note}"


def render_run_script(manifest: Any) -> str:
    """The text of ``<artifact>/debug/run.py`` for the artifact of ``manifest``."""
    args = list(manifest.entry_args)
    names = ", ".join(a.name for a in args)
    inputs = "\n".join(f"    {_input_line(a)}" for a in args) or "    pass"
    return f'''"""Runs the artifact of program {manifest.program!r} (the directory above) again.

    python {RUN_SCRIPT} [--platform PLATFORM]

Written by pytest-pypto next to the artifact.  Edit _inline_inputs to choose the
inputs and _user_compare to check the results (written into the arguments).
"""

import argparse
import sys
from pathlib import Path

import torch

import pytest_pypto

ARTIFACT = Path(__file__).resolve().parent.parent
PLATFORM = {manifest.platform!r}


def _inline_inputs():
    """The entry's arguments in order (shapes and dtypes of the compiled program)."""
{inputs}
    return [{names}]


def _user_compare({names}):
    """Called after the run; Out and InOut tensors hold the results."""


def main(argv=None):
    parser = argparse.ArgumentParser(description="run this artifact again")
    parser.add_argument("--platform", default=PLATFORM)
    options = parser.parse_args(argv)
    arguments = _inline_inputs()
    config = pytest_pypto.RunConfig(platform=options.platform)
    pytest_pypto.run(str(ARTIFACT), *arguments, config=config)
    _user_compare(*arguments)
    print(f"ran {{ARTIFACT}} on {{options.platform}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
