/**
 * The policy version of a call served by a rollout's own servers (a trainer's replicas,
 * registered with `upstreams`), read from what the server that answered reported, not assumed
 * from the registration: vLLM 0.33.0 labels each range of a choice's tokens with the weight
 * version that sampled it (`choices[i].weight_versions`, asked for with
 * `return_weight_versions`), SGLang 0.5.23 answers `metadata.weight_version`. A trainer's weight
 * sync (proxy/engines/weight-sync.ts, forge_verl) sets that label to the policy version as a
 * decimal string. The registered version is what the rollout expected; when the server says
 * otherwise the call records the served version and why they differ.
 */

export interface ServedVersion {
  /** The call's policy_version. */
  policyVersion: number;
  /** The labels the server reported, joined by ","; "" when none. */
  served: string;
  /** Why policyVersion may not be the registered version; "" when the server confirmed it. */
  mismatch: string;
}

/**
 * The version to record for a call of a rollout registered with version `expected`.
 *
 * @example
 * servedVersion(["4"], 3, true) // { policyVersion: 4, served: "4", mismatch: "served by weight version 4; the rollout was registered with version 3" }
 * servedVersion(["3"], 3, true).mismatch // ""
 */
export function servedVersion(labels: readonly string[] | undefined, expected: number, answered: boolean): ServedVersion {
  const served = labels?.join(",") ?? "";
  if (!labels || labels.length === 0) {
    // An error answer carries no tokens and no label: nothing to compare.
    const mismatch = answered ? `the server reported no weight version (vLLM answers choices[].weight_versions to return_weight_versions); recorded the registered version ${expected}` : "";
    return { policyVersion: expected, served, mismatch };
  }
  const versions = labels.map((l) => (/^\d{1,9}$/.test(l) ? Number(l) : undefined));
  if (versions.some((v) => v === undefined)) {
    const bad = labels.find((_, i) => versions[i] === undefined);
    return { policyVersion: expected, served, mismatch: `the server reported weight version ${JSON.stringify(bad)}, not a policy version (an integer): its weights were not labelled by the trainer's weight sync; recorded the registered version ${expected}` };
  }
  const ints = versions as number[];
  if (ints.length > 1) {
    // Weights changed while the call was sampled: its tokens are not one policy's. The oldest is recorded.
    const oldest = Math.min(...ints);
    return { policyVersion: oldest, served, mismatch: `the weights changed during the call: its tokens were sampled by versions ${ints.join(", ")} (recorded the oldest, ${oldest}); the rollout was registered with version ${expected}` };
  }
  const version = ints[0]!;
  return { policyVersion: version, served, mismatch: version === expected ? "" : `served by weight version ${version}; the rollout was registered with version ${expected}` };
}
