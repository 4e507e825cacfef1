"""pytest hooks of the lint stage (placeholder until the lint framework lands)."""
