"""Benchmarks (run as modules: `python -m bench.losses`); timings live here, never in tests."""
