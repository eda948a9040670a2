// azero's analysis board: polls /api/state, draws the board, the graph and the panel, sends the
// person's requests (JSON POSTs, see azero/web/server.py for the API).
"use strict";
let state = null;
let lastText = "";
let strengthEdited = false;
const $ = (id) => document.getElementById(id);
const board = new BoardView($("board"), clickCell);
const graph = new GraphView($("graph"), (ply) => post("/api/goto", {ply}));
const WORK = {move: "thinking…", look: "analysing…", graph: "analysing the game…", ponder: "pondering…"};
const HEAT = {visits: "of the search's visits", policy: "the network's prior"};

function showError(text) { $("message").textContent = text; }

async function post(path, body) {
  let response, data;
  try {
    response = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                  body: JSON.stringify(body || {})});
    data = await response.json();
  } catch (error) { showError("the azero server does not answer"); return null; }
  if (!response.ok) { showError(data.error); return null; }
  showError("");
  show(data);
  return data;
}

function show(data) { state = data; lastText = ""; draw(); }

function pct(x) { return (100 * x).toFixed(1) + "%"; }

function draw() {
  if (!state) return;
  const heat = $("heat").value;
  const largest = board.draw(state, {heat, showPv: $("show-pv").checked});
  const noPolicy = heat === "policy" && state.analysis && !state.analysis.policy;
  $("legend").style.visibility = heat === "off" ? "hidden" : "visible";
  drawLegend($("legend"), largest);
  $("legend-what").textContent = noPolicy ? "this engine has no network" : HEAT[heat] || "";
  const width = Math.max(560, parseFloat($("board").getAttribute("width")));
  $("board-area").style.width = `${width}px`;
  graph.draw(state, width - 12);
  const names = sideNames(state.board_style), who = names[state.to_play];
  $("graph-title").textContent = `win-rate of the first player (${names[0]}) after each move — click to go there`;
  $("title").textContent = state.title;
  drawStatus(names, who);
  drawAnalysis(who);
  drawSettings();
  drawMoves();
  $("game-choice").hidden = !state.can_change_game;
  $("save-sgf").title = state.sgf ? "download the game as an SGF file" : "SGF has no game type for this game";
  $("note").textContent = state.message || "";
}

function drawStatus(names, who) {
  const total = state.moves.length, reviewing = state.ply < total;
  let status;
  if (state.over) status = `Game over: ${state.result}`;
  else if (state.human === "both") status = `${who[0].toUpperCase() + who.slice(1)} to move`;
  else if (reviewing) status = `Move ${state.ply} of ${total}: ${who} to move`;
  else if (state.to_play === state.human) status = `Your move (${who})`;
  else status = `Engine to move (${who})` + (state.thinking ? " — thinking…" : "");
  $("status").textContent = status;
  $("ply-label").textContent = `move ${state.ply} of ${total}`;
  $("first").disabled = $("back").disabled = state.ply === 0;
  $("forward").disabled = $("last").disabled = !reviewing;
  const yourTurn = state.human === "both" || state.to_play === state.human || reviewing;
  $("pass").hidden = !(state.pass_action !== null && yourTurn && state.legal.includes(state.pass_action));
  const inVariation = state.variation_from !== null;
  $("variation").hidden = !inVariation;
  if (inVariation) {
    const from = state.variation_from + 1;
    $("variation-text").textContent = `A variation from move ${from}; the game's own moves are kept.`;
  }
}

function drawAnalysis(who) {
  const analysis = state.analysis;
  $("work").textContent = WORK[state.work] || "";
  $("winrate-label").textContent = `win-rate of ${who} (the side to move)`;
  $("engine").textContent = state.engine;
  if (!analysis) {
    $("winrate-fill").style.width = "50%"; $("winrate-text").textContent = "–";
    $("best-move").textContent = "–"; $("visits").textContent = "0"; $("pv").textContent = "–";
    $("top-moves").querySelector("tbody").innerHTML = "";
    return;
  }
  $("winrate-fill").style.width = pct(analysis.winrate);
  $("winrate-text").textContent = pct(analysis.winrate);
  $("best-move").textContent = analysis.best_move + (analysis.proof ? ` (${analysis.proof})` : "");
  $("visits").textContent = analysis.visits.toLocaleString("en");
  $("pv").textContent = analysis.pv.join(" ") || "–";
  const body = $("top-moves").querySelector("tbody");
  body.innerHTML = "";
  const actions = new Map();
  state.cell_names.forEach((name, cell) => {
    if (name && !actions.has(name)) actions.set(name, state.cell_action[cell]);
  });
  for (const m of analysis.moves) {
    const row = document.createElement("tr");
    if (m.move === analysis.best_move) row.className = "best";
    const action = actions.get(m.move);
    const prior = analysis.policy && action !== undefined ? pct(analysis.policy[action]) : "–";
    for (const text of [m.move, m.visits.toLocaleString("en"), m.proof || pct(m.winrate), prior]) {
      const cell = document.createElement("td"); cell.textContent = text; row.appendChild(cell);
    }
    body.appendChild(row);
  }
}

function drawSettings() {
  const focused = document.activeElement;
  if (focused !== $("human")) $("human").value = String(state.human);
  if (!strengthEdited && focused !== $("strength") && focused !== $("strength-unit")) {
    const budget = state.seconds !== null ? state.seconds : state.simulations;
    $("strength").value = budget !== null ? budget : "";
    $("strength-unit").value = state.seconds !== null ? "seconds" : "simulations";
  }
  $("ponder").checked = state.ponder;
  const select = $("game");
  if (select.options.length === 0) {
    for (const spec of state.games) {
      const option = document.createElement("option");
      option.value = option.textContent = spec;
      select.appendChild(option);
    }
  }
  if (select.dataset.shown !== state.game_choice) {  // the game changed: the picker shows it (else the person's pick)
    if (![...select.options].some((o) => o.value === state.game_choice)) {
      const o = document.createElement("option"); o.value = o.textContent = state.game_choice; select.prepend(o);
    }
    select.value = select.dataset.shown = state.game_choice;
  }
}

function drawMoves() {
  const list = $("moves");
  const signature = [state.moves.join(" "), state.ply, state.variation_from].join("|");
  if (list.dataset.signature === signature) return;
  list.dataset.signature = signature;
  list.innerHTML = "";
  state.moves.forEach((move, i) => {
    const item = document.createElement("li");
    const number = document.createElement("span");
    number.className = "number";
    number.textContent = i + 1;
    item.append(number, move);
    item.dataset.ply = i + 1;
    if (i + 1 === state.ply) item.classList.add("current");
    if (i + 1 > state.ply) item.classList.add("ahead");
    if (state.variation_from !== null && i >= state.variation_from) item.classList.add("variation");
    item.addEventListener("click", () => post("/api/goto", {ply: i + 1}));
    list.appendChild(item);
  });
  const current = list.querySelector(".current");
  if (current) current.scrollIntoView({block: "nearest"});
}

function humanChoice() { return $("human").value === "both" ? "both" : parseInt($("human").value, 10); }

function clickCell(index) {
  if (!state) return;
  const action = state.cell_action[index];
  if (action >= 0) post("/api/move", {action, game_number: state.game_number});
}

function step(ply) {
  if (!state) return;
  const target = Math.max(0, Math.min(state.moves.length, ply));
  if (target !== state.ply) post("/api/goto", {ply: target});
}

async function saveSgf() {
  const response = await fetch("/api/sgf");
  if (!response.ok) { showError((await response.json()).error); return; }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(await response.blob());
  link.download = "azero-game.sgf";
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

async function openSgf() {
  const file = $("sgf-file").files[0];
  $("sgf-file").value = "";
  if (!file) return;
  // the server reads 1,000,000 characters at most: a larger file is not read into the page at all
  if (file.size > 4_000_000) { showError(`that SGF file is too big (${file.size.toLocaleString()} bytes)`); return; }
  await post("/api/sgf", {sgf: await file.text()});
}

function setStrength() {
  const value = parseFloat($("strength").value), unit = $("strength-unit").value;
  if (!(value > 0)) { showError("the strength is a number above 0"); return; }
  strengthEdited = false;
  post("/api/settings", unit === "seconds" ? {seconds: value} : {simulations: Math.round(value)});
}

async function poll() {
  try {
    const response = await fetch("/api/state");
    const text = await response.text();
    if (text !== lastText) { state = JSON.parse(text); draw(); lastText = text; }
  } catch (e) { /* the server stopped */ }
  setTimeout(poll, 300);
}

$("undo").addEventListener("click", () => post("/api/undo"));
$("pass").addEventListener("click", () => post("/api/move", {action: state.pass_action, game_number: state.game_number}));
$("first").addEventListener("click", () => step(0));
$("back").addEventListener("click", () => step(state.ply - 1));
$("forward").addEventListener("click", () => step(state.ply + 1));
$("last").addEventListener("click", () => step(state.moves.length));
$("main-line").addEventListener("click", () => post("/api/goto", {ply: state.variation_from, main_line: true}));
$("heat").addEventListener("change", draw);
$("show-pv").addEventListener("change", draw);
$("human").addEventListener("change", () => post("/api/settings", {human: humanChoice()}));
$("ponder").addEventListener("change", () => post("/api/settings", {ponder: $("ponder").checked}));
$("strength").addEventListener("input", () => { strengthEdited = true; });
$("strength").addEventListener("keydown", (event) => { if (event.key === "Enter") setStrength(); });
$("apply-strength").addEventListener("click", setStrength);
$("save-sgf").addEventListener("click", saveSgf);
$("open-sgf").addEventListener("click", () => $("sgf-file").click());
$("sgf-file").addEventListener("change", openSgf);
$("new").addEventListener("click", () => {
  const body = {human: humanChoice()};
  if (state && state.can_change_game) body.game = $("game").value;
  post("/api/new", body);
});
document.addEventListener("keydown", (event) => {
  if (!state || ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
  const moves = {ArrowLeft: state.ply - 1, ArrowRight: state.ply + 1, Home: 0, End: state.moves.length};
  if (event.key in moves) { event.preventDefault(); step(moves[event.key]); }
});
poll();
