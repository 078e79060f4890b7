"""Storage formats: one writer + reader module per format, one registry, one atomic builder."""
