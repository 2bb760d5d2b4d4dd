"""OpenForge ↔ veRL 0.9.1: an agent loop that hands veRL the trajectories recorded by the proxy."""

from .agent_loop import COUNTERS, MASKED_STATUSES, ForgeAgentLoop
from .batch import Batch, blob_dir_of, read_rows
from .online import OnlineClient, OnlineError, sampling_of, selection_query, server_upstreams
from .samples import Limits, route_selection, sample_output, select_samples, selected_outputs, trajectory_outputs
from .verl_api import VERL_VERSION

__all__ = [
    "COUNTERS",
    "MASKED_STATUSES",
    "VERL_VERSION",
    "Batch",
    "ForgeAgentLoop",
    "Limits",
    "OnlineClient",
    "OnlineError",
    "blob_dir_of",
    "read_rows",
    "sample_output",
    "sampling_of",
    "route_selection",
    "select_samples",
    "selected_outputs",
    "selection_query",
    "server_upstreams",
    "trajectory_outputs",
]
