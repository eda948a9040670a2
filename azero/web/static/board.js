// The board as SVG: the board's look (state.board_style), coordinates on its edges, the heat map
// as colour with its legend, stones, the last move, the best move and the principal variation.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const SIDE_NAMES = {frame: ["red", "yellow"]};  // every other style: black and white
const HEAT_STOPS = [  // share of the largest value -> colour: blue (little) through yellow to red (most)
  [0.0, [49, 104, 174]], [0.3, [116, 173, 209]], [0.55, [254, 224, 144]], [0.8, [244, 109, 67]], [1.0, [200, 20, 38]],
];

function sideNames(style) { return SIDE_NAMES[style] || ["black", "white"]; }

function svgElement(name, attributes, parent) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, value);
  if (parent) parent.appendChild(element);
  return element;
}

function heatColour(t) {
  t = Math.max(0, Math.min(1, t));
  for (let i = 1; i < HEAT_STOPS.length; i++) {
    const [t1, c1] = HEAT_STOPS[i];
    if (t <= t1) {
      const [t0, c0] = HEAT_STOPS[i - 1];
      const f = (t - t0) / (t1 - t0);
      const mix = c0.map((v, k) => Math.round(v + f * (c1[k] - v)));
      return `rgb(${mix.join(",")})`;
    }
  }
  return `rgb(${HEAT_STOPS[HEAT_STOPS.length - 1][1].join(",")})`;
}

// Star points of a board drawn with lines (the usual 3-3 / 4-4 points and the centre).
function starPoints(height, width) {
  if (height !== width || height < 7) return [];
  const n = height, edge = n >= 13 ? 3 : 2, far = n - 1 - edge, mid = (n - 1) / 2;
  const points = [[edge, edge], [edge, far], [far, edge], [far, far]];
  if (n % 2 === 1) points.push([mid, mid]);
  if (n % 2 === 1 && n >= 15) points.push([edge, mid], [far, mid], [mid, edge], [mid, far]);
  return points;
}

class BoardView {
  constructor(svg, onClick) {
    this.svg = svg;
    this.layout = "";
    svg.addEventListener("click", (event) => {
      const index = event.target.dataset ? event.target.dataset.index : undefined;
      if (index !== undefined) onClick(parseInt(index, 10));
    });
  }

  // The parts that change only with the game: frame, lines, coordinates, the cells to click.
  build(state) {
    const {height, width} = state, style = state.board_style;
    const size = Math.max(24, Math.min(64, Math.floor(560 / Math.max(height, width))));
    const hasColumns = state.columns.length > 0, hasRows = state.rows.length > 0;
    const margin = Math.max(20, Math.round(size * 0.62));
    const left = hasRows ? margin : Math.round(size * 0.3), top = hasColumns ? margin : Math.round(size * 0.3);
    this.geometry = {size, left, top};
    const totalWidth = 2 * left + width * size, totalHeight = 2 * top + height * size;
    const svg = this.svg;
    svg.innerHTML = "";
    svg.setAttribute("viewBox", `0 0 ${totalWidth} ${totalHeight}`);
    svg.setAttribute("width", totalWidth);
    svg.setAttribute("height", totalHeight);
    svg.setAttribute("class", `style-${style}`);
    const defs = svgElement("defs", {}, svg);
    const gradients = {first: ["#666", "#000"], second: ["#fff", "#c8c8c8"]};
    if (style === "frame") Object.assign(gradients, {first: ["#ff6b6b", "#c0171d"], second: ["#fff27a", "#e0b800"]});
    for (const [name, [light, dark]] of Object.entries(gradients)) {
      const gradient = svgElement("radialGradient", {id: `stone-${name}`, cx: "35%", cy: "35%", r: "65%"}, defs);
      svgElement("stop", {offset: "0%", "stop-color": light}, gradient);
      svgElement("stop", {offset: "100%", "stop-color": dark}, gradient);
    }
    svgElement("rect", {class: "backdrop", x: 0, y: 0, width: totalWidth, height: totalHeight, rx: 6}, svg);
    const grid = svgElement("g", {class: "grid"}, svg);
    const x = (c) => left + (c + 0.5) * size, y = (r) => top + (r + 0.5) * size;
    if (style === "lines") {
      for (let r = 0; r < height; r++) svgElement("line", {x1: x(0), y1: y(r), x2: x(width - 1), y2: y(r)}, grid);
      for (let c = 0; c < width; c++) svgElement("line", {x1: x(c), y1: y(0), x2: x(c), y2: y(height - 1)}, grid);
      for (const [r, c] of starPoints(height, width)) {
        svgElement("circle", {class: "star", cx: x(c), cy: y(r), r: Math.max(2.5, size * 0.09)}, grid);
      }
    } else if (style === "frame") {
      for (let r = 0; r < height; r++) for (let c = 0; c < width; c++)
        svgElement("circle", {class: "hole", cx: x(c), cy: y(r), r: size * 0.42}, grid);
    } else {
      const right = left + width * size, bottom = top + height * size;
      for (let r = 0; r <= height; r++) {
        svgElement("line", {x1: left, y1: top + r * size, x2: right, y2: top + r * size}, grid);
      }
      for (let c = 0; c <= width; c++) {
        svgElement("line", {x1: left + c * size, y1: top, x2: left + c * size, y2: bottom}, grid);
      }
    }
    const coordinates = svgElement("g", {class: "coordinates"}, svg);
    const fontSize = Math.max(11, Math.min(16, Math.round(size * 0.34)));
    const label = (kind, side, xx, yy, text) => {
      const attributes = {class: `coord ${kind}`, "data-side": side, x: xx, y: yy, "font-size": fontSize};
      const element = svgElement("text", attributes, coordinates);
      element.textContent = text;
    };
    state.columns.forEach((text, c) => {
      label("col", "top", x(c), top / 2, text);
      label("col", "bottom", x(c), totalHeight - top / 2, text);
    });
    state.rows.forEach((text, r) => {
      label("row", "left", left / 2, y(r), text);
      label("row", "right", totalWidth - left / 2, y(r), text);
    });
    this.heatLayer = svgElement("g", {class: "heat-layer"}, svg);
    this.stoneLayer = svgElement("g", {class: "stone-layer"}, svg);
    this.markLayer = svgElement("g", {class: "mark-layer"}, svg);
    const cellLayer = svgElement("g", {class: "cell-layer"}, svg);
    this.cells = [];
    for (let i = 0; i < height * width; i++) {
      const r = Math.floor(i / width), c = i % width;
      const cell = svgElement("rect", {class: "cell", x: left + c * size, y: top + r * size, width: size, height: size,
                                       "data-index": i, "data-move": state.cell_names[i]}, cellLayer);
      svgElement("title", {}, cell).textContent = state.cell_names[i];
      this.cells.push(cell);
    }
  }

  // Everything that changes with the position and its analysis; returns the heat map's largest value.
  draw(state, options) {
    const layout = [state.game, state.board_style, state.columns.join(","), state.rows.join(",")].join("|");
    if (layout !== this.layout) { this.build(state); this.layout = layout; }
    const {size, left, top} = this.geometry, width = state.width;
    const cx = (i) => left + (i % width + 0.5) * size, cy = (i) => top + (Math.floor(i / width) + 0.5) * size;
    for (const layer of [this.heatLayer, this.stoneLayer, this.markLayer]) layer.innerHTML = "";
    const analysis = state.analysis;
    const values = !analysis ? null : {policy: analysis.policy, visits: analysis.visit_share}[options.heat] || null;
    const heat = new Map();
    let largest = 0;
    if (values) values.forEach((v, action) => {
      const cell = state.action_cell[action];
      if (cell < 0 || v <= 0) return;
      heat.set(cell, (heat.get(cell) || 0) + v);
      largest = Math.max(largest, heat.get(cell));
    });
    const winrates = new Map();
    if (analysis) for (const m of analysis.moves) winrates.set(m.move, m);
    const board = state.cells.flat();
    for (const [cell, v] of heat) {
      if (board[cell] !== 0 || v < largest * 0.005) continue;
      const t = v / largest;
      svgElement("circle", {class: "heat", cx: cx(cell), cy: cy(cell), r: size * (0.16 + 0.28 * t), fill: heatColour(t),
                            "fill-opacity": 0.35 + 0.6 * t, "data-value": v.toFixed(4)}, this.heatLayer);
    }
    board.forEach((value, i) => {
      if (value === 0) return;
      svgElement("circle", {class: "stone " + (value === 1 ? "first" : "second"), cx: cx(i), cy: cy(i), r: size * 0.46,
                            fill: `url(#stone-${value === 1 ? "first" : "second"})`}, this.stoneLayer);
    });
    if (state.last_cell >= 0 && board[state.last_cell] !== 0) {
      const last = state.last_cell;
      svgElement("circle", {class: "last", cx: cx(last), cy: cy(last), r: Math.max(3, size * 0.13)}, this.markLayer);
    }
    if (analysis && heat.size > 0) {
      const best = state.action_cell[analysis.best_action];
      if (best >= 0 && board[best] === 0)
        svgElement("circle", {class: "best", cx: cx(best), cy: cy(best), r: size * 0.44}, this.markLayer);
    }
    if (analysis && options.showPv) {
      const seen = new Set();
      analysis.pv_actions.slice(0, 10).forEach((action, n) => {
        const cell = state.action_cell[action];
        if (cell < 0 || seen.has(cell) || board[cell] !== 0) return;
        seen.add(cell);
        const player = (analysis.for_player + n) % 2 === 0 ? "first" : "second";
        svgElement("circle", {class: `pv-stone ${player}`, cx: cx(cell), cy: cy(cell), r: size * 0.4,
                              fill: `url(#stone-${player})`}, this.markLayer);
        const label = svgElement("text", {class: `pv-number ${player}`, x: cx(cell), y: cy(cell),
                                          "font-size": Math.max(10, size * 0.36)}, this.markLayer);
        label.textContent = n + 1;
      });
    }
    const legal = new Set(state.legal);
    const yourTurn = state.human === "both" || state.to_play === state.human || state.ply < state.moves.length;
    this.cells.forEach((cell, i) => {
      const action = state.cell_action[i];
      cell.classList.toggle("legal", yourTurn && !state.thinking && action >= 0 && legal.has(action));
      const name = state.cell_names[i];
      let text = name;
      if (analysis && values && heat.has(i) && board[i] === 0) {
        const what = options.heat === "policy" ? "network policy" : "of the visits";
        text += ` — ${(100 * heat.get(i)).toFixed(1)}% ${what}`;
        const move = winrates.get(name);
        if (move) text += `, win-rate ${(100 * move.winrate).toFixed(1)}% (${move.visits} visits)`;
      }
      if (cell.firstChild.textContent !== text) cell.firstChild.textContent = text;
    });
    return largest;
  }
}

// The legend: the colour scale from 0 to the largest value shown.
function drawLegend(svg, largest) {
  svg.innerHTML = "";
  const width = 150;
  svg.setAttribute("viewBox", `0 0 ${width} 28`);
  svg.setAttribute("width", width);
  svg.setAttribute("height", 28);
  const defs = svgElement("defs", {}, svg);
  const gradient = svgElement("linearGradient", {id: "heat-scale"}, defs);
  for (let i = 0; i <= 10; i++) svgElement("stop", {offset: `${i * 10}%`, "stop-color": heatColour(i / 10)}, gradient);
  svgElement("rect", {x: 0.5, y: 1, width: width - 1, height: 12, rx: 3, fill: "url(#heat-scale)", stroke: "#0003"},
             svg);
  const low = svgElement("text", {class: "legend-label", x: 1, y: 25}, svg);
  low.textContent = "0%";
  const high = svgElement("text", {class: "legend-label", x: width - 1, y: 25, "text-anchor": "end"}, svg);
  high.textContent = largest > 0 ? `${(100 * largest).toFixed(1)}%` : "–";
}
