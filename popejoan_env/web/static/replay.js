/*
 * replay.js — the replay page (replay.html, served at "/replay"): step through the deals of a game-records file.
 * Cards, the board, the played grid and the API helper come from play.js (one source for each).
 *
 * Test hooks: data-testid="…" (element ids are the same unless noted).
 * Source
 *   records-open       button: POST /api/replays/from-records (enabled when GET /api/records lists a file)
 *   records-file       the records file's name (or why there is none)
 *   upload             file input: its file is POSTed raw to /api/replays (JSON Lines text or .gz bytes)
 *   replay-info        "<source>: 12 deals" once a replay is open (data-replay-id, data-deals)
 *   message            message area; API errors ({"error": …}) shown here; data-kind="error" | "info";
 *                      text in message-text, message-close dismisses it
 * Choosing what to see
 *   deal-select        select of the deals, values "1" … "n" (1-based, as the API numbers them)
 *   view-select        "all" (all hands face up) or "0" … "n-1" (that seat's view: the others' hands are counts)
 *   model-select       "" (none) or a model path from /api/options: its policy at every real decision
 * Stepping (also keys: ← previous, → next, Home first, End last)
 *   replay-first, replay-prev, replay-next, replay-last   buttons (disabled at the ends)
 *   timeline           range input, value = step 0 … last
 *   replay-step        "Step 3 of 40 · seat 2 played 6♠"; data-step, data-steps (the last step's number)
 * The position at the current step
 *   replay-table       the table; data-busy="true" while a deal loads, "false" otherwise; data-deal, data-step
 *   board              staking board: board-<comp> (pope, matrimony, intrigue, ace, king, queen, jack, game)
 *                      with data-count; board-<comp>-count; turnup (data-card); trumps (data-suit)
 *   replay-play        the card just played (data-card, data-seat, data-lead; empty at step 0);
 *                      replay-play-caption its text
 *   played             the cards played so far by suit (played-C … played-S rows, played-<XX> cells with
 *                      data-state = "played" | "turnup" | "unplayed" | "out", data-lead on leads)
 *   replay-seat-K      seat K: data-balance, data-cards, data-to-act, data-dealer; inside replay-seat-K-balance,
 *                      replay-seat-K-dealer (badge, dealer only), replay-seat-K-turn (badge, seat to act)
 *   replay-hand-K      seat K's hand: replay-card-K-<XX> per card (class "legal" / data-legal="true" on the
 *                      legal cards of the seat to act), or, when hidden, replay-hand-K-count (data-count)
 *   replay-policy      the model's probabilities at this step: policy-bar-<XX> (data-prob), policy-seat
 *                      (data-seat), policy-none when there is none at this step
 *   replay-now         what this step did: replay-awards (award lines replay-award-<j>) and
 *                      replay-payments (payment lines replay-payment-<j>), or "nothing won"
 *   replay-events      every award and payment so far: replay-event-<i>, data-step; class "now" on this step's
 *   replay-final       the result (visible at the last step): final-winner (data-winner), final-delta-K
 *                      (data-delta), final-board-after (data-board = JSON of board_after)
 * URL: ?deal=K&step=S&view=V&model=M are kept up to date for the open replay; a page opened with them applies
 * them to the first replay it opens (records-open or upload).
 */

import {
  api, cardElement, cardLabel, describeAward, describePayment, el, initMessage, isModel,
  playerLabel, renderBoard, renderPlayedGrid, renderProbBars, showMessage,
} from "./play.js";

const rp = {
  replayId: null, source: "", deals: 0, data: null, step: 0, loading: 0, token: 0, options: null,
  linked: new URLSearchParams(location.search),
};
const $ = (id) => document.getElementById(id);

const seatName = (seat) => `Seat ${seat}`;

function setLoading(delta) {
  rp.loading += delta;
  $("replay-table").dataset.busy = String(rp.loading > 0);
}

async function call(method, path, body, opts) {
  setLoading(1);
  try {
    return await api(method, path, body, opts);
  } finally {
    setLoading(-1);
  }
}

// ------------------------------------------------------------------ sources

async function loadSources() {
  try {
    const [records, options] = await Promise.all([call("GET", "/api/records"), call("GET", "/api/options")]);
    rp.options = options;
    const files = records.files || [];
    $("records-open").disabled = files.length === 0;
    $("records-file").textContent = files.length ? files[0] : "(the server was started without --records)";
    fillModels(options);
  } catch (err) {
    showMessage(`Cannot load the replay options: ${err.message}`, "error");
  }
}

function fillModels(options) {
  const select = $("model-select");
  const models = Array.isArray(options.models) && options.models.length
    ? options.models
    : (options.opponents || []).filter(isModel).map((path) => ({ path }));
  select.replaceChildren(el("option", { value: "", text: "no model" }));
  for (const model of models) {
    const detail = model.players ? ` (${model.players.join("/")}p ${model.preset ?? ""})` : "";
    select.append(el("option", { value: model.path, title: model.path, text: `${playerLabel(model.path)}${detail}` }));
  }
}

async function openReplay(request, source) {
  const params = rp.linked ?? new URLSearchParams(); // the page's URL applies to the first replay opened only
  rp.linked = new URLSearchParams();
  try {
    const answer = await request();
    rp.replayId = answer.replay_id;
    rp.deals = answer.deals;
    rp.source = source;
    showMessage("");
    const info = $("replay-info");
    info.textContent = `${source}: ${answer.deals} deal${answer.deals === 1 ? "" : "s"}`;
    info.dataset.replayId = answer.replay_id;
    info.dataset.deals = String(answer.deals);
    const dealSelect = $("deal-select");
    dealSelect.replaceChildren();
    for (let k = 1; k <= answer.deals; k++) dealSelect.append(el("option", { value: String(k), text: `deal ${k}` }));
    dealSelect.disabled = false;
    const wanted = Number(params.get("deal"));
    dealSelect.value = Number.isInteger(wanted) && wanted >= 1 && wanted <= answer.deals ? String(wanted) : "1";
    if (params.get("view")) $("view-select").dataset.wanted = params.get("view");
    if (params.get("model") && [...$("model-select").options].some((o) => o.value === params.get("model"))) {
      $("model-select").value = params.get("model");
    }
    const step = Number(params.get("step"));
    await loadDeal(Number.isInteger(step) && step >= 0 ? step : 0);
  } catch (err) {
    showMessage(err.message, "error");
  }
}

function openRecords() {
  return openReplay(() => call("POST", "/api/replays/from-records"), $("records-file").textContent || "records");
}

async function uploadFile() {
  const file = $("upload").files[0];
  if (!file) return;
  let body;
  try {
    body = await file.arrayBuffer();
  } catch (err) {
    showMessage(`Cannot read ${file.name}: ${err.message}`, "error");
    return;
  }
  await openReplay(() => call("POST", "/api/replays", body, { raw: true }), file.name);
  $("upload").value = "";
}

// ------------------------------------------------------------------ one deal

function fillViews(players) {
  const select = $("view-select");
  const wanted = select.dataset.wanted ?? select.value;
  delete select.dataset.wanted;
  select.replaceChildren(el("option", { value: "all", text: "all hands face up" }));
  for (let seat = 0; seat < players; seat++) select.append(el("option", { value: String(seat), text: `seat ${seat}'s view` }));
  select.value = [...select.options].some((o) => o.value === wanted) ? wanted : "all";
}

/** Fetch the selected deal (view and model as selected) and show `step` (clamped); `null` shows the step on
 *  screen when the fetch ends (a view or model change must not undo the stepping done while it loads). */
async function loadDeal(step = 0) {
  if (!rp.replayId) return;
  const token = ++rp.token;
  const k = $("deal-select").value;
  const view = $("view-select").value || "all";
  const model = $("model-select").value || "";
  const query = new URLSearchParams({ view, model });
  try {
    const data = await call("GET", `/api/replays/${encodeURIComponent(rp.replayId)}/deals/${encodeURIComponent(k)}?${query}`);
    if (token !== rp.token) return;
    const players = data.players;
    if ($("view-select").options.length !== players + 1) {
      fillViews(players);
      if ($("view-select").value !== view) {
        await loadDeal(step);
        return;
      }
    }
    rp.data = data;
    markModels(data);
    showMessage("");
    $("replay-empty").classList.add("hidden");
    $("replay-content").classList.remove("hidden");
    const last = data.frames.length - 1;
    const timeline = $("timeline");
    timeline.max = String(last);
    timeline.disabled = false;
    $("replay-table").dataset.deal = String(data.deal);
    const target = step === null ? (rp.step ?? 0) : step;
    show(Math.max(0, Math.min(target, last)));
  } catch (err) {
    if (token !== rp.token) return;
    if (model && err.status === 400) {
      // The model cannot play this deal (other rules or table size): show the deal without it, and say why.
      $("model-select").value = "";
      await loadDeal(step);
      showMessage(`${err.message}; the deal is shown without a policy.`, "error");
      return;
    }
    showMessage(err.message, "error");
  }
}

/** Grey out the models that were not trained for this deal's rules and table size. */
function markModels(data) {
  const meta = new Map((rp.options?.models || []).map((m) => [m.path, m]));
  for (const option of $("model-select").options) {
    const m = meta.get(option.value);
    if (!m) continue;
    const fits = (m.players || []).includes(data.players) && (!m.preset || !data.rules || m.preset === data.rules.preset);
    option.disabled = !fits;
    option.title = fits ? option.value : `${option.value}: trained for ${(m.players || []).join("/")} players, ${m.preset} rules`;
  }
}

// ------------------------------------------------------------------ one step

function seatRow(data, frame, seat, step) {
  const hand = frame.hands[seat];
  const toAct = frame.to_act === seat;
  const legal = new Set(toAct ? frame.legal || [] : []);
  const count = Array.isArray(hand) ? hand.length : Number(hand);
  const policy = toAct && frame.policy ? frame.policy : null;
  const played = frame.play && frame.play.seat === seat ? frame.play.card : null;
  const panel = el("div", {
    class: `seat ${toAct ? "to-act" : ""} ${played ? "acting" : ""}`, testid: `replay-seat-${seat}`, id: `replay-seat-${seat}`,
    dataset: {
      seat: String(seat), balance: String(frame.balances[seat]), cards: String(count), toAct: String(toAct),
      dealer: String(data.dealer === seat),
    },
  },
  el("div", { class: "name", text: seatName(seat) }),
  el("div", { class: "stats" },
    el("span", {}, el("b", { text: String(count) }), count === 1 ? " card" : " cards"),
    el("span", {}, "balance ", el("b", { testid: `replay-seat-${seat}-balance`, text: String(frame.balances[seat]) }))),
  el("div", { class: "badges" },
    data.dealer === seat ? el("span", { class: "badge dealer", testid: `replay-seat-${seat}-dealer`, text: "dealer" }) : null,
    (data.dealer + 1) % data.players === seat ? el("span", { class: "badge", text: "eldest" }) : null,
    toAct ? el("span", { class: "badge turn", testid: `replay-seat-${seat}-turn`, text: "to play" }) : null,
    data.final.winner === seat && step === data.frames.length - 1 ? el("span", { class: "badge leader", text: "went out" }) : null));
  const handBox = el("div", { class: "replay-hand", testid: `replay-hand-${seat}`, id: `replay-hand-${seat}` });
  if (Array.isArray(hand)) {
    for (const card of hand) {
      const node = cardElement(card, { size: "small", testid: `replay-card-${seat}-${card}`, extraClass: legal.has(card) ? "legal" : "" });
      node.dataset.legal = String(legal.has(card));
      if (policy && policy[card] !== undefined) {
        node.title = `${node.title}: ${(policy[card] * 100).toFixed(1)}%`;
        node.append(el("span", { class: "prob", style: `width: ${policy[card] * 100}%` }));
      }
      handBox.append(node);
    }
    if (!hand.length) handBox.append(el("span", { class: "count", text: "no cards left" }));
  } else {
    const backs = el("span", { class: "backs" });
    for (let i = 0; i < Math.min(count, 14); i++) backs.append(el("span", { class: "card back" }));
    handBox.append(backs, el("span", {
      class: "count", testid: `replay-hand-${seat}-count`, dataset: { count: String(count) }, text: ` ${count} hidden card${count === 1 ? "" : "s"}`,
    }));
  }
  return el("div", { class: "replay-seat" }, panel, handBox);
}

function playCaption(data, frame) {
  if (!frame.play) {
    const eldest = (data.dealer + 1) % data.players;
    return `Dealt by ${seatName(data.dealer)}; turn-up ${cardLabel(data.turnup)}; ${seatName(eldest)} (eldest) leads.`;
  }
  const p = frame.play;
  return `${seatName(p.seat)} ${p.lead ? "led" : "played"} ${cardLabel(p.card)}`;
}

function renderPolicy(data, frame) {
  const body = $("policy-body");
  const model = $("model-select").value;
  if (!model) {
    body.className = "muted";
    body.replaceChildren("Choose a model to see its move probabilities at every decision.");
    return;
  }
  body.className = "";
  if (frame.policy) {
    const bars = el("div");
    renderProbBars(bars, frame.policy, { testPrefix: "policy-bar" });
    body.replaceChildren(
      el("div", { class: "muted", testid: "policy-seat", dataset: { seat: String(frame.to_act) }, text: `${playerLabel(model)} for ${seatName(frame.to_act)}:` }),
      bars);
    return;
  }
  let why = "no decision at this step";
  if (frame.to_act === null || frame.to_act === undefined) why = "the deal is over";
  else if (!(frame.legal || []).length) why = `${seatName(frame.to_act)} is to act, but this view does not show its hand`;
  else if (frame.legal.length === 1) why = `${seatName(frame.to_act)} has only one legal card (${cardLabel(frame.legal[0])})`;
  body.replaceChildren(el("div", { class: "muted", testid: "policy-none", text: `No probabilities: ${why}.` }));
}

function renderNow(data, frame) {
  const awards = (frame.awards || []).map((a, j) => el("li", { testid: `replay-award-${j}`, text: describeAward(a, seatName, data.trumps) }));
  const payments = (frame.payments || []).map((p, j) => el("li", { testid: `replay-payment-${j}`, text: describePayment(p, seatName) }));
  $("replay-now").replaceChildren(
    awards.length ? el("ul", { testid: "replay-awards" }, awards) : el("div", { class: "muted", testid: "replay-awards", text: "No compartment taken at this step." }),
    payments.length ? el("ul", { testid: "replay-payments" }, payments) : el("div", { class: "muted", testid: "replay-payments", text: "No payments at this step." }));
}

function renderEvents(data, step) {
  const items = [];
  for (let s = 0; s <= step; s++) {
    const frame = data.frames[s];
    for (const a of frame.awards || []) items.push({ s, text: `★ ${describeAward(a, seatName, data.trumps)}` });
    for (const p of frame.payments || []) items.push({ s, text: `• ${describePayment(p, seatName)}` });
  }
  const nodes = items.map((item, i) => el("li", {
    class: item.s === step ? "now" : "", testid: `replay-event-${i}`, dataset: { step: String(item.s) },
  }, el("span", { class: "muted", text: `step ${item.s}` }), el("span", { text: item.text })));
  if (!nodes.length) nodes.push(el("li", { class: "muted", text: "nothing won yet" }));
  $("replay-events").replaceChildren(...nodes.reverse());
}

function renderFinal(data, step) {
  const box = $("replay-final");
  const last = data.frames.length - 1;
  if (step !== last) {
    box.classList.add("hidden");
    return;
  }
  const f = data.final;
  const winner = f.winner === null || f.winner === undefined
    ? "The deal ended without play (the Pope was turned up)."
    : `${seatName(f.winner)} went out.`;
  const rows = (f.delta || []).map((d, seat) => el("tr", { testid: `final-delta-${seat}`, dataset: { delta: String(d) } },
    el("td", { text: seatName(seat) }), el("td", { class: d > 0 ? "pos" : d < 0 ? "neg" : "", text: d > 0 ? `+${d}` : String(d) })));
  const left = Object.entries(f.board_after || {}).filter(([, n]) => n > 0).map(([c, n]) => `${c} ${n}`);
  box.replaceChildren(
    el("h2", { text: "Result" }),
    el("div", { testid: "final-winner", dataset: { winner: String(f.winner) }, text: winner }),
    el("table", { class: "deltas" }, el("thead", {}, el("tr", {}, el("th", { text: "seat" }), el("th", { text: "deal's change" }))), el("tbody", {}, rows)),
    el("div", { class: "muted", testid: "final-board-after", dataset: { board: JSON.stringify(f.board_after || {}) },
      text: left.length ? `Left on the board: ${left.join(", ")}.` : "The board is empty." }));
  box.classList.remove("hidden");
}

/** Show step `step` of the loaded deal. */
function show(step) {
  const data = rp.data;
  if (!data) return;
  const last = data.frames.length - 1;
  step = Math.max(0, Math.min(step, last));
  const previous = rp.step;
  rp.step = step;
  const frame = data.frames[step];
  const prevFrame = step > 0 && Math.abs(previous - step) === 1 ? data.frames[previous] : null;
  renderBoard($("board"), frame.board, { turnup: data.turnup, trumps: data.trumps, previous: prevFrame ? prevFrame.board : null });
  const box = $("replay-play");
  if (frame.play) {
    box.replaceChildren(cardElement(frame.play.card, { size: "big", extraClass: "arrive" }));
    box.dataset.card = frame.play.card;
    box.dataset.seat = String(frame.play.seat);
    box.dataset.lead = String(Boolean(frame.play.lead));
  } else {
    box.replaceChildren(el("div", { class: "slot" }));
    for (const key of ["card", "seat", "lead"]) delete box.dataset[key];
  }
  $("replay-play-caption").textContent = playCaption(data, frame);
  const plays = data.frames.slice(1, step + 1).map((f) => f.play);
  renderPlayedGrid($("played"), { plays, turnup: data.turnup, rules: data.rules, latest: frame.play ? frame.play.card : null });
  $("replay-seats").replaceChildren(...Array.from({ length: data.players }, (_, seat) => seatRow(data, frame, seat, step)));
  renderPolicy(data, frame);
  renderNow(data, frame);
  renderEvents(data, step);
  renderFinal(data, step);
  const stepText = $("replay-step");
  stepText.textContent = `Step ${step} of ${last} · ${frame.play ? playCaption(data, frame) : "the deal"}`;
  stepText.dataset.step = String(step);
  stepText.dataset.steps = String(last);
  $("timeline").value = String(step);
  $("replay-table").dataset.step = String(step);
  $("replay-first").disabled = step === 0;
  $("replay-prev").disabled = step === 0;
  $("replay-next").disabled = step === last;
  $("replay-last").disabled = step === last;
  const params = new URLSearchParams({ deal: String(data.deal), step: String(step), view: $("view-select").value });
  if ($("model-select").value) params.set("model", $("model-select").value);
  history.replaceState(null, "", `${location.pathname}?${params}`);
}

function onKey(event) {
  if (!rp.data || event.altKey || event.ctrlKey || event.metaKey) return;
  const tag = event.target && event.target.tagName;
  if (tag === "SELECT" || tag === "TEXTAREA" || tag === "INPUT") return; // a focused range steps by itself
  const moves = { ArrowRight: rp.step + 1, ArrowLeft: rp.step - 1, Home: 0, End: rp.data.frames.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  show(moves[event.key]);
}

function initReplayPage() {
  initMessage();
  $("records-open").addEventListener("click", openRecords);
  $("upload").addEventListener("change", uploadFile);
  // A changed select gives the focus back to the page, so the arrow keys step again at once.
  $("deal-select").addEventListener("change", (e) => { e.target.blur(); loadDeal(0); });
  $("view-select").addEventListener("change", (e) => { e.target.blur(); loadDeal(null); });
  $("model-select").addEventListener("change", (e) => { e.target.blur(); loadDeal(null); });
  $("replay-first").addEventListener("click", () => show(0));
  $("replay-prev").addEventListener("click", () => show(rp.step - 1));
  $("replay-next").addEventListener("click", () => show(rp.step + 1));
  $("replay-last").addEventListener("click", () => show(Infinity));
  $("timeline").addEventListener("input", () => show(Number($("timeline").value)));
  document.addEventListener("keydown", onKey);
  loadSources();
}

initReplayPage();
