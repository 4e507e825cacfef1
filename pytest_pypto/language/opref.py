# SPDX-License-Identifier: Apache-2.0
"""`help(pl.X)` and `inspect.signature(pl.X)` for op stubs, rendered from the registry.

A stub reaches one or more entries the way the parser dispatches it
(language/calls.py): `pl.X` is the tile entry, and on Tensor operands the tensor
form; `pl.tile.X` the tile entry; `pl.tensor.X` the tensor form; `pl.array.X` the
array entry; `pl.system.X` the tile entry spelled `system.X`.  The text itself is ir/opdoc.py's.  Nothing here runs at import: the
stubs call `reference`/`signature_of` on first `__doc__` / `__signature__` access.
"""

from __future__ import annotations

import inspect

from pytest_pypto.ir.opdoc import Form, render_text, signature
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.language.calls import tensor_entry, tile_entry


def forms_of(namespace: str, name: str) -> list[Form]:
    """The entries `pl.[namespace.]name` reaches, the one a Tile call binds first."""
    if namespace == "array":
        spec = REGISTRY.get(f"array.{name}")
        return [Form("array op", spec)] if spec is not None else []
    if namespace in ("system", "prefetch"):  # tile entries spelled system.X / prefetch.X
        system = tile_entry(namespace, name)
        return [Form(f"{namespace} op", system)] if system is not None else []
    if namespace.startswith("pld"):  # pld ops (ir/ops/distributed*.py): one entry each
        return [Form("pld op", s) for s in REGISTRY.by_namespace(namespace, name)[:1]]
    forms: list[Form] = []
    if namespace in ("", "tile"):
        tile = tile_entry(namespace, name)
        if tile is not None:
            forms.append(Form("tile form", tile))
            if tile.scalar_form and tile.scalar_form in REGISTRY:
                forms.append(Form("scalar form (a Scalar second operand)",
                                  REGISTRY[tile.scalar_form], in_signature=False))
    if namespace in ("", "tensor"):
        tensor = tensor_entry(name)
        if tensor is not None and all(f.spec is not tensor for f in forms):
            label = "tensor form" if namespace else "tensor form (on Tensor operands)"
            forms.append(Form(label, tensor))
    return forms


def _display(namespace: str, name: str) -> str:
    if namespace.startswith("pld"):
        return f"{namespace}.{name}"
    return f"pl.{namespace}.{name}" if namespace else f"pl.{name}"


def reference(namespace: str, name: str) -> str:
    """The help text of `pl.[namespace.]name`."""
    forms = forms_of(namespace, name)
    if not forms:
        return (f"{_display(namespace, name)}: named by PyPTO, not an op of the bundled "
                "toolchain (the parser reports it where a kernel uses it).")
    text = render_text(_display(namespace, name), forms)
    if name == "cast" and not namespace:
        text += ("\nOn a Scalar operand, pl.cast(x, dtype) is a scalar conversion (C "
                 "semantics), not the tile op.\n")
    return text


def signature_of(namespace: str, name: str) -> inspect.Signature | None:
    """The merged signature of every form (PyPTO's unified ops take all their keywords)."""
    forms = [f.spec for f in forms_of(namespace, name) if f.in_signature]
    return signature(forms) if forms else None
