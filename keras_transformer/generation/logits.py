"""What every decode loop does to the next-token logits: forbid ids, spot stop ids."""

from keras import ops

NEG_INF = -1e30
"""The score of an impossible token or hypothesis (finite, so sums stay finite)."""


def forbid(logits, token_ids):
    """float32 logits `(B, V)` with the ids in `token_ids` at `NEG_INF`.

    Args:
        logits: `(B, V)` next-token scores.
        token_ids: a tuple of ids never to generate (may be empty).
    """
    logits = ops.cast(logits, "float32")
    if not token_ids:
        return logits
    vocab_ids = ops.arange(ops.shape(logits)[-1], dtype="int32")[:, None]  # (V, 1)
    forbidden = ops.convert_to_tensor(list(token_ids), "int32")  # a list: torch.compile traces it
    banned = ops.any(ops.equal(vocab_ids, forbidden[None, :]), axis=-1)
    return ops.where(banned[None, :], NEG_INF, logits)


def is_stop(tokens, stop_ids):
    """bool tensor of the shape of `tokens`: which are one of `stop_ids`."""
    if not stop_ids:
        return ops.zeros_like(tokens, dtype="bool")
    stops = ops.convert_to_tensor(list(stop_ids), "int32")
    return ops.any(ops.equal(ops.expand_dims(tokens, -1), stops), axis=-1)
