import keras
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_and_policy():
    """Every test starts from the same seed and the float32 policy."""
    keras.utils.set_random_seed(1234)
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def attention_kernel_calls(monkeypatch):
    """Records `(mask is None, is_causal)` for each `keras.ops.dot_product_attention` call."""
    from keras import ops

    calls = []
    kernel = ops.dot_product_attention

    def recording(q, k, v, mask=None, is_causal=False, **kwargs):
        calls.append((mask is None, is_causal))
        return kernel(q, k, v, mask=mask, is_causal=is_causal, **kwargs)

    monkeypatch.setattr(ops, "dot_product_attention", recording)
    return calls


# Lines a test records with `record_property("summary", line)`: printed at the end of the run
# (also from xdist workers), for figures a user reads, such as the catalog round trip's counts.
_SUMMARIES = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        _SUMMARIES.extend(value for name, value in report.user_properties if name == "summary")


def pytest_terminal_summary(terminalreporter):
    for line in _SUMMARIES:
        terminalreporter.write_line(line)


# The longest tests (seconds on a loaded 2-core machine, by node id prefix), started first.
# `make test` spreads a run over two pytest-xdist workers with work stealing: the first half
# of the collection goes to one worker, the second half to the other, and a worker that runs
# out takes tests from the end of the other's queue. A long test that comes late in either
# half keeps its worker busy while the other has nothing left to take. So each half starts
# with every second file of this list, longest first (longest-processing-time-first
# scheduling; a file's tests stay together); the tests themselves and what they check are
# unchanged. Unlisted tests keep pytest's order.
LONG_TESTS = {
    "tests/distribution/test_cluster.py": 200,
    "tests/reliability/test_cross_backend.py": 170,
    "tests/examples/": 150,
    "tests/messages/test_system_catalogs.py": 120,
    "tests/benchmarks/": 100,
    "tests/reliability/test_interruption.py::test_sigkill": 65,
    "tests/training/test_convergence.py": 50,
    "tests/reliability/test_properties.py::test_random_configuration": 45,
    "tests/generation/test_decoding.py::test_a_model_quantized_after_decoding": 40,
    "tests/test_install.py": 40,
    "tests/test_docs.py": 35,
    "tests/reliability/test_mixed_precision.py": 30,
    "tests/generation/test_samplers.py::test_seeded_generate_is_pinned": 28,
    "tests/test_cli.py::test_error_is_one_line": 25,
    "tests/models/test_saved_files.py": 20,
    "tests/test_cli.py::test_sigterm": 16,
    "tests/test_cli.py::test_python_m_help": 14,
    "keras_transformer/tasks/": 14,
    "tests/tasks/test_adaptation.py": 14,
    "tests/models/test_quantization.py::test_a_quantized_model_saves": 12,
    "tests/generation/test_beam_search.py::test_alpha_changes": 12,
    "tests/generation/test_beam_search.py::test_coverage_penalty": 11,
    "tests/training/test_gpt_recipe.py": 10,
    "tests/generation/test_decoding.py::test_encoder_decoder_cached": 10,
}


# The .po reader, the format-string checks and the catalog logic (`keras_transformer.messages`,
# and its tests with fake translators) never reach Keras: the same Python under every backend
# (tests/messages/test_no_backend.py keeps it so). Marked `backend_independent`: `make test`
# runs them in one backend's pass (`make test-all` in every pass).
BACKEND_INDEPENDENT = ("tests/messages/", "keras_transformer/messages/")


def pytest_itemcollected(item):  # before `-m` selects
    if item.nodeid.startswith(BACKEND_INDEPENDENT):
        item.add_marker(pytest.mark.backend_independent)


def _expected_seconds(item):
    return max((seconds for prefix, seconds in LONG_TESTS.items()
                if item.nodeid.startswith(prefix)), default=0)


@pytest.hookimpl(trylast=True)  # after `-m` has deselected: the halves of what runs
def pytest_collection_modifyitems(config, items):
    files = {}  # the long tests by file, in pytest's order: a file's tests stay together,
    for item in items:  # so that a module-scoped fixture is made on one worker only
        if _expected_seconds(item):
            files.setdefault(item.nodeid.split("::")[0], []).append(item)
    if not files:
        return
    ranked = sorted(files.values(), key=lambda group: -max(map(_expected_seconds, group)))
    first = [item for group in ranked[0::2] for item in group]
    second = [item for group in ranked[1::2] for item in group]
    short = [item for item in items if not _expected_seconds(item)]
    cut = max(0, len(items) // 2 - len(first))  # where the second worker's half begins
    items[:] = first + short[:cut] + second + short[cut:]
