"""A program with several chip-level orchestrations and no host orchestrator (PyPTO's
"L2 multi-orch"; docs/design/distributed.md §2): each orchestration is compiled as a
program of its own, under ``<output_dir>/next_levels/<name>/``, and run by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_pypto.harness.distributed import chip_program

__all__ = ["MultiOrchCompiledProgram", "OrchestrationEntry", "orchestration_names"]


def orchestration_names(program: Any) -> list[str]:
    """The program's Orchestration functions, in source order."""
    functions = getattr(program, "functions", {})
    return [name for name, f in functions.items() if getattr(f, "kind", None) == "Orchestration"]


class OrchestrationEntry:
    """One orchestration of a multi-orch program: call it like a compiled program."""

    def __init__(self, name: str, compiled: Any, output_dir: Path | None) -> None:
        self.name = name
        self.compiled = compiled
        self.output_dir = output_dir
        self.param_names = [a.name for a in compiled.manifest.entry_args]

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        return self.compiled(*args, config=config)

    def __repr__(self) -> str:
        return f"<orchestration {self.name}({', '.join(self.param_names)})>"


class MultiOrchCompiledProgram:
    """``ir.compile`` of a program with several orchestrations: pick one by
    ``compiled["name"]`` or ``compiled.name``; ``compiled(...)`` itself refuses."""

    def __init__(self, program: Any, compile_one: Any, output_dir: Any) -> None:
        self.program = program
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.orchestration_names = orchestration_names(program)
        self._entries: dict[str, OrchestrationEntry] = {}
        for name in self.orchestration_names:
            where = self.output_dir / "next_levels" / name if self.output_dir else None
            compiled = compile_one(chip_program(program, name), where)
            self._entries[name] = OrchestrationEntry(name, compiled, where)

    def __getitem__(self, name: str) -> OrchestrationEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"program '{self.program.name}' has no orchestration {name!r}; it "
                           f"has {', '.join(self.orchestration_names)}") from None

    def __getattr__(self, name: str) -> OrchestrationEntry:
        entries = self.__dict__.get("_entries", {})
        if name in entries:
            return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"program '{self.program.name}' has {len(self.orchestration_names)} orchestrations "
            f"({', '.join(self.orchestration_names)}); select one explicitly: "
            f"compiled[{self.orchestration_names[0]!r}](...)")
