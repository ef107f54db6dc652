"""Each family's training recipe: optimizer, loss and metrics in one call."""

import keras

from keras_transformer.training.decay_masked_adamw import DecayMaskedAdamW
from keras_transformer.training.inverse_sqrt_schedule import InverseSqrtSchedule
from keras_transformer.training.label_smoothed_cross_entropy import LabelSmoothedCrossEntropy
from keras_transformer.training.token_metrics import MaskedAccuracy
from keras_transformer.training.token_metrics import Perplexity
from keras_transformer.training.warmup_cosine_schedule import WarmupCosineSchedule


def paper_optimizer(d_model, warmup=4000, scale=1.0):
    """The 2017 paper's optimizer: Adam(0.9, 0.98, 1e-9) on the inverse-sqrt schedule.

    Args:
        d_model: the model width; the schedule scales by `d_model^-0.5`.
        warmup: warmup steps of `InverseSqrtSchedule` (paper: 4,000).
        scale: constant factor on the learning rate curve.

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
    peak_learning_rate=6e-4, warmup_steps=None, total_steps=None, weight_decay=0.1
):
    """GPT-2/GPT-3 style AdamW: betas (0.9, 0.95), warmup + cosine to 10%, clip 1.0.

    Only matrices decay: biases and norm weights (LayerNorm's, RMSNorm's, qk-norm's:
    all vectors) and learned position tables do not (`DecayMaskedAdamW`, whose
    exclusions survive saving and loading).

    Args:
        peak_learning_rate: rate at the end of the warmup (GPT-2 small: 6e-4).
        warmup_steps: linear warmup length, or None for `min(2000,
            total_steps // 10)`.
        total_steps: step at which the cosine reaches 10% of the peak, or None
            to take it from `fit`: `(epochs - initial_epoch) *
            steps_per_epoch`, known when the data has a length (arrays, a
            `PyDataset`, a `tf.data` pipeline of known cardinality such as
            `kt.data`'s, or `steps_per_epoch`). Data of unknown length with
            no `total_steps` raises a ValueError in `fit`; nothing is assumed.
        weight_decay: decoupled weight decay on the matrices.

    Example:
    >>> optimizer = gpt_optimizer(total_steps=10_000)
    >>> optimizer.beta_2, optimizer.weight_decay
    (0.95, 0.1)
    """
    return DecayMaskedAdamW(
        learning_rate=WarmupCosineSchedule(peak_learning_rate, warmup_steps, total_steps),
        beta_1=0.9,
        beta_2=0.95,
        epsilon=1e-8,
        weight_decay=weight_decay,
        global_clipnorm=1.0,
    )


def token_metrics(pad_id):
    """Masked accuracy and perplexity over real tokens."""
    return [MaskedAccuracy(pad_id=pad_id), Perplexity(pad_id=pad_id)]


def paper_recipe(config):
    """`compile` arguments of the 2017 paper for a `TransformerConfig`.

    `paper_optimizer(d_model)`, label smoothing 0.1 ignoring `pad_id`, masked
    accuracy and perplexity: what `EncoderDecoder.compile()` uses.

    Args:
        config: the model's `TransformerConfig` (`model.config`).

    Returns:
        A dict with `optimizer`, `loss` and `metrics` for `model.compile(**...)`.

    Example:
    >>> from keras_transformer.models import preset_config
    >>> recipe = paper_recipe(preset_config("transformer_base"))
    >>> sorted(recipe), recipe["loss"].label_smoothing
    (['loss', 'metrics', 'optimizer'], 0.1)
    """
    return dict(
        optimizer=paper_optimizer(config.d_model),
        loss=LabelSmoothedCrossEntropy(label_smoothing=0.1, pad_id=config.pad_id),
        metrics=token_metrics(config.pad_id),
    )


def gpt_recipe(config):
    """`compile` arguments of GPT-2/GPT-3 style training for a `TransformerConfig`.

    `gpt_optimizer()` (AdamW, warmup + cosine), unsmoothed cross-entropy
    ignoring `pad_id`, masked accuracy and perplexity: what
    `DecoderOnly.compile()` uses.

    Args:
        config: the model's `TransformerConfig` (`model.config`).

    Returns:
        A dict with `optimizer`, `loss` and `metrics` for `model.compile(**...)`.

    Example:
    >>> from keras_transformer.models import preset_config
    >>> recipe = gpt_recipe(preset_config("gpt2_small"))
    >>> type(recipe["optimizer"]).__name__, recipe["loss"].label_smoothing
    ('DecayMaskedAdamW', 0.0)
    """
    return dict(
        optimizer=gpt_optimizer(),
        loss=LabelSmoothedCrossEntropy(label_smoothing=0.0, pad_id=config.pad_id),
        metrics=token_metrics(config.pad_id),
    )
