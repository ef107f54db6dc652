"""tf.data pipelines: the same batches as the PyDataset they carry, epoch for epoch, from a
TensorFlow tokenizer too, with the batch count known up front. (What the batches hold, and `fit`
on both carriers under each backend, are tested in test_batches.py.)"""

import keras
import numpy as np
import pytest

import keras_transformer as kt

from test_batches import PAIRS
from test_batches import TEXTS
from test_batches import assert_same_batches
from test_batches import chars
from test_batches import epoch_of
from test_batches import flat
from test_batches import language_model
from test_batches import translation

tf = pytest.importorskip("tensorflow")


def tf_chars(texts):
    """`chars` as TensorFlow ops: a `tf.RaggedTensor`, as keras-hub tokenizers give under TF."""
    return tf.strings.unicode_decode(texts, "UTF-8") % 60 + 4


def epochs_of(dataset, count=2):
    return [[flat(keras.tree.map_structure(np.asarray, batch)) for batch in dataset]
            for _ in range(count)]


def pipelines(tokenizer):
    return [
        kt.data.translation_dataset(PAIRS, tokenizer, tokens_per_batch=256, max_length=48,
                                    bucket_width=16, seed=3),
        kt.data.language_model_dataset(TEXTS, tokenizer, sequence_length=16, batch_size=8,
                                       seed=3),
    ]


def test_pipelines_yield_the_py_dataset_batches_epoch_for_epoch():
    for batches, dataset in zip([translation(), language_model()], pipelines(chars)):
        for ours in epochs_of(dataset):  # the k-th complete iteration is epoch k
            assert_same_batches(epoch_of(batches), ours)


def test_a_pipeline_leaves_its_py_dataset_epoch_alone():
    batches = language_model()
    epochs_of(kt.data.as_tf_dataset(batches))
    assert batches.epoch == 0
    with pytest.raises(ValueError, match="`batches`"):
        kt.data.as_tf_dataset([(np.zeros((2, 3)), np.zeros((2, 3)))])


def test_a_tensorflow_tokenizer_gives_the_same_batches_as_a_python_one():
    for with_tf, with_python in zip(pipelines(tf_chars), pipelines(chars)):
        assert_same_batches(epochs_of(with_tf, 1)[0], epochs_of(with_python, 1)[0])


def test_a_partial_iteration_leaves_the_epoch_where_it_is():
    dataset = pipelines(chars)[1]
    first = next(iter(dataset))  # as `fit` reads a batch to build a model
    epochs = epochs_of(dataset)
    np.testing.assert_array_equal(flat(keras.tree.map_structure(np.asarray, first))[0],
                                  epochs[0][0][0])
    assert not np.array_equal(epochs[0][0][0], epochs[1][0][0])


def test_the_batch_count_is_known_up_front_and_holds_each_epoch():
    for dataset in pipelines(chars):
        count = int(dataset.cardinality())
        assert count > 0 and all(len(epoch) == count for epoch in epochs_of(dataset))


@pytest.mark.parametrize("arguments, name", [
    (dict(tokens_per_batch=16, max_length=32), "tokens_per_batch"),
    (dict(shuffle="yes"), "shuffle"),
])
def test_translation_arguments_are_validated(arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        kt.data.translation_dataset(PAIRS, chars, **arguments)


def test_a_pipeline_carries_its_id_range_and_fit_refuses_a_smaller_vocabulary():
    for batches, dataset in zip([translation(), language_model()], pipelines(chars)):
        assert dataset.token_id_range == batches.token_id_range
    dataset = pipelines(chars)[1]
    largest = dataset.token_id_range[1]
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=largest, max_length=16)
    model.compile()
    with pytest.raises(ValueError, match=rf"`x` \(_AssertCardinalityDataset\) holds token ids "
                                         rf"from \d+ to {largest}, outside the model's"):
        model.fit(dataset, verbose=0)
