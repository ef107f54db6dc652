"""A sublayer's own copy of an initializer, so that no two weights start equal.

A Keras 3 initializer seeded with an integer, or with None, draws the same
values at every call: handing one object to several sublayers gives them
identical matrices wherever the shapes agree (keras-hub clones its
initializer per sublayer for this reason). Every layer of this library that
makes sublayers hands each one `clone_initializer(initializer, name)`.
"""

import zlib

import keras


def clone_initializer(initializer, name):
    """A copy of `initializer` that draws its own values.

    * Unseeded (`seed=None`): a fresh copy, which takes a new seed from
      Python's generator, so `keras.utils.set_random_seed` still makes a model
      built twice identical.
    * Seeded with an integer: a copy whose seed is derived from that seed
      and `name` (stable across runs and processes), so a seeded block is
      reproducible and its sublayers still differ.
    * Seeded with a `keras.random.SeedGenerator`: the object itself, which
      already draws new values at each call.
    * Without a seed (`"zeros"`, `"ones"`, constants): the object itself.

    Args:
        initializer: a Keras initializer, its name or its config.
        name: the sublayer's name, which makes a seeded copy's seed its own.

    Returns:
        A Keras initializer.

    Example:
    >>> import keras
    >>> shared = keras.initializers.RandomNormal(stddev=0.02, seed=1)
    >>> a = clone_initializer(shared, "query")((2, 2))
    >>> b = clone_initializer(shared, "output")((2, 2))
    >>> bool((keras.ops.convert_to_numpy(a) == keras.ops.convert_to_numpy(b)).all())
    False
    """
    initializer = keras.initializers.get(initializer)
    config = initializer.get_config()
    if "seed" not in config or isinstance(config["seed"], dict):
        return initializer
    if config["seed"] is not None:
        salted = zlib.crc32(f"{config['seed']}/{name}".encode())
        config["seed"] = salted % (2**31 - 1)
    return initializer.__class__.from_config(config)
