"""Object storage for the benchmarks: S3-compatible servers and the network paths to them."""
