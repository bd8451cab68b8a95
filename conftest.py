"""Root pytest configuration (applies to tests/ and to the doctests in ranking/)."""

from __future__ import annotations

from threadpoolctl import threadpool_limits

# One BLAS thread: on a 2-core machine, multi-threaded OpenBLAS spin-waits while
# pytest-xdist workers or other processes hold the cores, and small linear
# algebra gets 10-80x slower. Results do not depend on the thread count.
threadpool_limits(limits=1, user_api="blas")
