# SPDX-License-Identifier: Apache-2.0
"""The op reference, rendered from the registry: `help(pl.X)` text and `docs/ops.md`.

Every line comes from an `OpSpec` (one place per fact) or from the code its rules
run, never from per-op prose kept here:

* the signature from its `ParamSpec`s (every keyword, default and alias);
* memory spaces in and out from its `MemRule`;
* the dtypes it accepts per arch, probed by running its rules (ir/opfacts.py), and
  the arch table fields its arch rule reads, with each arch's values;
* the entry's doc, tier, scalar form, written tensor and view flag, and the
  docstrings of its type rule and numpy semantics where they have one.

Rendering is cheap but not free (a probe runs ~40 rule calls), so the `pl` stubs
render on first `__doc__` access (language/opref.py), never at import.
`ops_markdown()` renders the whole registry; `python -m pytest_pypto.ir.opdoc`
prints it (the `ops-doc` lint check compares it with `docs/ops.md`).
"""

from __future__ import annotations

import enum
import functools
import inspect
import sys
import textwrap
import types as pytypes
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_pypto.ir import tensor_forms
from pytest_pypto.ir.opfacts import PROBE_SHAPE, arch_lines, dtype_text, probe
from pytest_pypto.ir.ops._rules import lowered_by_compiler
from pytest_pypto.ir.registry import REGISTRY, OpSpec, ParamSpec
from pytest_pypto.ir.types import MemorySpace

REFRESH_COMMAND = "python -m pytest_pypto.ir.opdoc > docs/ops.md"

_KIND_SHOWN = {
    "tile": "Tile", "tensor": "Tensor", "scalar": "Scalar", "tile_or_scalar": "Tile | Scalar",
    "tile_or_tensor": "Tile | Tensor", "handle": "handle",
    "array": "Array", "shape": "Sequence[int]", "index_list": "Sequence[int | Scalar]",
    "dtype": "pl.DataType", "space": "pl.Mem", "int": "int", "float": "float", "bool": "bool",
    "str": "str", "enum": "enum", "literal": "literal",
}


class _Shown:
    """A value shown verbatim in `inspect.signature` (annotations, defaults)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Form:
    """One way an op is reached: the text naming it and the entry behind it."""

    label: str  # e.g. "tile form", "tensor form (on Tensor operands)"
    spec: OpSpec
    in_signature: bool = True  # False for a scalar form: its keywords are the tile form's


# ------------------------------------------------------------------ small facts


def shown_default(value: Any) -> str:
    """A default as a user would write it (pl.Mem.Vec, pl.FP32, None, 'unspecified')."""

    if isinstance(value, MemorySpace):
        return f"pl.Mem.{value.name}"
    if isinstance(value, enum.Enum):
        return f"pl.{type(value).__name__}.{value.name}"
    return repr(value)


def spellings(spec: OpSpec) -> list[str]:
    """Every `pl.` spelling reaching the entry."""
    out = []
    for s in spec.spellings:
        if "." in s:
            out.append(f"pl.{s}")
        elif spec.level == "tile":
            out += [f"pl.{s}", f"pl.tile.{s}"]
        else:
            out.append(f"pl.{s}")
    return out


def param_text(spec: OpSpec, p: ParamSpec) -> str:
    """One parameter: kind, required/default, keyword-only, aliases, memory spaces."""
    kind = _KIND_SHOWN.get(p.kind, p.kind)
    parts = [f"{p.name}: {kind}" + (" | None" if p.optional else "")]
    parts.append("required" if p.required else f"default {shown_default(p.default)}")
    if p.keyword_only:
        parts.append("keyword-only")
    if p.aliases:
        parts.append("also spelled " + ", ".join(p.aliases))
    if p.kind in ("tile", "tile_or_scalar") and spec.level == "tile":
        spaces = spec.mem.operands.get(p.name)
        parts.append(f"memory {' or '.join(spaces)}" if spaces else "any memory space")
    return "; ".join(parts)


def result_text(spec: OpSpec) -> str:
    """Where the result lands (the MemRule's result)."""
    rule = spec.mem.result
    if spec.level != "tile":
        kind = probe(spec)[1]
        return f"a {kind}" if kind else "a Tensor, a Scalar or nothing (no memory space)"
    if rule is None:
        return "no tile (a tensor, a scalar or nothing)"
    if rule.startswith("same:") and spec.mem.view:
        return f"a view of the buffer of {rule[5:]} (same memory space; nothing is written)"
    if rule.startswith("same:"):
        return f"in place: the buffer of {rule[5:]} (same memory space)"
    if rule.startswith("attr:"):
        return (f"a tile in the space given by {rule[5:]}; when it is left out, the space its "
                "consumers need")
    return f"a tile in {rule}"


def signature(forms: Iterable[OpSpec]) -> inspect.Signature:
    """The signature of a `pl.` callable: its first form's parameters, then the keywords
    only the other forms take (PyPTO's unified ops take every form's keywords)."""
    params: list[inspect.Parameter] = []
    seen: set[str] = set()
    for i, spec in enumerate(forms):
        for p in spec.params:
            if p.name in seen or (i and p.required):
                continue
            seen.add(p.name)
            kind = (inspect.Parameter.KEYWORD_ONLY if p.keyword_only
                    else inspect.Parameter.POSITIONAL_OR_KEYWORD)
            annot = _Shown(_KIND_SHOWN.get(p.kind, p.kind) + (" | None" if p.optional else ""))
            default = inspect.Parameter.empty if p.required else _Shown(shown_default(p.default))
            params.append(inspect.Parameter(p.name, kind, default=default, annotation=annot))
    try:
        return inspect.Signature(params)
    except ValueError:  # a later form's keyword cannot follow: keep the first form's own
        first = next(iter(forms))
        return signature([first])


# ------------------------------------------------------------------ one entry


def _own_doc(fn: Any) -> str | None:
    """``fn``'s docstring, when it has one of its own (not a generic helper's)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if fn is None or not isinstance(fn, pytypes.FunctionType):
        return None
    doc = inspect.getdoc(fn)
    return " ".join(doc.split()) if doc else None


def entry_sections(spec: OpSpec) -> list[tuple[str, list[str]]]:
    """The reference of one entry as (label, lines) pairs, shared by text and markdown."""

    sections: list[tuple[str, list[str]]] = []
    reached = spellings(spec)
    head = f"{spec.name}, tier {spec.tier}"
    sections.append(("Op", [head + (f"; spelled {', '.join(reached)}" if reached
                                    else "; internal (no pl. spelling)")]))
    sections.append(("Parameters", [param_text(spec, p) for p in spec.params] or ["none"]))
    sections.append(("Result", [result_text(spec)]))
    dts = dtype_text(spec)
    if dts:
        sections.append(("Dtypes", [dts + f"; probed with {list(PROBE_SHAPE)} operands, all "
                                    "of one dtype"]))
    source = tensor_forms.tile_entry(spec)
    if source is not None:
        sections.append(("Arch", [f"lowered to {source.name}: its arch rules apply"]))
    else:
        sections.append(("Arch", arch_lines(spec)))
    extra = []
    if spec.scalar_form:
        extra.append(f"with a Scalar as the second operand the call is {spec.scalar_form}")
    if spec.writes:
        extra.append(f"writes the tensor {spec.writes} and returns it: rebind the result")
    if spec.view_of:
        extra.append(f"a zero-copy view of {spec.view_of}")
    if extra:
        sections.append(("Notes", extra))
    rule_doc = _own_doc(spec.type_rule)
    if rule_doc and source is None:
        sections.append(("Type rule", [rule_doc]))
    sections.append(("Semantics", _semantics(spec)))
    return sections


def _semantics(spec: OpSpec) -> list[str]:
    if spec.execute is lowered_by_compiler:
        return ["lowered by the compiler to tile ops (loads, tile ops, stores over tiles "
                "that fit the arch): the tile ops' semantics apply"]
    if spec.compute is not None:
        lines = ["value op: numpy on the operands' valid regions (widened), rounded once to "
                 "the result dtype; cells outside the valid region are poisoned"]
        fn = spec.compute
    else:
        lines = ["memory op: runs on the buffers themselves (execute)"]
        fn = spec.execute
    doc = _own_doc(fn)
    if doc:
        lines.append(doc)
    return lines


def result_kind(spec: OpSpec) -> str | None:
    """Tile, Tensor or Scalar: what the probe's calls returned, else what the MemRule says."""
    _, kind = probe(spec)
    if kind is None and spec.level == "tile" and spec.mem.result is not None:
        kind = "Tile"
    return kind


def _call_line(display: str, forms: list[OpSpec]) -> str:
    kind = result_kind(forms[0])
    return f"{display}{signature(forms)}" + (f" -> {kind}" if kind else "")


def _doc_text(doc: str) -> str:
    return " ".join(doc.split())


def render_text(display: str, forms: list[Form]) -> str:
    """`help()` text of a `pl.` callable reaching ``forms`` (the first is the default)."""
    lines = [_call_line(display, [f.spec for f in forms if f.in_signature]), ""]
    lines += _wrap(_doc_text(forms[0].spec.doc), "")
    for form in forms:
        reached = ", ".join(spellings(form.spec)) or "internal"
        lines += ["", f"{form.label[:1].upper()}{form.label[1:]}: {form.spec.name} "
                      f"(tier {form.spec.tier}; {reached})"]
        if form is not forms[0]:
            lines += _wrap(_doc_text(form.spec.doc), "  ")
        for label, body in entry_sections(form.spec):
            if label == "Op":
                continue
            if len(body) == 1 and label not in ("Parameters",):
                lines += _wrap(f"{label}: {body[0]}", "  ", "    ")
                continue
            lines.append(f"  {label}:")
            for item in body:
                lines += _wrap(item.strip(), "    ", "      ")
    return "\n".join(lines).rstrip() + "\n"


def _wrap(text: str, indent: str, rest: str | None = None, width: int = 92) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent,
                         subsequent_indent=rest if rest is not None else indent,
                         break_on_hyphens=False, break_long_words=False) or [indent.rstrip()]


# ------------------------------------------------------------------ the whole registry


def family_of(spec: OpSpec) -> str:
    """The op family: the `ir/ops/<family>.py` module its rules or semantics live in."""
    for attr in ("compute", "execute", "type_rule", "arch_rule"):
        fn = getattr(spec, attr)
        while isinstance(fn, functools.partial):
            fn = fn.func
        module = getattr(fn, "__module__", "") or ""
        prefix, _, last = module.rpartition(".")
        if prefix == "pytest_pypto.ir.ops" and not last.startswith("_"):
            return last
    return "other"


def _family_summary(family: str) -> str:
    module = sys.modules.get(f"pytest_pypto.ir.ops.{family}")
    doc = inspect.getdoc(module) if module is not None else None
    return " ".join(doc.split("\n\n", 1)[0].split()) if doc else ""


def ops_markdown() -> str:
    """`docs/ops.md`: every registered op, grouped by family, from the registry alone."""

    families: dict[str, list[OpSpec]] = {}
    for name in sorted(REGISTRY):
        spec = REGISTRY[name]
        families.setdefault(family_of(spec), []).append(spec)
    out = [
        "# Op reference",
        "",
        "Generated from the op registry (`pytest_pypto/ir/ops/`); do not edit by hand.",
        f"Refresh with `{REFRESH_COMMAND}`; the `ops-doc` lint check fails when this "
        "file is stale. The same text is `help(pl.<op>)`.",
        "",
        f"{len(REGISTRY)} registry entries in {len(families)} families. Dtypes are probed: "
        f"the op's type rule and arch rule run on {list(PROBE_SHAPE)} operands of each dtype "
        "(all operands one dtype; tier-3 dtypes left out), so ops whose operands differ in "
        "dtype or shape may accept more than listed, and ops no such call fits show none; "
        "their rules are in the entry's doc.",
        "",
    ]
    out += [f"- [{fam}](#{fam}) ({len(specs)})"
            for fam, specs in sorted(families.items())]
    for fam, specs in sorted(families.items()):
        out += ["", f"## {fam}", ""]
        summary = _family_summary(fam)
        if summary:
            out += [summary, ""]
        for spec in specs:
            out += _markdown_entry(spec)
            if spec.level == "tile" and tensor_forms.has_derived_form(spec) \
                    and f"tensor.{spec.short_name}" not in REGISTRY:
                derived = tensor_forms.derive(spec)
                out += [f"- **Tensor form** (derived): `pl.tensor.{spec.short_name}"
                        f"{signature([derived])}`, on Tensor operands also "
                        f"`pl.{spec.short_name}`; the same op on whole tensors without the "
                        "scratch tiles, lowered to tile ops over tiles that fit the arch", ""]
    return "\n".join(out).rstrip() + "\n"


def _markdown_entry(spec: OpSpec) -> list[str]:
    display = spellings(spec)[0] if spec.spellings else spec.name
    out = [f"### `{spec.name}`", "", f"`{_call_line(display, [spec])}`", "",
           _doc_text(spec.doc), ""]
    for label, body in entry_sections(spec):
        if len(body) == 1:
            out.append(f"- **{label}**: {_md(body[0])}")
            continue
        out.append(f"- **{label}**:")
        for item in body:
            nested = item.startswith("  ")
            out.append(("    - " if nested else "  - ") + _md(item.strip()))
    out.append("")
    return out


def _md(text: str) -> str:
    """Keep markdown from reading `*`, `_` or `|` in rule text as markup."""
    return text.replace("*", "\\*").replace("_", "\\_").replace("|", "\\|")


def stale_ops(current: str, fresh: str | None = None) -> list[str]:
    """What differs between ``current`` (a docs/ops.md text) and the generated one: op
    names (``+name`` new, ``-name`` gone, ``name`` changed) or "the header"."""
    fresh = ops_markdown() if fresh is None else fresh
    if current == fresh:
        return []
    old, new = _sections(current), _sections(fresh)
    diff = [f"+{n}" for n in new if n not in old] + [f"-{n}" for n in old if n not in new]
    diff += [n for n in new if n in old and old[n] != new[n]]
    return diff or ["the header"]


def _sections(text: str) -> dict[str, str]:
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("### `") and line.endswith("`"):
            current = line[5:-1]
            found[current] = []
        elif line.startswith("## "):
            current = None
        elif current is not None:
            found[current].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items()}


def main(argv: list[str] | None = None) -> int:
    """`python -m pytest_pypto.ir.opdoc [--check PATH]`: print docs/ops.md, or check it."""
    args = sys.argv[1:] if argv is None else argv
    text = ops_markdown()
    if args[:1] == ["--check"] and len(args) == 2:
        diff = stale_ops(Path(args[1]).read_text(encoding="utf-8"), text)
        if diff:
            print(f"{args[1]} is stale ({', '.join(diff[:20])}); refresh: {REFRESH_COMMAND}")
            return 1
        return 0
    if args:
        print("usage: python -m pytest_pypto.ir.opdoc [--check docs/ops.md]", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
