"""What a user would pick instead of keras-transformer, timed on the same work.

`keras_hub_models` builds keras-hub models that train through `model.fit` like
ours; `torch_models` returns a plain PyTorch training-step runner.
`benchmarks/train_throughput.py` times both next to ours.
"""
