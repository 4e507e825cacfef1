"""A kernel library file written against PyPTO's public API, run as a script:

    PYPTO_ALIAS=1 python axpb_script.py -p a2a3sim
    python -m pytest_pypto run axpb_script.py -p a5sim

It compiles a program with a scalar parameter into a work dir, runs it with
``execute_compiled`` (scalars as ctypes values, as PyPTO's golden harnesses pass
them), runs a ``@pl.jit`` kernel directly and through its compiled work dir, checks
each result against its own numpy golden and prints one line per check.  Nothing in
it names pytest_pypto: only ``import pypto`` is resolved to the bundled toolchain.
"""

import argparse
import ctypes
import sys
import tempfile

import numpy as np
import pypto.language as pl
from pypto import ir
from pypto.ir.compiled_program import CompiledProgram
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram
from pypto.runtime import RunConfig, execute_compiled

R, C = 64, 32


@pl.program
class Axpb:
    @pl.function(type=pl.FunctionType.InCore)
    def axpb(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        alpha: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        tx = pl.load(x, [0, 0], [R, C])
        tb = pl.load(b, [0, 0], [R, C])
        return pl.store(pl.add(pl.mul(tx, alpha), tb), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        b: pl.Tensor[[R, C], pl.FP32],
        alpha: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        return self.axpb(x, b, alpha, y)


@pl.jit.incore
def sub_k(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = a.shape
    t = pl.sub(pl.load(a, [0, 0], [rows, cols]), pl.load(b, [0, 0], [rows, cols]))
    pl.store(t, [0, 0], out)
    return out


@pl.jit
def sub_kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = sub_k(a, b, out)
    return out


def golden_axpb(x, b, alpha):
    return x * np.float32(alpha) + b


def check(name, got, want):
    ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    print(f"{name}: {'PASS' if ok else 'FAIL'}")
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", "--platform", default="a2a3sim")
    parser.add_argument("--alpha", type=float, default=1.5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((R, C)).astype(np.float32)
    b = rng.standard_normal((R, C)).astype(np.float32)
    results = []
    with tempfile.TemporaryDirectory() as work_dir:
        compiled = ir.compile(Axpb, output_dir=work_dir, platform=args.platform)
        results.append(isinstance(compiled, CompiledProgram)
                       and not isinstance(compiled, DistributedCompiledProgram))
        print(f"isinstance: {'PASS' if results[-1] else 'FAIL'}")
        y = np.zeros((R, C), np.float32)
        execute_compiled(work_dir, [x, b, ctypes.c_float(args.alpha), y],
                         platform=args.platform, device_id=0)
        results.append(check("execute_compiled", y, golden_axpb(x, b, args.alpha)))

    config = RunConfig(platform=args.platform)
    out = np.zeros((R, C), np.float32)
    sub_kernel(x, b, out, config=config)
    results.append(check("jit", out, x - b))
    jit_dir = sub_kernel.compile(x, b, out, config=config).output_dir
    again = np.zeros((R, C), np.float32)
    execute_compiled(jit_dir, [b, x, again], platform=args.platform, device_id=0)
    results.append(check("jit output_dir", again, b - x))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
