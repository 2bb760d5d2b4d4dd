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
    #: A vision model's ``(<|vision_start|>, <|image_pad|>, <|vision_end|>)`` ids (from veRL's
    #: processor), so a cut never splits an image: None for a text model.
    vision: Optional[tuple] = None

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
        response (with its mask and logprobs) from the right. With images (``vision``), a cut
        that would fall inside an image (its ``<|vision_start|>`` … pads … ``<|vision_end|>``)
        moves out of it, leaving the whole image out, and ``image_refs`` keeps the images that
        remain: veRL pairs the k-th pad run with the k-th image, and half a run pairs with
        nothing (its processor would size the image whole, get_rope_index walks off its grid)."""
        out = dict(sample)
        prompt = list(sample["prompt_ids"])
        response_cut = len(sample["response_ids"])
        prompt_cut = 0
        if self.response_length is not None and response_cut > self.response_length:
            response_cut = self.response_length
        if self.prompt_length is not None and len(prompt) > self.prompt_length:
            prompt_cut = len(prompt) - self.prompt_length
        spans = image_spans([*prompt, *sample["response_ids"]], self.vision) if self.vision else []
        refs = sample.get("image_refs")
        keep = list(range(len(spans)))
        if spans:
            end = len(prompt) + response_cut
            for start, last in spans:
                if start < end <= last and start >= len(prompt):
                    end = start  # the image the cut falls in goes whole
            response_cut = end - len(prompt)
            for start, last in spans:
                if start < prompt_cut <= last:
                    prompt_cut = last + 1
            keep = [k for k, (start, last) in enumerate(spans) if start >= prompt_cut and last < end]
        if prompt_cut > 0:
            out["prompt_ids"] = prompt[prompt_cut:]
        if response_cut < len(sample["response_ids"]):
            for key in ("response_ids", "response_mask", "response_logprobs"):
                out[key] = list(sample[key])[:response_cut]
        if spans and refs is not None and len(refs) == len(spans) and len(keep) < len(spans):
            out["image_refs"] = [refs[k] for k in keep]
        return out


def image_spans(ids: list, vision: tuple) -> list:
    """Each image of a Qwen-VL sample as (first, last) token index: its ``<|vision_start|>``
    (where it has one right before the run), the run of pads, its ``<|vision_end|>``."""
    start_id, pad_id, end_id = vision
    spans: list = []
    i = 0
    while i < len(ids):
        if ids[i] != pad_id:
            i += 1
            continue
        j = i
        while j + 1 < len(ids) and ids[j + 1] == pad_id:
            j += 1
        first = i - 1 if i > 0 and ids[i - 1] == start_id else i
        last = j + 1 if j + 1 < len(ids) and ids[j + 1] == end_id else j
        spans.append((first, last))
        i = j + 1
    return spans


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
    #: the final sample was cut under ``penalize`` (its reward is ``reward``: ``overlong_reward``)
    penalized: bool = False
    #: the reward the final output carries, where the selection decided it (the route's)
    reward: Optional[float] = None


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
    """Replay: the outputs of one exported trajectory (``[]`` when it is left out), selected
    here by ``select_samples`` (an exported batch is read without the proxy). Online, the
    trajectory route selects (``selected_outputs``)."""
    selection = select_samples(samples, limits, several)
    if selection.final_overlong and limits.overlong == "penalize":
        # The run the policy made too long: penalised, not merely cut.
        reward = limits.overlong_reward
        selection.penalized = True
    return selected_outputs(selection, reward=reward, images_of=images_of, counters=counters)


def route_selection(trajectory: dict, where: str) -> "Selection":
    """The selection the proxy's trajectory route made (``?select=1``: trajectories/select.ts
    ``selectForTraining``, the rule the export applies too), as a ``Selection``. A proxy that
    answers without one predates selection at the route: a clear error, never a silent
    untrained-on or unselected batch."""
    got = trajectory.get("selection")
    if not isinstance(got, dict):
        raise ValueError(f"{where}: the proxy answered without `selection`: it predates selection at the trajectory route (GET /control/rollouts/:id/trajectory?select=1); run the proxy of the same OpenForge version as forge_verl")
    try:
        return Selection(
            samples=list(trajectory.get("samples") or []),
            overlong=int(got["overlong"]),
            left_out=int(got["left_out"]),
            auxiliary=int(got["auxiliary"]),
            dropped=got.get("dropped"),
            truncated=int(got["truncated"]),
            final_overlong=bool(got["final_overlong"]),
            penalized=bool(got["penalized"]),
            reward=float(got["reward"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{where}: the proxy's `selection` is not the one forge_verl reads ({error!r}): run the proxy of the same OpenForge version as forge_verl") from error


def selected_outputs(
    selection: "Selection",
    *,
    reward: float,
    images_of: Callable[[dict], Optional[list]],
    counters: Optional[dict] = None,
) -> list[AgentLoopOutput]:
    """The outputs of a selected trajectory (``[]`` when it is left out), counting what was left
    out or cut in ``counters`` (process-wide: ``overlong_samples``, ``overlong_trajectories``,
    ``samples_left_out``, ``auxiliary_samples``, ``truncated_samples``,
    ``penalized_trajectories``) and on each output's ``extra_fields`` (``forge_overlong``,
    ``forge_left_out``, ``forge_auxiliary``, ``forge_truncated``). ``reward``: the trajectory's
    (a selection's own ``reward``, the route's, wins)."""
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
    if selection.reward is not None:
        reward = selection.reward
    if selection.penalized and counters is not None:
        counters["penalized_trajectories"] = counters.get("penalized_trajectories", 0) + 1
    last = len(selection.samples) - 1
    return [
        sample_output(s, final=i == last, reward=reward, images=images_of(s), counts=counts)
        for i, s in enumerate(selection.samples)
    ]
