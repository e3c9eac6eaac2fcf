"""The engine's pipeline: the orchestrator (scenario) and its stages, each taking what it needs as
arguments and handing typed results on."""
