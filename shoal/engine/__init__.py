"""Components that run Shoal bytecode: the reference engine, the node engine, and stacks of them."""

from shoal.engine.component import Component, EngineError
from shoal.engine.reference import ReferenceConfig, ReferenceEngine
from shoal.engine.registry import create, names, register, stack_names

__all__ = [
    "Component",
    "EngineError",
    "ReferenceConfig",
    "ReferenceEngine",
    "create",
    "names",
    "register",
    "stack_names",
]
