"""Every documented veRL command, and the Argo-rendered one, against veRL 0.9.1's own config
code; and the Argo iterations against veRL's own ``fit()`` loop.

- ``docs/verl.md``: each ``python -m verl.trainer.main_ppo`` example is composed with veRL's
  hydra config (unknown keys fail) and run through ``validate_config`` and ``RolloutConfig``.
- The Argo command of iterations 0, 1, 29, 30 and 39: the same checks, then the trainer's own
  ``_init_tokenizer`` / ``_init_dataloader`` (RLHFDataset over an exported group dataset of
  ``train_batch_size`` rows: ``steps_per_epoch``, ``total_training_steps``) and the trainer's
  own ``fit()``, resumed at ``global_steps = i`` as ``_load_checkpoint`` does from
  ``global_step_i`` (trainer_base.py), with the GPU work (``step``) and the checkpoint write
  (``_save_checkpoint``) recorded instead of run: exactly one step, ``i + 1``, saved.
"""

from __future__ import annotations

import re
import shlex
import types
import unittest

from tests import verl_harness as vh

SETUP = vh.env_json("FORGE_TEST_SETUP")


def documented_commands(path: str) -> list[list[str]]:
    """The overrides of every ``verl.trainer.main_ppo`` command in the page's bash blocks."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            if "verl.trainer.main_ppo" in line:
                words = shlex.split(line)
                commands.append(words[words.index("verl.trainer.main_ppo") + 1 :])
    return commands


class DocumentedCommands(unittest.TestCase):
    def test_docs_examples_pass_verls_validation(self):
        commands = documented_commands(SETUP["docs"])
        self.assertGreaterEqual(len(commands), 2, "docs/verl.md shows a replay and an online command")
        for overrides in commands:
            with self.subTest(command=" ".join(overrides)[:120]):
                vh.validate(vh.compose(overrides))
                vh.checked("documented commands")

    def test_the_online_command_starts_vllm_with_scale_out(self):
        # veRL hands engine_kwargs.vllm to its replicas' server arguments (vllm_async_server.py):
        # through its own build_cli_args_from_config, then vLLM's own frontend argument parser.
        from omegaconf import OmegaConf
        from verl.workers.rollout.vllm_rollout.utils import build_cli_args_from_config
        from vllm.entrypoints.common.cli_args import FrontendArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        online = [c for c in documented_commands(SETUP["docs"]) if any("agent_loop_online" in w for w in c)]
        self.assertEqual(len(online), 1, "docs/verl.md shows one online command")
        kwargs = OmegaConf.to_container(vh.compose(online[0]).actor_rollout_ref.rollout.engine_kwargs.vllm)
        cli = build_cli_args_from_config(kwargs)
        self.assertTrue(FrontendArgs.add_cli_args(FlexibleArgumentParser()).parse_args(cli).enable_scale_out, cli)
        vh.checked("documented commands")

    def test_the_check_can_fail(self):
        # The old docs example: no micro batch size, train_batch_size below the default mini batch.
        with self.assertRaises(Exception):
            vh.validate(vh.compose(["algorithm.adv_estimator=grpo", "data.train_batch_size=16", "actor_rollout_ref.model.path=m", "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.actor.use_kl_loss=True"]))
        vh.checked("rejected commands")


class ArgoIterations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        vh.ensure_ray()

    def fit(self, overrides: list[str], iteration: int) -> tuple[list[int], list[int], object]:
        from verl.trainer.ppo.v1.trainer_base import PPOTrainer
        from transfer_queue import KVBatchMeta

        cfg = vh.compose(overrides)
        vh.validate(cfg)
        me = types.SimpleNamespace(config=cfg, trainer_mode="sync", parameter_sync_step=1)
        PPOTrainer._init_tokenizer(me)
        PPOTrainer._init_dataloader(me)
        # _load_checkpoint: global_steps = int(folder.split("global_step_")[-1]) of the newest
        # checkpoint, global_step_i (0: none yet, training from scratch).
        me.global_steps = iteration
        steps, saves = [], []

        def step(metrics, timing_raw):
            # What a step leaves for fit() to clear: its trajectories in TransferQueue.
            import transfer_queue as tq

            steps.append(me.global_steps)
            key, tag = f"fit-{iteration}-{me.global_steps}_0_0", {"status": "success", "global_steps": me.global_steps}
            tq.kv_put(key=key, partition_id="train", tag=tag)
            return KVBatchMeta(partition_id="train", keys=[key], tags=[tag])

        noop = lambda *a, **k: None
        for name in ("_reissue_inflight_prompts", "on_train_begin", "on_step_begin", "_start_profiling", "_stop_profiling", "on_step_end", "_compute_metrics", "_shutdown_dump_executor", "on_train_end"):
            setattr(me, name, noop)
        me._consume_sync_metrics = lambda: {}
        me.step = step
        me._save_checkpoint = lambda: saves.append(me.global_steps)
        PPOTrainer.fit(me, agent_loop_manager=None)
        return steps, saves, me

    def local(self, command: list[str]) -> list[str]:
        return vh.replace_overrides(
            command,
            {
                "data.train_files": SETUP["groups"],
                "data.val_files": SETUP["groups"],
                "actor_rollout_ref.model.path": vh.tiny_model_dir(),
                "trainer.default_local_dir": str(vh.work_dir() / "checkpoints"),
            },
        )

    def test_every_iteration_trains_exactly_one_step_and_saves_it(self):
        for iteration, command in sorted(SETUP["commands"].items(), key=lambda kv: int(kv[0])):
            i = int(iteration)
            with self.subTest(iteration=i):
                steps, saves, me = self.fit(self.local(command), i)
                self.assertEqual(me.steps_per_epoch, 1, "the group dataset holds exactly train_batch_size rows")
                self.assertEqual(me.total_training_steps, i + 1)
                self.assertEqual(steps, [i + 1], f"iteration {i} trains step {i + 1}")
                self.assertEqual(saves, [i + 1], f"iteration {i} saves global_step_{i + 1} (what the sync loads)")
                vh.checked("Argo iterations through fit()")
        self.assertIn("39", SETUP["commands"], "the 40th iteration is checked")

    def test_without_an_epoch_bound_the_31st_iteration_trains_nothing(self):
        # What the command did before: veRL's default total_epochs (30) ends fit() before step 31.
        command = [o for o in SETUP["commands"]["30"] if not o.startswith("trainer.total_epochs=")]
        steps, saves, _ = self.fit(self.local(command), 30)
        self.assertEqual((steps, saves), ([], []))
        vh.checked("rejected commands")


if __name__ == "__main__":
    unittest.main()
