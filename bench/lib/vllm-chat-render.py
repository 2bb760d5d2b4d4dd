#!/usr/bin/env python3
"""vLLM 0.33.0's own chat-route work per call, timed in CPU: what its API server does for each
Chat Completions request that a token-in call (ids to /v1/completions) does not ask of it.
Before the engine: OnlineRenderer.render_chat (parse_chat_messages, the chat template over the
whole conversation, the whole prompt tokenized). After it: the reasoning and tool parsers
(`--reasoning-parser qwen3 --tool-call-parser hermes`) over the streamed answer, one engine step a
token, as the coupled chat route runs them (parsers_cpu_ns). And the output processor's
incremental detokenizer (detokenizer_cpu_ns), which /v1/completions pays too but the generate
route asked with `detokenize: false` does not. Run by bench/engine-render.ts in the reference
venv (python/build-env.sh):

    .venv/reference/bin/python bench/lib/vllm-chat-render.py CALLS.json OUT.json ROUNDS

CALLS.json: [{"request": <the Chat body vLLM got>, "prompt_tokens": <its usage.prompt_tokens>,
"output_ids": <the ids it sampled>}]. OUT.json: [{"prompt_tokens", "ids", "tool_calls",
"render_ms", "parsers_ms", "detokenizer_ms"}], the times a list with one CPU time per round, "ids" the prompt's
length as vLLM rendered it (the bench holds it to the engine's usage), "tool_calls" how many
calls vLLM's parser found in the answer. The first round of each
call is a warm-up and not kept: vLLM's template and tokenizer are compiled and cached by then,
as on a serving engine.
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
    tool, reasoning = oracle.DEFAULT_TOOL_PARSER, oracle.DEFAULT_REASONING_PARSER
    renderer = oracle.vllm_online("renderer", {}, tool, reasoning)
    derenderer = oracle.vllm_online("derenderer", {}, tool, reasoning)
    proto = oracle.need("vllm.entrypoints.openai.chat_completion.protocol")
    results = []
    for call in calls:
        request = proto.ChatCompletionRequest.model_validate(call["request"])
        timed = {"render_ms": [], "parsers_ms": [], "detokenizer_ms": []}
        calls_found = 0
        prompt_ids: list[int] = []
        for r in range(rounds + 1):
            copy = request.model_copy(deep=True)
            start = time.process_time_ns()
            res = oracle.run_async(renderer.render_chat(copy))
            spent = time.process_time_ns() - start
            if (msg := oracle.error_response_text(res)) is not None:
                raise SystemExit(f"vLLM refused call {len(results) + 1}: {msg}")
            prompt_ids = list(res[1][0]["prompt_token_ids"])
            if r > 0:
                timed["render_ms"].append(spent / 1e6)
            spent, calls_found = parsers_cpu_ns(derenderer, request, prompt_ids, call["output_ids"])
            decoded = detokenizer_cpu_ns(derenderer, prompt_ids, call["output_ids"])
            if r > 0:
                timed["parsers_ms"].append(spent / 1e6)
                timed["detokenizer_ms"].append(decoded / 1e6)
        results.append({"prompt_tokens": call["prompt_tokens"], "ids": len(prompt_ids), "tool_calls": calls_found, **timed})
    Path(out).write_text(json.dumps(results))


def detokenizer_cpu_ns(derenderer, prompt_ids: list[int], output_ids: list[int]) -> int:
    """CPU time of vLLM's output processor decoding the answer as it streams, one token an engine
    step: the IncrementalDetokenizer it makes for a request (the tokenizers library's DecodeStream
    for a fast tokenizer, v1/engine/detokenizer.py), `update` and `get_next_output_text` per step.
    Both chat and /v1/completions pay it; a `detokenize: false` request on the generate route
    (--token-in-route generate) does not."""
    engine = oracle.need("vllm.v1.engine")
    detokenizer = oracle.need("vllm.v1.engine.detokenizer")
    sampling = oracle.need("vllm.sampling_params").SamplingParams(max_tokens=len(output_ids) + 1, skip_special_tokens=False)
    request = engine.EngineCoreRequest(
        request_id="bench", prompt_token_ids=prompt_ids, mm_features=None, sampling_params=sampling,
        pooling_params=None, arrival_time=0.0, lora_request=None, cache_salt=None, data_parallel_rank=None,
    )
    tokenizer = derenderer.renderer.get_tokenizer()
    start = time.process_time_ns()
    detok = detokenizer.IncrementalDetokenizer.from_new_request(tokenizer, request)
    text = ""
    for token in output_ids:
        detok.update([token], False)
        text += detok.get_next_output_text(False, True)
    spent = time.process_time_ns() - start
    if not text:
        raise SystemExit("vLLM's detokenizer decoded nothing: the bench would time no work")
    return spent


def parsers_cpu_ns(derenderer, request, prompt_ids: list[int], output_ids: list[int]) -> tuple[int, int]:
    """CPU time of the chat route's parsers over the answer as it streams, one token an engine step,
    and the tool calls they found: a ChatStreamProcessor with its parser made as the coupled chat
    route makes one per request (serving.py), `step` per engine step. The steps' texts are vLLM's
    own incremental detokenizer's, made before the clock starts (the completions route detokenizes
    too)."""
    derender = oracle.need("vllm.renderers.online_derenderer")
    stream = oracle.need("vllm.entrypoints.openai.chat_completion.stream_processor")
    tokenizer = derenderer.renderer.get_tokenizer()
    skip_special, spaces_between = derender._decode_params(tokenizer, request, preserve_special=True)
    state = derender._seed_stream_state(tokenizer, prompt_ids, skip_special_tokens=skip_special)
    texts = []
    for token in output_ids:
        text, state = derenderer._detokenize_delta(tokenizer, [token], state, skip_special_tokens=skip_special, spaces_between_special_tokens=spaces_between)
        texts.append(text)
    names = set()
    start = time.process_time_ns()
    parser = derenderer.parser(tokenizer, request.tools, chat_template_kwargs=derenderer._resolve_chat_template_kwargs(request), model_config=derenderer.model_config)
    processor = stream.ChatStreamProcessor(request, parser, enable_auto_tools=derenderer.enable_auto_tools, parser_cls=derenderer.parser)
    for i, (token, text) in enumerate(zip(output_ids, texts)):
        step = processor.step(text, [token], "stop" if i == len(output_ids) - 1 else None, prompt_ids)
        delta = step[0] if isinstance(step, tuple) else getattr(step, "delta_message", None)
        for call in (getattr(delta, "tool_calls", None) or []):
            if call.function is not None and call.function.name:
                names.add(call.function.name)
    return time.process_time_ns() - start, len(names)


if __name__ == "__main__":
    main()
