/**
 * The record format and the schemas of every file and HTTP body a user writes.
 * Areas import records from here, never from `schemas/gen/` directly.
 */
export {
  BlobSchema,
  CallStatus,
  ChainStart,
  Engine,
  LogprobsMode,
  ModelCallSchema,
  Protocol,
  RecordSchema,
  RolloutResultSchema,
  RolloutSchema,
  RolloutStatus,
  SamplingParamsSchema,
  SamplingSource,
  StoredBodySchema,
  TokenMode,
  TokenStatus,
  UsageSchema,
  type Header,
  type ModelCall,
  type Record,
  type Rollout,
  type RolloutResult,
  type SamplingParams,
  type StoredBody,
} from "./gen/forge/v1/records_pb.ts";
export { create, toBinary, fromBinary, toJson } from "@bufbuild/protobuf";
export { messageFactory } from "./message-factory.ts";
export { ExperimentError, TaskSpecSchema, parseExperimentFile, parseExperimentText, type Experiment, type TaskSpec } from "./experiment.ts";
export { CancelRolloutSchema, FinishRolloutSchema, PauseSchema, RegisterRolloutSchema, ResumeSchema, VALIDATION_LABEL, zodProblems } from "./control.ts";
export { PolicyScriptError, PolicyScriptSchema, parsePolicyScriptFile, type PolicyScript, type PolicyScriptInput, type PolicyStep, type PromptMatcher, type TaskScript } from "./policy-script.ts";
