/**
 * The token view of a ModelCall record without the rest of it: what a restarting proxy needs to
 * rebuild an open rollout's token history (seq, call id, the prompt delta and the completion
 * ids, token status, policy version). The bodies (request, response, content pieces), which are
 * most of a record's bytes and of its decoding time, are skipped with the library's own wire
 * reader (@bufbuild/protobuf BinaryReader); field numbers come from the generated schema.
 */
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { create, ModelCallSchema, RecordSchema, type ModelCall } from "../schemas/index.ts";

const numberOf = (schema: { fields: readonly { name: string; number: number }[] }, name: string): number => {
  const field = schema.fields.find((f) => f.name === name);
  if (!field) throw new Error(`records/call-tokens: ${name} is not a field of the schema (regenerate schemas/gen?)`);
  return field.number;
};

const MODEL_CALL = numberOf(RecordSchema, "model_call");
const F = {
  rolloutId: numberOf(ModelCallSchema, "rollout_id"),
  seq: numberOf(ModelCallSchema, "seq"),
  callId: numberOf(ModelCallSchema, "call_id"),
  policyVersion: numberOf(ModelCallSchema, "policy_version"),
  promptTokenIds: numberOf(ModelCallSchema, "prompt_token_ids"),
  completionTokenIds: numberOf(ModelCallSchema, "completion_token_ids"),
  tokenStatus: numberOf(ModelCallSchema, "token_status"),
  prefixOf: numberOf(ModelCallSchema, "prefix_of"),
  prefixLen: numberOf(ModelCallSchema, "prefix_len"),
  promptLen: numberOf(ModelCallSchema, "prompt_len"),
};

/** Reads a repeated uint32, packed (as proto3 writes it) or not. */
function uint32s(reader: BinaryReader, wireType: WireType, into: number[]): void {
  if (wireType !== WireType.LengthDelimited) {
    into.push(reader.uint32());
    return;
  }
  const end = reader.uint32() + reader.pos;
  while (reader.pos < end) into.push(reader.uint32());
}

/**
 * The token fields of the ModelCall in a Record payload, as a ModelCall with only those set;
 * undefined when the record is not a ModelCall.
 *
 * @example
 * const call = callTokensOf(payload); // { seq, callId, promptTokenIds, prefixOf, … }: no bodies
 */
export function callTokensOf(payload: Uint8Array): ModelCall | undefined {
  const outer = new BinaryReader(payload);
  while (outer.pos < outer.len) {
    const [field, wireType] = outer.tag();
    if (field !== MODEL_CALL || wireType !== WireType.LengthDelimited) {
      outer.skip(wireType, field);
      continue;
    }
    const reader = new BinaryReader(outer.bytes());
    const call = create(ModelCallSchema);
    const prompt: number[] = [];
    const completion: number[] = [];
    while (reader.pos < reader.len) {
      const [number, type] = reader.tag();
      switch (number) {
        case F.rolloutId:
          call.rolloutId = reader.string();
          break;
        case F.seq:
          call.seq = reader.uint32();
          break;
        case F.callId:
          call.callId = reader.string();
          break;
        case F.policyVersion:
          call.policyVersion = reader.uint32();
          break;
        case F.promptTokenIds:
          uint32s(reader, type, prompt);
          break;
        case F.completionTokenIds:
          uint32s(reader, type, completion);
          break;
        case F.tokenStatus:
          call.tokenStatus = reader.int32();
          break;
        case F.prefixOf:
          call.prefixOf = reader.string();
          break;
        case F.prefixLen:
          call.prefixLen = reader.uint32();
          break;
        case F.promptLen:
          call.promptLen = reader.uint32();
          break;
        default:
          reader.skip(type, number);
      }
    }
    call.promptTokenIds = prompt;
    call.completionTokenIds = completion;
    return call;
  }
  return undefined;
}
