"""Memory tools in gnumpy's spirit: memory_in_use, max_memory_usage, memory_report listing
live allocations by the Python file:line that made them and by tensor name, the cap, and
free_cached; lazy expressions release what they hold once evaluated."""
import gc
import inspect
import os

import kiln as kn
from conftest import DEVICE


def test_in_use_and_peak():
    with kn.use(device=DEVICE):
        assert kn.memory_in_use() == 0
        a = kn.zeros(1000, dtype=kn.float32)
        assert kn.memory_in_use() == 4000
        b = kn.ones(250, dtype=kn.float64)
        assert kn.memory_in_use() == 6000
        del a
        gc.collect()
        assert kn.memory_in_use() == 2000
        assert kn.max_memory_usage() >= 6000
        st = kn.memory_stats()
        assert st["live_blocks"] == 1 and st["in_use"] == 2000
        del b
        assert kn.memory_in_use() == 0
        kn.free_cached()
        assert kn.memory_stats()["cached"] == 0


def test_report_names_python_lines():
    with kn.use(device=DEVICE):
        here = os.path.basename(__file__)
        w = kn.zeros(123, 7); line = inspect.currentframe().f_lineno  # noqa: E702
        w.name = "w_vh"
        r = kn.memory_report()
        assert f"{here}:{line}" in r, r
        assert "w_vh" in r
        t = w + 1
        v = t.evaluate(); vline = inspect.currentframe().f_lineno  # noqa: E702
        assert f"{here}:{vline}" in kn.memory_report()    # the line that needed the value
        del v, t, w


def test_report_inside_helpers():
    def helper():
        return kn.ones(77)
    with kn.use(device=DEVICE):
        x = helper()
        assert f"{os.path.basename(__file__)}:{helper.__code__.co_firstlineno + 1}" in kn.memory_report()
        del x


def test_limit_and_release():
    with kn.use(device=DEVICE):
        kn.set_memory_limit(1_000_000)
        assert kn.memory_stats()["limit"] == 1_000_000
        a = kn.zeros(100_000, dtype=kn.float32)
        try:
            kn.zeros(200_000, dtype=kn.float32)   # 400 kB + 800 kB > 1 MB on every backend
        except MemoryError as e:
            assert "limit" in str(e) or "memory" in str(e)
        else:
            raise AssertionError("no MemoryError past the cap")
        kn.set_memory_limit(None)
        b = kn.zeros(150_000, dtype=kn.float32)
        del a, b


def test_expression_releases_leaves():
    with kn.use(device=DEVICE):
        a = kn.ones(1000)
        e = a * 2 + 1
        del a
        assert kn.memory_in_use() == 4000          # the expression keeps its leaf alive
        v = e.evaluate()
        assert kn.memory_in_use() == 4000          # the value; the leaf went with the node
        del v
        assert kn.memory_in_use() == 4000          # cached in e
        del e
        assert kn.memory_in_use() == 0
