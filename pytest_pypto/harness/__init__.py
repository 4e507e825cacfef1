"""Package placeholder; public names are served lazily."""
