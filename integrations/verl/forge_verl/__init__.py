"""OpenForge ↔ veRL: an agent loop that hands veRL the trajectories recorded by the proxy."""

from ._verl import VERL_AVAILABLE, AgentLoopOutput
from .agent_loop import ForgeAgentLoop, sample_output
from .batch import Batch, read_rows
from .online import OnlineClient, OnlineError, final_sample

__all__ = [
    "VERL_AVAILABLE",
    "AgentLoopOutput",
    "ForgeAgentLoop",
    "sample_output",
    "Batch",
    "read_rows",
    "OnlineClient",
    "OnlineError",
    "final_sample",
]
