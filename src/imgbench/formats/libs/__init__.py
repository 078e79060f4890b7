"""The storage formats: one file per format (its ``write`` and ``Reader``), local and on S3.
``imgbench.formats.registry`` names each by module; the contract is
``imgbench.formats.base`` (``imgbench.formats.s3`` for the S3 ones)."""
