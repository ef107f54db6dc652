"""The two model families, their shared config and the named presets."""

from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.decoder_only import DecoderOnly
from keras_transformer.models.encoder_decoder import EncoderDecoder
from keras_transformer.models.presets import PRESETS

_FAMILIES = {"DecoderOnly": DecoderOnly, "EncoderDecoder": EncoderDecoder}


def preset_config(name, **overrides):
    """`TransformerConfig` of any preset, without building weights.

    Args:
        name: a key of `PRESETS`.
        **overrides: constructor arguments that replace the preset's.

    Example:
    >>> preset_config("gpt3_175b").count_params()
    174604259328
    """
    from keras_transformer.models.presets import get_preset

    family, _ = get_preset(name)
    return _FAMILIES[family].preset_config(name, **overrides)


__all__ = ["DecoderOnly", "EncoderDecoder", "PRESETS", "TransformerConfig", "preset_config"]
