/**
 * The HTML report's page: escaping, tables, and the self-contained document
 * around the report's body (style, the inlined chart library, the chart
 * specs as JSON and the script that draws them).
 */
import { formatDurationSource } from "../../lib/units.ts";
import type { ChartLibrary } from "./chart_library.ts";
import type { ChartSpec } from "./html_charts.ts";

/** Escapes text for HTML content and attribute values. */
export function esc(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!,
  );
}

/** An HTML table of escaped cells. */
export function table(header: string[], body: string[][]): string {
  return `<table><thead><tr>${
    header.map((h) => `<th>${esc(h)}</th>`).join("")
  }</tr></thead><tbody>${
    body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("")
  }</tbody></table>`;
}

/** Serialises a value for a `<script type="application/json">` block. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

/** The whole document: `title`, the body's `parts`, and the charts drawn from `charts`. */
export function htmlPage(
  title: string,
  parts: string[],
  charts: ChartSpec[],
  lib: ChartLibrary,
): string {
  const library = lib.source.replace(/<\/script/gi, "<\\/script");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1400px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta { color: #555; } .noise { color: #a40; } .quick { background: #fff3cd; padding: 4px 8px; }
.answer { font-size: 18px; } .warnings { color: #8a3b00; } pre { font-size: 12px; background: #f8f8f8; padding: 8px; overflow-x: auto; } .verdict { font-size: 16px; font-weight: 600; } .rule { color: #444; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; } th { background: #f4f4f4; }
td:first-child, th:first-child, #verdict td:last-child { text-align: left; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 16px; }
figure.chart { margin: 0; border: 1px solid #eee; padding: 8px; } figure.wide { grid-column: 1 / -1; }
figcaption { font-weight: 600; margin-bottom: 4px; }
</style>
<script>${library}</script>
</head>
<body>
${parts.join("\n")}
<script type="application/json" id="sbilab-charts">${scriptJson(charts)}</script>
<script>
${formatDurationSource()}
(function () {
  var specs = JSON.parse(document.getElementById("sbilab-charts").textContent);
  var drawn = [];
  specs.forEach(function (spec) {
    var config = spec.config;
    config.options = Object.assign({ animation: false, maintainAspectRatio: false, responsive: true }, config.options);
    config.options.plugins = Object.assign({ legend: { position: "bottom" } }, config.options.plugins);
    config.options.scales = config.options.scales || {};
    (spec.percentileAxes || []).forEach(function (axis) {
      var scale = config.options.scales[axis] = config.options.scales[axis] || {};
      var names = { 1: "min", 2: "p50", 10: "p90", 100: "p99", 1000: "p99.9", 10000: "p99.99", 100000: "p99.999" };
      scale.ticks = Object.assign({}, scale.ticks, {
        callback: function (v) { return names[Math.round(Number(v))] || ""; }
      });
    });
    spec.durationAxes.forEach(function (axis) {
      var scale = config.options.scales[axis] = config.options.scales[axis] || {};
      var log = scale.type === "logarithmic";
      scale.ticks = Object.assign({}, scale.ticks, {
        callback: function (v) {
          var x = Number(v);
          if (!log) return formatDuration(x);
          // Label 1, 2 and 5 of each decade only, so labels never overlap.
          var mantissa = Math.round(x / Math.pow(10, Math.floor(Math.log10(x))) * 1000) / 1000;
          return mantissa === 1 || mantissa === 2 || mantissa === 5 ? formatDuration(x) : "";
        }
      });
    });
    config.options.plugins.tooltip = {
      callbacks: {
        label: function (ctx) {
          var raw = ctx.raw;
          var durY = spec.durationAxes.indexOf("y") >= 0;
          var value = Array.isArray(raw)
            ? raw.map(spec.durationAxes.length ? formatDuration : function (x) { return x.toFixed(3) + "×"; }).join(" – ")
            : raw && typeof raw === "object" && durY
            ? formatDuration(raw.y) + (spec.percentileAxes
              ? " at p" + String(+(100 * (1 - 1 / raw.x)).toFixed(3))
              : " at " + Math.round(raw.x) + " req/s" + (raw.n ? ", " + raw.n + " in flight" : ""))
            : raw && typeof raw === "object" ? formatDuration(raw.x) + " (" + (raw.y * 100).toFixed(1) + " %)"
            : spec.durationAxes.length ? formatDuration(raw) : String(raw);
          return ctx.dataset.label + ": " + value;
        }
      }
    };
    var chart = new Chart(document.getElementById(spec.id), config);
    drawn.push({
      id: spec.id,
      datasets: chart.data.datasets.length,
      points: chart.data.datasets.reduce(function (n, d) {
        return n + d.data.filter(function (x) { return x !== null; }).length;
      }, 0)
    });
  });
  window.sbilabCharts = drawn;
  document.body.setAttribute("data-charts", String(drawn.length));
})();
</script>
</body>
</html>
`;
}
