"""``ForgeAgentLoop``: veRL 0.9.1 trains on trajectories the real harnesses produced.

Registered as ``forge_agent`` (the ``agent_name`` column of a ``forge export --format verl``
batch). veRL's agent-loop worker builds one instance per sample with ``hydra.utils.instantiate``
(``trainer_config``, ``server_manager``, ``tokenizer``, ``processor``, ``hf_model_type``,
``dataset_cls``, ``data_config``, ``tools``, plus the YAML entry's own keys, ``name`` included)
and awaits ``run(sampling_params, **row)``.

- ``mode: replay`` (default): the recorded samples the dataset row points at, token for token.
- ``mode: online``: a live harness run through the proxy, served by veRL's own servers.

Under the V1 trainer (veRL's default; its worker passes ``session_id``) ``run`` returns every
sample of the trajectory, the final one last; under the legacy trainer it returns the final
sample and counts the others as left out. A trajectory that is not the policy's doing (an
infrastructure error, an unfinished or cancelled rollout) returns ``[]``: V1 stores nothing for
that session and GRPO compares the group's other sessions; a group left with one session is
left out too (``drop_single_session_groups``). Overlong samples follow ``overlong``
(samples.py). Online, the version of the weights is read from veRL's servers and validation
passes are labelled (verl_state.py; docs/verl.md).
"""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any, Optional

from .batch import Batch
from .images import BlobDir, check_image_tokens, inline_images, vision_ids
from .online import OnlineClient, OnlineError, OnlineTimeout, sampling_of, selection_query, server_upstreams
from .verl_state import VALIDATION_LABEL, GroupSettle, config_get, read_server_version, refuse_async_trainer, validating, _balancer_handles
from .samples import Limits, route_selection, selected_outputs, trajectory_outputs
from .verl_api import AgentLoopBase, AgentLoopOutput, register

logger = logging.getLogger(__name__)

_batches: dict[str, Batch] = {}
_blob_dirs: dict[str, BlobDir] = {}

#: Process-wide counts of what the loop left out (one agent-loop worker process each).
COUNTERS: dict[str, int] = {}

#: Sessions of each veRL row (uid) in this worker, to leave out a group that falls to one.
_GROUPS = GroupSettle()

#: Rollout statuses whose trajectory is left out of the loss (not the policy's failure).
MASKED_STATUSES = frozenset({"infra_error", "unfinished"})


def _batch(path: str) -> Batch:
    # One copy per worker process, shared by every loop instance (veRL makes one per sample).
    if path not in _batches:
        _batches[path] = Batch.load(path)
    return _batches[path]


def _blob_dir(path: str) -> BlobDir:
    if path not in _blob_dirs:
        _blob_dirs[path] = BlobDir(path)
    return _blob_dirs[path]


def _count(key: str, n: int = 1) -> None:
    COUNTERS[key] = COUNTERS.get(key, 0) + n



@register("forge_agent")
class ForgeAgentLoop(AgentLoopBase):
    """veRL agent loop backed by OpenForge recordings (replay) or live harness runs (online)."""

    def __init__(
        self,
        trainer_config: Any,
        server_manager: Any,
        tokenizer: Any,
        processor: Any,
        dataset_cls: Any,
        data_config: Any,
        hf_model_type: Optional[str] = None,
        mode: Optional[str] = None,
        batch_path: Optional[str] = None,
        proxy_url: Optional[str] = None,
        admin_token_env: str = "FORGE_ADMIN_TOKEN",
        orchestrator_command: Optional[list] = None,
        orchestrator_url: Optional[str] = None,
        upstreams: Optional[list] = None,
        experiment: Optional[str] = None,
        poll_interval_s: float = 1.0,
        timeout_s: float = 3600.0,
        overlong: str = "truncate",
        overlong_reward: float = 0.0,
        drop_single_session_groups: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(trainer_config, server_manager, tokenizer, processor, dataset_cls, data_config, hf_model_type=hf_model_type, **kwargs)
        self.mode = mode or os.environ.get("FORGE_MODE", "replay")
        if self.mode not in ("replay", "online"):
            raise ValueError(f"forge_agent: mode must be replay or online, got {self.mode!r}")
        self.batch_path = batch_path or os.environ.get("FORGE_BATCH")
        self.limits = Limits(
            prompt_length=config_get(self.config, "actor_rollout_ref.rollout.prompt_length"),
            response_length=config_get(self.config, "actor_rollout_ref.rollout.response_length"),
            overlong=overlong,
            overlong_reward=float(overlong_reward),
            vision=vision_ids(processor),
        )
        self.drop_single_session_groups = bool(drop_single_session_groups)
        self.experiment = experiment or os.environ.get("FORGE_EXPERIMENT", "verl")
        # Fixed server URLs instead of veRL's own (a colocated vLLM outside veRL); default: ask veRL.
        self.upstreams = list(upstreams) if upstreams else None
        if self.mode == "replay" and not self.batch_path:
            raise ValueError("forge_agent replay mode needs batch_path (agent loop YAML) or FORGE_BATCH: the `forge export --format verl` parquet")
        self.online: Optional[OnlineClient] = None
        if self.mode == "online":
            refuse_async_trainer(self.config)
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

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput] | AgentLoopOutput:
        # Read before the first await: veRL's caller is still on the stack then.
        validate = validating()
        several = "session_id" in kwargs  # the V1 worker numbers the n runs of a row; v0 does not
        outputs: list[AgentLoopOutput] = []
        try:
            if self.mode == "replay":
                outputs = self._replay(kwargs, several)
            else:
                outputs = await self._online(sampling_params, kwargs, several, bool(validate))
        finally:
            if several and self.drop_single_session_groups and not validate:
                # Every session settles, also one that failed: its siblings must not wait for it.
                # Siblings run up to timeout_s each (replay: at once).
                wait_s = (self.online.timeout_s + 120.0) if self.online else 120.0
                alone = await _GROUPS.settle(str(kwargs.get("uid")), self._sessions(), bool(outputs), wait_s)
                if alone and outputs:
                    # GRPO would give a group of one its raw reward as advantage (score / (1 + eps)).
                    logger.warning("forge_agent: group %s has one session left: left out of the loss", kwargs.get("uid"))
                    _count("single_session_groups")
                    outputs = []
        if several:
            return outputs
        if not outputs:
            # The legacy trainer takes exactly one output per row and cannot drop one: a
            # left-out trajectory stops the step there (docs/verl.md, "Legacy trainer").
            raise RuntimeError("forge_agent: this trajectory is left out of the loss (see the log), which the legacy trainer (trainer.use_v1=False) cannot express; use veRL's default V1 trainer")
        return outputs[0]

    def _sessions(self) -> int:
        """Sessions per row: ``rollout.n`` (veRL's ``_run_prompt``; a row's ``__rollout_n__`` is
        not visible to the loop)."""
        n = config_get(self.config, "actor_rollout_ref.rollout.n")
        return int(n) if n else 1

    def _replay(self, kwargs: dict, several: bool) -> list[AgentLoopOutput]:
        batch = _batch(self.batch_path)  # type: ignore[arg-type]
        samples, _ = batch.lookup(kwargs)
        status = str(samples[-1].get("status") or "ok")
        if status in MASKED_STATUSES:
            logger.warning("forge_agent: rollout %s left out of the loss: status %s", samples[-1].get("rollout_id"), status)
            _count("masked_trajectories")
            return []
        reward = float(samples[-1]["reward"])
        blobs = _blob_dir(batch.blob_dir)
        return self._checked(trajectory_outputs(samples, reward=reward, limits=self.limits, several=several, images_of=lambda s: blobs.images(s.get("image_refs")), counters=COUNTERS))

    async def _servers(self) -> tuple[list[str], list[Any]]:
        """veRL's server addresses as OpenAI base URLs, and their Ray actor handles (None where
        the balancer holds none, or for fixed ``upstreams``)."""
        if self.upstreams:
            return server_upstreams(self.upstreams), [None] * len(self.upstreams)
        balancer = getattr(self.server_manager, "_load_balancer", None)
        if balancer is None:
            raise OnlineError("online mode: veRL's server manager has no load balancer to ask for its servers; set `upstreams` in the agent-loop YAML")
        # veRL 0.9.1: GlobalRequestLoadBalancer keyed by each replica's "ip:port" (router.py),
        # holding each replica's server actor (add_servers: server_id -> actor handle).
        addresses = await balancer.get_all_servers.remote()
        if not addresses:
            raise OnlineError("online mode: veRL reports no inference server")
        handles = await balancer.__ray_call__.remote(_balancer_handles)
        return server_upstreams(list(addresses)), [handles.get(a) for a in addresses]

    async def _online(self, sampling_params: dict, kwargs: dict, several: bool, validate: bool) -> list[AgentLoopOutput]:
        extra = kwargs.get("extra_info") or {}
        global_steps = kwargs.get("global_steps")
        upstreams, handles = await self._servers()
        # The version of the weights the servers hold, read from them (not from the step count).
        version, source = await read_server_version(upstreams, handles)
        labels = {"source": "verl", "data_source": str(kwargs.get("data_source", "")), "verl.version_source": source}
        if global_steps is not None:
            labels["verl.global_steps"] = str(int(global_steps))
        if validate:
            labels[VALIDATION_LABEL] = "true"
        spec: dict[str, Any] = {
            "experiment": extra.get("experiment") or self.experiment,
            "task_id": str(extra.get("task_id") or kwargs.get("task_id") or kwargs.get("index", "")),
            "group": str(kwargs.get("uid") or extra.get("group") or uuid.uuid4()),
            "labels": labels,
            "upstreams": upstreams,
            "policy_version": version,
            "sampling": sampling_of(sampling_params),
        }
        if "session_id" in kwargs:
            spec["labels"]["verl.session_id"] = str(kwargs["session_id"])
        assert self.online is not None
        try:
            # The proxy's trajectory route selects the samples (trajectories/select.ts), with
            # this loop's lengths, overlong policy and vision ids: one rule, the export's too.
            trajectory = await self.online.run_rollout(spec, selection_query(self.limits, several))
        except OnlineTimeout as error:
            # Cancelled at the proxy and its harness ended: masked, like an infrastructure error.
            logger.warning("forge_agent: %s", error)
            _count("cancelled_trajectories")
            return []
        status = str(trajectory.get("status") or "unfinished")
        selection = route_selection(trajectory, f"rollout {trajectory.get('rollout_id')}")
        if status in MASKED_STATUSES or not trajectory.get("valid", status == "ok") or not (trajectory.get("selection") or {}).get("of"):
            # Not the policy's doing (a lost sandbox, an unfinished run): masked, not scored.
            logger.warning("forge_agent: rollout %s left out of the loss: status %s (%s)", trajectory.get("rollout_id"), status, trajectory.get("excluded") or "no sample")
            _count("masked_trajectories")
            return []
        blobs = trajectory.get("blobs") or {}
        return self._checked(selected_outputs(selection, reward=float(trajectory.get("reward", 0.0)), images_of=lambda s: inline_images(s.get("image_refs"), blobs), counters=COUNTERS))

    def _checked(self, outputs: list[AgentLoopOutput]) -> list[AgentLoopOutput]:
        """The outputs, each one's images checked against its image-pad runs as veRL's vision
        path will pair them (images.check_image_tokens; a text model's loop has no processor)."""
        for out in outputs:
            images = (out.multi_modal_data or {}).get("images")
            check_image_tokens(str(out.extra_fields.get("forge_sample_id")), [*out.prompt_ids, *out.response_ids], images, self.processor)
        return outputs
        return outputs
