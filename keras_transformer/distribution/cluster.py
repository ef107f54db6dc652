"""Several processes, one model: joining a JAX cluster, gathering and saving its weights.

Every process of a cluster runs the same program. `join_cluster` connects it
to the others before JAX starts any computation; from then on
`keras.distribution.list_devices()` lists every process's devices and a
mesh spans them. A weight split over devices of several processes is one
global `jax.Array`, of which each process holds its own shards only: it
cannot be turned into a NumPy array where it lives, so `model.save` fails on
it ("spans non-addressable devices"). `gathered_weights` and `save_model`
collect each weight from every process (a collective: every process must
call them) and write one ordinary `.keras` file that loads in one process.

How a cluster fails: JAX's coordinator expects a heartbeat from every process.
When a process dies, the others stop at their next collective or when its
heartbeats are overdue (`heartbeat_timeout`), and JAX ends them with "the JAX
distributed service detected fatal errors ... another task died" (an abort,
exit status 134). `keras.distribution.initialize` joins with JAX's defaults
(300 s to join, 100 s of silence before a peer counts as dead);
`join_cluster` lets you bound both.
"""

import contextlib
import numbers
import socket
import time

import keras
import numpy as np

from keras_transformer import validation

__all__ = ["gathered_weights", "is_coordinator", "join_cluster", "save_model"]


def _check_jax(name):
    if keras.backend.backend() != "jax":
        raise ValueError(
            f"`{name}` needs the JAX backend (KERAS_BACKEND=jax): keras.distribution runs "
            f"clusters on JAX only; this process runs {keras.backend.backend()}."
        )


def join_cluster(coordinator_address, num_processes, process_id, timeout=300,
                 heartbeat_timeout=100):
    """Joins this process to a JAX cluster, as `keras.distribution.initialize` does.

    Call it first thing, before any JAX computation, in every process. It
    runs `jax.distributed.initialize` with bounded timeouts and gives every
    process the same random seed, as Keras does, so that all of them create
    the same initial weights. (CPU devices of different processes reduce
    through gloo over TCP, JAX's default; GPUs and TPUs use their own links.)

    Args:
        coordinator_address: `"host:port"` of process 0, which every process
            can reach.
        num_processes: processes in the cluster.
        process_id: this process, from 0 to `num_processes - 1`.
        timeout: seconds to wait for every process to join (a process
            other than 0 first waits this long for process 0 to listen,
            then raises a `TimeoutError` naming the address).
        heartbeat_timeout: seconds without a heartbeat after which a process
            counts as dead and the others stop with an error; also how long
            a process that ends (by an exception, say) waits at exit for the
            others.

    Example:
    >>> join_cluster("localhost:12355", num_processes=2, process_id=2)
    Traceback (most recent call last):
    ...
    ValueError: `process_id` must be an integer in [0, 1]; received 2.
    """
    host, port = _host_and_port(coordinator_address)
    num_processes = validation.check_int("num_processes", num_processes)
    if not isinstance(process_id, numbers.Integral) or isinstance(process_id, bool) or not (
        0 <= process_id < num_processes
    ):
        raise ValueError(
            f"`process_id` must be an integer in [0, {num_processes - 1}]; "
            f"received {process_id!r}."
        )
    timeout = validation.check_int("timeout", timeout)
    heartbeat_timeout = validation.check_int("heartbeat_timeout", heartbeat_timeout)
    _check_jax("join_cluster")
    import jax
    from keras.src.backend.jax import distribution_lib

    if jax.distributed.is_initialized():
        raise ValueError(
            "This process has already joined a cluster: call `join_cluster` once per process."
        )
    process_id = int(process_id)
    if process_id:
        _wait_for_coordinator(host, port, timeout)
    else:
        _check_port_free(port)
    jax.distributed.initialize(
        coordinator_address=coordinator_address, num_processes=num_processes,
        process_id=process_id, initialization_timeout=timeout,
        heartbeat_timeout_seconds=heartbeat_timeout,
        # A process that raises waits at exit for the others (which may wait in a
        # collective for it): bounded like the heartbeats, not JAX's 300 s.
        shutdown_timeout_seconds=heartbeat_timeout,
    )
    distribution_lib.initialize_rng()  # what keras.distribution.initialize does next


def _host_and_port(address):
    """`(host, port)` of `"host:port"` or `"[v6 address]:port"`."""
    host, _, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:  # an IPv6 address needs its brackets, or its last group is the port
        host = ""
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            "`coordinator_address` must be a 'host:port' string naming process 0 "
            f"(port 1-65535; an IPv6 address in brackets: '[::1]:1234'); received {address!r}."
        )
    return host, int(port)


def _check_port_free(port):
    """Process 0 listens on `port` (all interfaces, as JAX does): it must be free.

    Another cluster's coordinator there would take this cluster's processes for
    its own, and JAX would end both clusters.
    """
    try:
        probe = socket.socket(socket.AF_INET6)
    except OSError:  # no IPv6 on this host
        probe = socket.socket(socket.AF_INET)
    with probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC: TIME_WAIT is ok
        try:
            probe.bind(("", port))
        except OSError as error:
            raise ValueError(
                f"Port {port} of `coordinator_address` is in use ({error.strerror}): another "
                "program (or another cluster's process 0) listens there; choose a free port."
            ) from None


def _wait_for_coordinator(host, port, timeout):
    """Returns once process 0 listens at `host:port`; TimeoutError after `timeout` s.

    JAX itself would abort the process after its join timeout with a message
    about a task that died; this says what is wrong first.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"No coordinator answered at {host}:{port} within {timeout} s ({error}): "
                    "start process 0 (it listens there), or check the address, the port and "
                    "the firewall."
                ) from None
            time.sleep(0.2)


def is_coordinator():
    """Whether this is process 0 (the one process without a cluster; any backend).

    Example:
    >>> is_coordinator()
    True
    """
    if keras.backend.backend() != "jax":
        return True
    import jax

    return jax.process_index() == 0


_GATHER_BYTES = 2**28  # gathered at once: few compiled programs, bounded device memory


def _gathered(variables):
    """The whole values of `variables` as NumPy arrays, in every process (collective).

    Arrays split over several processes are replicated by one compiled identity
    per group of up to `_GATHER_BYTES` (one per array would compile hundreds of
    programs for a model), then read from this process's first device.
    """
    values = [variable.value for variable in variables]
    if keras.backend.backend() != "jax":
        return [keras.ops.convert_to_numpy(value) for value in values]
    import jax

    spread = [i for i, value in enumerate(values) if not value.is_fully_addressable]
    for group in _groups(spread, values):
        mesh = values[group[0]].sharding.mesh
        whole = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
        gathered = jax.jit(lambda arrays: arrays, out_shardings=whole)(
            [values[i] for i in group]
        )
        for i, value in zip(group, gathered):
            values[i] = value.addressable_data(0)
    return [np.asarray(value) for value in values]


def _groups(indices, values):
    """`indices` in runs of one mesh and at most `_GATHER_BYTES` (at least one each)."""
    group, size = [], 0
    for i in indices:
        value = values[i]
        if group and (size + value.nbytes > _GATHER_BYTES
                      or value.sharding.mesh != values[group[0]].sharding.mesh):
            yield group
            group, size = [], 0
        group.append(i)
        size += value.nbytes
    if group:
        yield group


def gathered_weights(model):
    """`model.get_weights()` of a model whose weights span several processes.

    A collective: every process of the cluster must call it, in the same
    order as its other collectives. In one process it is `get_weights()`.

    Args:
        model: a built Keras model.

    Returns:
        A list of NumPy arrays, in `model.weights` order, in every process.

    Example:
    >>> import keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    >>> [w.shape for w in gathered_weights(model)][:1]
    [(128, 32)]
    """
    return _gathered(model.weights)


@contextlib.contextmanager
def _no_distribution():
    """Variables created here live on this process's default device."""
    from keras.src.distribution import distribution_lib

    current = distribution_lib.distribution()
    distribution_lib.set_distribution(None)
    try:
        yield
    finally:
        distribution_lib.set_distribution(current)


def save_model(model, filepath):
    """`model.save(filepath)` for a model whose weights span several processes.

    Every process calls it (it gathers each weight and optimizer variable
    from all of them); process 0 writes one ordinary `.keras` file, with the
    optimizer and its state when the model is compiled, and every process
    returns once the file is written. In one process it is `model.save`.
    Each process's host memory must hold the whole model and optimizer state
    once (the gathered arrays; process 0 builds its copy on the CPU too).
    The file loads anywhere with `keras.saving.load_model`, into one device
    or, under a distribution, into sharded weights.

    Args:
        model: a built `DecoderOnly`, `EncoderDecoder` (or any Keras model
            that Keras can rebuild from its config).
        filepath: the `.keras` file to write, on process 0's file system (the
            other processes' `filepath` is not used).

    Example:
    >>> import os, tempfile, keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> save_model(model, path)
    >>> os.path.exists(path)
    True
    """
    if keras.backend.backend() != "jax":
        model.save(filepath)
        return
    import jax
    from jax.experimental import multihost_utils

    if jax.process_count() == 1:
        model.save(filepath)
        return
    values = _gathered(model.variables)
    optimizer = getattr(model, "optimizer", None)
    optimizer_values = (
        _gathered(optimizer.variables)
        if optimizer is not None and optimizer.built else None
    )
    if is_coordinator():
        # On the host, not on an accelerator the sharded model already fills.
        with _no_distribution(), keras.device("cpu:0"):
            copy = _rebuilt(model, values, optimizer_values)
            copy.save(filepath)
    multihost_utils.sync_global_devices("keras_transformer.save_model")


def _rebuilt(model, values, optimizer_values):
    """An unsharded copy of `model`, made as `keras.saving.load_model` makes one."""
    copy = model.__class__.from_config(model.get_config())
    if not copy.built:  # our models build in their constructor
        copy.build_from_config(model.get_build_config())
    for original, rebuilt in zip(model._flatten_layers(), copy._flatten_layers(), strict=True):
        if getattr(original, "lora_enabled", False):  # its adapters are variables too
            rebuilt.enable_lora(original.lora_rank, lora_alpha=original.lora_alpha)
    for variable, value in zip(copy.variables, values, strict=True):
        variable.assign(value)
    if getattr(model, "compiled", False):
        copy.compile_from_config(model.get_compile_config())
    if optimizer_values is not None:
        if not copy.optimizer.built:  # compile_from_config builds it, in Keras 3.15
            copy.optimizer.build(copy.trainable_variables)
        for variable, value in zip(copy.optimizer.variables, optimizer_values, strict=True):
            variable.assign(value)
    return copy
