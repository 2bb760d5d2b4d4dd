"""Recorded samples → veRL 0.9.1 ``AgentLoopOutput``s, with the rules veRL's trainers need.

- Every output carries ``extra_fields["min_global_steps"]`` / ``["max_global_steps"]``: the
  policy versions of the calls it was sampled from. V1 turns them into tags and builds
  ``np.array(..., dtype=int)`` from them (``trainer_base.py``), so ``None`` would crash the step
  after its update; veRL's own loops get them from ``LLMServerClient.generate``.
- The reward sits on the final output only; it carries ``extra_fields["reward_extra_info"] = {}``
  because V1's post-processing copies that key to the earlier outputs of a trajectory.
- ``num_turns``, ``response_logprobs`` and ``reward_score`` are always passed: ``as_dict`` dumps
  only fields that were set, and every sample of a batch must have the same fields.
- Overlong samples (``rollout.prompt_length`` / ``rollout.response_length``) are left out, not
  cut: cutting a prompt trains on a context the policy never saw, and cutting a response would
  move the reward onto a token the policy did not end on. A trajectory whose final sample is
  overlong is left out whole. Both are counted. A sample with an empty response (an aborted
  call) is left out the same way: veRL puts a reward on every output's last response token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .verl_api import AgentLoopMetrics, AgentLoopOutput

logger = logging.getLogger(__name__)


@dataclass
class Limits:
    """veRL's ``actor_rollout_ref.rollout.prompt_length`` / ``response_length`` (None: no limit)."""

    prompt_length: Optional[int] = None
    response_length: Optional[int] = None

    def problem(self, sample: dict) -> Optional[str]:
        """Why a sample does not fit, or None. An empty response does not either: veRL puts
        the reward on the last response token (``rm_scores[-1]``) of every output."""
        p, r = len(sample["prompt_ids"]), len(sample["response_ids"])
        if r == 0:
            return "the response is empty"
        if self.prompt_length is not None and p > self.prompt_length:
            return f"prompt has {p} tokens > rollout.prompt_length={self.prompt_length}"
        if self.response_length is not None and r > self.response_length:
            return f"response has {r} tokens > rollout.response_length={self.response_length}"
        return None


@dataclass
class Selection:
    """What a trajectory yields for veRL, and what was left out of it and why."""

    samples: list[dict] = field(default_factory=list)
    overlong: int = 0
    left_out: int = 0
    auxiliary: int = 0
    dropped: Optional[str] = None


def select_samples(samples: list[dict], limits: Limits, several: bool) -> Selection:
    """The samples of one trajectory (the final one last) that veRL gets.

    ``several``: the trainer takes several outputs per loop (V1); otherwise only the final
    sample (the main chain, which holds the reward) and the others are counted as left out.

    Auxiliary samples (a harness's title, compaction or summary calls, labelled by the
    trajectory assembly: docs/trajectories.md) are never trained on: they are left out and
    counted, so the online mode trains what the export's default (``--auxiliary drop``) trains.

    Example::

        select_samples(rollout_samples, Limits(8192, 16384), several=True).samples
    """
    agent = [s for s in samples if not _auxiliary(s)]
    auxiliary = len(samples) - len(agent)
    selection = _select_agent(agent, limits, several)
    selection.auxiliary = auxiliary
    return selection


def _auxiliary(sample: dict) -> bool:
    """The trajectory route says ``auxiliary``; an exported row keeps it in ``extra_info``."""
    return bool(sample.get("auxiliary") or (sample.get("extra_info") or {}).get("auxiliary"))


def _select_agent(samples: list[dict], limits: Limits, several: bool) -> Selection:
    if not samples:
        return Selection(dropped="the trajectory has no agent sample")
    final = samples[-1]
    problem = limits.problem(final)
    if problem is not None:
        return Selection(overlong=len(samples) if several else 1, left_out=0 if several else len(samples) - 1, dropped=f"final sample {_sid(final)}: {problem}")
    if not several:
        return Selection(samples=[final], left_out=len(samples) - 1)
    kept = [s for s in samples[:-1] if limits.problem(s) is None]
    return Selection(samples=kept + [final], overlong=len(samples) - 1 - len(kept))


def _sid(sample: dict) -> Any:
    return sample.get("sample_id") or (sample.get("extra_info") or {}).get("sample_id")


def _versions(sample: dict) -> list[int]:
    extra = sample.get("extra_info") or {}
    versions = sample.get("policy_versions") or extra.get("policy_versions") or []
    if len(versions) == 0:
        version = sample.get("policy_version", extra.get("policy_version", 0))
        versions = [0 if version is None else version]
    return [int(v) for v in versions]


def sample_output(
    sample: dict,
    *,
    final: bool,
    reward: float,
    images: Optional[list] = None,
    counts: Optional[dict] = None,
) -> AgentLoopOutput:
    """One ``AgentLoopOutput`` from an exported row or a trajectory sample (same token fields).

    Example::

        out = sample_output(row, final=True, reward=row["reward"])
        out.extra_fields["min_global_steps"]  # the policy version it was sampled with
    """
    prompt_ids = [int(t) for t in sample["prompt_ids"]]
    response_ids = [int(t) for t in sample["response_ids"]]
    response_mask = [int(m) for m in sample["response_mask"]]
    logprobs = [float(x) for x in sample["response_logprobs"]]
    sample_id = _sid(sample)
    if not (len(response_ids) == len(response_mask) == len(logprobs)):
        raise ValueError(f"sample {sample_id}: response_ids/response_mask/response_logprobs lengths differ")
    if final and not response_ids:
        # veRL puts the reward on the last response token (rm_scores[-1]).
        raise ValueError(f"sample {sample_id}: the final sample has no response token to put the reward on")
    versions = _versions(sample)
    extra: dict[str, Any] = {
        "min_global_steps": min(versions),
        "max_global_steps": max(versions),
        "forge_sample_id": str(sample_id),
        "forge_rollout_id": str(sample.get("rollout_id") or (sample.get("extra_info") or {}).get("rollout_id")),
    }
    if counts:
        extra.update({f"forge_{k}": int(v) for k, v in counts.items()})
    if final:
        extra["reward_extra_info"] = {}
    return AgentLoopOutput(
        prompt_ids=prompt_ids,
        response_ids=response_ids,
        response_mask=response_mask,
        response_logprobs=logprobs,
        reward_score=float(reward) if final else 0.0,
        num_turns=int(sample.get("num_turns", 0)),
        multi_modal_data={"images": images} if images else None,
        metrics=AgentLoopMetrics(),
        extra_fields=extra,
    )


def trajectory_outputs(
    samples: list[dict],
    *,
    reward: float,
    limits: Limits,
    several: bool,
    images_of: Callable[[dict], Optional[list]],
    counters: Optional[dict] = None,
) -> list[AgentLoopOutput]:
    """The outputs of one trajectory (``[]`` when it is left out), counting what was left out
    in ``counters`` (process-wide: ``overlong_samples``, ``overlong_trajectories``,
    ``samples_left_out``, ``auxiliary_samples``) and on each output's ``extra_fields``
    (``forge_overlong``, ``forge_left_out``, ``forge_auxiliary``)."""
    selection = select_samples(samples, limits, several)
    if counters is not None:
        counters["overlong_samples"] = counters.get("overlong_samples", 0) + selection.overlong
        counters["samples_left_out"] = counters.get("samples_left_out", 0) + selection.left_out
        counters["auxiliary_samples"] = counters.get("auxiliary_samples", 0) + selection.auxiliary
        if selection.dropped is not None and selection.overlong:
            counters["overlong_trajectories"] = counters.get("overlong_trajectories", 0) + 1
    if selection.dropped is not None:
        logger.warning("forge_agent: trajectory left out of the loss: %s", selection.dropped)
        return []
    counts = {"overlong": selection.overlong, "left_out": selection.left_out, "auxiliary": selection.auxiliary}
    last = len(selection.samples) - 1
    return [
        sample_output(s, final=i == last, reward=reward, images=images_of(s), counts=counts)
        for i, s in enumerate(selection.samples)
    ]
