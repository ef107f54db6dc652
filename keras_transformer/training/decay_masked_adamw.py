"""AdamW whose weight-decay exclusions are part of its config, so they survive saving."""

import keras

NO_DECAY = ("bias", "gamma", "beta", "table")
"""Variable-name patterns GPT-2/GPT-3 training leaves undecayed: biases, LayerNorm scales
and shifts, position tables."""


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecayMaskedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with its decay exclusions as a constructor argument.

    Keras' `AdamW.exclude_from_weight_decay(var_names=...)` is not part of the
    optimizer's config: after `keras.saving.load_model` the reloaded optimizer
    decays every variable again. Here the exclusions are an argument, so
    `get_config` carries them and a reloaded model keeps training as before.

    Args:
        *args: `keras.optimizers.AdamW`'s positional arguments (learning rate first).
        no_decay: patterns (regular expressions, as Keras' `var_names`)
            searched in each variable's name; a variable that matches one is
            never decayed. Default `NO_DECAY`.
        **kwargs: any `keras.optimizers.AdamW` argument.

    Example:
    >>> import keras
    >>> optimizer = DecayMaskedAdamW(learning_rate=1e-3, weight_decay=0.1)
    >>> layer = keras.layers.Dense(2)
    >>> layer.build((None, 3))
    >>> again = DecayMaskedAdamW.from_config(optimizer.get_config())
    >>> [again._use_weight_decay(v) for v in layer.weights]  # kernel, bias
    [True, False]
    """

    def __init__(self, *args, no_decay=NO_DECAY, **kwargs):
        super().__init__(*args, **kwargs)
        if (not isinstance(no_decay, (list, tuple))
                or not all(isinstance(p, str) and p for p in no_decay)):
            raise ValueError(
                "`no_decay` must be a list of non-empty variable-name patterns (e.g. "
                f"['bias', 'gamma']); received {no_decay!r}."
            )
        self.no_decay = tuple(no_decay)
        super().exclude_from_weight_decay(var_names=list(self.no_decay))

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keras' method, keeping `no_decay` (Keras' own would replace the patterns).

        Args:
            var_list: variables never to decay (not saved with the config).
            var_names: further name patterns, added to `no_decay` (saved).
        """
        self.no_decay = tuple(dict.fromkeys([*self.no_decay, *(var_names or [])]))
        super().exclude_from_weight_decay(var_list=var_list, var_names=list(self.no_decay))

    def get_config(self):
        config = super().get_config()
        config["no_decay"] = list(self.no_decay)
        return config
