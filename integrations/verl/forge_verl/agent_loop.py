"""``ForgeAgentLoop``: veRL trains on trajectories the real harnesses produced.

Registered as ``forge_agent`` (the ``agent_name`` column of a ``forge export --format verl``
batch). Configured through the agent-loop YAML (``agent_loop_config_path``; hydra passes the
extra keys to the constructor) or ``FORGE_*`` environment variables:

- ``mode: replay`` (default): return the recorded sample the dataset row points at
  (``extra_info.sample_id``, else ``index``) from ``batch_path`` — token for token as served.
- ``mode: online``: register a rollout with the proxy, have the orchestrator run it, wait for
  its result and return the assembled trajectory's final sample (see ``online.py``).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from ._verl import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
from .batch import Batch
from .online import OnlineClient, final_sample

_batches: dict[str, Batch] = {}


def _batch(path: str) -> Batch:
    # One copy per worker process, shared by every loop instance (veRL makes one per sample).
    if path not in _batches:
        _batches[path] = Batch.load(path)
    return _batches[path]


def _config_get(config: Any, dotted: str) -> Optional[Any]:
    node = config
    for part in dotted.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node


def sample_output(sample: dict, response_length: Optional[int] = None, prompt_length: Optional[int] = None) -> AgentLoopOutput:
    """An AgentLoopOutput from an exported row or a trajectory sample (same token fields).

    Responses longer than veRL's ``rollout.response_length`` are cut (mask and logprobs with
    them) and flagged in ``extra_fields``; a prompt longer than ``rollout.prompt_length`` is an
    error, since cutting it would train on a context the policy never saw.
    """
    prompt_ids = [int(t) for t in sample["prompt_ids"]]
    response_ids = [int(t) for t in sample["response_ids"]]
    response_mask = [int(m) for m in sample["response_mask"]]
    logprobs = [float(x) for x in sample["response_logprobs"]]
    sample_id = sample.get("sample_id") or (sample.get("extra_info") or {}).get("sample_id")
    if not (len(response_ids) == len(response_mask) == len(logprobs)):
        raise ValueError(f"sample {sample_id}: response_ids/response_mask/response_logprobs lengths differ")
    if prompt_length is not None and len(prompt_ids) > prompt_length:
        raise ValueError(
            f"sample {sample_id}: prompt has {len(prompt_ids)} tokens, more than "
            f"actor_rollout_ref.rollout.prompt_length={prompt_length}; raise it (and data.max_prompt_length)"
        )
    truncated = response_length is not None and len(response_ids) > response_length
    if truncated:
        response_ids, response_mask, logprobs = response_ids[:response_length], response_mask[:response_length], logprobs[:response_length]
    extra = sample.get("extra_info") or {}
    return AgentLoopOutput(
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        response_mask=response_mask,
        response_logprobs=logprobs,
        reward_score=float(sample["reward"]),
        num_turns=int(sample.get("num_turns", 0)),
        metrics=AgentLoopMetrics(),
        extra_fields={
            "forge_sample_id": sample_id,
            "forge_rollout_id": sample.get("rollout_id") or extra.get("rollout_id"),
            "forge_truncated": bool(truncated),
        },
    )


@register("forge_agent")
class ForgeAgentLoop(AgentLoopBase):
    """veRL agent loop backed by OpenForge recordings (replay) or live harness runs (online)."""

    def __init__(
        self,
        trainer_config: Any,
        server_manager: Any,
        tokenizer: Any,
        processor: Any,
        mode: Optional[str] = None,
        batch_path: Optional[str] = None,
        proxy_url: Optional[str] = None,
        admin_token_env: str = "FORGE_ADMIN_TOKEN",
        orchestrator_command: Optional[list] = None,
        orchestrator_url: Optional[str] = None,
        experiment: Optional[str] = None,
        poll_interval_s: float = 1.0,
        timeout_s: float = 3600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainer_config, server_manager, tokenizer, processor, **kwargs)
        self.mode = mode or os.environ.get("FORGE_MODE", "replay")
        if self.mode not in ("replay", "online"):
            raise ValueError(f"forge_agent: mode must be replay or online, got {self.mode!r}")
        self.batch_path = batch_path or os.environ.get("FORGE_BATCH")
        self.response_length = _config_get(self.config, "actor_rollout_ref.rollout.response_length")
        self.prompt_length = _config_get(self.config, "actor_rollout_ref.rollout.prompt_length")
        self.experiment = experiment or os.environ.get("FORGE_EXPERIMENT", "verl")
        if self.mode == "replay" and not self.batch_path:
            raise ValueError("forge_agent replay mode needs batch_path (agent loop YAML) or FORGE_BATCH: the `forge export --format verl` parquet")
        self.online: Optional[OnlineClient] = None
        if self.mode == "online":
            url = proxy_url or os.environ.get("FORGE_PROXY_URL")
            if not url:
                raise ValueError("forge_agent online mode needs proxy_url (agent loop YAML) or FORGE_PROXY_URL")
            command = orchestrator_command
            if command is None and os.environ.get("FORGE_ORCHESTRATOR_COMMAND"):
                command = os.environ["FORGE_ORCHESTRATOR_COMMAND"].split()
            self.online = OnlineClient(
                url,
                os.environ.get(admin_token_env),
                orchestrator_command=list(command) if command else None,
                orchestrator_url=orchestrator_url or os.environ.get("FORGE_ORCHESTRATOR_URL"),
                poll_interval_s=poll_interval_s,
                timeout_s=timeout_s,
            )

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        if self.mode == "replay":
            row = _batch(self.batch_path).lookup(kwargs)  # type: ignore[arg-type]
            return sample_output(row, self.response_length, self.prompt_length)
        extra = kwargs.get("extra_info") or {}
        spec = {
            "experiment": extra.get("experiment") or self.experiment,
            "task_id": extra.get("task_id") or kwargs.get("task_id") or str(kwargs.get("index", "")),
            "labels": {"source": "verl", "data_source": str(kwargs.get("data_source", ""))},
        }
        if extra.get("group"):
            spec["group"] = extra["group"]
        assert self.online is not None
        trajectory = await self.online.run_rollout(spec)
        return sample_output(final_sample(trajectory), self.response_length, self.prompt_length)
