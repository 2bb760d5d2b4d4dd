import { describe, expect, test } from "bun:test";
import { servedVersion } from "./served-version.ts";

describe("servedVersion", () => {
  test("the server confirms the registered version: recorded, no mismatch", () => {
    expect(servedVersion(["3"], 3, true)).toEqual({ policyVersion: 3, served: "3", mismatch: "" });
  });
  test("another version served: that one is recorded, with why", () => {
    expect(servedVersion(["4"], 3, true)).toEqual({ policyVersion: 4, served: "4", mismatch: "served by weight version 4; the rollout was registered with version 3" });
  });
  test("weights changed during the call: the oldest is recorded", () => {
    const v = servedVersion(["4", "5"], 4, true);
    expect([v.policyVersion, v.served]).toEqual([4, "4,5"]);
    expect(v.mismatch).toContain("versions 4, 5");
  });
  test("a label that is not a policy version, or none: the registered version, with why", () => {
    expect(servedVersion(["default"], 2, true)).toMatchObject({ policyVersion: 2, served: "default" });
    expect(servedVersion(["default"], 2, true).mismatch).toContain('"default", not a policy version');
    expect(servedVersion(["1e3"], 2, true).policyVersion).toBe(2);
    expect(servedVersion(undefined, 2, true).mismatch).toContain("reported no weight version");
    // An error answer has no tokens to label: nothing to say.
    expect(servedVersion(undefined, 2, false)).toEqual({ policyVersion: 2, served: "", mismatch: "" });
  });
});
