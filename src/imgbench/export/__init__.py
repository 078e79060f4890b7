"""``imgbench export``: the recommended configuration as a standalone Python module.

What to export (``choose``), the code of each part, generated from imgbench's own adapters
(``decoders``, ``recipes``, ``loaders``, copying their definitions with ``copied``), and the
module that joins them under a header citing the rows (``module``). docs/export.md.
"""
