"""AdamW that decays matrices only, with its exclusions part of its config.

The rule, for every preset and toggle: a variable decays when it has two or
more dimensions and is not a position table. So biases, LayerNorm's scale and
offset, RMSNorm's and qk-norm's scale (all vectors) never decay, nor a
learned position table; every projection kernel does, and so does the token
embedding, which is also the tied output projection's matrix (nanoGPT and
Megatron-LM decay it too). A position table is left alone because it is an
additive input, one row per position: decay would pull the rows of the
positions a run rarely reaches (the long ones) toward zero while giving the
others nothing in return.
"""

import re

import keras

NO_DECAY = ("position_embedding/table",)
"""Variable-path patterns that never decay beside the rule's vectors: position tables."""


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecayMaskedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` that decays only matrices, with its exclusions saved.

    A variable with fewer than 2 dimensions never decays (biases, norm
    scales and offsets); nor does one whose path (`variable.path`, e.g.
    `"decoder_only/position_embedding/table"`) matches a pattern of
    `no_decay`. Keras' `AdamW.exclude_from_weight_decay(var_names=...)` is not
    part of the optimizer's config, so after `keras.saving.load_model` the
    reloaded optimizer would decay every variable again; here the patterns
    are an argument, `get_config` carries them, and a reloaded model keeps
    training as before.

    Args:
        *args: `keras.optimizers.AdamW`'s positional arguments (learning rate first).
        no_decay: regular expressions searched in each variable's path; a
            variable that matches one is never decayed. Default `NO_DECAY`
            (position tables).
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
                "`no_decay` must be a list of non-empty variable-path patterns (e.g. "
                f"['position_embedding/table']); received {no_decay!r}."
            )
        self.no_decay = tuple(no_decay)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keras' method, keeping `no_decay` (Keras' own would replace the patterns).

        Args:
            var_list: variables never to decay (not saved with the config).
            var_names: further path patterns, added to `no_decay` (saved).
        """
        self.no_decay = tuple(dict.fromkeys([*self.no_decay, *(var_names or [])]))
        self._exclude_from_weight_decay_cache = {}
        super().exclude_from_weight_decay(var_list=var_list)

    def _use_weight_decay(self, variable):
        if len(variable.shape) < 2:
            return False
        path = getattr(variable, "path", variable.name)
        if any(re.search(pattern, path) for pattern in self.no_decay):
            return False
        return super()._use_weight_decay(variable)  # the var_list exclusions

    def get_config(self):
        config = super().get_config()
        config["no_decay"] = list(self.no_decay)
        return config
