"""Several processes as one JAX cluster, on this machine: examples/many_hosts.py for real.

Each test starts processes of examples/many_hosts.py that join one cluster on a free
loopback port (CPU devices reduce through gloo), each with a few virtual CPU devices, and
train 5 steps of both families under data parallelism, Megatron model parallelism (model
axis inside a process) and sharded weights (split across processes). The same script in one
process with as many devices is the reference: losses and trained weights must match to
1e-5, every process must have read its own half (quarter) of each global batch, and the
checkpoint the cluster wrote must load here with the reference's logits and optimizer state.
Every wait is bounded: the processes' own join and heartbeat timeouts, and a timeout on each
process here, after which all of them are killed.

The processes always run JAX; this file's checks run under any backend. The 2-process test
runs in the JAX session of `make test`, the 4-process one is marked slow.
"""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
from jax_processes import jax_env

import keras_transformer  # also registers the classes the checkpoints name

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "many_hosts.py"
DEVICES = 8
TOLERANCE = 1e-5
LAYOUTS = ("data_parallel", "model_parallel", "fully_sharded")
FAMILIES = ("decoder_only", "encoder_decoder")
BATCH = 8
JAX_SESSION = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="one backend's session is enough to run the cluster (it always runs JAX)",
)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(output, num_processes, process_id, port, *extra):
    command = [
        sys.executable, str(SCRIPT), "--coordinator", f"localhost:{port}",
        "--num-processes", str(num_processes), "--process-id", str(process_id),
        "--devices-per-process", str(DEVICES // num_processes), "--output", str(output),
        "--batch-size", str(BATCH), *extra,
    ]
    # Output goes to a file, not a pipe: a process blocked on a full pipe that nobody reads
    # yet would stall the whole cluster's collectives.
    log = open(pathlib.Path(output) / f"process-{process_id}-of-{num_processes}.log", "w+")
    process = subprocess.Popen(
        command, env=jax_env(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    process.log = log
    return process


def finish(processes, timeout):
    """`(return code, seconds, output)` of each process.

    Every process still running is killed at `timeout` seconds, or when anything here
    fails (an interrupt too): none outlives the test.
    """
    begun = time.monotonic()
    results = []
    try:
        for process in processes:
            try:
                process.wait(timeout=max(1, timeout - (time.monotonic() - begun)))
            except subprocess.TimeoutExpired:
                kill(processes)
                process.wait()
            process.log.seek(0)
            results.append((process.returncode, time.monotonic() - begun, process.log.read()))
    finally:
        kill(processes)
        for process in processes:
            process.log.close()
    return results


def kill(processes):
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def runs(output, process_id=0):
    data = json.loads((output / f"process-{process_id}.json").read_text())
    return {(run["family"], run["layout"]): run for run in data["runs"]}, data


def probe_inputs(family):
    ids = np.random.default_rng(7).integers(3, 128, size=(2, 12)).astype("int32")
    ids[1, 8:] = 0
    return ids if family == "decoder_only" else {"source": ids, "target": ids[:, ::-1].copy()}


def train_side_by_side(tmp_path_factory, num_processes, timeout):
    """The cluster (`num_processes` x 8/n devices) and the reference (1 x 8), side by side.

    The cluster joins with `keras.distribution.initialize` (the script's default).
    """
    cluster = tmp_path_factory.mktemp(f"cluster{num_processes}")
    alone = tmp_path_factory.mktemp(f"alone{num_processes}")
    port = free_port()
    processes = [start(cluster, num_processes, i, port) for i in range(num_processes)]
    processes.append(start(alone, 1, 0, port))
    for code, _, output in finish(processes, timeout=timeout):
        assert code == 0, output[-3000:]
    return cluster, alone, num_processes


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    return train_side_by_side(tmp_path_factory, 2, timeout=900)


@pytest.fixture(scope="module")
def four_processes(tmp_path_factory):
    return train_side_by_side(tmp_path_factory, 4, timeout=1200)


def check_matches_one_process(cluster, alone, num_processes):
    reference, alone_data = runs(alone)
    assert alone_data["processes"] == 1 and alone_data["devices"] == DEVICES
    assert set(reference) == {(f, layout) for f in FAMILIES for layout in LAYOUTS}
    for process_id in range(num_processes):
        got, data = runs(cluster, process_id)
        assert data["processes"] == num_processes and data["devices"] == DEVICES
        assert set(got) == set(reference)
        for key, run in got.items():
            want = reference[key]
            assert run["mesh"] == want["mesh"], key
            assert len(run["losses"]) == 5, key
            np.testing.assert_allclose(run["losses"], want["losses"], atol=TOLERANCE, err_msg=str(key))
            # Each process read its own share of every global batch, and the loss saw the
            # global batch once (each process feeding all of it would double the rows).
            assert run["rows_per_step"] == BATCH // num_processes, key
            assert want["rows_per_step"] == BATCH, key
            assert run["global_rows"] == want["global_rows"] == [BATCH] * 5, key
            split = run["weights_split_over_processes"]
            if key[1] == "fully_sharded":  # every matrix has a slice in each process only
                matrices = [p for p in split if p.endswith(("kernel", "embeddings"))]
                assert len(matrices) >= 6 and not want["weights_split_over_processes"], key
            else:  # replicated, or split over a model axis inside each process
                assert split == [], (key, split)
    for family in FAMILIES:
        for layout in LAYOUTS:
            name = f"{family}-{layout}"
            with np.load(cluster / name / "weights.npz") as a, np.load(alone / name / "weights.npz") as b:
                assert len(a.files) == len(b.files) > 0
                for k in a.files:
                    np.testing.assert_allclose(a[k], b[k], atol=TOLERANCE, err_msg=f"{name} {k}")


def check_checkpoints_load_here(cluster, alone):
    """The cluster's `.keras` files load in this one process: logits and SGD momenta."""
    sys.path.insert(0, str(SCRIPT.parent))
    import many_hosts

    many_hosts.register_metric()  # the files are compiled with the script's metric
    for family in FAMILIES:
        for layout in LAYOUTS:
            name = f"{family}-{layout}"
            ours = keras.saving.load_model(cluster / name / "model.keras", safe_mode=True)
            theirs = keras.saving.load_model(alone / name / "model.keras", safe_mode=True)
            inputs = probe_inputs(family)
            np.testing.assert_allclose(
                keras.ops.convert_to_numpy(ours(inputs)),
                keras.ops.convert_to_numpy(theirs(inputs)), atol=TOLERANCE, err_msg=name,
            )
            moments = [keras.ops.convert_to_numpy(v) for v in ours.optimizer.variables]
            expected = [keras.ops.convert_to_numpy(v) for v in theirs.optimizer.variables]
            assert len(moments) == len(expected) > len(ours.trainable_variables)
            for a, b in zip(moments, expected):
                np.testing.assert_allclose(a, b, atol=TOLERANCE, err_msg=name)


@JAX_SESSION
def test_two_processes_train_as_one(two_processes):
    check_matches_one_process(*two_processes)


@JAX_SESSION
def test_checkpoint_of_two_processes_loads_in_one(two_processes):
    cluster, alone, _ = two_processes
    check_checkpoints_load_here(cluster, alone)


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="one session is enough (the cluster always runs JAX): the one that runs slow tests",
)
def test_four_processes_train_as_one(four_processes):
    check_matches_one_process(*four_processes)
    check_checkpoints_load_here(*four_processes[:2])


@JAX_SESSION
@pytest.mark.parametrize(
    "failing, failure",
    [(1, "crash"), (0, "raise")],  # a worker dies at once; the coordinator raises
)
def test_a_failing_process_ends_the_others_with_a_clear_error(tmp_path, failing, failure):
    """One process fails after 2 steps; the other must stop by itself, in bounded time."""
    port = free_port()
    common = ("--families", "decoder_only", "--layouts", "data_parallel", "--join", "bounded",
              "--timeout", "10")
    processes = [
        start(tmp_path, 2, i, port, *common,
              *(("--fail-after-steps", "2", "--failure", failure) if i == failing else ()))
        for i in range(2)
    ]
    results = finish(processes, timeout=240)
    code, seconds, output = results[1 - failing]
    failed_code, _, failed_output = results[failing]
    if failure == "crash":
        assert failed_code == 3, failed_output[-2000:]
    else:
        assert "RuntimeError: process 0 fails after 2 steps" in failed_output
    assert code not in (0, -signal.SIGKILL), output[-2000:]  # it ended itself, with an error
    assert seconds < 150, seconds
    assert "another task died" in output or "unhealthy" in output, output[-2000:]


@JAX_SESSION
def test_a_cluster_without_its_coordinator_times_out_naming_it(tmp_path):
    """Process 1 of 2, and no process 0: joining fails after `--timeout` seconds."""
    port = free_port()
    process = start(tmp_path, 2, 1, port, "--join", "bounded", "--timeout", "5")
    ((code, seconds, output),) = finish([process], timeout=180)
    assert code == 1, output[-2000:]
    assert seconds < 120, seconds
    assert f"TimeoutError: No coordinator answered at localhost:{port} within 5 s" in output


@pytest.mark.parametrize(
    "arguments, match",
    [
        (("localhost", 2, 0), "`coordinator_address` must be a 'host:port' string"),
        (("localhost:http", 2, 0), "`coordinator_address` must be a 'host:port' string"),
        ((":1234", 2, 0), "`coordinator_address` must be a 'host:port' string"),
        (("localhost:65536", 2, 0), r"\(port 1-65535; .*received 'localhost:65536'"),
        (("::1:1234", 2, 0), r"an IPv6 address in brackets: '\[::1\]:1234'\); received '::1:1234'"),
        (("localhost:1234", 0, 0), "`num_processes` must be an integer"),
        (("localhost:1234", 2, 2), r"`process_id` must be an integer in \[0, 1\]; received 2"),
        (("localhost:1234", 2, -1), r"`process_id` must be an integer in \[0, 1\]"),
        (("localhost:1234", 2, True), r"`process_id` must be an integer in \[0, 1\]"),
    ],
)
def test_join_cluster_names_the_bad_argument(arguments, match):
    with pytest.raises(ValueError, match=match):
        keras_transformer.distribution.join_cluster(*arguments)


@JAX_SESSION
def test_process_0_refuses_a_port_another_program_listens_on():
    """Another cluster's coordinator there would take this cluster's processes for its own."""
    with socket.socket() as other:
        other.bind(("", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(ValueError, match=f"Port {port} of `coordinator_address` is in use"):
            keras_transformer.distribution.join_cluster(f"localhost:{port}", 2, np.int64(0))


@pytest.mark.skipif(keras.backend.backend() == "jax", reason="the other backends refuse")
def test_join_cluster_needs_jax():
    with pytest.raises(ValueError, match="`join_cluster` needs the JAX backend"):
        keras_transformer.distribution.join_cluster("[::1]:1234", 2, 1)


@pytest.mark.parametrize("name, value", [("timeout", 0), ("heartbeat_timeout", 1.5)])
@JAX_SESSION
def test_join_cluster_names_a_bad_timeout(name, value):
    with pytest.raises(ValueError, match=f"`{name}` must be an integer"):
        keras_transformer.distribution.join_cluster("localhost:1234", 2, 1, **{name: value})


def test_save_model_in_one_process_is_model_save(tmp_path):
    model = keras_transformer.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    model.compile(optimizer="sgd")
    ids = np.array([[5, 6, 7, 8]], dtype="int32")
    model.train_on_batch(ids, ids)
    keras_transformer.distribution.save_model(model, tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", safe_mode=True)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(ids)), keras.ops.convert_to_numpy(model(ids)), atol=1e-6
    )
    assert [w.shape for w in keras_transformer.distribution.gathered_weights(model)] == [
        tuple(w.shape) for w in model.weights
    ]
    assert keras_transformer.distribution.is_coordinator()


@pytest.mark.parametrize(
    "policy, optimizer",
    [
        ("float32", lambda: keras.optimizers.SGD(0.1, momentum=0.9)),
        ("mixed_float16", lambda: "adam"),  # a LossScaleOptimizer, built by compile
        ("float32", lambda: keras_transformer.training.gpt_optimizer(total_steps=10)),
    ],
)
def test_the_copy_save_model_writes_in_a_cluster_has_the_models_state(policy, optimizer):
    """What process 0 saves for a cluster: a copy rebuilt from config, given every value."""
    from keras_transformer.distribution import cluster

    keras.config.set_dtype_policy(policy)
    model = keras_transformer.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    model.compile(optimizer=optimizer())
    ids = np.array([[5, 6, 7, 8], [9, 10, 11, 0]], dtype="int32")
    model.train_on_batch(ids, ids)
    values = [keras.ops.convert_to_numpy(v) for v in model.variables]
    state = [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]
    copy = cluster._rebuilt(model, values, state)
    assert type(copy.optimizer) is type(model.optimizer)
    for got, want in zip(copy.optimizer.variables, state, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), want)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(copy(ids)), keras.ops.convert_to_numpy(model(ids))
    )


def test_the_copy_of_a_lora_model_or_an_unbuilt_optimizer_is_the_models():
    """Adapters are variables of their layers; a compiled model whose optimizer has not been
    built yet stays compiled."""
    from keras_transformer.distribution import cluster

    model = keras_transformer.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    model.enable_lora(2)
    ids = np.array([[5, 6, 7, 8]], dtype="int32")
    b = next(v for v in model.trainable_variables if v.path.endswith("lora_kernel_b"))
    b.assign(np.full(b.shape, 0.1, "float32"))  # adapters that change the output
    model.compile(optimizer="sgd")
    values = [keras.ops.convert_to_numpy(v) for v in model.variables]
    copy = cluster._rebuilt(model, values, None)
    assert copy.compiled
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(copy(ids)), keras.ops.convert_to_numpy(model(ids)), atol=1e-6
    )
