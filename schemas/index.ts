/**
 * The record format and the schemas of every file and HTTP body a user writes.
 * Areas import records from here, never from `schemas/gen/` directly.
 */
export * from "./gen/forge/v1/records_pb.ts";
export { create, toBinary, fromBinary, toJson, fromJson, clone } from "@bufbuild/protobuf";
export * from "./experiment.ts";
export * from "./control.ts";
export * from "./policy-script.ts";
export * from "./yaml-file.ts";
