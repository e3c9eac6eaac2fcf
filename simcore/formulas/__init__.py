"""The engine's formulas: pure functions of arrays, each module with its model and sources."""
