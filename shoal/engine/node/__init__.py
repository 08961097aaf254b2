"""The node engine: Shoal's default engine on one machine (blocks, dependencies, fused kernels)."""

from shoal.engine.node.config import NodeConfig
from shoal.engine.node.engine import BatchStats, NodeEngine

__all__ = ["BatchStats", "NodeConfig", "NodeEngine"]
