"""Analyses specific to one paper (tables that are not grids of cells, and claims checks)."""
