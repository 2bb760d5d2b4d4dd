/*
 * The native per-chunk pass wired into the proxy for bench/ab.ts (issue 32's native route,
 * measured end to end; bench/lib/native-chunk.patch applies it): one SSE event's bytes
 * (`data: {...}\n\n`) in, the event the harness gets out, the ids and logprobs read. Events it
 * does not handle (the first with the prompt's ids, the finish, usage, errors) return -1 and
 * take the proxy's JS path. Like chunk-scan.c it validates nothing: a lower bound.
 */
#include <string.h>
#include "chunk-scan.c"

static int has(const uint8_t *p, int n, const char *key) {
  int k = (int)strlen(key);
  for (int i = 0; i + k <= n; i++)
    if (p[i] == (uint8_t)key[0] && memcmp(p + i, key, k) == 0) return 1;
  return 0;
}

int pass_event(const uint8_t *in, int n, uint8_t *out, uint32_t *ids, int *nids, double *logprobs, int *nlogprobs) {
  if (n < 8 || memcmp(in, "data: ", 6) != 0 || in[n - 1] != '\n' || in[n - 2] != '\n') return -1;
  if (memchr(in, '\n', n - 2) != NULL) return -1; /* one event, one line */
  const uint8_t *json = in + 6;
  int m = n - 8;
  if (!has(json, m, "\"finish_reason\":null") || has(json, m, "\"usage\":{") || has(json, m, "\"error\"") || has(json, m, "\"prompt_token_ids\":[") || !has(json, m, "\"token_ids\":[")) return -1;
  memcpy(out, "data: ", 6);
  int o = strip_chunk(json, m, out + 6, ids, nids, logprobs, nlogprobs);
  out[6 + o] = '\n';
  out[7 + o] = '\n';
  return o + 8;
}
