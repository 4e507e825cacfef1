"""Lint checks shipped as collected pytest items."""
