"""The engine version stored with every result; bump it whenever a model's output can change."""

ENGINE_VERSION = "0.15.1"
