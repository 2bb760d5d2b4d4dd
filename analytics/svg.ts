/**
 * Inline SVG charts for the HTML report, generated here so the page needs no library and no
 * network. Every mark carries a class (`bar`, `line`, `point`) that the render test counts.
 */

export type Series = { name: string; values: (number | null)[]; dashed?: boolean; color?: string };

/** The chart palette, for callers that pair series (pass@k and pass^k of one group share a colour). */
export const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

export type ChartSpec = { id: string; title: string; categories: string[]; series: Series[]; yMax?: number; yLabel?: string };

const width = 640;
const height = 300;
const margin = { top: 36, right: 16, bottom: 64, left: 56 };

/** Escapes text for HTML and SVG content and attributes. */
export function escapeXml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

function niceMax(values: number[], fallback: number): number {
  const max = Math.max(0, ...values);
  if (max === 0) return fallback;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  return Math.ceil(max / magnitude) * magnitude;
}

function formatTick(value: number): string {
  if (value === 0) return "0";
  if (Math.abs(value) >= 1000) return `${+(value / 1000).toFixed(1)}k`;
  return `${+value.toFixed(2)}`;
}

function frame(spec: ChartSpec, yMax: number, body: string, kind: string): string {
  const plotH = height - margin.top - margin.bottom;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const y = margin.top + plotH * (1 - f);
    return `<line class="grid" x1="${margin.left}" x2="${width - margin.right}" y1="${y}" y2="${y}" stroke="#ddd"/>` +
      `<text x="${margin.left - 6}" y="${y + 4}" text-anchor="end" font-size="11">${formatTick(yMax * f)}</text>`;
  });
  // Legend entries flow left to right and wrap to a new row; names are never cut (an 11px
  // system font is about 6.5px per character).
  const placed: { x: number; y: number; name: string; dashed: boolean; color: string }[] = [];
  let x = margin.left;
  let row = 0;
  for (const s of spec.series) {
    const w = 14 + Math.ceil(s.name.length * 6.5) + 16;
    if (x + w > width - margin.right && x > margin.left) {
      row++;
      x = margin.left;
    }
    placed.push({ x, y: height - 18 + row * 16, name: s.name, dashed: Boolean(s.dashed), color: s.color ?? palette[placed.length % palette.length]! });
    x += w;
  }
  const total = height + row * 16;
  const legend = placed
    .map((p) => {
      const color = p.color;
      const swatch = p.dashed
        ? `<line x1="${p.x}" x2="${p.x + 10}" y1="${p.y + 5}" y2="${p.y + 5}" stroke="${color}" stroke-width="2" stroke-dasharray="3 2"/>`
        : `<rect x="${p.x}" y="${p.y}" width="10" height="10" fill="${color}"/>`;
      return `<g class="legend-item">${swatch}<text x="${p.x + 14}" y="${p.y + 9}" font-size="11">${escapeXml(p.name)}</text></g>`;
    })
    .join("");
  return `<svg class="chart" data-chart="${escapeXml(spec.id)}" data-kind="${kind}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${total}" width="${width}" height="${total}" role="img" aria-label="${escapeXml(spec.title)}">` +
    `<text x="${margin.left}" y="20" font-size="14" font-weight="bold">${escapeXml(spec.title)}</text>` +
    (spec.yLabel ? `<text x="12" y="${margin.top - 8}" font-size="11">${escapeXml(spec.yLabel)}</text>` : "") +
    ticks.join("") + body + legend + `</svg>`;
}

function categoryLabels(categories: string[], step: number): string {
  const y = height - margin.bottom + 16;
  // Narrow categories (ten reward bins) get slanted labels so that they do not overlap.
  const slant = step < 70;
  return categories
    .map((c, i) => {
      const x = margin.left + step * (i + 0.5);
      return slant
        ? `<text x="${x}" y="${y - 6}" text-anchor="end" font-size="10" transform="rotate(-35 ${x} ${y - 6})">${escapeXml(c)}</text>`
        : `<text x="${x}" y="${y}" text-anchor="middle" font-size="11">${escapeXml(c)}</text>`;
    })
    .join("");
}

/**
 * A grouped bar chart: one group per category, one bar per series.
 *
 * @example
 * barChart({ id: "pass", title: "pass@k", categories: ["codex"], series: [{ name: "pass@1", values: [0.4] }], yMax: 1 })
 */
export function barChart(spec: ChartSpec): string {
  const values = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const yMax = spec.yMax ?? niceMax(values, 1);
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const step = plotW / Math.max(1, spec.categories.length);
  const barW = (step * 0.8) / Math.max(1, spec.series.length);
  const bars = spec.series.flatMap((s, si) =>
    s.values.map((v, ci) => {
      if (v === null || !Number.isFinite(v)) {
        // No data is said, not drawn as an empty bar.
        const x = margin.left + step * ci + step * 0.1 + barW * (si + 0.5);
        return `<text class="na" x="${x.toFixed(1)}" y="${(margin.top + plotH - 4).toFixed(1)}" font-size="9" text-anchor="middle" fill="#999">n/a</text>`;
      }
      const h = (Math.min(v, yMax) / yMax) * plotH;
      const x = margin.left + step * ci + step * 0.1 + barW * si;
      return `<rect class="bar" x="${x.toFixed(1)}" y="${(margin.top + plotH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(h, 0.5).toFixed(1)}" fill="${s.color ?? palette[si % palette.length]}"><title>${escapeXml(`${s.name} · ${spec.categories[ci]}: ${formatTick(v)}`)}</title></rect>`;
    }),
  );
  return frame(spec, yMax, bars.join("") + categoryLabels(spec.categories, step), "bar");
}

/**
 * A line chart over ordered categories (iterations); dashed series for pass^k.
 *
 * @example
 * lineChart({ id: "it", title: "by iteration", categories: ["0", "1"], series: [{ name: "codex pass@1", values: [0.2, 0.5] }], yMax: 1 })
 */
export function lineChart(spec: ChartSpec): string {
  const values = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const yMax = spec.yMax ?? niceMax(values, 1);
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const step = plotW / Math.max(1, spec.categories.length);
  const marks = spec.series.map((s, si) => {
    const color = s.color ?? palette[si % palette.length];
    const points = s.values
      .map((v, i) => (v === null || !Number.isFinite(v) ? null : ([margin.left + step * (i + 0.5), margin.top + plotH * (1 - Math.min(v, yMax) / yMax)] as const)))
      .filter((p): p is readonly [number, number] => p !== null);
    const d = points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
    const dots = points.map(([x, y]) => `<circle class="point" cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${color}"/>`).join("");
    return `<path class="line" d="${d}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>${dots}`;
  });
  return frame(spec, yMax, marks.join("") + categoryLabels(spec.categories, step), "line");
}
