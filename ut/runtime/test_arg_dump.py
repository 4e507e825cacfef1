# SPDX-License-Identifier: Apache-2.0
"""The selective argument dump (--pypto-dump-args / PyPTO's --dump-args, issue 23): a run
with a dump level writes ``dfx_outputs/args_dump/args_dump.json`` and its binary, the
dumped arguments' bytes as they were before the task ran (inputs) and after it finished
(outputs).  Expected bytes come from the numpy arrays the test made, never from the
toolchain."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.runtime.argdump import MANIFEST_NAME, write_args_dump

R, C = 16, 32


@pl.program
class TwoStages:
    @pl.function(type=pl.FunctionType.InCore)
    def stage1(self, x: pl.Tensor[[R, C], pl.FP32],
               scratch: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [R, C]), pl.load(scratch, [0, 0], [R, C]))
        return pl.store(pl.add(t, 1.0), [0, 0], scratch)

    @pl.function(type=pl.FunctionType.InCore)
    def stage2(self, scratch: pl.Tensor[[R, C], pl.FP32],
               out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.mul(pl.load(scratch, [0, 0], [R, C]), 2.0), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             scratch: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            scratch, t1 = pl.submit(self.stage1, x, scratch, dumps=[x, scratch])
            out, _ = pl.submit(self.stage2, scratch, out, deps=[t1])
        return out


def _run(pypto_runner, pypto_config, rng, level, where):
    import dataclasses

    x = rng.standard_normal((R, C)).astype(np.float32)
    scratch = rng.standard_normal((R, C)).astype(np.float32)
    first = scratch.copy()
    out = np.zeros((R, C), np.float32)
    config = dataclasses.replace(pypto_config, dump_args=level, save_kernels_dir=str(where))
    pytest_pypto.run(pypto_runner.compile(TwoStages), x, scratch, out, config=config)
    np.testing.assert_allclose(out, (x + first + 1.0) * 2.0, rtol=1e-6)
    return x, first, scratch, out


def _manifest(where: Path) -> tuple[list[dict], bytes]:
    path = where / "dfx_outputs" / "args_dump" / MANIFEST_NAME
    data = json.loads(path.read_text())
    return data["args"], (path.parent / data["bin_file"]).read_bytes()


def _array(entry: dict, blob: bytes) -> np.ndarray:
    raw = blob[entry["bin_offset"]:entry["bin_offset"] + entry["bin_size"]]
    assert entry["dtype"] == "FP32"
    return np.frombuffer(raw, np.float32).reshape(entry["shape"])


def test_partial_dump_keeps_only_the_marked_arguments_of_the_marked_task(
        pypto_runner, pypto_config, pypto_rng, tmp_path):
    x, first, scratch, _ = _run(pypto_runner, pypto_config, pypto_rng, 1, tmp_path)
    entries, blob = _manifest(tmp_path)
    assert len({e["task_id"] for e in entries}) == 1  # stage2 has no dumps=
    got = {(e["role"], e["stage"], e["arg_index"]) for e in entries}
    assert got == {("input", "before_dispatch", 0), ("inout", "before_dispatch", 1),
                   ("inout", "after_completion", 1)}
    by_key = {(e["role"], e["stage"]): e for e in entries}
    np.testing.assert_array_equal(_array(by_key["input", "before_dispatch"], blob), x)
    np.testing.assert_array_equal(_array(by_key["inout", "before_dispatch"], blob), first)
    np.testing.assert_array_equal(_array(by_key["inout", "after_completion"], blob), scratch)
    for e in entries:
        assert isinstance(e["task_id"], str) and e["is_contiguous"] is True
        assert e["shape"] == [R, C] and e["strides"] == [C, 1] and e["start_offset"] == 0
        assert e["bin_offset"] + e["bin_size"] <= len(blob)


def test_full_dump_keeps_every_argument_of_every_task(
        pypto_runner, pypto_config, pypto_rng, tmp_path):
    _, _, scratch, out = _run(pypto_runner, pypto_config, pypto_rng, 2, tmp_path)
    entries, blob = _manifest(tmp_path)
    assert len({e["task_id"] for e in entries}) == 2
    outputs = [e for e in entries if e["role"] == "output"]
    assert [(e["stage"], e["arg_index"]) for e in outputs] == [("after_completion", 1)]
    np.testing.assert_array_equal(_array(outputs[0], blob), out)
    reads = [e for e in entries if e["role"] == "input" and e["arg_index"] == 0
             and e["task_id"] == outputs[0]["task_id"]]
    np.testing.assert_array_equal(_array(reads[0], blob), scratch)  # stage2 read stage1's


def test_no_level_writes_no_dump(pypto_runner, pypto_config, pypto_rng, tmp_path):
    _run(pypto_runner, pypto_config, pypto_rng, 0, tmp_path)
    assert not (tmp_path / "dfx_outputs" / "args_dump").exists()


def test_a_window_dump_names_its_offset_and_strides_in_its_tensor(tmp_path):
    base = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    window = base[2:5, 1:4]
    entry = {"task_id": "3", "role": "input", "stage": "before_dispatch", "arg_index": 0,
             "dtype": "FP32", "name": "a", "kernel": "k", "array": window.copy(),
             "strides": [6, 1], "start_offset": 2 * 6 + 1, "is_contiguous": False}
    write_args_dump([entry], tmp_path / "dfx_outputs")
    entries, blob = _manifest(tmp_path)
    (e,) = entries
    assert e["shape"] == [3, 3] and e["strides"] == [6, 1] and e["start_offset"] == 13
    assert e["is_contiguous"] is False
    np.testing.assert_array_equal(_array(e, blob), window)


def test_the_dump_viewer_reads_back_what_was_written(tmp_path):
    from pytest_pypto.compat.simpler_setup.tools.dump_viewer import decode_elements, read_arg_data

    a = np.array([[1.5, -2.0], [3.25, 4.0]], np.float32)
    write_args_dump([{"task_id": "0", "role": "output", "stage": "after_completion",
                      "arg_index": 1, "dtype": "FP32", "name": "o", "kernel": "k",
                      "array": a, "strides": [2, 1], "start_offset": 0,
                      "is_contiguous": True}], tmp_path / "dfx_outputs")
    entries, _ = _manifest(tmp_path)
    bin_path = tmp_path / "dfx_outputs" / "args_dump" / "args_dump.bin"
    data = read_arg_data(bin_path, entries[0]["bin_offset"], entries[0]["bin_size"])
    assert len(data) == a.nbytes
    assert decode_elements(data, "FP32", 3) == [1.5, -2.0, 3.25]
    with pytest.raises(ValueError, match="dtype 'NOPE'"):
        decode_elements(data, "NOPE", 1)
