"""Reference computations for the generation tests: full forward passes, GNMT scores."""

import numpy as np
from keras import ops

START, STOP, PAD = 1, 2, 0


def full_pass_greedy_decoder_only(model, prompt, new_tokens, stop_ids=()):
    """Reference: re-run the whole sequence for every token, argmax, no pad token."""
    sequence, stopped = list(prompt), False
    for _ in range(new_tokens):
        if stopped:
            sequence.append(PAD)
            continue
        logits = ops.convert_to_numpy(model(np.array([sequence]), training=False))[0, -1]
        logits[PAD] = -np.inf
        sequence.append(int(np.argmax(logits)))
        stopped = sequence[-1] in stop_ids
    return sequence


def log_probs_of(model, source, target_tokens):
    """Per-token log-probabilities of `target_tokens` after START, by full passes."""
    sequence, result = [START], []
    for token in target_tokens:
        logits = ops.convert_to_numpy(
            model({"source": source[None], "target": np.array([sequence])}, training=False)
        )[0, -1].astype("float64")
        logits[PAD] = -np.inf
        log_probs = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        result.append(log_probs[token])
        sequence.append(int(token))
    return result


def gnmt_score(log_probs, alpha=0.6):
    """Summed log-probability over GNMT's length penalty."""
    return sum(log_probs) / ((5 + len(log_probs)) / 6) ** alpha


def hypothesis(tokens, stop_ids=(STOP,)):
    """Tokens up to and including the first stop id."""
    out = []
    for token in tokens:
        out.append(int(token))
        if token in stop_ids:
            break
    return out
