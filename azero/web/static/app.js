// azero GUI: polls /api/state, draws the board with the live analysis, sends moves.
"use strict";
let state = null;
const $ = (id) => document.getElementById(id);

async function post(path, body) {
  const response = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                      body: JSON.stringify(body || {})});
  const data = await response.json();
  if (!response.ok) { $("message").textContent = data.error; return null; }
  $("message").textContent = "";
  state = data;
  draw();
  return data;
}

function pct(x) { return (100 * x).toFixed(1) + "%"; }

function draw() {
  if (!state) return;
  const board = $("board");
  board.className = state.game.split(":")[0];
  board.style.gridTemplateColumns = `repeat(${state.width}, 40px)`;
  const cells = state.height * state.width;
  if (board.children.length !== cells) {
    board.innerHTML = "";
    for (let i = 0; i < cells; i++) {
      const cell = document.createElement("div");
      cell.className = "cell";
      cell.dataset.index = i;
      cell.addEventListener("click", () => clickCell(i));
      board.appendChild(cell);
    }
  }
  const analysis = state.analysis;
  const heatMode = $("heat").value;
  const heatByCell = new Map();
  if (analysis && heatMode !== "off") {
    const values = heatMode === "policy" ? analysis.policy : analysis.visit_share;
    if (values) values.forEach((v, action) => {
      const cell = state.action_cell[action];
      if (cell >= 0 && v > 0) heatByCell.set(cell, v);
    });
  }
  const pvCells = new Map();
  if (analysis) analysis.pv_actions.slice(0, 9).forEach((a, i) => {
    const c = state.action_cell[a]; if (c >= 0 && !pvCells.has(c)) pvCells.set(c, i + 1);
  });
  const legal = new Set(state.legal);
  const humanTurn = !state.over && state.to_play === state.human && !state.thinking;
  for (let i = 0; i < cells; i++) {
    const cell = board.children[i];
    const r = Math.floor(i / state.width), c = i % state.width;
    const value = state.cells[r][c];
    const action = state.cell_action[i];
    cell.className = "cell";
    cell.dataset.action = action;
    cell.innerHTML = "";
    if (value !== 0) {
      const stone = document.createElement("div");
      stone.className = "stone " + (value === 1 ? "first" : "second");
      cell.appendChild(stone);
    } else if (humanTurn && legal.has(action)) {
      cell.classList.add("legal");
    }
    if (i === state.last_cell && value !== 0) cell.classList.add("last");
    if (heatByCell.has(i) && value === 0) {
      const heat = document.createElement("div");
      heat.className = "heat";
      const v = heatByCell.get(i);
      heat.style.background = `rgba(231, 76, 60, ${Math.min(0.85, 0.1 + v * 1.5)})`;
      if (v >= 0.01) heat.textContent = Math.round(100 * v);
      cell.appendChild(heat);
    }
    if (analysis && state.action_cell[analysis.best_action] === i) cell.classList.add("best");
    if (pvCells.has(i) && value === 0) {
      cell.classList.add("pv");
      const n = document.createElement("span"); n.className = "pvnum"; n.textContent = pvCells.get(i);
      cell.appendChild(n);
    }
  }
  $("title").textContent = state.title;
  const who = state.to_play === 0 ? "first player" : "second player";
  $("status").textContent = state.over ? `Game over: ${state.result}` :
      (state.to_play === state.human ? `Your move (${who})` : `Engine to move (${who})`);
  $("engine").textContent = `Engine: ${state.engine}` + (state.thinking ? " — thinking…" : "");
  if (analysis) {
    const forYou = analysis.for_player === state.human;
    $("winrate-label").textContent = `win-rate for the side to move (${forYou ? "you" : "engine"})`;
    $("winrate-fill").style.width = pct(analysis.winrate);
    $("winrate-text").textContent = pct(analysis.winrate);
    $("best-move").textContent = analysis.best_move;
    $("visits").textContent = analysis.visits;
    $("pv").textContent = analysis.pv.join(" ") || "–";
    const body = $("top-moves").querySelector("tbody");
    body.innerHTML = "";
    for (const m of analysis.moves) {
      const row = document.createElement("tr");
      row.innerHTML = `<td>${m.move}</td><td>${m.visits}</td><td>${pct(m.winrate)}</td>`;
      body.appendChild(row);
    }
  } else {
    $("winrate-text").textContent = "–"; $("best-move").textContent = "–"; $("visits").textContent = "0";
    $("pv").textContent = "–"; $("top-moves").querySelector("tbody").innerHTML = "";
  }
  $("pass").hidden = !(state.pass_action !== null && humanTurn && legal.has(state.pass_action));
  const moves = $("moves"); moves.innerHTML = "";
  for (const m of state.moves) { const li = document.createElement("li"); li.textContent = m; moves.appendChild(li); }
  if (state.message && !$("message").textContent) $("message").textContent = "";
  $("game-choice").hidden = !state.can_change_game;
  $("sgf").hidden = !state.sgf;
  const select = $("game");
  if (select.options.length === 0) {
    const options = state.games.includes(state.game) ? state.games : [state.game].concat(state.games);
    for (const g of options) { const o = document.createElement("option"); o.value = o.textContent = g; select.appendChild(o); }
    select.value = state.game;
  }
}

function clickCell(index) {
  if (!state) return;
  const action = state.cell_action[index];
  post("/api/move", {action});
}

async function poll() {
  try {
    const response = await fetch("/api/state");
    state = await response.json();
    draw();
  } catch (e) { /* the server stopped */ }
  setTimeout(poll, 300);
}

$("undo").addEventListener("click", () => post("/api/undo"));
$("pass").addEventListener("click", () => post("/api/move", {action: state.pass_action}));
$("heat").addEventListener("change", draw);
$("new").addEventListener("click", () => {
  const body = {human: parseInt($("human").value, 10)};
  const sims = parseInt($("sims").value, 10);
  if (sims > 0) body.simulations = sims;
  if (state && state.can_change_game) body.game = $("game").value;
  post("/api/new", body);
});
poll();
