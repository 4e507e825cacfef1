"""Op entries, one module per family; importing this package registers them all."""
