"""The node engine: Shoal's default engine on one machine (blocks, dependencies, fused kernels)."""

from shoal.engine.node.engine import BatchStats, NodeEngine
from shoal.engine.registry import register

register("node", NodeEngine)

__all__ = ["BatchStats", "NodeEngine"]
