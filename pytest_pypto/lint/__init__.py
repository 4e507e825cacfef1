# SPDX-License-Identifier: Apache-2.0
"""Lint checks shipped as collected pytest items (docs/design/plugin.md §14)."""
