"""Tools over the engine: benchmarks, validation against published results, tables, the twin
simulator, charts, sweeps and measurement fits."""
