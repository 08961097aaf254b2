"""Components that run Shoal bytecode: the reference engine and the node engine."""

from shoal.engine.component import Component, Config, EngineError
from shoal.engine.reference import ReferenceEngine
from shoal.engine.registry import create, names, register

__all__ = ["Component", "Config", "EngineError", "ReferenceEngine", "create", "names", "register"]
