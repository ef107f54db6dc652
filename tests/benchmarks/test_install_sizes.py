"""benchmarks/install_sizes.py: the environment its installs (and tests/test_install.py's) run in."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import install_sizes  # noqa: E402


def test_pip_does_not_retry_an_index_whose_host_does_not_resolve():
    # `.invalid` never resolves (RFC 6761); the final dot keeps a resolver's search domains off
    line = ["pip", "install", ".[torch]", "--extra-index-url", "https://no-such-host.invalid./whl"]
    assert install_sizes.pip_environment(line, {"A": "1"}) == {"A": "1", "PIP_RETRIES": "0"}
    for forms in (["-i", "https://x.invalid./"], ["-ihttps://x.invalid./"],
                  ["--index-url=https://x.invalid./"], ["--extra-index-url=https://x.invalid./"]):
        assert install_sizes.pip_environment(["pip", "install", *forms, "."],
                                             {})["PIP_RETRIES"] == "0", forms
    # retries the user set are theirs
    assert install_sizes.pip_environment(line, {"PIP_RETRIES": "3"}) == {"PIP_RETRIES": "3"}


def test_pip_keeps_its_retries_for_indexes_that_resolve_and_lines_without_one():
    reachable = ["pip", "install", ".[torch]", "--extra-index-url", "http://localhost:1/simple"]
    assert install_sizes.pip_environment(reachable, {"A": "1"}) == {"A": "1"}
    assert install_sizes.pip_environment(["pip", "install", ".[jax]"], {}) == {}


def test_the_readme_lines_parse_with_their_labels():
    lines = dict(install_sizes.install_lines())
    assert {"CPU, JAX", "CPU, PyTorch", "CPU, TensorFlow"} <= set(lines)
    assert install_sizes.backend_of(lines["CPU, PyTorch"]) == "torch"
