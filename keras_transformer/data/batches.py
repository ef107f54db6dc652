"""Training batches as a `keras.utils.PyDataset`: NumPy only, no TensorFlow.

What an epoch holds (which examples go together, padded to which length, in
which order) is a pure function of the seed and the epoch number: `batch(epoch,
index)`. Epoch `k` is served until `k` complete passes have been made: a
`PyDataset` moves on at `on_epoch_end` once every batch of the epoch was read,
and the `tf.data` pipelines of `pipelines.py` when an iteration reaches its end.
A partial pass leaves the epoch where it is: `fit` reads a batch or a few to
build the model and calls `on_epoch_end` before its first epoch, and the two
carriers must not drift apart there. So both carry the same batches, epoch for
epoch, and training on either gives the same weights (tested).

Shapes produced (the conventions of `keras_transformer.masks`):

- `TranslationBatches`: `({"source": (B, L), "target": (B, L)}, labels (B, L))`,
  int32, padded with `PAD_ID`; `target` is `labels` shifted right behind `START_ID`.
- `LanguageModelBatches`: `(inputs (B, T), labels (B, T))`, labels the inputs
  moved one token on.
"""

import keras
import numpy as np

from keras_transformer import validation
from keras_transformer.special_tokens import END_ID
from keras_transformer.special_tokens import PAD_ID
from keras_transformer.special_tokens import START_ID


def token_ids(texts, tokenizer, batch_size=1024):
    """Token ids of each text: one int32 array per text.

    Args:
        texts: a sequence of strings.
        tokenizer: a callable mapping a list of strings to one id sequence
            per string: a keras-hub tokenizer (a `tf.RaggedTensor` under
            TensorFlow, lists under JAX and PyTorch), or plain Python.
        batch_size: strings tokenized per call.

    Returns:
        A list of 1-D int32 NumPy arrays.

    Example:
    >>> token_ids(["ab", "c"], lambda texts: [[ord(c) for c in t] for t in texts])
    [array([97, 98], dtype=int32), array([99], dtype=int32)]
    """
    validation.check_int("batch_size", batch_size)
    texts = list(texts)
    rows = []
    for start in range(0, len(texts), batch_size):
        output = tokenizer(texts[start : start + batch_size])
        if hasattr(output, "to_list"):  # tf.RaggedTensor
            output = output.to_list()
        rows.extend(np.asarray(row, dtype="int32").reshape(-1) for row in output)
    return rows


def bucket_lengths(max_length, bucket_width):
    """Padded lengths of the buckets: `bucket_width, 2 * bucket_width, ...,
    max_length`. Each batch is padded to the smallest one its longest example fits.

    Args:
        max_length: the longest sequence kept (the last bucket's length).
        bucket_width: the step between bucket lengths.

    Returns:
        A list of ints.

    Example:
    >>> bucket_lengths(40, 16)
    [16, 32, 40]
    """
    lengths = list(range(bucket_width, max_length, bucket_width))
    return lengths + [max_length]


def _epoch_rng(seed, epoch):
    return np.random.default_rng([seed, epoch])


def _padded(rows, length):
    out = np.full((len(rows), length), PAD_ID, dtype="int32")  # (B, L)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


class _EpochBatches(keras.utils.PyDataset):
    """A `PyDataset` whose batches are `batch(epoch, index)` of a seeded plan."""

    def __init__(self, shuffle, seed, **kwargs):
        super().__init__(**kwargs)
        validation.check_bool("shuffle", shuffle)
        validation.check_int("seed", seed, minimum=0)
        self.shuffle, self.seed = shuffle, seed
        self.epoch = 0  # complete passes made so far
        self._served = set()  # indices of this epoch's batches read so far
        self._plan = (None, None)  # (epoch, plan) of the last epoch planned

    def plan(self, epoch):
        """The example-index arrays that make up `epoch`'s batches, in order."""
        if self._plan[0] != epoch:
            rng = _epoch_rng(self.seed, epoch) if self.shuffle else None
            self._plan = (epoch, self._make_plan(rng))
        return self._plan[1]

    def batch(self, epoch, index):
        """Batch `index` of epoch `epoch` (0-based), the same on every call."""
        return self._assemble(self.plan(epoch)[index])

    def __len__(self):
        # The same every epoch: a plan reorders the examples, never regroups their counts.
        return len(self.plan(self.epoch))

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        self._served.add(index)
        return self.batch(self.epoch, index)

    def on_epoch_end(self):
        """Moves on to the next epoch's plan if every batch of this one was read."""
        if len(self._served) == len(self):
            self.epoch += 1
        self._served = set()


class TranslationBatches(_EpochBatches):
    """Bucketed translation batches for an `EncoderDecoder`, as a `PyDataset`.

    Each source becomes `ids + [END_ID]`; each target becomes the labels
    `ids + [END_ID]` and the decoder input `[START_ID] + ids` (teacher
    forcing). Pairs whose source or labels exceed `max_length` tokens are
    dropped. Examples are bucketed by their longer side; a bucket of padded
    length `L` is batched `tokens_per_batch // L` examples at a time, so a
    compiled step sees a few shapes, not one per batch. With `shuffle`, each
    epoch shuffles the examples before cutting the batches, then the batches;
    without, batches come in the order a stream would fill them.

    Args:
        pairs: a sequence of `(source text, target text)`.
        tokenizer: a callable mapping a list of strings to id sequences (e.g.
            from `train_sentencepiece`), with the special ids of
            `keras_transformer.data.tokenizers`; tokenized once, here.
        tokens_per_batch: padded source tokens per batch (the paper batched
            about 25,000 source and 25,000 target tokens).
        max_length: longest source or target kept, special token included.
        bucket_width: granularity of the padded lengths (see `bucket_lengths`).
        shuffle: shuffle examples and batches, differently each epoch.
        seed: shuffling seed.
        drop_remainder: drop each bucket's last partial batch (fewer compiled
            shapes); default: the value of `shuffle` (training).
        **kwargs: `PyDataset`'s `workers`, `use_multiprocessing`, `max_queue_size`.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = TranslationBatches([("hi", "hallo"), ("yes", "ja")], chars,
    ...                           tokens_per_batch=16, max_length=8, shuffle=False)
    >>> inputs, labels = data[0]
    >>> inputs["source"].shape, inputs["target"].shape, labels.shape
    ((2, 8), (2, 8), (2, 8))
    """

    def __init__(self, pairs, tokenizer, tokens_per_batch=4096, max_length=64, bucket_width=8,
                 shuffle=True, seed=0, drop_remainder=None, **kwargs):
        super().__init__(shuffle, seed, **kwargs)
        validation.check_int("tokens_per_batch", tokens_per_batch)
        validation.check_int("max_length", max_length, minimum=2)
        validation.check_int("bucket_width", bucket_width)
        if tokens_per_batch < max_length:
            raise ValueError(
                f"`tokens_per_batch` ({tokens_per_batch}) must be >= `max_length` "
                f"({max_length}) so the longest bucket holds one example."
            )
        drop_remainder = shuffle if drop_remainder is None else drop_remainder
        validation.check_bool("drop_remainder", drop_remainder)
        self.drop_remainder = drop_remainder
        self.tokens_per_batch = tokens_per_batch

        pairs = list(pairs)
        sources = token_ids([source for source, _ in pairs], tokenizer)
        targets = token_ids([target for _, target in pairs], tokenizer)
        end = np.array([END_ID], "int32")
        self.sources, self.labels = [], []
        for source, target in zip(sources, targets):
            source, labels = np.concatenate([source, end]), np.concatenate([target, end])
            if len(source) <= max_length and len(labels) <= max_length:
                self.sources.append(source)
                self.labels.append(labels)
        longest = np.array([max(len(s), len(l)) for s, l in zip(self.sources, self.labels)],
                           dtype="int64")
        self.lengths = np.array(bucket_lengths(max_length, bucket_width))
        self._bucket_of = np.searchsorted(self.lengths, longest)  # smallest bucket that fits

    def _make_plan(self, rng):
        order = np.arange(len(self.sources)) if rng is None else rng.permutation(len(self.sources))
        batches = []
        for bucket, length in enumerate(self.lengths):
            members = order[self._bucket_of[order] == bucket]
            size = self.tokens_per_batch // length
            stop = len(members) - len(members) % size if self.drop_remainder else len(members)
            batches += [members[start : start + size] for start in range(0, stop, size)]
        if rng is None:  # the order in which a stream of examples fills its buckets
            batches.sort(key=lambda members: members[-1])
            return batches
        return [batches[i] for i in rng.permutation(len(batches))]

    def _assemble(self, members):
        length = int(self.lengths[self._bucket_of[members[0]]])
        labels = _padded([self.labels[i] for i in members], length)  # (B, L)
        target = _padded([np.concatenate([[START_ID], self.labels[i][:-1]]) for i in members],
                         length)  # (B, L)
        source = _padded([self.sources[i] for i in members], length)  # (B, L)
        return {"source": source, "target": target}, labels


class LanguageModelBatches(_EpochBatches):
    """Next-token windows for a `DecoderOnly`, as a `PyDataset`.

    The texts are tokenized once and joined into one stream, each followed
    by `separator_id`; the stream is cut into windows of `sequence_length`
    tokens whose labels are the same window moved one token on
    (`keras_transformer.training.next_token_windows`). The last partial
    batch is dropped.

    Args:
        texts: a sequence of strings (e.g. source files).
        tokenizer: a callable mapping a list of strings to id sequences.
        sequence_length: tokens per window (the model's context).
        batch_size: windows per batch.
        shuffle: shuffle the windows, differently each epoch.
        seed: shuffling seed.
        separator_id: token put after each text (None for none).
        **kwargs: `PyDataset`'s `workers`, `use_multiprocessing`, `max_queue_size`.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = LanguageModelBatches(["hello world"] * 4, chars, sequence_length=8,
    ...                             batch_size=2)
    >>> len(data), [x.shape for x in data[0]]
    (2, [(2, 8), (2, 8)])
    """

    def __init__(self, texts, tokenizer, sequence_length, batch_size, shuffle=True, seed=0,
                 separator_id=END_ID, **kwargs):
        from keras_transformer.training.teacher_forcing import next_token_windows

        super().__init__(shuffle, seed, **kwargs)
        validation.check_int("sequence_length", sequence_length)
        validation.check_int("batch_size", batch_size)
        self.batch_size = batch_size
        stream = []
        for ids in token_ids(texts, tokenizer):
            stream.append(ids)
            if separator_id is not None:
                stream.append(np.array([separator_id], dtype="int32"))
        stream = np.concatenate(stream or [np.zeros((0,), "int32")])
        self.inputs, self.targets = next_token_windows(stream, sequence_length)  # (N, T) each

    def _make_plan(self, rng):
        count = len(self.inputs)
        order = np.arange(count) if rng is None else rng.permutation(count)
        size = self.batch_size
        return [order[start : start + size] for start in range(0, count - count % size, size)]

    def _assemble(self, members):
        return self.inputs[members], self.targets[members]
