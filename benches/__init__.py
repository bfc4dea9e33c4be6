"""Side-by-side benchmarks: each hot path's native engine against ansible-core's own Python."""
