"""Storage formats: one writer + reader module per format (in ``libs/``),
one registry, one atomic builder."""
