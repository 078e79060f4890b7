"""Object storage: a real S3-compatible server on 127.0.0.1 (``server``), and S3 clients."""
