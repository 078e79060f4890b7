"""Readers and decoders: one adapter file per library (in ``libs/``), one registry."""
