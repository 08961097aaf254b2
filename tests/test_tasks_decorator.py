"""Decoration-time checks and the versioned task graph (no worker processes)."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.tasks import IN, INOUT, OUT, task
from shoal.tasks.directions import Direction, ParameterSpec
from shoal.tasks.errors import TaskDependencyError
from shoal.tasks.graph import Binding, Graph, TaskState


def plain(a, b, c):
    return a


def test_unmarked_parameters_default_to_in():
    wrapped = task(c=INOUT)(plain)
    assert wrapped.specs["a"].direction is IN
    assert wrapped.specs["c"].direction is INOUT
    assert not wrapped.specs["a"].recurrent_read_only


@pytest.mark.parametrize("key", ["rro", "recurrent_read_only"])
def test_rro_option_both_spellings(key):
    wrapped = task(a={"direction": IN, key: True})(plain)
    assert wrapped.specs["a"].recurrent_read_only


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"c": "inout"}, "must be IN, OUT or INOUT"),
        ({"d": IN}, "'d' is not a parameter"),
        ({"a": {"direction": IN, "shared": True}}, "unknown option 'shared'"),
        ({"a": {"rro": "yes"}}, "must be True or False"),
        ({"returns": -1}, "returns must be a non-negative integer"),
        ({"returns": 1.5}, "returns must be a non-negative integer"),
    ],
)
def test_bad_options_fail_at_decoration(options, message):
    with pytest.raises(TypeError, match=message):
        task(**options)(plain)


@pytest.mark.parametrize("direction", [OUT, INOUT])
def test_rro_on_written_parameter_fails(direction):
    with pytest.raises(ValueError, match="must be IN, not"):
        task(a={"direction": direction, "rro": True})(plain)


def test_nested_function_is_rejected():
    def inner(x):
        return x

    with pytest.raises(TypeError, match="defined at module level"):
        task(inner)


def test_bare_decorator_and_metadata():
    wrapped = task(plain)
    assert wrapped.returns == 1
    assert wrapped.__name__ == "plain"
    assert wrapped.__shoal_task_function__ is plain


def _bind(graph, node, datum, direction):
    binding = Binding(0, ParameterSpec("x", direction))
    if direction is not Direction.OUT:
        graph.bind_read(node, binding, datum)
    if direction.writes:
        graph.bind_write(node, binding, datum)
    node.bindings.append(binding)
    return binding


def test_graph_inout_chain_and_readers_of_old_versions():
    """c += a*b three times, with a reader of each version in between:

    w1 -> w2 -> w3   (each INOUT reads the version the previous one wrote)
     \\     \\
      r1     r2      (readers of v1 and v2 wait only for their producer; w2 and w3 never
                      wait for them, because the write makes a new version)
    """
    graph = Graph()
    c = np.zeros(3)
    datum = graph.new_datum(c)
    w1 = graph.new_task("m", "w", 0)
    _bind(graph, w1, datum, INOUT)
    r1 = graph.new_task("m", "r", 1)
    read1 = _bind(graph, r1, datum, IN)
    w2 = graph.new_task("m", "w", 0)
    _bind(graph, w2, datum, INOUT)
    r2 = graph.new_task("m", "r", 1)
    read2 = _bind(graph, r2, datum, IN)
    w3 = graph.new_task("m", "w", 0)
    _bind(graph, w3, datum, INOUT)

    assert [w1.waiting_on, r1.waiting_on, w2.waiting_on, r2.waiting_on, w3.waiting_on] == [0, 1, 1, 1, 1]
    assert (read1.reads.number, read2.reads.number, datum.current) == (1, 2, 3)
    assert w1.dependents == [r1, w2]
    ready = graph.complete(w1, [np.ones(3)], worker=0)
    assert ready == [r1, w2]
    assert all(n.state is TaskState.READY for n in ready)
    ready = graph.complete(w2, [np.ones(3)], worker=0)
    assert ready == [r2, w3]  # r1 has not run, and w3 does not wait for it


def test_graph_out_does_not_wait_for_previous_writer():
    graph = Graph()
    datum = graph.new_datum([1, 2])
    first = graph.new_task("m", "w", 0)
    _bind(graph, first, datum, INOUT)
    second = graph.new_task("m", "o", 0)
    _bind(graph, second, datum, OUT)
    assert second.waiting_on == 0
    assert datum.current == 2


def test_graph_failure_propagates_to_dependents():
    graph = Graph()
    datum = graph.new_datum([0])
    writer = graph.new_task("m", "w", 0)
    _bind(graph, writer, datum, INOUT)
    reader = graph.new_task("m", "r", 1)
    _bind(graph, reader, datum, IN)
    result = graph.add_return(reader)
    failed = graph.fail(writer, ValueError("boom"))
    assert failed == [writer, reader]
    error = datum.versions[1].error
    assert isinstance(error, ValueError)
    assert isinstance(result.latest.error, TaskDependencyError)
    assert result.latest.error.__cause__ is error
