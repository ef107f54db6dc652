"""Where each family's weights start: the rules and their sources, stated once.

| weight | `DecoderOnly` (GPT-2) | `EncoderDecoder` (2017) |
|---|---|---|
| projection kernels (Q/K/V, cross-attention, feed-forward in/gate) | N(0, 0.02) | Glorot-uniform over the stored matrix |
| kernels writing into the residual stream (attention `output`, feed-forward `outer`) | N(0, 0.02 / sqrt(2 num_layers)) | Glorot-uniform |
| token embedding (and an untied output projection) | N(0, 0.02) | N(0, d_model^-0.5) |
| learned position table | N(0, 0.01) | N(0, 0.01) |
| biases, norm offsets / norm scales | 0 / 1 | 0 / 1 |

GPT-2: every matrix N(0, 0.02) and the position table N(0, 0.01) (the
`model.py` OpenAI released), and "the weights of residual layers scaled at
initialization by 1/sqrt(N), N the number of residual layers" (the GPT-2
paper, section 2.3): the two projections per block that add into the residual
stream start at N(0, 0.02 / sqrt(2 num_layers)), so that the stream's
variance does not grow with depth. nanoGPT and HF's `GPT2PreTrainedModel`
do the same (`c_proj`). The LLaMA presets, also
`DecoderOnly`, take the same rule (HF's Llama uses N(0, 0.02) without the
depth scaling; the paper states none).

2017 (fairseq's `transformer`): Xavier/Glorot-uniform on every projection,
embeddings N(0, d_model^-0.5) so that they have unit variance after the
`sqrt(d_model)` scaling. tensor2tensor's `uniform_unit_scaling` with gain
1.0 is the same Glorot-uniform (`variance_scaling`, `fan_avg`, uniform) on
separate Q, K and V matrices; our self-attention fuses them into one
`(d_model, 3 d_model)` matrix, whose Glorot limit `sqrt(6 / (4 d_model))`
equals fairseq's choice for Q, K and V (Xavier with gain `1/sqrt(2)` on each
square matrix).

Each sublayer draws its own values from its rule (`clone_initializer`).
"""

import dataclasses
import math

import keras


@dataclasses.dataclass(frozen=True)
class Initialization:
    """The initializers of one model family (see the module's table).

    Args:
        kernel: every projection kernel of a block but the residual ones.
        output_kernel: the kernels that write into the residual stream
            (attention's `output`, the feed-forward's `outer`).
        token_embedding: the token embedding, and an untied output
            projection.
        position_table: a learned position table.
    """

    kernel: keras.initializers.Initializer
    output_kernel: keras.initializers.Initializer
    token_embedding: keras.initializers.Initializer
    position_table: keras.initializers.Initializer


def gpt2_initialization(num_layers):
    """GPT-2's rule for `num_layers` blocks: N(0, 0.02), residual kernels / sqrt(2 L).

    Args:
        num_layers: the blocks of the model (two residual projections each).

    Example:
    >>> gpt2_initialization(12).output_kernel.stddev  # 0.02 / sqrt(24)
    0.00408...
    """
    return Initialization(
        kernel=keras.initializers.RandomNormal(stddev=0.02),
        output_kernel=keras.initializers.RandomNormal(stddev=0.02 / math.sqrt(2 * num_layers)),
        token_embedding=keras.initializers.RandomNormal(stddev=0.02),
        position_table=keras.initializers.RandomNormal(stddev=0.01),
    )


def paper_initialization(d_model):
    """The 2017 family's rule (fairseq): Glorot-uniform kernels, N(0, d^-0.5) embeddings.

    Args:
        d_model: the width of the residual stream.

    Example:
    >>> paper_initialization(512).token_embedding.stddev  # 512 ** -0.5
    0.0441...
    """
    return Initialization(
        kernel=keras.initializers.GlorotUniform(),
        output_kernel=keras.initializers.GlorotUniform(),
        token_embedding=keras.initializers.RandomNormal(stddev=d_model**-0.5),
        position_table=keras.initializers.RandomNormal(stddev=0.01),
    )
