// A small line chart in inline SVG: time on x (the last WINDOW_MS), auto-scaled y from 0, one line
// per series, a gap where a value is null.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 420;
const HEIGHT = 170;
const PAD = { left: 48, right: 10, top: 10, bottom: 22 };
export const WINDOW_MS = 60_000;
const COLORS = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed"];

function svgNode(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// A scale top of 1, 2 or 5 times a power of ten, at least `max`.
function niceTop(max) {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((step) => step * power).find((top) => top >= max);
}

export class LineChart {
  // figure: the <figure> to draw in; format: value -> axis label text.
  constructor(figure, format) {
    this.format = format;
    this.svg = svgNode("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img" });
    this.legend = document.createElement("div");
    this.legend.className = "legend";
    figure.append(this.svg, this.legend);
  }

  // series: {name: [{t (ms since epoch), value (number or null)}]}
  draw(series, now = Date.now()) {
    const names = Object.keys(series);
    const values = names.flatMap((name) => series[name].map((point) => point.value));
    const top = niceTop(Math.max(0, ...values.filter((value) => value != null)));
    const x = (t) => PAD.left + ((t - now + WINDOW_MS) / WINDOW_MS) * (WIDTH - PAD.left - PAD.right);
    const y = (value) => HEIGHT - PAD.bottom - (value / top) * (HEIGHT - PAD.top - PAD.bottom);

    const nodes = [];
    for (const fraction of [0, 0.5, 1]) {
      const at = y(top * fraction);
      nodes.push(svgNode("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: at, y2: at, class: "grid" }));
      nodes.push(svgNode("text", { x: PAD.left - 6, y: at + 4, class: "axis", "text-anchor": "end" }, this.format(top * fraction)));
    }
    nodes.push(svgNode("text", { x: PAD.left, y: HEIGHT - 6, class: "axis" }, `-${WINDOW_MS / 1000} s`));
    nodes.push(svgNode("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, class: "axis", "text-anchor": "end" }, "now"));

    names.forEach((name, i) => {
      let path = "";
      let isDrawing = false;
      for (const point of series[name]) {
        if (point.value == null) {
          isDrawing = false;
          continue;
        }
        path += `${isDrawing ? "L" : "M"}${x(point.t).toFixed(1)},${y(point.value).toFixed(1)}`;
        isDrawing = true;
      }
      nodes.push(svgNode("path", { d: path || "M0,0", class: "line", stroke: COLORS[i % COLORS.length] }));
    });
    this.svg.replaceChildren(...nodes);

    this.legend.replaceChildren(
      ...names.map((name, i) => {
        const item = document.createElement("span");
        item.style.setProperty("--swatch", COLORS[i % COLORS.length]);
        item.textContent = name;
        return item;
      }),
    );
  }
}
