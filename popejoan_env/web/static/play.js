/*
 * play.js — the play page (index.html, served at "/"): play Pope Joan against the agents.
 * It also exports the helpers the replay page imports (cards, board, played grid, API calls);
 * the play page itself starts only on a page whose <body data-page="play">.
 *
 * Test hooks: data-testid="…" (the element ids are the same unless noted).
 * Setup form
 *   setup              the setup form (hidden while a game is shown)
 *   players            select: table size 3–8 (from GET /api/options "players")
 *   preset             select: rules preset ("modern", "victorian")
 *   opponent-K         select for seat K = 1 … players-1; option values are /api/options "opponents" entries
 *   mode               select: "single" (one deal) | "session" (k deals, balances carried)
 *   session-deals      number input: k (used when mode = "session"; reset to 2·players when the size changes)
 *   start-game         submit button: POST /api/games
 * Header and messages
 *   deal-number        "Deal 2 of 8" (data-deal, data-deals)
 *   speed              select: milliseconds per shown play; "0" = instant (also ?speed=0 in the URL)
 *   new-game           button: back to the setup form (shown while a game is on)
 *   replay-link        link to /replay
 *   message            message area (hidden when empty); data-kind="error" | "info"; text in message-text;
 *                      message-close dismisses it. API errors ({"error": …}) are shown here.
 * Table
 *   table              the game view; data-busy="true" while a request runs or plays are being shown,
 *                      "false" when idle (wait for it before reading); data-game-id; data-over="true" once the
 *                      deal's last play has been shown ("false" before)
 *   board              the staking board; board-<comp> for comp in pope, matrimony, intrigue, ace, king,
 *                      queen, jack, game, with data-count="<n>"; the number alone in board-<comp>-count
 *   turnup             the turn-up card (data-card="QH"); trumps: the trumps suit (data-suit="H")
 *   seat-K             a seat (K = 0 … n-1; seat 0 is you): data-cards-left, data-balance, data-dealer,
 *                      data-leader, data-to-act ("true"/"false"); inside: seat-K-name, seat-K-player,
 *                      seat-K-cards, seat-K-balance, and the badges seat-K-dealer / seat-K-leader /
 *                      seat-K-turn (present only when true)
 *   other-seats        container of seats 1 … n-1
 *   turn-info          whose turn it is and why; data-why = "lead" | "due" | "waiting" | "over"
 *   hand               your hand; card-<XX> (e.g. card-5S, card-TD) one button per card, in id order;
 *                      data-card, data-legal="true|false"; cards not in state.legal are disabled
 *   played             the cards played this deal by suit: rows played-C, played-D, played-H, played-S
 *                      in rank order; played-<XX> a cell with data-state = "played" | "dead" (known dead)
 *                      | "turnup" | "unplayed" | "out" (the 8♦), data-lead="true" on a lead, and the
 *                      lead marker lead-<XX> inside it
 *   last-play          the card just played (data-seat, data-card, data-lead); last-play-caption its text
 *   play-log           this deal's plays, newest first: log-<i> (i = index in the deal's history) with
 *                      data-seat, data-card, data-lead, data-auto; class "newest" on the newest and
 *                      "fresh" on those of the last response; award lines log-award-<j> (j = index in
 *                      state.awards)
 *   hint               button: GET /api/games/{id}/hint (enabled when you have a choice)
 *   hint-panel         the hint: hint-bar-<XX> per card (data-prob = probability), hint-best
 *                      (data-card) the network's best card, hint-pimc (data-card) pimc's lead,
 *                      hint-unavailable the reason the network is unavailable, hint-model its path
 * End of a deal
 *   deal-over          the end-of-deal panel (visible once the deal's last play has been shown);
 *                      deal-winner, awards (award-<j> per award), payments (payment-<j> per payment),
 *                      deltas (table; delta-K per seat with data-delta and data-balance),
 *                      board-after (what stays on the board), session-over (a session of k > 1 deals is over)
 *   next-deal          button: POST /api/games/{id}/next (a session with deals left)
 *   deal-over-new-game button: back to the setup form (single deal, or the session is over)
 *   deal-over-hide     button: hide the panel to look at the table (deal-over-show, in turn-info, brings it back)
 * The URL hash #game=<id> is kept up to date; reloading the page resumes that game.
 */

export const SUITS = ["C", "D", "H", "S"];
export const SUIT_SYMBOL = { C: "♣", D: "♦", H: "♥", S: "♠" };
export const SUIT_NAME = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const RANK_NAME = {
  A: "ace", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
  T: "ten", J: "jack", Q: "queen", K: "king",
};
const HONOUR_RANK = { ace: "A", king: "K", queen: "Q", jack: "J" };
const PAIRS = { matrimony: ["K", "Q"], intrigue: ["Q", "J"] };
export const POPE = "9D";
const NOT_IN_PACK = "8D";

// ------------------------------------------------------------------ small DOM and card helpers

/** Create an element: attrs may hold class, text, testid, dataset, on<event> and plain attributes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "testid") { node.dataset.testid = value; }
    else if (key === "style") node.style.cssText = value; // through the CSSOM: the server's CSP refuses style attributes
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** The rank character of a notation card ("TS" -> "T"). */
export const rankOf = (card) => card.slice(0, -1);
/** The suit character of a notation card ("TS" -> "S"). */
export const suitOf = (card) => card.slice(-1);
/** The card's id (suit * 13 + rank, ace low), the order hands are shown in. */
export const cardId = (card) => SUITS.indexOf(suitOf(card)) * 13 + "A23456789TJQK".indexOf(rankOf(card));
/** Whether a card (or a suit letter) is red. */
export const isRed = (cardOrSuit) => ["D", "H"].includes(cardOrSuit.slice(-1));
/** "TS" -> "10♠". */
export function cardLabel(card) {
  const rank = rankOf(card);
  return `${rank === "T" ? "10" : rank}${SUIT_SYMBOL[suitOf(card)] ?? "?"}`;
}
/** "TS" -> "ten of spades". */
export const cardName = (card) => `${RANK_NAME[rankOf(card)] ?? rankOf(card)} of ${SUIT_NAME[suitOf(card)] ?? suitOf(card)}`;

/** A card face: size "" (hand), "small", "mini" or "big"; tag "button" for a clickable card. */
export function cardElement(card, { size = "", tag = "div", testid = null, extraClass = "" } = {}) {
  const label = cardLabel(card);
  const node = el(tag, {
    class: ["card", size, isRed(card) ? "red" : "black", extraClass].filter(Boolean).join(" "),
    testid, title: cardName(card), "aria-label": cardName(card), dataset: { card },
  });
  if (tag === "button") node.type = "button";
  node.append(el("span", { class: "corner", text: label }), el("span", { class: "pip", text: SUIT_SYMBOL[suitOf(card)] ?? "?" }));
  if (!size) node.append(el("span", { class: "corner bottom", text: label }));
  return node;
}

/** An inline card name for running text: "10♠" in red or black. */
export const cardText = (card) => el("span", { class: `cardtext ${isRed(card) ? "red" : ""}`, text: cardLabel(card) });

/** Ranks low to high under the rules (ace low unless ace_high). */
export const rankOrder = (rules) => (rules && rules.ace_high ? "23456789TJQKA" : "A23456789TJQK").split("");

/** Resolve after ms milliseconds. */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A display name for an opponent entry of /api/options ("models/ppo_x/model.zip" -> "model ppo_x"). */
export function playerLabel(name) {
  if (typeof name !== "string") return String(name);
  if (name.includes("/") || name.endsWith(".zip")) {
    const parts = name.split("/").filter(Boolean);
    const file = parts[parts.length - 1] ?? name;
    const dir = parts.length > 1 ? parts[parts.length - 2] : "";
    return `model ${file === "model.zip" && dir ? dir : file}`;
  }
  return name;
}

/** Whether an /api/options opponent entry is a model file (which can show move probabilities). */
export const isModel = (name) => typeof name === "string" && (name.includes("/") || name.endsWith(".zip"));

// ------------------------------------------------------------------ API

/** An error reported by the server ({"error": …}) or by the network. */
export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.status = status;
  }
}

/** Call the same-origin API; JSON in and out (raw: send body as is). Throws ApiError with the server's sentence. */
export async function api(method, path, body = undefined, { raw = false } = {}) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = raw ? "application/octet-stream" : "application/json";
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(`The server cannot be reached (${err.message}).`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`.trim();
    if (data && typeof data.error === "string") message = data.error;
    else if (data && data.detail !== undefined) message = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    else if (text && !data) message = `${message}: ${text.slice(0, 200)}`;
    throw new ApiError(message, response.status);
  }
  if (data === null) throw new ApiError(`The server sent an empty or non-JSON answer to ${method} ${path}.`, response.status);
  return data;
}

/** Show a message ("error" or "info") in the page's message area; an empty text hides it. */
export function showMessage(text, kind = "info") {
  const box = document.getElementById("message");
  if (!box) return;
  document.getElementById("message-text").textContent = text || "";
  box.dataset.kind = kind;
  box.classList.toggle("error", kind === "error");
  box.classList.toggle("hidden", !text);
}

/** Wire the message area's close button. */
export function initMessage() {
  const close = document.querySelector("#message .close");
  if (close) close.addEventListener("click", () => showMessage(""));
}

// ------------------------------------------------------------------ board

const BOARD_LAYOUT = ["ace", "pope", "king", "jack", null, "queen", "intrigue", "game", "matrimony"];

function compartmentNote(comp, trumps) {
  const t = trumps ? SUIT_SYMBOL[trumps] : "";
  if (comp === "pope") return "9♦";
  if (comp === "game") return "first out";
  if (PAIRS[comp]) return `${PAIRS[comp][0]}${t} + ${PAIRS[comp][1]}${t}`;
  return `${HONOUR_RANK[comp]}${t} trumps`;
}

/** Render the staking board (eight compartments round the turn-up and trumps) into container. */
export function renderBoard(container, board, { turnup = null, trumps = null, previous = null } = {}) {
  const grid = el("div", { class: "board", testid: "board-grid" });
  for (const comp of BOARD_LAYOUT) {
    if (comp === null) {
      const centre = el("div", { class: "board-center" });
      if (turnup) centre.append(cardElement(turnup, { size: "small", testid: "turnup" }));
      if (trumps) {
        centre.append(el("div", { class: "trumps", id: "trumps", testid: "trumps", dataset: { suit: trumps } },
          "trumps ", el("span", { class: `sym ${isRed(trumps) ? "red" : ""}`, text: SUIT_SYMBOL[trumps] ?? trumps })));
      }
      grid.append(centre);
      continue;
    }
    const count = board && board[comp] !== undefined ? board[comp] : 0;
    const changed = previous && previous[comp] !== undefined && previous[comp] !== count;
    grid.append(el("div", {
      class: `compartment ${comp} ${count === 0 ? "empty" : ""} ${changed ? "changed" : ""}`,
      testid: `board-${comp}`, id: `board-${comp}`, dataset: { count: String(count), compartment: comp },
      title: `${comp}: ${count} counter${count === 1 ? "" : "s"}`,
    },
    el("span", { class: "label", text: comp }),
    el("span", { class: "count", testid: `board-${comp}-count`, text: String(count) }),
    el("span", { class: "sub", text: compartmentNote(comp, trumps) })));
  }
  container.replaceChildren(grid);
}

/** Which step of a deal's history (index of the play) made an award; -1 for the turn-up. */
export function awardStep(award, plays, trumps) {
  const [cause, , comp] = award;
  if (cause === "turnup") return -1;
  const last = plays.length - 1;
  const indexOf = (card) => plays.findIndex((p) => p.card === card);
  if (cause === "game") return last;
  if (comp === "pope") return indexOf(POPE) >= 0 ? indexOf(POPE) : last;
  if (HONOUR_RANK[comp]) {
    const i = indexOf(HONOUR_RANK[comp] + trumps);
    return i >= 0 ? i : last;
  }
  if (PAIRS[comp]) {
    const steps = PAIRS[comp].map((r) => indexOf(r + trumps));
    return steps.every((s) => s >= 0) ? Math.max(...steps) : last;
  }
  return last;
}

/** Describe an award [cause, seat, compartment, counters] in words. */
export function describeAward(award, seatLabel, trumps) {
  const [cause, seat, comp, amount] = award;
  const t = trumps ? SUIT_SYMBOL[trumps] : "";
  const how = {
    turnup: comp === "pope" ? "the Pope was turned up" : comp === "game" ? "the Pope was turned up" : `the ${comp} of trumps was turned up`,
    game: "went out first",
    play: comp === "pope" ? "played the Pope (9♦)" : PAIRS[comp] ? `played ${PAIRS[comp][0]}${t} and ${PAIRS[comp][1]}${t}` : `played ${HONOUR_RANK[comp] ?? comp}${t}`,
  }[cause] ?? cause;
  return `${seatLabel(seat)} took ${comp}: ${amount} counter${amount === 1 ? "" : "s"} (${how})`;
}

/** Describe a payment [from, to, counters] in words. */
export function describePayment(payment, seatLabel) {
  const [from, to, amount] = payment;
  const payee = seatLabel(to) === "You" ? "you" : seatLabel(to);
  if (amount === 0) return `${seatLabel(from)} paid ${payee} nothing (holds the Pope, 9♦)`;
  return `${seatLabel(from)} paid ${payee} ${amount} counter${amount === 1 ? "" : "s"}`;
}

// ------------------------------------------------------------------ played grid

/**
 * Render the cards played this deal by suit (rows C, D, H, S in rank order).
 * plays: [{card, lead, seat}] in order; known: cards known to be dead; latest: the card to highlight.
 */
export function renderPlayedGrid(container, { plays = [], knownDead = [], turnup = null, rules = null, latest = null } = {}) {
  const played = new Map(plays.map((p, i) => [p.card, { ...p, index: i }]));
  const dead = new Set(knownDead);
  const grid = el("div", { class: "played", testid: "played-grid" });
  for (const suit of SUITS) {
    const row = el("div", { class: "row", testid: `played-${suit}`, id: `played-${suit}` },
      el("span", { class: `suit-label ${isRed(suit) ? "red" : ""}`, text: SUIT_SYMBOL[suit], title: SUIT_NAME[suit] }));
    for (const rank of rankOrder(rules)) {
      const card = rank + suit;
      const testid = `played-${card}`;
      let cell;
      if (card === NOT_IN_PACK) {
        cell = el("div", { class: "cell out", testid, dataset: { state: "out" }, title: "the 8♦ is not in the pack" });
      } else if (played.has(card)) {
        const play = played.get(card);
        cell = el("div", {
          class: `cell ${card === latest ? "latest" : ""}`, testid,
          dataset: { state: "played", lead: String(Boolean(play.lead)), seat: String(play.seat), index: String(play.index) },
          title: `${cardName(card)}: ${play.lead ? "led" : "played"} by seat ${play.seat}`,
        }, cardElement(card, { size: "mini" }));
        if (play.lead) cell.append(el("span", { class: "lead-mark", testid: `lead-${card}`, text: "L", title: "lead" }));
      } else if (card === turnup) {
        cell = el("div", { class: "cell turnup", testid, dataset: { state: "turnup" }, title: "the turn-up (dead hand)" },
          cardElement(card, { size: "mini" }));
      } else if (dead.has(card)) {
        cell = el("div", { class: "cell empty dead", testid, dataset: { state: "dead" }, title: `${cardName(card)} is in the dead hand`, text: "✕" });
      } else {
        cell = el("div", { class: "cell empty", testid, dataset: { state: "unplayed" }, text: rank === "T" ? "10" : rank });
      }
      row.append(cell);
    }
    grid.append(row);
  }
  grid.append(el("div", { class: "legend", text: "L = lead · ✕ = known dead card · blue = turn-up" }));
  container.replaceChildren(grid);
}

/** Render move probabilities as bars, best first; testPrefix gives each bar's test id prefix. */
export function renderProbBars(container, probs, { best = null, testPrefix = "hint-bar" } = {}) {
  const entries = Object.entries(probs || {}).sort((a, b) => b[1] - a[1]);
  const top = best ?? (entries.length ? entries[0][0] : null);
  const bars = el("div", { class: "bars" });
  for (const [card, p] of entries) {
    bars.append(el("div", {
      class: `bar-row ${card === top ? "best" : ""}`, testid: `${testPrefix}-${card}`, dataset: { card, prob: String(p) },
    },
    cardText(card),
    el("div", { class: "bar" }, el("span", { style: `width: ${Math.max(0, Math.min(1, p)) * 100}%` })),
    el("span", { class: "pct", text: `${(p * 100).toFixed(1)}%` })));
  }
  container.replaceChildren(bars);
}

// ------------------------------------------------------------------ the play page

const app = {
  options: null,
  gameId: null,
  state: null,
  token: 0,
  requests: 0,
  speed: 450,
  animating: false,
  sizeBefore: 0,
  hint: null,
};

const $ = (id) => document.getElementById(id);

function seatLabelFor(state) {
  return (seat) => {
    if (seat === 0) return "You";
    const info = state.seats?.[seat];
    return info && info.name ? `Seat ${seat} (${playerLabel(info.name)})` : `Seat ${seat}`;
  };
}

function setBusy() {
  const busy = app.requests > 0 || app.animating;
  $("table").dataset.busy = String(Boolean(busy));
  const state = app.state;
  $("hint").disabled = Boolean(busy) || !state || !state.legal || state.legal.length === 0;
}

async function request(method, path, body) {
  app.requests += 1;
  setBusy();
  try {
    return await api(method, path, body);
  } finally {
    app.requests -= 1;
    setBusy();
  }
}

// ---- setup form

const PRESET_NOTES = {
  modern: "lead the lowest card of a suit; a turned-up Pope pays the dealer",
  victorian: "lead any card; a fixed stock of stops; a turned-up Pope ends the deal",
};

function buildOpponentSelects() {
  const n = Number($("players").value);
  const box = $("opponents");
  const before = [...box.querySelectorAll("select")].map((s) => s.value);
  box.replaceChildren();
  const preset = $("preset").value;
  const meta = new Map((app.options.models || []).map((m) => [m.path, m]));
  for (let seat = 1; seat < n; seat++) {
    const select = el("select", { id: `opponent-${seat}`, testid: `opponent-${seat}`, name: `opponent-${seat}` });
    for (const name of app.options.opponents) {
      const m = meta.get(name);
      const fits = !m || ((m.players || []).includes(n) && (m.presets || []).includes(preset));
      const note = m && !fits ? ` (trained for ${(m.players || []).join("/")} players, ${(m.presets || []).join("/")})` : "";
      select.append(el("option", { value: name, text: playerLabel(name) + note, title: name, disabled: !fits }));
    }
    const usable = (name) => [...select.options].some((o) => o.value === name && !o.disabled);
    const fallback = usable(app.options.default_opponent) ? app.options.default_opponent : app.options.opponents[0];
    select.value = usable(before[seat - 1]) ? before[seat - 1] : fallback;
    box.append(el("div", { class: "row" }, el("label", { for: `opponent-${seat}`, text: `Seat ${seat}` }), select));
  }
  if (n !== app.sizeBefore) $("session-deals").value = String(2 * n);
  app.sizeBefore = n;
}

function updateMode() {
  const session = $("mode").value === "session";
  $("session-deals").disabled = !session;
  $("session-note").classList.toggle("muted", !session);
}

async function loadOptions() {
  try {
    app.options = await request("GET", "/api/options");
  } catch (err) {
    showMessage(`Cannot load the game options: ${err.message}`, "error");
    return;
  }
  const players = $("players");
  players.replaceChildren(...app.options.players.map((n) => el("option", { value: String(n), text: `${n} players` })));
  players.value = app.options.players.includes(4) ? "4" : String(app.options.players[0]);
  $("preset").replaceChildren(...app.options.presets.map((p) => el("option", { value: p, text: p })));
  $("preset").value = app.options.presets[0];
  $("preset-note").textContent = PRESET_NOTES[$("preset").value] ?? "";
  buildOpponentSelects();
  updateMode();
}

async function startGame(event) {
  event.preventDefault();
  if (!app.options) {
    await loadOptions();
    if (!app.options) return;
  }
  const n = Number($("players").value);
  const opponents = [];
  for (let seat = 1; seat < n; seat++) opponents.push($(`opponent-${seat}`).value);
  const deals = $("mode").value === "session" ? Number($("session-deals").value) : 1;
  if ($("mode").value === "session" && (!Number.isInteger(deals) || deals < 2)) {
    showMessage("A session needs a whole number of deals, at least 2.", "error");
    return;
  }
  $("start-game").disabled = true;
  try {
    const answer = await request("POST", "/api/games", { players: n, preset: $("preset").value, opponents, deals });
    showMessage("");
    openGame(answer.game_id, answer.state);
  } catch (err) {
    showMessage(err.message, "error");
  } finally {
    $("start-game").disabled = false;
  }
}

function openGame(gameId, state) {
  app.gameId = gameId;
  app.state = null;
  history.replaceState(null, "", `#game=${encodeURIComponent(gameId)}`);
  $("setup").classList.add("hidden");
  $("game").classList.remove("hidden");
  $("new-game").classList.remove("hidden");
  $("table").dataset.gameId = gameId;
  showState(state);
}

function backToSetup() {
  app.token += 1;
  app.animating = false;
  app.gameId = null;
  app.state = null;
  history.replaceState(null, "", location.pathname + location.search);
  $("game").classList.add("hidden");
  $("new-game").classList.add("hidden");
  $("setup").classList.remove("hidden");
  $("deal-number").textContent = "";
  showMessage("");
  setBusy();
}

// ---- rendering one state

/** Seat balances, cards left, the board and the leader as they stood after the first `shown` plays of the history. */
function positionAfter(state, shown) {
  const board = { ...state.board };
  const balances = state.seats.map((s) => s.balance);
  const cardsLeft = state.seats.map((s) => s.cards_left);
  const plays = state.history;
  for (let i = shown; i < plays.length; i++) cardsLeft[plays[i].seat] += 1;
  let leader = state.leader;
  if (shown < plays.length) {
    const lead = plays.slice(0, shown).filter((p) => p.lead).pop();
    leader = lead ? lead.seat : state.eldest;
  }
  for (const award of state.awards || []) {
    if (awardStep(award, plays, state.trumps) >= shown) { // not made yet: its counters are still on the board
      board[award[2]] = (board[award[2]] ?? 0) + award[3];
      balances[award[1]] -= award[3];
    }
  }
  if (shown < plays.length) {
    for (const [from, to, amount] of state.payments || []) {
      balances[from] += amount;
      balances[to] -= amount;
    }
  }
  return { board, balances, cardsLeft, leader };
}

function seatPanel(state, seat, position, shown) {
  const info = state.seats[seat];
  const label = seatLabelFor(state);
  const toAct = !app.animating && state.to_act === seat;
  const leader = position.leader === seat;
  const acting = app.animating && shown > 0 && state.history[shown - 1]?.seat === seat;
  const panel = el("div", {
    class: `seat ${toAct ? "to-act" : ""} ${acting ? "acting" : ""} ${state.over && state.winner === seat && !app.animating ? "winner" : ""}`,
    id: `seat-${seat}`, testid: `seat-${seat}`,
    dataset: {
      seat: String(seat), cardsLeft: String(position.cardsLeft[seat]), balance: String(position.balances[seat]),
      dealer: String(Boolean(info.is_dealer)), leader: String(leader), toAct: String(toAct),
    },
  },
  el("div", { class: "name", testid: `seat-${seat}-name`, text: seat === 0 ? "You (seat 0)" : `Seat ${seat}` }),
  el("div", { class: "player", testid: `seat-${seat}-player`, text: seat === 0 ? "human" : playerLabel(info.name), title: info.name }),
  el("div", { class: "stats" },
    el("span", {}, el("b", { testid: `seat-${seat}-cards`, text: String(position.cardsLeft[seat]) }), position.cardsLeft[seat] === 1 ? " card" : " cards"),
    el("span", {}, "balance ", el("b", { testid: `seat-${seat}-balance`, text: String(position.balances[seat]) }))),
  el("div", { class: "badges" },
    info.is_dealer ? el("span", { class: "badge dealer", testid: `seat-${seat}-dealer`, text: "dealer", title: `${label(seat)} dealt` }) : null,
    leader ? el("span", { class: "badge leader", testid: `seat-${seat}-leader`, text: "leader", title: "led the current sequence" }) : null,
    toAct ? el("span", { class: "badge turn", testid: `seat-${seat}-turn`, text: "to play" }) : null));
  if (seat !== 0) {
    const backs = el("div", { class: "backs", "aria-hidden": "true" });
    for (let i = 0; i < Math.min(position.cardsLeft[seat], 14); i++) backs.append(el("span", { class: "card back" }));
    panel.append(backs);
  }
  return panel;
}

function renderSeats(state, shown) {
  const position = positionAfter(state, shown);
  const others = [];
  for (let seat = 1; seat < state.players; seat++) others.push(seatPanel(state, seat, position, shown));
  $("other-seats").replaceChildren(...others);
  $("you-seat").replaceChildren(seatPanel(state, 0, position, shown));
  return position;
}

/** Your hand; active: the legal cards are clickable; shown: the number of history plays shown so far. */
function renderHand(state, active, shown = state.history.length) {
  const legal = new Set(active ? state.legal || [] : []);
  const later = state.history.slice(shown).filter((p) => p.seat === 0).map((p) => p.card);
  const cards = [...(state.hand || []), ...later].sort((a, b) => cardId(a) - cardId(b));
  const best = app.hint && active ? app.hint.network?.best ?? app.hint.pimc?.best : null;
  const hand = $("hand");
  hand.replaceChildren();
  hand.classList.toggle("many", cards.length > 11);
  let lastSuit = null;
  for (const card of cards) {
    if (lastSuit !== null && suitOf(card) !== lastSuit) hand.append(el("span", { class: "suit-gap" }));
    lastSuit = suitOf(card);
    const ok = legal.has(card);
    const button = cardElement(card, {
      tag: "button", testid: `card-${card}`,
      extraClass: [ok ? "legal" : "", ok && state.why === "due" ? "due" : "", ok && card === best ? "hinted" : ""].filter(Boolean).join(" "),
    });
    button.id = `card-${card}`;
    button.dataset.legal = String(ok);
    button.disabled = !ok;
    button.title = ok ? `Play ${cardName(card)}` : `${cardName(card)} — not playable now`;
    if (ok) button.addEventListener("click", () => playCard(card));
    hand.append(button);
  }
  if (!cards.length) hand.append(el("span", { class: "muted", text: "(no cards in your hand)" }));
}

function turnText(state) {
  const label = seatLabelFor(state);
  const last = state.history.length ? state.history[state.history.length - 1] : null;
  if (state.over || state.why === "over") {
    if (state.winner === 0) return ["over", "You went out! The deal is over."];
    if (state.winner !== null && state.winner !== undefined) return ["over", `${label(state.winner)} went out. The deal is over.`];
    return ["over", "The deal ended without play (the Pope was turned up)."];
  }
  if (state.why === "due" && state.due) {
    return ["due", `You must play ${cardLabel(state.due)}` + (last ? ` (it follows ${cardLabel(last.card)})` : "")];
  }
  if (state.why === "lead") {
    const how = state.rules && state.rules.lead === "any" ? "play any card" : "play the lowest card of a suit";
    let detail = "";
    if (!last) detail = " — you are eldest and lead first.";
    else detail = ` — the sequence stopped at ${cardLabel(last.card)}${last.seat === 0 ? ", your card" : ""}.`;
    return ["lead", `You lead: ${how}${detail}`];
  }
  const waitingFor = state.to_act ?? state.leader;
  return ["waiting", waitingFor !== null && waitingFor !== undefined ? `Waiting for ${label(waitingFor)}…` : "Waiting…"];
}

function setTurnInfo(why, text) {
  const box = $("turn-info");
  box.dataset.why = why;
  box.textContent = text;
}

/** "You" or "Seat 2": the log's short seat names (the seat panels say who plays there). */
const shortLabel = (seat) => (seat === 0 ? "You" : `Seat ${seat}`);

/** Why the server played a card by itself: it was due (R8), or the only lead the seat had. */
const autoNote = (play) => `(${play.lead ? "only lead" : "forced"}${play.seat === 0 ? ", played for you" : ""})`;

function logEntry(state, i, { fresh, newest }) {
  const play = state.history[i];
  const label = shortLabel;
  return el("li", {
    class: `${fresh ? "fresh" : ""} ${newest ? "newest" : ""}`, testid: `log-${i}`,
    dataset: { seat: String(play.seat), card: play.card, lead: String(Boolean(play.lead)), auto: String(Boolean(play.auto)), index: String(i) },
  },
  el("span", { class: "who", text: label(play.seat) }),
  el("span", { text: play.lead ? "led" : "played" }),
  cardText(play.card),
  play.lead ? el("span", { class: "lead", text: "lead" }) : null,
  play.auto ? el("span", { class: "auto", text: autoNote(play) }) : null);
}

function awardEntry(state, j, fresh) {
  const label = shortLabel;
  return el("li", { class: fresh ? "fresh" : "", testid: `log-award-${j}`, dataset: { award: String(j) } },
    el("span", { text: `★ ${describeAward(state.awards[j], label, state.trumps)}` }));
}

/** Rebuild the play log for the first `shown` plays (newest first, awards after the play that made them). */
function renderLog(state, shown, freshFrom) {
  const items = [];
  const awardsAt = new Map();
  (state.awards || []).forEach((award, j) => {
    const step = awardStep(award, state.history, state.trumps);
    if (!awardsAt.has(step)) awardsAt.set(step, []);
    awardsAt.get(step).push(j);
  });
  for (const j of awardsAt.get(-1) || []) items.push(awardEntry(state, j, false));
  for (let i = 0; i < shown; i++) {
    items.push(logEntry(state, i, { fresh: i >= freshFrom, newest: i === shown - 1 && i >= freshFrom }));
    for (const j of awardsAt.get(i) || []) items.push(awardEntry(state, j, i >= freshFrom));
  }
  if (shown === state.history.length && state.over) {
    for (const payment of state.payments || []) {
      items.push(el("li", { class: "fresh", testid: "log-payment" }, el("span", { text: `• ${describePayment(payment, shortLabel)}` })));
    }
  }
  $("play-log").replaceChildren(...items.reverse());
}

function renderLastPlay(state, shown) {
  const box = $("last-play");
  const caption = $("last-play-caption");
  if (shown === 0) {
    box.replaceChildren(el("div", { class: "slot" }));
    delete box.dataset.card;
    delete box.dataset.seat;
    caption.textContent = state.history.length === 0 && !state.over ? "no card played yet" : "";
    return;
  }
  const play = state.history[shown - 1];
  box.replaceChildren(cardElement(play.card, { size: "big", extraClass: "arrive" }));
  box.dataset.card = play.card;
  box.dataset.seat = String(play.seat);
  box.dataset.lead = String(Boolean(play.lead));
  caption.textContent = `${seatLabelFor(state)(play.seat)} ${play.lead ? "led" : "played"} ${cardLabel(play.card)}${play.auto && !play.lead ? " (forced)" : ""}`;
}

function renderPlayedFor(state, shown) {
  renderPlayedGrid($("played"), {
    plays: state.history.slice(0, shown), knownDead: state.known_dead || [], turnup: state.turnup,
    rules: state.rules, latest: shown > 0 ? state.history[shown - 1].card : null,
  });
}

function renderHeader(state) {
  const box = $("deal-number");
  box.dataset.deal = String(state.deal_number);
  box.dataset.deals = String(state.deals);
  box.textContent = state.deals > 1 ? `Deal ${state.deal_number} of ${state.deals}` : "Single deal";
}

/** Render the position after `shown` plays of the state's history. */
function renderPosition(state, shown, previousBoard) {
  const position = renderSeats(state, shown);
  renderBoard($("board"), position.board, { turnup: state.turnup, trumps: state.trumps, previous: previousBoard });
  renderPlayedFor(state, shown);
  renderLastPlay(state, shown);
  return position;
}

/** Show a new state: its new plays one by one (app.speed ms each), then the hand, the turn and the deal's end. */
async function showState(state) {
  const token = ++app.token;
  const previous = app.state;
  const sameDeal = previous && previous.deal_number === state.deal_number;
  app.state = state;
  app.hint = null;
  $("hint-panel").classList.add("hidden");
  $("deal-over").classList.add("hidden");
  renderHeader(state);
  $("table").dataset.over = "false"; // "true" once the deal's last play has been shown
  const total = state.history.length;
  const fresh = Math.max(0, Math.min(Number(state.new_plays) || 0, total));
  const start = total - fresh;
  let board = sameDeal ? positionAfter(previous, previous.history.length).board : null;
  if (app.speed > 0 && fresh > 1) {
    app.animating = true;
    setBusy();
    for (let shown = start + 1; shown < total; shown++) {
      board = renderPosition(state, shown, board).board;
      renderLog(state, shown, start);
      renderHand(state, false, shown);
      const play = state.history[shown - 1];
      setTurnInfo("waiting", `${seatLabelFor(state)(play.seat)} ${play.lead ? "leads" : "plays"} ${cardLabel(play.card)}${play.auto && !play.lead ? " (forced)" : ""}…`);
      await sleep(app.speed);
      if (token !== app.token) return;
    }
    app.animating = false;
  }
  renderPosition(state, total, board);
  renderLog(state, total, start);
  renderHand(state, true);
  const [why, text] = turnText(state);
  setTurnInfo(why, text);
  $("table").dataset.over = String(Boolean(state.over));
  if (state.over) renderDealOver(state);
  setBusy();
}

async function playCard(card) {
  if (!app.gameId || app.animating || app.requests > 0) return;
  const gameId = app.gameId;
  for (const button of $("hand").querySelectorAll("button")) button.disabled = true;
  try {
    // The position this page shows: a play from an older one (another tab played on) is refused, not played there.
    const shown = app.state ? { deal_number: app.state.deal_number, plays: app.state.history.length } : {};
    const state = await request("POST", `/api/games/${encodeURIComponent(gameId)}/play`, { card, ...shown });
    if (gameId !== app.gameId) return;
    showMessage("");
    await showState(state);
  } catch (err) {
    showMessage(err.message, "error");
    if (app.state) renderHand(app.state, true);
  }
}

// ---- hint

async function showHint() {
  if (!app.gameId) return;
  const panel = $("hint-panel");
  const body = $("hint-body");
  const gameId = app.gameId;
  try {
    const hint = await request("GET", `/api/games/${encodeURIComponent(gameId)}/hint`);
    if (gameId !== app.gameId) return;
    app.hint = hint;
    body.replaceChildren();
    const network = hint.network;
    if (network && network.probs) {
      body.append(el("div", { class: "muted", testid: "hint-model", dataset: { model: network.model ?? "" }, text: `network: ${playerLabel(network.model ?? "model")}` }));
      const bars = el("div");
      renderProbBars(bars, network.probs, { best: network.best, testPrefix: "hint-bar" });
      body.append(bars);
      if (network.best) body.append(el("div", { testid: "hint-best", dataset: { card: network.best } }, "network's best: ", cardText(network.best)));
    } else {
      const reason = hint.network_reason ?? hint.network_error ?? hint.reason ?? (network && network.reason)
        ?? "no network model is available on this server";
      body.append(el("div", { class: "muted", testid: "hint-unavailable", text: `No network hint: ${String(reason).replace(/^no network hint:\s*/i, "")}` }));
    }
    if (hint.pimc && hint.pimc.best) {
      body.append(el("div", { testid: "hint-pimc", dataset: { card: hint.pimc.best } }, "pimc (search) would lead: ", cardText(hint.pimc.best)));
    } else {
      body.append(el("div", { class: "muted", testid: "hint-pimc", text: "pimc has no suggestion" }));
    }
    panel.classList.remove("hidden");
    renderHand(app.state, true);
  } catch (err) {
    showMessage(err.message, "error");
  }
}

// ---- end of a deal

function renderDealOver(state) {
  const label = seatLabelFor(state);
  const box = $("deal-over");
  const [, winnerText] = turnText(state);
  const awards = (state.awards || []).map((award, j) => el("li", { testid: `award-${j}`, dataset: { seat: String(award[1]), compartment: award[2], counters: String(award[3]), cause: award[0] }, text: describeAward(award, label, state.trumps) }));
  const payments = (state.payments || []).map((payment, j) => el("li", { testid: `payment-${j}`, dataset: { from: String(payment[0]), to: String(payment[1]), counters: String(payment[2]) }, text: describePayment(payment, label) }));
  const rows = state.seats.map((s) => {
    const delta = state.delta ? state.delta[s.seat] : null;
    return el("tr", { testid: `delta-${s.seat}`, dataset: { delta: String(delta), balance: String(s.balance) } },
      el("td", { text: label(s.seat) }),
      el("td", { class: delta > 0 ? "pos" : delta < 0 ? "neg" : "", text: delta === null ? "–" : delta > 0 ? `+${delta}` : String(delta) }),
      el("td", { text: String(s.balance) }));
  });
  // The board comes keyed by compartment in the rules' order (rules.COMPARTMENTS, the one list of them).
  const left = Object.entries(state.board).filter(([, n]) => n > 0).map(([c, n]) => `${c} ${n}`);
  const sessionOn = state.deals > 1 && !state.session_over;
  const action = sessionOn
    ? el("button", { class: "primary", type: "button", id: "next-deal", testid: "next-deal", text: "Next deal", onclick: nextDeal })
    : el("button", { class: "primary", type: "button", id: "deal-over-new-game", testid: "deal-over-new-game", text: "New game", onclick: backToSetup });
  box.replaceChildren(...[
    el("div", { class: "head" },
      el("h2", { text: state.deals > 1 ? `Deal ${state.deal_number} of ${state.deals} is over` : "The deal is over" }),
      el("div", { class: "actions" }, action,
        el("button", { type: "button", testid: "deal-over-hide", text: "Hide", title: "look at the table", onclick: () => toggleDealOver(false) }))),
    el("p", { testid: "deal-winner", dataset: { winner: String(state.winner) }, text: winnerText }),
    state.deals > 1 && state.session_over
      ? el("p", { class: "session-over", testid: "session-over", text: `The session is over after ${state.deals} deals: the balances below are final.` })
      : null,
    el("div", { class: "columns" },
      el("div", {},
        el("h3", { text: "Compartments taken" }),
        awards.length ? el("ul", { testid: "awards" }, awards) : el("p", { class: "muted", testid: "awards", text: "No compartment was taken." })),
      el("div", {},
        el("h3", { text: "Payments" }),
        payments.length ? el("ul", { testid: "payments" }, payments) : el("p", { class: "muted", testid: "payments", text: "No payments." }))),
    el("h3", { text: "Result of the deal (dressing included)" }),
    el("table", { class: "deltas", testid: "deltas" },
      el("thead", {}, el("tr", {}, el("th", { text: "seat" }), el("th", { text: "this deal" }), el("th", { text: "balance" }))),
      el("tbody", {}, rows)),
    el("p", { class: "muted", testid: "board-after", text: left.length ? `Left on the board for the next deal: ${left.join(", ")}.` : "The board is empty." }),
  ].filter(Boolean));
  box.classList.remove("hidden");
  $("deal-over-show")?.remove();
}

function toggleDealOver(show) {
  $("deal-over").classList.toggle("hidden", !show);
  if (!show) {
    $("turn-info").append(" ", el("button", { type: "button", id: "deal-over-show", testid: "deal-over-show", text: "Show the result", onclick: () => toggleDealOver(true) }));
  } else {
    $("deal-over-show")?.remove();
  }
}

async function nextDeal() {
  if (!app.gameId) return;
  const gameId = app.gameId;
  const button = $("next-deal");
  if (button) button.disabled = true;
  try {
    const state = await request("POST", `/api/games/${encodeURIComponent(gameId)}/next`);
    if (gameId !== app.gameId) return;
    showMessage("");
    await showState(state);
  } catch (err) {
    showMessage(err.message, "error");
    if (button) button.disabled = false;
  }
}

// ---- start

async function resumeFromHash() {
  const match = /^#game=(.+)$/.exec(location.hash);
  if (!match) return;
  const gameId = decodeURIComponent(match[1]);
  try {
    const state = await request("GET", `/api/games/${encodeURIComponent(gameId)}`);
    openGame(gameId, { ...state, new_plays: 0 });
  } catch (err) {
    history.replaceState(null, "", location.pathname + location.search);
    showMessage(`Cannot resume game ${gameId}: ${err.message}`, "error");
  }
}

function initSpeed() {
  const select = $("speed");
  const fromUrl = new URLSearchParams(location.search).get("speed");
  let stored = null;
  try {
    stored = localStorage.getItem("popejoan.speed");
  } catch {
    stored = null;
  }
  const wanted = fromUrl ?? stored ?? "450";
  if (![...select.options].some((o) => o.value === wanted)) select.append(el("option", { value: wanted, text: `${wanted} ms` }));
  select.value = wanted;
  app.speed = Number(select.value) || 0;
  select.addEventListener("change", () => {
    app.speed = Number(select.value) || 0;
    try {
      localStorage.setItem("popejoan.speed", select.value);
    } catch {
      /* storage unavailable: the choice lasts for this page only */
    }
  });
}

async function initPlayPage() {
  initMessage();
  initSpeed();
  $("players").addEventListener("change", buildOpponentSelects);
  $("preset").addEventListener("change", () => {
    $("preset-note").textContent = PRESET_NOTES[$("preset").value] ?? "";
    buildOpponentSelects();
  });
  $("mode").addEventListener("change", updateMode);
  $("setup").addEventListener("submit", startGame);
  $("new-game").addEventListener("click", backToSetup);
  $("hint").addEventListener("click", showHint);
  await loadOptions();
  await resumeFromHash();
}

if (document.body && document.body.dataset.page === "play") initPlayPage();
