"""Training batches as a `keras.utils.PyDataset`: NumPy only, no TensorFlow.

What an epoch holds (which examples go together, padded to which length, in
which order) is a pure function of the seed and the epoch number: `batch(epoch,
index)`. Epoch `k` is served until `k` complete passes have been made: a
`PyDataset` moves on at `on_epoch_end` once every batch of the epoch was read
during `fit`'s passes, and the `tf.data` pipelines of `pipelines.py` once an
iteration has asked for its last batch. A partial pass leaves the epoch where it
is: `fit` reads a batch to build the model and calls `on_epoch_end` before its
first epoch, and the two carriers must not drift apart there. So both carry the
same batches, epoch for epoch, and `fit` on either gives the same weights
(tested). Give a `PyDataset` to `fit` with `shuffle=False`: its batches are
already shuffled from the seed, and `fit`'s own shuffle would reorder them with
Python's `random`.

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
    if isinstance(texts, str):
        raise ValueError("`texts` must be a sequence of strings; received one string.")
    texts = list(texts)
    rows = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        output = tokenizer(chunk)
        if hasattr(output, "to_list"):  # tf.RaggedTensor
            output = output.to_list()
        output = [_id_row(row) for row in output]
        if len(output) != len(chunk):
            raise ValueError(f"`tokenizer` must give one id sequence per text; it gave "
                             f"{len(output)} for {len(chunk)} texts.")
        rows.extend(output)
    return rows


def _id_row(row):
    """One tokenizer output row as int32 ids, refused when a cast would change an id."""
    values = np.asarray(row).reshape(-1)
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"`tokenizer` must give integer token ids; it gave dtype {values.dtype}.")
    if values.size and (values.min() < 0 or values.max() > np.iinfo(np.int32).max):
        raise ValueError(f"`tokenizer` gave token ids from {values.min()} to {values.max()}; "
                         "ids must lie in [0, 2**31 - 1].")
    return values.astype("int32")


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


def _cut(members, size, drop_remainder):
    """`members` cut into batches of `size` in order; the last may be partial, or dropped."""
    stop = len(members) - len(members) % size if drop_remainder else len(members)
    return [members[start : start + size] for start in range(0, stop, size)]


class _EpochBatches(keras.utils.PyDataset):
    """A `PyDataset` whose batches are `batch(epoch, index)` of a seeded plan.

    Batches are read in this process (`workers=1`): the epoch a batch comes
    from is this object's state, which worker processes would not share.
    """

    def __init__(self, shuffle, seed):
        super().__init__()
        validation.check_bool("shuffle", shuffle)
        validation.check_int("seed", seed, minimum=0)
        self.shuffle, self.seed = shuffle, seed
        self.epoch = 0  # complete passes made so far
        self._served = set()  # indices of this epoch's batches read during passes
        self._between = set()  # read since the last pass ended: the next pass's, if one begins
        self._within_pass = False
        self._plan = (None, None)  # (epoch, plan) of the last epoch planned
        self._count = None
        # (smallest, largest) token id of any batch: `fit` compares it with the model's
        # vocabulary before a step runs (`models.host_checks`).
        self.token_id_range = None

    def _record_id_range(self, arrays):
        arrays = [array for array in arrays if array.size]
        self.token_id_range = (int(min(array.min() for array in arrays)),
                               int(max(array.max() for array in arrays))) if arrays else None

    def _check_not_empty(self, reason):
        self._count = len(self.plan(0))
        if not self._count:
            raise ValueError(f"No batch to make: {reason}.")

    def plan(self, epoch):
        """The example-index arrays that make up `epoch`'s batches, in order.

        Args:
            epoch: the epoch, from 0.
        """
        validation.check_int("epoch", epoch, minimum=0)
        planned, batches = self._plan
        if planned != epoch:
            batches = self._make_plan(_epoch_rng(self.seed, epoch) if self.shuffle else None)
            self._plan = (epoch, batches)
        return batches

    def batch(self, epoch, index):
        """Batch `index` of epoch `epoch`, the same on every call.

        Args:
            epoch: the epoch, from 0.
            index: the batch, from 0 to `len(self) - 1`.
        """
        batches = self.plan(epoch)
        if isinstance(index, bool) or not 0 <= index < len(batches):
            raise IndexError(f"batch {index!r} of {len(batches)}")
        return self._assemble(batches[index])

    def __len__(self):
        # The same every epoch: a plan reorders the examples, never regroups their counts.
        return self._count

    def __getitem__(self, index):
        batch = self.batch(self.epoch, index)
        (self._served if self._within_pass else self._between).add(index)
        return batch

    def on_epoch_begin(self):
        # A prefetching reader (Keras' tf.data carrier of a PyDataset) may read the next
        # pass's first batches before that pass begins: they are that pass's.
        self._served |= self._between
        self._between = set()
        self._within_pass = True

    def on_epoch_end(self):
        """Moves on to the next epoch's plan once every batch of this one was read.

        Reads count between `on_epoch_begin` and `on_epoch_end` (a pass of
        `fit`) and add up over partial passes (`fit(steps_per_epoch=...)`, or
        the batch `fit` reads to build the model). Reads outside a pass count
        toward the next pass if one begins before another `on_epoch_end`: under
        TensorFlow, Keras prefetches a `PyDataset`'s batches, and with
        `steps_per_epoch` the reader of one pass goes on into the next.
        """
        if not self._within_pass:
            self._between = set()  # no pass took them
        self._within_pass = False
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

    Attributes:
        token_id_range: `(smallest, largest)` token id in any batch; `fit`
            refuses the data before a step if the model's vocabulary lacks one.

    Raises:
        ValueError: an argument is invalid, or no batch can be made.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = TranslationBatches([("hi", "hallo"), ("yes", "ja")], chars,
    ...                           tokens_per_batch=16, max_length=8, shuffle=False)
    >>> inputs, labels = data[0]
    >>> inputs["source"].shape, inputs["target"].shape, labels.shape
    ((2, 8), (2, 8), (2, 8))
    """

    def __init__(self, pairs, tokenizer, tokens_per_batch=4096, max_length=64, bucket_width=8,
                 shuffle=True, seed=0, drop_remainder=None):
        super().__init__(shuffle, seed)
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
        self._record_id_range([*self.sources, *self.labels, np.array([PAD_ID, START_ID])])
        self._check_not_empty(
            f"{len(self.sources)} of {len(pairs)} pairs fit `max_length` {max_length}"
            + (f", and with `drop_remainder` a bucket of length L needs `tokens_per_batch` "
               f"({tokens_per_batch}) // L of them" if drop_remainder else ""))

    def _make_plan(self, rng):
        order = np.arange(len(self.sources)) if rng is None else rng.permutation(len(self.sources))
        batches = []
        for bucket, length in enumerate(self.lengths):
            members = order[self._bucket_of[order] == bucket]
            batches += _cut(members, self.tokens_per_batch // length, self.drop_remainder)
        if rng is None:  # the order in which a stream fills its buckets: full ones as they
            # fill, then the partial remainders at the end of the stream
            return sorted(batches, key=lambda members: (
                len(members) < self.tokens_per_batch // self.lengths[self._bucket_of[members[0]]],
                members[-1]))
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

    Attributes:
        token_id_range: `(smallest, largest)` token id in any batch; `fit`
            refuses the data before a step if the model's vocabulary lacks one.

    Raises:
        ValueError: an argument is invalid, or no batch can be made.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = LanguageModelBatches(["hello world"] * 4, chars, sequence_length=8,
    ...                             batch_size=2)
    >>> len(data), [x.shape for x in data[0]]
    (2, [(2, 8), (2, 8)])
    """

    def __init__(self, texts, tokenizer, sequence_length, batch_size, shuffle=True, seed=0,
                 separator_id=END_ID):
        from keras_transformer.training.teacher_forcing import next_token_windows

        super().__init__(shuffle, seed)
        validation.check_int("sequence_length", sequence_length)
        validation.check_int("batch_size", batch_size)
        validation.check_int("separator_id", separator_id, minimum=0, allow_none=True)
        self.batch_size = batch_size
        stream = []
        for ids in token_ids(texts, tokenizer):
            stream.append(ids)
            if separator_id is not None:
                stream.append(np.array([separator_id], dtype="int32"))
        stream = np.concatenate(stream or [np.zeros((0,), "int32")])
        self.inputs, self.targets = next_token_windows(stream, sequence_length)  # (N, T) each
        self._record_id_range([self.inputs, self.targets])
        self._check_not_empty(
            f"`batch_size` ({batch_size}) is more than the {len(self.inputs)} windows of "
            f"`sequence_length` {sequence_length} the texts make")

    def _make_plan(self, rng):
        count = len(self.inputs)
        order = np.arange(count) if rng is None else rng.permutation(count)
        return _cut(order, self.batch_size, drop_remainder=True)

    def _assemble(self, members):
        return self.inputs[members], self.targets[members]
