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
