"""The block layer shared by the node engine and the cluster manager."""
