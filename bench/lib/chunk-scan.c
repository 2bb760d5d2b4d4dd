/*
 * The least a native per-chunk pass could cost, for bench/chunk-native.ts: one loop over the
 * bytes of a vLLM chat chunk that copies it to `out` with choice members `"token_ids":[...]`
 * removed and `"logprobs":{...}` written as null (what train mode strips when the harness did
 * not ask), reading the ids into `ids` and the sampled tokens' logprobs into `logprobs`.
 *
 * It does less than the proxy must: no validation of the JSON, no check that the kept bytes are
 * spelled as JSON.stringify spells them, members found only at depth 3 after a comma. A pass
 * that may replace JSON.parse + JSON.stringify would do all of that too; this one bounds it.
 */
#include <stdint.h>
#include <stdlib.h>

static int at(const uint8_t *p, int n, int i, const char *key) {
  for (int k = 0; key[k]; k++)
    if (i + k >= n || p[i + k] != (uint8_t)key[k]) return 0;
  return 1;
}

int strip_chunk(const uint8_t *in, int n, uint8_t *out, uint32_t *ids, int *nids, double *logprobs, int *nlogprobs) {
  int depth = 0, o = 0, ci = 0, cl = 0;
  for (int i = 0; i < n; i++) {
    uint8_t c = in[i];
    if (c == '"') {
      int isIds = depth == 3 && i > 0 && in[i - 1] == ',' && at(in, n, i, "\"token_ids\":[");
      int isLp = !isIds && depth == 3 && i > 0 && in[i - 1] == ',' && at(in, n, i, "\"logprobs\":{");
      if (isIds || isLp) {
        int j = i + (isIds ? 13 : 12), d = 1, instr = 0, digits = 0;
        uint32_t v = 0;
        for (; j < n && d > 0; j++) {
          uint8_t e = in[j];
          if (instr) {
            if (e == '\\') j++;
            else if (e == '"') instr = 0;
            continue;
          }
          if (e == '"') {
            if (isLp && d == 3 && at(in, n, j, "\"logprob\":")) {
              char *end;
              logprobs[cl++] = strtod((const char *)in + j + 10, &end);
              j = (int)((const uint8_t *)end - in) - 1;
              continue;
            }
            instr = 1;
          } else if (e == '[' || e == '{') d++;
          else if (e == ']' || e == '}') {
            d--;
            if (isIds && d == 0 && digits) ids[ci++] = v;
          } else if (isIds && e >= '0' && e <= '9') {
            v = v * 10 + (e - '0');
            digits = 1;
          } else if (isIds && e == ',') {
            ids[ci++] = v;
            v = 0;
            digits = 0;
          }
        }
        if (isIds) o--; /* the comma before the member */
        else {
          const char *null_member = "\"logprobs\":null";
          for (int k = 0; null_member[k]; k++) out[o++] = (uint8_t)null_member[k];
        }
        i = j - 1;
        continue;
      }
      out[o++] = c;
      for (i++; i < n; i++) {
        uint8_t e = in[i];
        out[o++] = e;
        if (e == '\\') out[o++] = in[++i];
        else if (e == '"') break;
      }
      continue;
    }
    if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') depth--;
    out[o++] = c;
  }
  *nids = ci;
  *nlogprobs = cl;
  return o;
}
