// The win-rate graph under the board: the first player's win-rate after every move of the line
// (state.graph), the position shown marked; a click goes to the move under the pointer.
"use strict";

class GraphView {
  constructor(svg, onPick) {
    this.svg = svg;
    this.points = [];
    this.margin = {left: 40, right: 12, top: 10, bottom: 22};
    svg.addEventListener("click", (event) => {
      const ply = this.plyAt(event);
      if (ply !== null) onPick(ply);
    });
    svg.addEventListener("mousemove", (event) => this.hover(this.plyAt(event)));
    svg.addEventListener("mouseleave", () => this.hover(null));
  }

  plyAt(event) {
    if (!this.scale) return null;
    const box = this.svg.getBoundingClientRect();
    const x = (event.clientX - box.left) * (this.width / box.width);
    const ply = Math.round((x - this.margin.left) / this.scale);
    return Math.max(0, Math.min(this.last, ply));
  }

  draw(state, width) {
    const svg = this.svg, m = this.margin, height = 150;
    this.width = width;
    this.points = state.graph;
    this.last = state.graph.length - 1;
    const span = Math.max(10, this.last);
    const plotWidth = width - m.left - m.right, plotHeight = height - m.top - m.bottom;
    this.scale = plotWidth / span;
    const x = (ply) => m.left + ply * this.scale, y = (w) => m.top + (1 - w) * plotHeight;
    this.x = x; this.y = y;
    svg.innerHTML = "";
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svgElement("rect", {class: "plot", x: m.left, y: m.top, width: plotWidth, height: plotHeight}, svg);
    for (const level of [0, 0.25, 0.5, 0.75, 1]) {
      const kind = level === 0.5 ? "even" : "level";
      svgElement("line", {class: kind, x1: m.left, x2: m.left + plotWidth, y1: y(level), y2: y(level)}, svg);
      const label = svgElement("text", {class: "axis", x: m.left - 5, y: y(level), "text-anchor": "end"}, svg);
      label.textContent = `${100 * level}%`;
    }
    const step = Math.max(1, Math.ceil(span / 10 / 5) * 5);
    for (let ply = 0; ply <= span; ply += step) {
      const label = svgElement("text", {class: "axis", x: x(ply), y: height - 6, "text-anchor": "middle"}, svg);
      label.textContent = ply;
    }
    if (state.variation_from !== null && state.variation_from !== undefined) {
      svgElement("rect", {class: "variation", x: x(state.variation_from), y: m.top,
                          width: Math.max(0, x(this.last) - x(state.variation_from)), height: plotHeight}, svg);
    }
    // the known points in runs without gaps: a filled area down to 0% and a line on top
    let run = [];
    const runs = [];
    state.graph.forEach((point, ply) => {
      if (point) run.push([ply, point.winrate]); else if (run.length) { runs.push(run); run = []; }
    });
    if (run.length) runs.push(run);
    for (const part of runs) {
      const line = part.map(([ply, w]) => `${x(ply).toFixed(1)},${y(w).toFixed(1)}`).join(" ");
      const first = part[0][0], last = part[part.length - 1][0];
      svgElement("polygon", {class: "area", points: `${x(first)},${y(0)} ${line} ${x(last)},${y(0)}`}, svg);
      svgElement("polyline", {class: "series", points: line}, svg);
    }
    state.graph.forEach((point, ply) => {
      if (!point) return;
      svgElement("circle", {class: "point" + (point.final ? " final" : ""), cx: x(ply), cy: y(point.winrate), r: 2.6,
                            "data-ply": ply}, svg);
    });
    svgElement("line", {class: "current", x1: x(state.ply), x2: x(state.ply), y1: m.top, y2: m.top + plotHeight}, svg);
    const here = state.graph[state.ply];
    if (here) svgElement("circle", {class: "current-point", cx: x(state.ply), cy: y(here.winrate), r: 5}, svg);
    this.guide = svgElement("line", {class: "guide", y1: m.top, y2: m.top + plotHeight, visibility: "hidden"}, svg);
    this.tip = svgElement("text", {class: "tip", y: m.top + 12, visibility: "hidden"}, svg);
    if (this.hovered !== null && this.hovered !== undefined) this.hover(this.hovered);
  }

  hover(ply) {
    this.hovered = ply;
    if (!this.guide) return;
    const visible = ply !== null ? "visible" : "hidden";
    this.guide.setAttribute("visibility", visible);
    this.tip.setAttribute("visibility", visible);
    if (ply === null) return;
    const point = this.points[ply];
    this.guide.setAttribute("x1", this.x(ply));
    this.guide.setAttribute("x2", this.x(ply));
    let text = "not analysed yet";
    if (point) {
      text = `${(100 * point.winrate).toFixed(1)}% ` + (point.final ? "(result)" : `· ${point.visits} visits`);
    }
    this.tip.textContent = `move ${ply}: ${text}`;
    const right = this.x(ply) > this.width / 2;
    this.tip.setAttribute("x", this.x(ply) + (right ? -6 : 6));
    this.tip.setAttribute("text-anchor", right ? "end" : "start");
  }
}
