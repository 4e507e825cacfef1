"""``pypto.runtime.log_config``: PyPTO's runtime log level (accepted; nothing here logs)."""

from pytest_pypto.compat.selections import configure_log, current_log_level

log_level = current_level = current_log_level

__all__ = ["configure_log", "current_level", "log_level"]
