"""Programs through a live proxy server give NumPy's results; errors come back with their traceback."""

from __future__ import annotations

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY
from program_fuzzer import program_inputs, program_size, write_program
from program_runs import assert_same_run, run_on_shoal, run_program
from proxy_harness import TOKEN, client_for, engine, live_server

import shoal.proxy
from shoal import runtime
from shoal.engine.passthrough import PassConfig, PassThrough
from shoal.proxy.client import RemoteEngineError

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")


@pytest.mark.parametrize("engine_name", ["node", "reference"])
def test_generated_programs_through_the_proxy_match_numpy(engine_name):
    with live_server(engine(engine_name)) as server:
        for seed in range(12):
            source = write_program(seed)
            inputs = program_inputs(seed, program_size(source))
            expected = run_program(source, np, inputs)
            got = run_on_shoal(source, inputs, client_for(server), flush_threshold=(1, 7, 64)[seed % 3])
            assert_same_run(got, expected, f"program {seed} through the proxy")


def test_batches_stream_and_each_read_is_one_round_trip():
    import shoal.numpy as snp

    with live_server() as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0):
            grid = snp.zeros((64, 64))
            grid[0, :] = 1.0
            for _ in range(20):
                grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
            before = client.round_trips
            total = float(grid.sum())
            assert client.round_trips == before + 1
            first = float(grid[1, 1])
            assert client.round_trips == before + 2
        expected = np.zeros((64, 64))
        expected[0, :] = 1.0
        for _ in range(20):
            expected[1:-1, 1:-1] = 0.25 * (expected[:-2, 1:-1] + expected[2:, 1:-1] + expected[1:-1, :-2] + expected[1:-1, 2:])
        assert total == pytest.approx(expected.sum(), rel=1e-12) and first == expected[1, 1]


def test_large_compressible_arrays_come_back_exact():
    import shoal.numpy as snp

    with live_server() as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        plate = snp.zeros((700, 700))
        plate[:3, :] = 40.0
        noise = snp.asarray(np.random.default_rng(1).random((300, 300)))
        np.testing.assert_array_equal(np.asarray(plate), np.pad(np.full((3, 700), 40.0), ((0, 697), (0, 0))))
        np.testing.assert_array_equal(np.asarray(noise), np.random.default_rng(1).random((300, 300)))


class FailingEngine(PassThrough):
    """The reference engine, except that every batch with a multiply fails, as a broken engine would."""

    def __init__(self) -> None:
        super().__init__(PassConfig(asynchronous=False), engine("reference")())

    def execute(self, batch) -> None:
        if any(instruction.op == "multiply" for instruction in batch.instructions):
            raise ValueError("the engine broke on a multiply")
        super().execute(batch)


def test_an_error_in_a_remote_batch_is_raised_at_the_next_read_with_the_remote_traceback():
    import shoal.numpy as snp

    with live_server(FailingEngine) as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0):
            a = snp.ones(1000)
            b = a * 2.0
            runtime.current().flush()  # the batch is sent, not waited for: nothing is raised yet
            with pytest.raises(RemoteEngineError) as raised:
                float(b.sum())
            message = str(raised.value)
            assert "ValueError: the engine broke on a multiply" in message
            assert "Remote traceback" in message and "test_proxy.py" in message and "in execute" in message
            assert float((snp.ones(1000) + 1.0).sum()) == 2000.0  # the session goes on


def test_two_clients_are_isolated():
    with live_server() as server:
        import shoal.numpy as snp

        first, second = client_for(server), client_for(server)
        with runtime.configure(engine=first, eager_threshold=0):
            mine = snp.arange(10.0)
            runtime.current().flush()  # sent, not waited for
            view = mine._view
            with pytest.raises(RemoteEngineError, match=f"base {view.base} is not live"):
                second.fetch(view)
            assert float(mine.sum()) == 45.0
        second.shutdown()


def test_a_client_past_its_memory_limit_is_refused_and_others_go_on():
    import shoal.numpy as snp

    with live_server(memory_limit=1 << 20) as server:
        with runtime.configure(engine=client_for(server), eager_threshold=0):
            big = snp.ones(1 << 18)  # 2 MiB
            with pytest.raises(MemoryError, match="limit of 1048576 bytes") as raised:
                float(big.sum())
            assert isinstance(raised.value, RemoteEngineError)  # a MemoryError, as NumPy's allocation raises
        with runtime.configure(engine=client_for(server), eager_threshold=0):
            assert float(snp.ones(1000).sum()) == 1000.0


def test_failed_allocations_and_memory_limits_reach_the_client_as_memory_errors():
    from shoal.bytecode import BytecodeError
    from shoal.proxy.protocol import ErrorKind
    from shoal.proxy.session import LimitExceeded, MemoryLimitExceeded, error_kind

    assert error_kind(MemoryError("engine allocation")) is ErrorKind.MEMORY
    assert error_kind(MemoryLimitExceeded("past the limit")) is ErrorKind.MEMORY
    assert error_kind(LimitExceeded("base 3 is not live")) is ErrorKind.REJECTED
    assert error_kind(BytecodeError("bad")) is ErrorKind.REJECTED
    assert error_kind(ZeroDivisionError()) is ErrorKind.ENGINE


@pytest.mark.parametrize("reduce", ["mean", "stride", "max"])
def test_preview_is_computed_where_the_array_lives(reduce):
    import shoal.numpy as snp

    values = np.random.default_rng(3).random((3, 1000, 900))
    local = shoal.proxy.preview(values, (128, 100), reduce)
    assert local.shape[0] == 3 and local.shape[1] <= 128 and local.shape[2] <= 100
    with live_server() as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0):
            remote = shoal.proxy.preview(snp.asarray(values), (128, 100), reduce)
    np.testing.assert_allclose(remote, local, rtol=1e-12)
    if reduce == "stride":
        np.testing.assert_array_equal(remote, values[:, ::8, ::9])
    if reduce == "max":
        np.testing.assert_array_equal(remote, values[:, :1000, :900].reshape(3, 125, 8, 100, 9).max(axis=(2, 4)))


def test_preview_rejects_bad_arguments():
    with pytest.raises(ValueError, match="reduce must be"):
        shoal.proxy.preview(np.zeros((4, 4)), (2, 2), "median")
    with pytest.raises(ValueError, match="two positive sizes"):
        shoal.proxy.preview(np.zeros((4, 4)), (0, 2))


def test_memory_is_counted_in_program_order_not_per_declaration():
    """Twenty 512 KiB temporaries made and dropped one after another fit in a 2 MiB limit."""
    import shoal.numpy as snp

    with live_server(memory_limit=2 << 20) as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        total = snp.zeros(1 << 16)
        for step in range(20):
            total += snp.full(1 << 16, float(step)) * 2.0
        assert float(total[0]) == 380.0


def test_connect_sends_the_interpreters_later_work_to_the_server():
    import shoal
    import shoal.numpy as snp

    with live_server() as server:
        host, port = server.address
        previous = runtime.current()
        try:
            client = shoal.connect(f"{host}:{port}", token=TOKEN)
            assert runtime.current().engine is client
            assert float(snp.arange(1 << 20, dtype=snp.float64).sum()) == float(np.arange(1 << 20, dtype=np.float64).sum())
            assert client.round_trips >= 1
        finally:
            runtime.install(previous)


def test_an_unchanged_array_read_twice_crosses_the_network_once():
    import shoal.numpy as snp

    with live_server() as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0):
            a = snp.arange(1000.0)
            first = np.asarray(a)
            trips = client.round_trips
            again = np.asarray(a)
            assert client.round_trips == trips
            np.testing.assert_array_equal(again, first)
            again[0] = -1.0  # a copy: the cache is not changed through it
            a[1] = 7.0
            assert np.asarray(a)[0] == 0.0 and np.asarray(a)[1] == 7.0
            assert client.round_trips == trips + 1


def test_scalar_results_come_back_as_numpys_scalars():
    """A 0-d result crossed the wire as a 1-element array (``ascontiguousarray`` makes 0-d 1-d):
    ``np.asarray(x.sum())`` had shape (1,), and a list of row sums stacked to (rows, 1)."""
    import shoal.numpy as snp

    values = np.arange(12.0).reshape(3, 4)
    with live_server() as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        lazy = snp.arange(12.0).reshape(3, 4) * 1.0  # computed on the server: no local copy to read
        total, largest, item = lazy.sum(), lazy.max(axis=None), lazy[1, 2]
        for got, expected in ((total, values.sum()), (largest, values.max()), (item, values[1, 2])):
            assert np.asarray(got).shape == () and repr(got) == repr(expected)
        sums = np.array([lazy[i].sum() for i in range(3)])
        assert sums.shape == (3,) and sums.tolist() == values.sum(axis=1).tolist()
