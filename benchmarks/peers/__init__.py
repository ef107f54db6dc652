"""What a user would pick instead of keras-transformer, timed on the same work.

Each module builds a peer's model for a workload shape and returns a `step()`
callable; `benchmarks/train_throughput.py` times them next to ours.
"""
