#!/usr/bin/env python3
"""vLLM 0.33.0's own chat-route preprocessing per call, timed in CPU: what its API server does
for each Chat Completions request before the engine sees it (OnlineRenderer.render_chat:
parse_chat_messages, the chat template over the whole conversation, the whole prompt tokenized),
which a token-in call (ids to /v1/completions) does not ask of it. Run by bench/engine-render.ts
in the reference venv (python/build-env.sh):

    .venv/reference/bin/python bench/lib/vllm-chat-render.py CALLS.json OUT.json ROUNDS

CALLS.json: [{"request": <the Chat body vLLM got>, "prompt_tokens": <its usage.prompt_tokens>}].
OUT.json: [{"prompt_tokens", "ids", "cpu_ms": [one per round]}], "ids" the prompt's length as
vLLM rendered it (the bench holds it to the engine's usage). The first round of each request
is a warm-up and not kept: vLLM's template and tokenizer are compiled and cached by then, as on
a serving engine.
"""
import json
import sys
import time
from pathlib import Path

# The reference oracle builds vLLM's renderer as its GPU-less render server does (offline, the
# CPU platform, Qwen3's tokenizer and config): the same object the reference suites check.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "reference"))
import oracle  # noqa: E402


def main() -> None:
    src, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = json.loads(Path(src).read_text())
    # `vllm serve … --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3`.
    renderer = oracle.vllm_online("renderer", {}, oracle.DEFAULT_TOOL_PARSER, oracle.DEFAULT_REASONING_PARSER)
    proto = oracle.need("vllm.entrypoints.openai.chat_completion.protocol")
    results = []
    for call in calls:
        request = proto.ChatCompletionRequest.model_validate(call["request"])
        times = []
        ids = 0
        for r in range(rounds + 1):
            copy = request.model_copy(deep=True)
            start = time.process_time_ns()
            res = oracle.run_async(renderer.render_chat(copy))
            spent = time.process_time_ns() - start
            if (msg := oracle.error_response_text(res)) is not None:
                raise SystemExit(f"vLLM refused call {len(results) + 1}: {msg}")
            ids = len(res[1][0]["prompt_token_ids"])
            if r > 0:
                times.append(spent / 1e6)
        results.append({"prompt_tokens": call["prompt_tokens"], "ids": ids, "cpu_ms": times})
    Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
