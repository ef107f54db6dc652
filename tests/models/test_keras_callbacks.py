"""Keras' own TensorBoard callback on our models: it writes its logs under every backend."""

import os

import keras
import numpy as np

import keras_transformer as kt


def test_tensorboard_writes_training_logs(tmp_path):
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=50, max_length=16, dropout=0.0)
    model.compile()
    ids = np.random.default_rng(0).integers(1, 50, size=(16, 9)).astype("int32")
    model.fit(ids[:, :-1], ids[:, 1:], batch_size=8, epochs=2, verbose=0,
              callbacks=[keras.callbacks.TensorBoard(str(tmp_path))])
    events = [name for _, _, files in os.walk(tmp_path / "train") for name in files
              if name.startswith("events.out.tfevents")]
    assert events, os.listdir(tmp_path)
    assert os.path.getsize(os.path.join(tmp_path, "train", events[0])) > 100
