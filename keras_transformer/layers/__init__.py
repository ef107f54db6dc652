"""Building blocks: embeddings, attention, feed-forward, the Transformer block and its toggles."""

from keras_transformer.layers.block_cache import BlockCache
from keras_transformer.layers.block_config import AttentionConfig
from keras_transformer.layers.block_config import BlockConfig
from keras_transformer.layers.cross_attention import CrossAttention
from keras_transformer.layers.decode_context import DecodeContext
from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.learned_position_embedding import LearnedPositionEmbedding
from keras_transformer.layers.multi_head_attention import MultiHeadAttention
from keras_transformer.layers.sinusoidal_embedding import SinusoidalEmbedding
from keras_transformer.layers.token_embedding import TokenEmbedding
from keras_transformer.layers.transformer_block import TransformerBlock

__all__ = [
    "AttentionConfig",
    "BlockCache",
    "BlockConfig",
    "CrossAttention",
    "DecodeContext",
    "FeedForward",
    "LearnedPositionEmbedding",
    "MultiHeadAttention",
    "SinusoidalEmbedding",
    "TokenEmbedding",
    "TransformerBlock",
]
