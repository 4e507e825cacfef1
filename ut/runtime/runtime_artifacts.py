"""Hand-written artifact directories for the runtime's tests (until the compiler lands).

Each test writes a manifest, kernels/<name>.py and orchestration.py following the
ABIs of `pytest_pypto.ir.artifact`, then runs it on a `Worker`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pytest_pypto.arch import parse_platform
from pytest_pypto.ir.artifact import SIM_BACKEND, ArgInfo, KernelInfo, Manifest, write_manifest


def T(name: str, shape: list, dtype: str = "FP32", direction: str = "In") -> ArgInfo:
    """A tensor parameter."""
    return ArgInfo(name=name, kind="tensor", direction=direction, dtype=dtype, shape=list(shape))


def S(name: str, dtype: str = "FP32") -> ArgInfo:
    """A scalar parameter."""
    return ArgInfo(name=name, kind="scalar", direction="Scalar", dtype=dtype, shape=[])


def K(name: str, args: list[ArgInfo], body: str, core_type: str = "aiv",
      returns: list[int] | None = None) -> dict[str, Any]:
    """A kernel: its params and the body of its function (numpy on the tensor views)."""
    if returns is None:
        returns = [i for i, a in enumerate(args) if a.direction in ("Out", "InOut")]
    return {"name": name, "args": args, "body": body, "core_type": core_type,
            "returns": returns}


def write_artifact(
    directory: Path,
    *,
    entry_args: list[ArgInfo],
    kernels: list[dict[str, Any]],
    orchestration: str,
    platform: str = "a2a3sim",
    program: str = "Prog",
    entry_returns: list[int] | None = None,
) -> Path:
    """Write an artifact directory; ``orchestration`` is the body of the entry `main`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "kernels").mkdir(exist_ok=True)
    infos = []
    for func_id, k in enumerate(kernels):
        params = ", ".join(a.name for a in k["args"])
        rets = "".join(f"{k['args'][i].name}, " for i in k["returns"])
        source = (
            "import numpy as np\n\n"
            "def make(bind):\n"
            f"    def {k['name']}({params}):\n"
            + textwrap.indent(textwrap.dedent(k["body"]).strip() + "\n", " " * 8)
            + f"        return ({rets})\n"
            f"    return {k['name']}\n"
        )
        (directory / "kernels" / f"{k['name']}.py").write_text(source)
        infos.append(KernelInfo(
            name=k["name"], func_id=func_id, core_type=k["core_type"], args=k["args"],
            source=f"kernels/{k['name']}.py", listing=f"kernels/{k['name']}.txt",
            returns=k["returns"],
        ))
    params = ", ".join(a.name for a in entry_args)
    (directory / "orchestration.py").write_text(
        "def make(rt):\n"
        f"    def main({params}):\n"
        + textwrap.indent(textwrap.dedent(orchestration).strip() + "\n", " " * 8)
        + "    return main\n"
    )
    if entry_returns is None:
        entry_returns = [i for i, a in enumerate(entry_args) if a.direction in ("Out", "InOut")]
    manifest = Manifest(
        program=program, platform=platform, arch=parse_platform(platform)[0].arch_name,
        mode=parse_platform(platform)[1].value, toolchain_version="test", sim_backend=SIM_BACKEND, entry="main",
        entry_args=entry_args, entry_returns=entry_returns, kernels=infos,
    )
    write_manifest(directory, manifest)
    return directory
