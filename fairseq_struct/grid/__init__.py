"""Experiment grids: the papers' comparisons prepared, trained, evaluated and reported by one
command, each step skipped when it finished before (`steps`)."""
