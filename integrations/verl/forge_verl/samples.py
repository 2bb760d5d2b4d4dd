"""Recorded samples → veRL 0.9.1 ``AgentLoopOutput``s, with the rules veRL's trainers need.

- Every output carries ``extra_fields["min_global_steps"]`` / ``["max_global_steps"]``: the
  policy versions of the calls it was sampled from. V1 turns them into tags and builds
  ``np.array(..., dtype=int)`` from them (``trainer_base.py``), so ``None`` would crash the step
  after its update; veRL's own loops get them from ``LLMServerClient.generate``.
- The reward sits on the final output only; it carries ``extra_fields["reward_extra_info"] = {}``
  because V1's post-processing copies that key to the earlier outputs of a trajectory.
- ``num_turns``, ``response_logprobs`` and ``reward_score`` are always passed: ``as_dict`` dumps
  only fields that were set, and every sample of a batch must have the same fields.
- Overlong samples (longer than ``rollout.prompt_length`` / ``rollout.response_length``) follow
  the ``overlong`` setting (docs/verl.md, "Overlong and empty samples"):
  ``truncate`` (default, what veRL 0.9.1's own agent loops do: the response cut to
  ``response_length`` with its mask and logprobs, ``response_ids[:response_length]``, the prompt
  left-cut to ``prompt_length``, ``_cap_text_prompt_length``; the reward stays), ``penalize``
  (cut the same way; a trajectory whose final sample was cut gets ``overlong_reward`` instead of
  its reward, so a run the policy made too long is penalised), or ``drop`` (left out, not cut; a
  trajectory whose final sample is overlong is left out whole, as at export). All are counted.
- A sample with an empty response (an aborted call) carries no token to train or to put a reward
  on (veRL puts it on every output's last response token): it is left out; an empty final
  sample hands the reward to the trajectory's last non-empty sample (``drop``: the trajectory is
  left out).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from .verl_api import AgentLoopMetrics, AgentLoopOutput

logger = logging.getLogger(__name__)


OVERLONG_POLICIES = ("truncate", "penalize", "drop")


@dataclass
class Limits:
    """veRL's ``actor_rollout_ref.rollout.prompt_length`` / ``response_length`` (None: no limit)
    and what to do with a sample that does not fit (``overlong``: truncate, penalize, drop)."""

    prompt_length: Optional[int] = None
    response_length: Optional[int] = None
    overlong: str = "truncate"
    overlong_reward: float = 0.0

    def __post_init__(self) -> None:
        if self.overlong not in OVERLONG_POLICIES:
            raise ValueError(f"forge_agent: overlong must be one of {', '.join(OVERLONG_POLICIES)} (agent loop YAML), got {self.overlong!r}")

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

    def cut(self, sample: dict) -> dict:
        """The sample cut to fit, as veRL's agent loops cut: the prompt from the left, the
        response (with its mask and logprobs) from the right."""
        out = dict(sample)
        if self.prompt_length is not None and len(sample["prompt_ids"]) > self.prompt_length:
            out["prompt_ids"] = list(sample["prompt_ids"])[-self.prompt_length :]
        if self.response_length is not None and len(sample["response_ids"]) > self.response_length:
            n = self.response_length
            for key in ("response_ids", "response_mask", "response_logprobs"):
                out[key] = list(sample[key])[:n]
        return out


@dataclass
class Selection:
    """What a trajectory yields for veRL, and what was left out of it and why."""

    samples: list[dict] = field(default_factory=list)
    overlong: int = 0
    left_out: int = 0
    auxiliary: int = 0
    dropped: Optional[str] = None
    #: samples cut to fit (``truncate`` / ``penalize``), and whether the final one was
    truncated: int = 0
    final_overlong: bool = False


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
    """A sample of the trajectory route, or an exported row flattened by ``row.sample_of_row``."""
    return bool(sample.get("auxiliary"))


def _select_agent(samples: list[dict], limits: Limits, several: bool) -> Selection:
    if not samples:
        return Selection(dropped="the trajectory has no agent sample")
    if limits.overlong != "drop":
        return _select_cut(samples, limits, several)
    final = samples[-1]
    problem = limits.problem(final)
    if problem is not None:
        return Selection(overlong=len(samples) if several else 1, left_out=0 if several else len(samples) - 1, dropped=f"final sample {_sid(final)}: {problem}")
    if not several:
        return Selection(samples=[final], left_out=len(samples) - 1)
    kept = [s for s in samples[:-1] if limits.problem(s) is None]
    return Selection(samples=kept + [final], overlong=len(samples) - 1 - len(kept))


def _select_cut(samples: list[dict], limits: Limits, several: bool) -> Selection:
    """``truncate`` / ``penalize``: overlong samples are cut to fit, empty ones left out (an
    empty final hands the reward to the last non-empty sample)."""
    nonempty = [s for s in samples if len(s["response_ids"]) > 0]
    empty = len(samples) - len(nonempty)
    if not nonempty:
        return Selection(overlong=len(samples), dropped=f"final sample {_sid(samples[-1])}: the response is empty (and no earlier sample has one)")
    cut = [s for s in nonempty if limits.problem(s) is not None]
    final = nonempty[-1]
    final_cut = limits.problem(final) is not None
    chosen = nonempty if several else [final]
    out = [limits.cut(s) if limits.problem(s) is not None else s for s in chosen]
    return Selection(samples=out, overlong=empty + len(cut), left_out=0 if several else len(samples) - 1, truncated=len(cut), final_overlong=final_cut)
def _sid(sample: dict) -> Any:
    return sample.get("sample_id")


def _versions(sample: dict) -> list[int]:
    versions = sample.get("policy_versions")
    if versions is None or len(versions) == 0:
        version = sample.get("policy_version", 0)
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
    """One ``AgentLoopOutput`` from a trajectory sample (the route's, or an exported row
    flattened by ``row.sample_of_row``: the same field names).

    Example::

        out = sample_output(sample, final=True, reward=sample["reward"])
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
        "forge_rollout_id": str(sample.get("rollout_id")),
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
    or cut in ``counters`` (process-wide: ``overlong_samples``, ``overlong_trajectories``,
    ``samples_left_out``, ``auxiliary_samples``, ``truncated_samples``,
    ``penalized_trajectories``) and on each output's ``extra_fields`` (``forge_overlong``,
    ``forge_left_out``, ``forge_auxiliary``, ``forge_truncated``)."""
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
    counts = {"overlong": selection.overlong, "left_out": selection.left_out, "auxiliary": selection.auxiliary, "truncated": selection.truncated}
    if counters is not None and selection.truncated:
        counters["truncated_samples"] = counters.get("truncated_samples", 0) + selection.truncated
    if selection.final_overlong and limits.overlong == "penalize":
        # The run the policy made too long: penalised, not merely cut.
        reward = limits.overlong_reward
        if counters is not None:
            counters["penalized_trajectories"] = counters.get("penalized_trajectories", 0) + 1
    last = len(selection.samples) - 1
    return [
        sample_output(s, final=i == last, reward=reward, images=images_of(s), counts=counts)
        for i, s in enumerate(selection.samples)
    ]
