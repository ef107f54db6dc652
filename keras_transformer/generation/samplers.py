"""How the next token is picked from logits: greedy, temperature, top-k, top-p.

Random draws come from a counter-based hash of (seed, step, row, token), written
in `keras.ops` integer arithmetic: the same seed gives the same tokens on every
backend, inside or outside a compiled loop, with no random state to thread. The
seed is an input of the compiled decode loop, not part of what it is compiled
for: a new seed never recompiles.
"""

import dataclasses
from typing import Optional

import numpy as np
from keras import ops

from keras_transformer import validation
from keras_transformer.generation.logits import NEG_INF

MAX_SEED = 2**31 - 1
"""Seeds are non-negative int32 values: `0 <= seed <= MAX_SEED`."""


def draw_seed():
    """A fresh seed from NumPy's global generator (`keras.utils.set_random_seed` fixes it)."""
    return int(np.random.randint(0, MAX_SEED, dtype=np.int64))


def _mix(x):
    """A 32-bit integer hash (lowbias32) in int32 arithmetic with wrap-around."""
    x = ops.bitwise_xor(x, ops.bitwise_and(ops.right_shift(x, 16), 0xFFFF))
    x = x * 0x7FEB352D
    x = ops.bitwise_xor(x, ops.bitwise_and(ops.right_shift(x, 15), 0x1FFFF))
    x = x * -2073254261  # 0x846CA68B as int32
    return ops.bitwise_xor(x, ops.bitwise_and(ops.right_shift(x, 16), 0xFFFF))


def uniform(seed, step, shape):
    """Reproducible uniform draws in (0, 1) of `shape` `(batch, vocab)` for one step."""
    batch, vocab = shape
    counter = ops.arange(batch * vocab, dtype="int32")
    step_key = _mix(ops.cast(step, "int32") + 0x3C6EF372)
    key = _mix(ops.bitwise_xor(step_key, ops.cast(seed, "int32")))
    bits = _mix(ops.bitwise_xor(counter * -1640531535, key))  # 0x9E3779B1 as int32
    mantissa = ops.cast(ops.bitwise_and(ops.right_shift(bits, 8), 0xFFFFFF), "float32")
    return ops.reshape((mantissa + 0.5) / 16777216.0, (batch, vocab))


def top_k_filter(logits, k):
    """Logits outside the `k` largest of each row set to -inf. `(B, V) -> (B, V)`."""
    kth = ops.top_k(logits, k)[0][:, -1:]  # (B, 1)
    return ops.where(logits < kth, NEG_INF, logits)


def top_p_filter(logits, p):
    """Keep the smallest set of most likely tokens whose probability reaches `p`.

    The most likely token is always kept. `(B, V) -> (B, V)`.
    """
    sorted_logits = ops.top_k(logits, ops.shape(logits)[-1])[0]  # (B, V) descending
    probs = ops.softmax(sorted_logits, axis=-1)
    before = ops.cumsum(probs, axis=-1) - probs  # mass of strictly more likely tokens
    kept = ops.sum(ops.cast(before < p, "int32"), axis=-1, keepdims=True)  # (B, 1) >= 1
    threshold = ops.take_along_axis(sorted_logits, kept - 1, axis=-1)  # smallest kept
    return ops.where(logits < threshold, NEG_INF, logits)


@dataclasses.dataclass(frozen=True)
class Sampler:
    """Picks next tokens from logits `(batch, vocab)`.

    `Sampler()` samples from the softmax; `Sampler(greedy=True)` takes the
    argmax. Sampling applies `temperature`, then keeps the `top_k` most
    likely tokens and/or the `top_p` nucleus, and draws with the Gumbel-max
    trick from hashed `seed`-dependent noise: reproducible on every backend.

    Args:
        greedy: take the argmax instead of sampling (the other settings are
            then unused).
        temperature: divides the logits; below 1 sharpens the distribution,
            above 1 flattens it.
        top_k: sample among the `top_k` most likely tokens only, or None.
        top_p: sample within the nucleus: the smallest set of most likely
            tokens whose probability reaches `top_p` (in (0, 1]), or None.
        seed: an int in `[0, 2**31 - 1]`: the same seed gives the same
            tokens. None (the default) draws a fresh seed at every call, so
            repeated calls give different samples.

    Example:
    >>> import numpy as np
    >>> logits = np.log(np.array([[0.5, 0.3, 0.2]], "float32"))
    >>> int(Sampler(greedy=True)(logits, step=0)[0])
    0
    >>> picks = {int(Sampler(top_k=2)(logits, step=0, seed=s)[0]) for s in range(20)}
    >>> sorted(picks)
    [0, 1]
    """

    greedy: bool = False
    temperature: float = 1.0
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    seed: Optional[int] = None

    def __post_init__(self):
        validation.check_bool("greedy", self.greedy)
        validation.check_positive_float("temperature", self.temperature)
        validation.check_int("top_k", self.top_k, allow_none=True)
        top_p = self.top_p
        if top_p is not None and (
            isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1
        ):
            raise ValueError(f"`top_p` must be a number in (0, 1]; received {top_p!r}.")
        check_seed(self.seed)

    def without_seed(self):
        """This sampler with `seed=None`: what a compiled decode loop is keyed on."""
        return dataclasses.replace(self, seed=None)

    def next_seed(self):
        """The seed of one `generate` call: `seed`, or a fresh one when it is None."""
        return draw_seed() if self.seed is None else self.seed

    def filter(self, logits):
        """Temperature-scaled logits with everything outside top-k / top-p at -inf.

        Args:
            logits: `(batch, vocab)` scores of the next token.

        Returns:
            float32 `(batch, vocab)` logits.
        """
        logits = ops.cast(logits, "float32") / self.temperature
        if self.top_k is not None:
            logits = top_k_filter(logits, min(self.top_k, logits.shape[-1]))
        if self.top_p is not None:
            logits = top_p_filter(logits, self.top_p)
        return logits

    def __call__(self, logits, step, seed=None):
        """Token ids `(batch,)` int32 for logits `(batch, vocab)` at decoding `step`.

        Args:
            logits: `(batch, vocab)` scores of the next token.
            step: the decoding step (an int or scalar tensor); it picks the
                noise, so each step draws afresh and a rerun draws the same.
            seed: overrides the sampler's `seed` (an int or an int32 scalar
                tensor: the decode loop passes its seed input here).
        """
        if self.greedy:
            return ops.cast(ops.argmax(logits, axis=-1), "int32")
        logits = self.filter(logits)
        if seed is None:
            seed = self.next_seed()
        noise = uniform(seed, step, ops.shape(logits))
        gumbel = -ops.log(-ops.log(noise))
        return ops.cast(ops.argmax(logits + gumbel, axis=-1), "int32")


def check_seed(seed, name="seed"):
    """`seed` must be None or an int in `[0, MAX_SEED]`."""
    validation.check_int(name, seed, minimum=0, allow_none=True)
    if seed is not None and seed > MAX_SEED:
        raise ValueError(
            f"`{name}` must be an integer in [0, 2**31 - 1]; received {seed!r}."
        )
    return seed


GREEDY = Sampler(greedy=True)
"""The default sampler of `generate`: always the most likely token."""
