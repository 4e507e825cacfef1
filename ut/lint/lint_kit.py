"""A temporary lint project for the lint tests' pytester runs."""

from __future__ import annotations

import textwrap

import pytest


def project(pytester: pytest.Pytester, manifest: str, files: dict[str, str] | None = None) -> None:
    """A temp project: pyproject (fixes the rootdir), lint/lint.toml and `files` by path."""
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\naddopts = '--strict-markers'\n")
    (pytester.path / "lint").mkdir(exist_ok=True)
    (pytester.path / "lint" / "lint.toml").write_text(textwrap.dedent(manifest))
    for name, text in (files or {}).items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
