"""Each family's training recipe: optimizer, loss and metrics in one call."""

import keras

from keras_transformer.training.inverse_sqrt_schedule import InverseSqrtSchedule
from keras_transformer.training.label_smoothed_cross_entropy import LabelSmoothedCrossEntropy
from keras_transformer.training.token_metrics import MaskedAccuracy
from keras_transformer.training.token_metrics import Perplexity
from keras_transformer.training.warmup_cosine_schedule import WarmupCosineSchedule


def paper_optimizer(d_model, warmup=4000, scale=1.0):
    """The 2017 paper's optimizer: Adam(0.9, 0.98, 1e-9) on the inverse-sqrt schedule.

    Example:
    >>> optimizer = paper_optimizer(d_model=512)
    >>> optimizer.beta_2, optimizer.epsilon
    (0.98, 1e-09)
    """
    return keras.optimizers.Adam(
        learning_rate=InverseSqrtSchedule(d_model, warmup_steps=warmup, scale=scale),
        beta_1=0.9,
        beta_2=0.98,
        epsilon=1e-9,
    )


def gpt_optimizer(
    peak_learning_rate=6e-4, warmup_steps=2000, total_steps=100_000, weight_decay=0.1
):
    """GPT-2/GPT-3 style AdamW: betas (0.9, 0.95), warmup + cosine to 10%, clip 1.0.

    Biases, LayerNorm parameters and position tables are not decayed.

    Example:
    >>> optimizer = gpt_optimizer(total_steps=10_000)
    >>> optimizer.beta_2, optimizer.weight_decay
    (0.95, 0.1)
    """
    optimizer = keras.optimizers.AdamW(
        learning_rate=WarmupCosineSchedule(peak_learning_rate, warmup_steps, total_steps),
        beta_1=0.9,
        beta_2=0.95,
        epsilon=1e-8,
        weight_decay=weight_decay,
        global_clipnorm=1.0,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta", "table"])
    return optimizer


def token_metrics(pad_id):
    """Masked accuracy and perplexity over real tokens."""
    return [MaskedAccuracy(pad_id=pad_id), Perplexity(pad_id=pad_id)]


def paper_recipe(config):
    """`compile` arguments of the 2017 paper for a `TransformerConfig`."""
    return dict(
        optimizer=paper_optimizer(config.d_model),
        loss=LabelSmoothedCrossEntropy(label_smoothing=0.1, pad_id=config.pad_id),
        metrics=token_metrics(config.pad_id),
    )


def gpt_recipe(config):
    """`compile` arguments of GPT-2/GPT-3 style training for a `TransformerConfig`."""
    return dict(
        optimizer=gpt_optimizer(),
        loss=LabelSmoothedCrossEntropy(label_smoothing=0.0, pad_id=config.pad_id),
        metrics=token_metrics(config.pad_id),
    )
