"""Shared settings of the reliability suite.

`KT_HYPOTHESIS_EXAMPLES` sets how many configurations each property test draws:
3 by default (keeps `make test` fast under JAX), 50 in `make test-all`. Draws are derandomized
so that CI sees the same configurations on every run.
"""

import os

from hypothesis import HealthCheck
from hypothesis import settings

EXAMPLES = int(os.environ.get("KT_HYPOTHESIS_EXAMPLES", "3"))

settings.register_profile(
    "kt-reliability",
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
RELIABILITY = settings.get_profile("kt-reliability")
