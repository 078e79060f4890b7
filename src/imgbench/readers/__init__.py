"""Readers and decoders: one adapter file per library, one registry."""
