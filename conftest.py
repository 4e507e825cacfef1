"""Root conftest of this repository's own suites (no product logic lives here)."""
