/**
 * GitOps: experiments in a git repo; a commit triggers a run. No other area's source imports
 * gitops: `forge gitops` (bin/) runs it through gitops/cli.ts and tests reach its files, so its
 * face exports nothing (docs/architecture.md: a face exports what other areas use).
 */
export {};
