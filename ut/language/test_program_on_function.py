"""`@pl.program` on something that is not a class (issue 26, item 12): a TypeError
naming what it got and what it takes, not a bare StopIteration from the parser."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl


def test_program_on_a_function_names_it_and_what_is_accepted() -> None:
    with pytest.raises(TypeError) as info:
        @pl.program
        def kernel(x):
            return x
    text = str(info.value)
    assert text.startswith("@pl.program decorates a class, but got the function 'kernel'"), text
    assert "@pl.function" in text and "@pl.jit" in text


def test_program_on_a_lambda_or_an_instance() -> None:
    with pytest.raises(TypeError, match=r"^@pl.program decorates a class, but got the function"):
        pl.program(lambda x: x)
    with pytest.raises(TypeError, match=r"^@pl.program decorates a class, but got an int \(3\)"):
        pl.program(3)


MODULE = '''
import pytest_pypto.language as pl

@pl.program
def kernel(x):
    return x
'''


def test_program_on_a_function_at_module_level_fails_the_import_clearly(tmp_path) -> None:
    path = tmp_path / "mod_with_function_program.py"
    path.write_text(MODULE)
    code = compile(MODULE, str(path), "exec")
    with pytest.raises(TypeError, match="@pl.program decorates a class, but got the function"):
        exec(code, {"__name__": "mod_with_function_program"})
