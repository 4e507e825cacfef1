"""The plugin's options: one table drives ``addoption``, ini keys, env mirrors and resolution.

Every option ``--pypto-<name>`` has the ini key ``pypto_<name>`` and the environment
mirror ``PYPTO_<NAME>``.  Precedence: command line > env > ini > default.  A bad
value is a ``pytest.UsageError`` naming the option, where the value came from, the
value and the valid choices (exit status 4, no traceback).

Register an option here only once the machinery behind it exists.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import pytest

from pytest_pypto.arch import ARCH_CHOICES, MODE_CHOICES, MODE_NAMES, PLATFORMS, parse_platform

__all__ = [
    "OPTIONS",
    "SETTINGS_KEY",
    "Option",
    "Settings",
    "add_options",
    "early_switch",
    "parse_bool",
    "resolve",
]


def _split(raw: str) -> list[str]:
    parts = [p.strip() for p in raw.split(",")]
    if not raw.strip() or any(not p for p in parts):
        raise ValueError("empty entry")
    return parts


def parse_arch(raw: str) -> tuple[str, ...]:
    """``a2a3``, ``a5``, a comma list of them, or ``all`` -> arch names in table order."""
    parts = _split(raw)
    if parts == ["all"]:
        return ARCH_CHOICES
    bad = [p for p in parts if p not in ARCH_CHOICES]
    if bad:
        raise ValueError(f"unknown architecture {bad[0]!r}")
    return tuple(a for a in ARCH_CHOICES if a in parts)


def parse_mode(raw: str) -> tuple[str, ...]:
    """``sim``, ``onboard`` or a comma list -> mode names in table order."""
    parts = _split(raw)
    bad = [p for p in parts if p not in MODE_CHOICES]
    if bad:
        raise ValueError(f"unknown execution mode {bad[0]!r}")
    return tuple(m for m in MODE_CHOICES if m in parts)


def parse_devices(raw: str) -> tuple[int, ...]:
    """Device ids and ranges (``0``, ``0-7``, ``0,2,5``, mixed)."""
    from pytest_pypto.runtime.devices import parse_device_list

    return parse_device_list(raw)


def parse_seed(raw: str) -> int:
    """A non-negative integer base seed."""
    try:
        value = int(str(raw).strip(), 0)
    except ValueError:
        raise ValueError("not an integer") from None
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def parse_path(raw: str) -> str:
    """A non-empty path (relative paths are taken from the rootdir)."""
    text = str(raw).strip()
    if not text:
        raise ValueError("empty path")
    return text


def parse_timeout(raw: str) -> float:
    """Seconds (a positive number) a kernel run may take before it fails."""
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not value > 0:
        raise ValueError("must be > 0")
    return value


def parse_name(raw: str) -> str:
    """A runtime name (an entry point of the group ``pytest_pypto.runtimes``)."""
    text = str(raw).strip()
    if not text:
        raise ValueError("empty name")
    return text


def parse_cells(raw: str) -> tuple[str, ...]:
    """A comma list of platform strings (cells)."""
    parts = _split(raw)
    for p in parts:
        parse_platform(p)  # ValueError for an unknown cell
    return tuple(dict.fromkeys(parts))


def parse_bool(raw: str | bool) -> bool:
    """A switch: given on the command line, or 1/true/yes/on vs 0/false/no/off elsewhere."""
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("not a boolean")


class Option(NamedTuple):
    """One row of the option table (a NamedTuple: cheaper to define than a dataclass).

    A ``switch`` takes no value on the command line (``--pypto-codegen-only``).
    """

    name: str
    metavar: str
    help: str
    choices: str
    parse: Callable[[str], Any]
    default: str | None = None
    switch: bool = False

    @property
    def flag(self) -> str:
        return f"--pypto-{self.name}"

    @property
    def dest(self) -> str:
        return f"pypto_{self.name.replace('-', '_')}"

    @property
    def ini(self) -> str:
        return f"pypto_{self.name.replace('-', '_')}"

    @property
    def env(self) -> str:
        return f"PYPTO_{self.name.upper().replace('-', '_')}"


_CELLS = ", ".join(PLATFORMS)
_SWITCH = "a switch (env/ini: 1, true, yes, on or 0, false, no, off)"

OPTIONS: tuple[Option, ...] = (
    Option(
        "arch",
        "ARCHS",
        "architectures to test",
        parse=parse_arch,
        default="a2a3",
        choices=f"{', '.join(ARCH_CHOICES)}, a comma list of them, or all",
    ),
    Option(
        "mode",
        "MODES",
        "execution modes to test",
        parse=parse_mode,
        default="sim",
        choices=f"{', '.join(MODE_CHOICES)}, or a comma list of them",
    ),
    Option(
        "device",
        "IDS",
        "devices onboard tests may lease (default: all visible NPUs)",
        parse=parse_devices,
        choices="device ids and ranges such as 0, 0-7, 0,2,5 or 0-3,6",
    ),
    Option(
        "seed",
        "INT",
        "base seed for input data (default: derived per test)",
        parse=parse_seed,
        choices="a non-negative integer",
    ),
    Option(
        "codegen-only",
        "",
        "compile and check kernels but never dispatch them",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "save-kernels",
        "",
        "keep every compiled artifact under --pypto-kernels-dir (one directory per test)",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "kernels-dir",
        "PATH",
        "where kept artifacts go (saved, dumped, or of failing tests)",
        parse=parse_path,
        default="build_output",
        choices="a directory path (relative: from the rootdir)",
    ),
    Option(
        "dump-passes",
        "",
        "write the IR after each compiler pass (passes/NN_<pass>.txt in the kept artifact)",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "cache-dir",
        "PATH",
        "compile cache directory (default: pypto-compile in pytest's cache dir)",
        parse=parse_path,
        choices="a directory path (relative: from the rootdir)",
    ),
    Option(
        "no-cache",
        "",
        "compile every kernel afresh: neither read nor write the compile cache",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "alias",
        "",
        "zero-edit mode: 'import pypto...' resolves to pytest_pypto.compat.pypto "
        "(and loads the compat fixtures) unless a real PyPTO is installed",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "shuffle",
        "SEED",
        "shuffle the order of ready tasks with this seed (exposes missing dependencies)",
        parse=parse_seed,
        choices="a non-negative integer",
    ),
    Option(
        "strict-war",
        "",
        "fail a run that has write-after-read hazards the device does not order",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "precise",
        "",
        "compute every op in FP32 without per-op rounding (rounding loss vs a wrong algorithm)",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "timeout",
        "SECONDS",
        "fail a kernel run that takes longer than this",
        parse=parse_timeout,
        choices="a positive number of seconds",
    ),
    Option(
        "trace",
        "",
        "write a Chrome/Perfetto trace of each run's schedule into the kept artifact",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "isolate",
        "",
        "run kernels in a child process (a crash or hang fails only that test)",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "runtime",
        "NAME",
        "the runtime that executes kernels (default: the first installed one serving the cell)",
        parse=parse_name,
        choices="the name of an installed runtime (entry-point group pytest_pypto.runtimes)",
    ),
    Option(
        "require",
        "CELLS",
        "fail the session if a listed cell executed no test",
        parse=parse_cells,
        choices=f"a comma list of cells from {_CELLS}",
    ),
)


class Settings(NamedTuple):
    """The resolved options of one session."""

    archs: tuple[str, ...] = ("a2a3",)
    modes: tuple[str, ...] = ("sim",)
    devices: tuple[int, ...] | None = None
    seed: int | None = None
    require: tuple[str, ...] = ()
    codegen_only: bool = False
    save_kernels: bool = False
    kernels_dir: str = "build_output"
    dump_passes: bool = False
    cache_dir: str | None = None
    no_cache: bool = False
    alias: bool = False
    shuffle: int | None = None
    strict_war: bool = False
    precise: bool = False
    timeout: float | None = None
    trace: bool = False
    isolate: bool = False
    runtime: str | None = None

    @property
    def cells(self) -> tuple[str, ...]:
        """Requested cells in table order (arch-major, sim first)."""
        out = []
        for platform, (backend, mode) in PLATFORMS.items():
            if backend.arch_name in self.archs and MODE_NAMES[mode] in self.modes:
                out.append(platform)
        return tuple(out)

    def command_line(self) -> list[str]:
        """The options as command-line arguments (for reproduction lines)."""
        args = [f"--pypto-arch={','.join(self.archs)}", f"--pypto-mode={','.join(self.modes)}"]
        if self.seed is not None:
            args.append(f"--pypto-seed={self.seed}")
        if self.codegen_only:
            args.append("--pypto-codegen-only")
        return args


SETTINGS_KEY = pytest.StashKey[Settings]()


def add_options(parser: pytest.Parser) -> None:
    """Register every option with its ini key (env mirrors are read at resolution)."""
    group = parser.getgroup("pypto", "pytest-pypto")
    for opt in OPTIONS:
        default = f" (default: {opt.default})" if opt.default else ""
        if opt.switch:
            group.addoption(
                opt.flag,
                dest=opt.dest,
                action="store_true",
                default=None,
                help=f"{opt.help}; env {opt.env}, ini {opt.ini} (1/true/yes/on)",
            )
        else:
            group.addoption(
                opt.flag,
                dest=opt.dest,
                metavar=opt.metavar,
                default=None,
                help=f"{opt.help}: {opt.choices}{default}; env {opt.env}, ini {opt.ini}",
            )
        parser.addini(opt.ini, f"{opt.help} (same as {opt.flag})", type="string", default="")


def _raw(
    config: pytest.Config, opt: Option, env: Mapping[str, str], namespace: Any = None
) -> tuple[str | None, str]:
    """(value, where it came from) by precedence; ``namespace``: parsed arguments to read
    instead of ``config.option`` (before the full parse)."""
    if namespace is not None:
        value = getattr(namespace, opt.dest, None)
    else:
        value = config.getoption(opt.dest, None)
    if value is not None:
        return value, "the command line"
    if env.get(opt.env):
        return env[opt.env], f"environment variable {opt.env}"
    ini = config.getini(opt.ini)
    if ini:
        return ini, f"ini key {opt.ini}"
    return opt.default, "the default"


def source_of(config: pytest.Config, name: str, env: Mapping[str, str] | None = None) -> str:
    """Where option ``name``'s value came from ("the command line", "ini key ...", ...),
    for messages about a value that parsed but cannot be used (harness/paths.py)."""
    opt = next(o for o in OPTIONS if o.name == name)
    return _raw(config, opt, os.environ if env is None else env)[1]


def early_switch(config: pytest.Config, name: str, env: Mapping[str, str] | None = None) -> bool:
    """A switch as seen before conftests load (pytest_load_initial_conftests): the
    command line as parsed so far, then env, then ini.  A bad value reads as off here;
    `resolve` reports it later as a usage error."""
    opt = next(o for o in OPTIONS if o.name == name)
    raw, _ = _raw(config, opt, os.environ if env is None else env, config.known_args_namespace)
    try:
        return parse_bool(raw or False)
    except ValueError:
        return False


def resolve(config: pytest.Config, env: Mapping[str, str] | None = None) -> Settings:
    """Apply command line > env > ini > default to every option, validating each."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw, source = _raw(config, opt, env)
        if raw is None:
            continue
        try:
            values[opt.name] = opt.parse(raw)
        except ValueError as exc:
            raise pytest.UsageError(
                f"{opt.flag}: invalid value {raw!r} (from {source}): {exc}. "
                f"Valid values: {opt.choices}."
            ) from None
    fields = {"arch": "archs", "mode": "modes", "device": "devices"}
    return Settings(
        **{fields.get(name, name.replace("-", "_")): value for name, value in values.items()}
    )
