"""The option table: one row per ``--pypto-<name>`` drives ``addoption``, ini keys, env
mirrors and resolution (pytest_pypto.plugin.options), and `Settings` holds the resolved
values of one session.

Every option ``--pypto-<name>`` has the ini key ``pypto_<name>`` and the environment
mirror ``PYPTO_<NAME>``.  A parser raises ``ValueError`` for a bad value; the plugin
turns it into a usage error naming the option.  Register an option here only once the
machinery behind it exists.  pytest-free: the harness reads `Settings` from the session
context the plugin hands it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

from pytest_pypto.arch import ARCH_CHOICES, MODE_CHOICES, MODE_NAMES, PLATFORMS, parse_platform
from pytest_pypto.config import ISOLATED_TIMEOUT, MAX_TIMEOUT

__all__ = [
    "OPTIONS",
    "Option",
    "Settings",
    "option_named",
    "parse_bool",
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
    from pytest_pypto.runtime.devices import parse_device_list  # lazy: plugin import cost

    return parse_device_list(raw)


SIM_DEVICES_MAX = 64


def parse_device_count(raw: str) -> int:
    """How many devices a sim cell simulates: an integer from 1 to `SIM_DEVICES_MAX`."""
    try:
        value = int(str(raw).strip(), 10)
    except ValueError:
        raise ValueError("not an integer") from None
    if not 1 <= value <= SIM_DEVICES_MAX:
        raise ValueError(f"out of range: must be 1 to {SIM_DEVICES_MAX}")
    return value


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
    """Seconds a kernel run may take before it fails: > 0 and at most `MAX_TIMEOUT`
    (the limit of the timeout machinery, pytest_pypto/config.py)."""
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not 0 < value <= MAX_TIMEOUT:  # NaN and inf fail too
        raise ValueError(f"out of range: must be > 0 and at most {MAX_TIMEOUT:.0f}")
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


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}
AUTO_MEMORY_SHARE = 0.75  # of the machine's memory, split evenly over the xdist workers


def machine_memory() -> int | None:
    """Bytes of memory this process may use: physical memory, or the cgroup's limit when
    lower (a container); None when neither can be read."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    return min(sizes) if sizes else None


def auto_memory_limit() -> int | None:
    """The default memory guard: `AUTO_MEMORY_SHARE` of the machine's memory divided by the
    number of xdist workers (PYTEST_XDIST_WORKER_COUNT; 1 without xdist)."""
    total = machine_memory()
    if total is None:
        return None
    try:
        workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    except ValueError:
        workers = 1
    return int(total * AUTO_MEMORY_SHARE) // workers


def parse_memory(raw: str) -> int | None:
    """A memory limit: ``auto`` (the default share, `auto_memory_limit`), ``off`` (no
    limit), or a size in bytes with an optional binary unit (``8GiB``, ``512M``)."""
    text = str(raw).strip().lower().replace(" ", "")
    if text == "auto":
        return auto_memory_limit()
    if text in ("off", "none"):
        return None
    number = text.rstrip("kmgtib")
    unit = text[len(number):]
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError("not a size") from None
    if not value >= 1 or value == float("inf"):
        raise ValueError("must be at least 1 byte")
    return int(value)


DUMP_LEVELS = {"0": 0, "off": 0, "1": 1, "partial": 1, "2": 2, "full": 2}


def parse_dump_level(raw: str | int) -> int:
    """The argument dump level: 0/off, 1/partial (the tensors marked by ``pl.dump_tag`` /
    ``dumps=``) or 2/full (every argument of every task)."""
    level = DUMP_LEVELS.get(str(raw).strip().lower())
    if level is None:
        raise ValueError("not a dump level")
    return level


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

    A ``switch`` takes no value on the command line (``--pypto-codegen-only``); an
    option with a ``bare`` value may be given without one (``--pypto-dump-args`` means
    ``--pypto-dump-args=1``).
    """

    name: str
    metavar: str
    help: str
    choices: str
    parse: Callable[[str], Any]
    default: str | None = None
    switch: bool = False
    bare: str | None = None

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
_SECONDS = f"a number of seconds > 0 and at most {MAX_TIMEOUT:.0f}"
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
        "devices",
        "N",
        "how many devices a sim cell simulates for multi-chip tests (device_ids is 0..N-1; "
        "--pypto-device, when given, names them instead)",
        parse=parse_device_count,
        default="8",
        choices=f"an integer from 1 to {SIM_DEVICES_MAX}",
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
        "no-race-check",
        "",
        "do not check runs that rely on explicit dependencies (pl.manual_scope, deps=) for "
        "unordered tasks touching the same elements, nor multi-chip runs for unordered "
        "ranks touching the same window elements (RaceError)",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "dump-args",
        "LEVEL",
        "write each run's task arguments to <work dir>/dfx_outputs/args_dump/ (PyPTO's "
        "--dump-args): 1 the tensors marked by pl.dump_tag / dumps=, 2 every argument of "
        "every task; the bare flag means 1",
        parse=parse_dump_level,
        choices="0 (off), 1 (partial) or 2 (full), also off/partial/full",
        bare="1",
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
        "fail a kernel run that takes longer than this (without it, an in-process run has "
        "no limit: a kernel looping forever hangs the session; an isolated run stops after "
        "--pypto-isolate-timeout)",
        parse=parse_timeout,
        choices=_SECONDS,
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
        "isolate-timeout",
        "SECONDS",
        "fail an isolated run (--pypto-isolate, pypto_isolate, runtime isolated) that "
        "takes longer than this when --pypto-timeout is not given",
        parse=parse_timeout,
        default=f"{ISOLATED_TIMEOUT:g}",
        choices=_SECONDS,
    ),
    Option(
        "max-memory",
        "SIZE",
        "stop a run whose simulated tensors would exceed this much memory, naming the tensor "
        "and line, before the OOM killer takes the worker (default: 3/4 of the machine's "
        "memory divided by the xdist workers)",
        parse=parse_memory,
        default="auto",
        choices="auto, off, or a size such as 8GiB, 512MiB or 1073741824 (bytes)",
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
    Option(
        "emulate-onboard",
        "",
        "also run the onboard cells of the requested archs; one no onboard runtime serves "
        "runs on the simulator with its arch's rules, labelled '<cell> (emulated)'",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
    Option(
        "require-emulated",
        "",
        "let emulated runs of an onboard cell count for --pypto-require",
        parse=parse_bool,
        choices=_SWITCH,
        switch=True,
    ),
)


class Settings(NamedTuple):
    """The resolved options of one session."""

    archs: tuple[str, ...] = ("a2a3",)
    modes: tuple[str, ...] = ("sim",)
    devices: tuple[int, ...] | None = None
    sim_devices: int = 8
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
    no_race_check: bool = False
    dump_args: int = 0
    precise: bool = False
    timeout: float | None = None
    trace: bool = False
    isolate: bool = False
    isolate_timeout: float = ISOLATED_TIMEOUT
    max_memory: int | None = None
    runtime: str | None = None
    emulate_onboard: bool = False
    require_emulated: bool = False

    @property
    def cells(self) -> tuple[str, ...]:
        """Requested cells in table order (arch-major, sim first); under
        ``--pypto-emulate-onboard`` every mode of the requested archs."""
        out = []
        modes = MODE_CHOICES if self.emulate_onboard else self.modes
        for platform, (backend, mode) in PLATFORMS.items():
            if backend.arch_name in self.archs and MODE_NAMES[mode] in modes:
                out.append(platform)
        return tuple(out)

    def command_line(self) -> list[str]:
        """The options as command-line arguments (for reproduction lines)."""
        args = [f"--pypto-arch={','.join(self.archs)}", f"--pypto-mode={','.join(self.modes)}"]
        if self.seed is not None:
            args.append(f"--pypto-seed={self.seed}")
        if self.codegen_only:
            args.append("--pypto-codegen-only")
        if self.emulate_onboard:
            args.append("--pypto-emulate-onboard")
        return args


def option_named(name: str) -> Option:
    """The table's row of option ``name`` (``"kernels-dir"``)."""
    return next(o for o in OPTIONS if o.name == name)


# Option name -> Settings field, where they differ.
FIELDS = {"arch": "archs", "mode": "modes", "device": "devices", "devices": "sim_devices"}


def settings_from(values: dict[str, Any]) -> Settings:
    """`Settings` from parsed values by option name."""
    return Settings(**{FIELDS.get(k, k.replace("-", "_")): v for k, v in values.items()})
