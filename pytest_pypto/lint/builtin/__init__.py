# SPDX-License-Identifier: Apache-2.0
"""The built-in lint checks (enabled per project in its lint.toml)."""
