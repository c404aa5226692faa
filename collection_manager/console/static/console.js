// The console: reads /api/v1/ of the process that serves it, and draws by hand.
// Plain JavaScript run as it is (no build step, no framework, nothing from outside):
// the fleet and status are polled, the change feed is an EventSource, the charts are SVG.
"use strict";

const API = "api/v1/"; // relative: the console works under any prefix a proxy puts it at
const POLL_MS = { replicas: 1000, status: 2000, rows: 3000, counts: 5000, collections: 10000 };
const CHART_SPAN_MS = 5 * 60 * 1000;
const ROWS_SHOWN = 200; // rows of the table, the `limit` of its read
const COUNT_LIMIT = 10000; // rows read per collection to count the fleet's rows
const FEED_KEPT = 200; // changes kept on the page
const REPLICA_COLUMN = "replica_id";

const state = {
  collections: [], // [{name, columns: [names]}]
  selected: null,
  where: [],
  whereBad: false,
  replicas: null, // null until the server lists them
  unauthorised: false, // the server asked for a token (401) or refused the one given (403)
  counts: {}, // collection -> replica -> rows, and collection -> "_capped" when partial
  skewMs: 0, // the server's clock minus ours
  samples: [], // [{t, lag, updates}] from status
  feed: null,
  lastEventId: null,
  token: sessionStorage.getItem("cm-token"), // CM_HTTP_TOKEN, when the server asks for one
};

const $ = (id) => document.getElementById(id);

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

class Problem extends Error {
  constructor(status, body) {
    const detail = body && typeof body === "object" ? body.detail || body.title : body;
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// GET of a path under the API, as JSON; a problem document (or any error) throws a Problem.
async function get(path, params) {
  const url = new URL(API + path, document.baseURI);
  for (const [name, values] of Object.entries(params || {})) {
    for (const value of [].concat(values)) url.searchParams.append(name, value);
  }
  let reply;
  try {
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    reply = await fetch(url, { headers });
  } catch (error) {
    throw new Problem(0, `the server does not answer (${error.message})`);
  }
  const date = Date.parse(reply.headers.get("Date") || "");
  if (!Number.isNaN(date)) state.skewMs = date - Date.now();
  const type = reply.headers.get("Content-Type") || "";
  const body = type.includes("json") ? await reply.json() : await reply.text();
  state.unauthorised = reply.status === 401 || reply.status === 403;
  if (state.unauthorised) {
    $("token-form").hidden = false;
    throw new Problem(reply.status, notAuthorised(state.token));
  }
  if (!reply.ok) throw new Problem(reply.status, body);
  if (body && typeof body === "object" && typeof body.at_ms === "number") {
    state.skewMs = body.at_ms - Date.now(); // the server's clock, to the millisecond
  }
  return body;
}

// What the banner says when the server wants a token: never "0 replicas", which it is not.
function notAuthorised(sent) {
  const why = sent ? "this server refused the token given" : "this server needs a token";
  return `not authorised: ${why}: enter its CM_HTTP_TOKEN in the field above (kept for this tab)`;
}

const plural = (count, noun) => `${count} ${noun}${count === 1 ? "" : "s"}`;

const serverNow = () => Date.now() + state.skewMs;
const listOf = (body, key) => (Array.isArray(body) ? body : (body && body[key]) || []);

function problem(message) {
  const box = $("problem");
  box.textContent = message || "";
  box.hidden = !message;
}

// Runs `task` now and every `ms`; its errors go to the banner, never to the console.
function every(ms, task) {
  const run = async () => {
    try {
      await task();
    } catch (error) {
      problem(error.message);
    }
    setTimeout(run, ms);
  };
  run();
}

// --- Times -------------------------------------------------------------------------------

function seconds(ms) {
  const s = ms / 1000;
  if (Math.abs(s) < 60) return `${s.toFixed(1)} s`;
  if (Math.abs(s) < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${(s / 3600).toFixed(1)} h`;
}

const ago = (ms) => (ms == null ? "never" : `${seconds(Math.max(0, serverNow() - ms))} ago`);

// --- The fleet ---------------------------------------------------------------------------

// A replica whose controller state is `active` but whose heartbeats stopped coming is shown
// `stopped`: its agent is gone, and its lease runs out (then the controller removes it).
// Stopped means no heartbeat for half its lease (the lease is renewed at each heartbeat),
// and at least 1.5 s.
function shownState(replica) {
  if (replica.state !== "active") return replica.state;
  const beat = replica.last_heartbeat_ms;
  const expires = replica.lease_expires_ms;
  if (beat == null || expires == null) return replica.state;
  const silentFor = serverNow() - beat;
  return silentFor > Math.max(1500, (expires - beat) / 2) ? "stopped" : "active";
}

function fleetCollections() {
  return state.collections.filter((c) => c.columns.includes(REPLICA_COLUMN)).map((c) => c.name);
}

function renderFleet() {
  const names = fleetCollections();
  const head = $("replicas").tHead.rows[0];
  while (head.cells.length > 5) head.deleteCell(5);
  for (const name of names) {
    const th = head.appendChild(el("th", name, "num"));
    th.title = `the replica's rows in ${name}`;
  }
  const body = $("replicas").tBodies[0];
  body.replaceChildren();
  for (const replica of state.replicas || []) {
    const row = body.insertRow();
    row.dataset.replica = replica.replica_id;
    const shown = shownState(replica);
    row.dataset.state = shown;
    row.insertCell().textContent = replica.replica_id;
    const epoch = row.insertCell();
    epoch.textContent = replica.epoch;
    epoch.className = "num";
    const badge = el("span", shown, `state state-${shown}`);
    if (replica.reason) badge.title = replica.reason;
    row.insertCell().appendChild(badge);
    const left = replica.lease_expires_ms == null ? null : replica.lease_expires_ms - serverNow();
    row.insertCell().textContent = left == null ? "-" : left > 0 ? seconds(left) : "expired";
    row.insertCell().textContent = ago(replica.last_heartbeat_ms);
    for (const name of names) {
      const counts = state.counts[name];
      const cell = row.insertCell();
      cell.className = "num";
      cell.dataset.collection = name;
      if (!counts) cell.textContent = "…";
      else cell.textContent = (counts._capped ? "≥" : "") + (counts[replica.replica_id] || 0);
      // The store keeps no row counter per replica: past COUNT_LIMIT rows read, a count
      // is what those rows hold, a lower bound, and says so.
      if (counts && counts._capped) cell.title = `at least: counted in the first ${COUNT_LIMIT} rows read`;
    }
  }
  const known = state.replicas !== null && !state.unauthorised;
  const count = known ? plural(state.replicas.length, "replica") : "";
  $("fleet-count").textContent = state.unauthorised ? "not authorised" : count;
  $("fleet-empty").hidden = !known || state.replicas.length > 0;
}

async function pollReplicas() {
  state.replicas = listOf(await get("replicas"), "replicas");
  renderFleet();
}

// Rows per replica of each collection with a replica_id column: one bounded read each.
async function pollCounts() {
  const counts = {};
  for (const name of fleetCollections()) {
    const answer = await get(`collections/${encodeURIComponent(name)}/rows`, { limit: COUNT_LIMIT });
    const tally = {};
    const rows = listOf(answer, "rows");
    for (const { row, count } of rows) {
      const replica = row[REPLICA_COLUMN];
      tally[replica] = (tally[replica] || 0) + (count ?? 1);
    }
    if (rows.length >= COUNT_LIMIT) tally._capped = true;
    counts[name] = tally;
  }
  state.counts = counts;
  renderFleet();
}

// --- Status and the charts ---------------------------------------------------------------

function stateText(id, value) {
  const node = $(id);
  node.replaceChildren(el("span", value || "unknown", `state state-${value || "unknown"}`));
}

async function pollStatus() {
  const status = await get("status");
  const consumer = status.consumer || {};
  stateText("consumer-state", consumer.state);
  stateText("controller-state", (status.controller || {}).state);
  $("lag").textContent = consumer.lag_total ?? `unknown${consumer.kafka ? ` (${consumer.kafka})` : ""}`;
  $("dead-letters").textContent = consumer.dead_letters ?? 0;
  const updates = (status.collections || []).reduce(
    (sum, c) => sum + ((c.counters || {}).updates || 0),
    0,
  );
  const t = serverNow();
  state.samples.push({ t, lag: consumer.lag_total ?? null, updates });
  state.samples = state.samples.filter((s) => s.t >= t - CHART_SPAN_MS);
  drawCharts();
  $("updated").textContent = `updated ${new Date(t).toLocaleTimeString()}`;
  problem(null);
}

function rates() {
  const points = [];
  for (let i = 1; i < state.samples.length; i++) {
    const [a, b] = [state.samples[i - 1], state.samples[i]];
    if (b.t > a.t) points.push({ t: b.t, v: Math.max(0, ((b.updates - a.updates) * 1000) / (b.t - a.t)) });
  }
  return points;
}

// A line over the last CHART_SPAN_MS in an SVG of viewBox 320 x 80, its maximum labelled.
function drawLine(svg, points) {
  const [width, height, top] = [320, 80, 12];
  const now = serverNow();
  const max = Math.max(1, ...points.map((p) => p.v));
  const x = (t) => (width * (t - (now - CHART_SPAN_MS))) / CHART_SPAN_MS;
  const y = (v) => height - 2 - ((height - top - 2) * v) / max;
  const ns = "http://www.w3.org/2000/svg";
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(" "));
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "2");
  label.setAttribute("y", "9");
  label.textContent = `max ${Math.round(max)}`;
  svg.replaceChildren(line, label);
  svg.dataset.points = String(points.length);
}

function drawCharts() {
  const lags = state.samples.filter((s) => s.lag != null).map((s) => ({ t: s.t, v: s.lag }));
  drawLine($("lag-chart"), lags);
  const applied = rates();
  drawLine($("rate-chart"), applied);
  $("lag-now").textContent = lags.length ? lags[lags.length - 1].v : "unknown";
  $("rate-now").textContent = applied.length ? applied[applied.length - 1].v.toFixed(0) : "";
}

// --- A collection's rows -----------------------------------------------------------------

function columnsOf(entry) {
  const columns = entry.columns || (entry.schema && entry.schema.columns) || [];
  return columns.map((c) => (typeof c === "string" ? c : c.name));
}

async function pollCollections() {
  const listed = listOf(await get("collections"), "collections");
  state.collections = listed.map((c) => (typeof c === "string" ? { name: c, columns: [] } : c))
    .map((c) => ({ name: c.name, columns: columnsOf(c) }));
  for (const c of state.collections.filter((entry) => !entry.columns.length)) {
    c.columns = columnsOf(await get(`collections/${encodeURIComponent(c.name)}`));
  }
  const select = $("collection-name");
  const names = state.collections.map((c) => c.name);
  if (select.options.length !== names.length || names.some((n, i) => select.options[i].value !== n)) {
    select.replaceChildren(...names.map((n) => new Option(n, n)));
  }
  if (!state.selected || !names.includes(state.selected)) {
    const fromUrl = new URLSearchParams(location.search).get("collection");
    choose(names.includes(fromUrl) ? fromUrl : names[0] || null);
  }
  select.value = state.selected || "";
  renderFleet();
}

// The filter box's text as where terms: separated by spaces; "..." keeps spaces in one.
function terms(text) {
  return (text.match(/(?:[^\s"]+|"[^"]*")+/g) || []).map((t) => t.replace(/"/g, ""));
}

function renderRows(answer) {
  const entry = state.collections.find((c) => c.name === state.selected);
  const rows = listOf(answer, "rows");
  const columns = entry && entry.columns.length ? entry.columns : Object.keys((rows[0] || {}).row || {});
  const table = $("rows");
  const head = el("tr");
  for (const name of columns) head.appendChild(el("th", name));
  head.appendChild(el("th", "count", "num"));
  table.tHead.replaceChildren(head);
  table.tBodies[0].replaceChildren(
    ...rows.map(({ row, count }) => {
      const line = el("tr");
      for (const name of columns) line.appendChild(el("td", row[name] === null ? "null" : row[name]));
      line.appendChild(el("td", count ?? 1, "num"));
      return line;
    }),
  );
  const asOf = answer.as_of;
  const cut = typeof asOf === "string" && asOf.includes(",");
  $("as-of").textContent = asOf == null ? "" : cut ? `at cut ${asOf}` : `as of time ${asOf}`;
  $("as-of").dataset.asOf = asOf == null ? "" : String(asOf);
  const capped = rows.length >= ROWS_SHOWN ? ` (the first ${ROWS_SHOWN} found)` : "";
  $("row-count").textContent = `${rows.length} rows${capped}`;
  table.dataset.rows = String(rows.length);
}

async function pollRows() {
  if (!state.selected || state.whereBad) return;
  const name = state.selected;
  const where = state.where;
  try {
    const answer = await get(`collections/${encodeURIComponent(name)}/rows`, { where, limit: ROWS_SHOWN });
    if (name !== state.selected || where !== state.where) return; // changed meanwhile
    $("filter-error").hidden = true;
    renderRows(answer);
  } catch (error) {
    if (!(error instanceof Problem) || error.status !== 400) throw error;
    state.whereBad = true; // shown until the filter changes, not asked again
    $("filter-error").textContent = error.message;
    $("filter-error").hidden = false;
    $("rows").tBodies[0].replaceChildren();
    $("rows").dataset.rows = "";
    $("row-count").textContent = "";
  }
}

function choose(name) {
  if (name === state.selected) return;
  state.selected = name;
  state.whereBad = false;
  const url = new URL(location.href);
  if (name) url.searchParams.set("collection", name);
  history.replaceState(null, "", url);
  follow(name);
  pollRows().catch((error) => problem(error.message));
}

// --- The change feed ---------------------------------------------------------------------

function feedState(text) {
  $("feed-state").textContent = text;
  $("feed-state").dataset.state = text;
}

// One change, newest first; a bucketed collection's time is its bucket's (`bucket:time`).
function showChange(data, id) {
  const item = el("li");
  item.dataset.position = id || "";
  const diff = data.diff;
  const time = data.bucket === undefined ? data.time : `${data.bucket}:${data.time}`;
  item.appendChild(el("span", time ?? "", "time"));
  if (diff !== undefined) item.appendChild(el("span", diff > 0 ? `+${diff} ` : `${diff} `, diff > 0 ? "plus" : "minus"));
  const row = data.row && typeof data.row === "object" ? data.row : data;
  item.appendChild(el("span", Object.entries(row).map(([k, v]) => `${k}=${v}`).join(" ")));
  const list = $("changes");
  list.prepend(item);
  while (list.children.length > FEED_KEPT) list.lastElementChild.remove();
}

// `changes`: {"as_of", "changes": [{time, row, diff}, ...]}, its id the position reached.
function onChanges(event) {
  state.lastEventId = event.lastEventId || state.lastEventId;
  const data = JSON.parse(event.data);
  for (const change of data.changes || []) showChange(change, event.lastEventId);
  feedState("live");
}

// Follows the collection's changes from `since` (default: from now). The browser resumes a
// dropped stream by itself, sending Last-Event-ID (the position of the last event seen), so
// each change is shown once. A stream the server ends (`event: error`, a problem document:
// the collection dropped, or its log trimmed past the position) starts again from now.
function follow(name, since) {
  if (state.feed) state.feed.close();
  state.feed = null;
  if (since === undefined) {
    $("changes").replaceChildren();
    state.lastEventId = null;
  }
  if (!name) return feedState("");
  const query = since === undefined ? "" : `?since=${encodeURIComponent(since)}`;
  const url = `${API}collections/${encodeURIComponent(name)}/changes${query}`;
  const source = state.token ? new TokenEventSource(url, state.token) : new EventSource(url);
  state.feed = source;
  feedState("connecting");
  const again = (text, from) => {
    source.close();
    feedState(`${text}; following again in 5 s`);
    setTimeout(() => state.selected === name && state.feed === source && follow(name, from), 5000);
  };
  source.addEventListener("position", (event) => {
    state.lastEventId = event.lastEventId;
    feedState("live");
  });
  source.addEventListener("changes", onChanges);
  source.addEventListener("error", (event) => {
    if (state.feed !== source) return;
    if (event.data) {
      const ended = JSON.parse(event.data); // the server's problem document: it ended
      problem(`changes of ${name}: ${ended.detail}`);
      again("ended", undefined);
    } else if (source.readyState === EventSource.CLOSED) {
      again("closed", state.lastEventId || undefined);
    } else feedState("reconnecting");
  });
}

// EventSource sends no header: with a token, the feed is read with fetch instead, and
// resumed the same way (Last-Event-ID after a drop).
class TokenEventSource extends EventTarget {
  constructor(url, token) {
    super();
    this.readyState = 0;
    this.lastEventId = "";
    this.aborter = new AbortController();
    this.connect(url, token);
  }

  close() {
    this.readyState = 2;
    this.aborter.abort();
  }

  async connect(url, token) {
    while (this.readyState !== 2) {
      try {
        const headers = { Accept: "text/event-stream", Authorization: `Bearer ${token}` };
        if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
        const reply = await fetch(url, { headers, signal: this.aborter.signal });
        if (!reply.ok) {
          this.readyState = 2;
          this.dispatchEvent(new Event("error"));
          return;
        }
        this.readyState = 1;
        await this.read(reply.body.getReader());
      } catch {
        if (this.readyState === 2) return;
      }
      this.readyState = 0;
      this.dispatchEvent(new Event("error"));
      await new Promise((done) => setTimeout(done, 1000));
    }
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let [buffer, fields] = ["", {}];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line === "") {
          this.dispatch(fields);
          fields = {};
        } else if (!line.startsWith(":")) {
          const colon = line.includes(":") ? line.indexOf(":") : line.length;
          const [field, text] = [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, "")];
          fields[field] = field === "data" && "data" in fields ? `${fields.data}\n${text}` : text;
        }
      }
    }
  }

  dispatch(fields) {
    if ("id" in fields) this.lastEventId = fields.id;
    if (!("data" in fields)) return;
    const init = { data: fields.data, lastEventId: this.lastEventId };
    this.dispatchEvent(new MessageEvent(fields.event || "message", init));
  }
}

// --- Start -------------------------------------------------------------------------------

function start() {
  $("chart-span").textContent = String(CHART_SPAN_MS / 60000);
  const params = new URLSearchParams(location.search);
  $("filter").value = params.get("where") || "";
  state.where = terms($("filter").value);
  $("collection-name").addEventListener("change", (event) => choose(event.target.value));
  $("filter-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.where = terms($("filter").value);
    state.whereBad = false;
    $("filter-error").hidden = true;
    pollRows().catch((error) => problem(error.message));
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value;
    sessionStorage.setItem("cm-token", state.token);
    $("token-form").hidden = true;
    follow(state.selected);
  });
  every(POLL_MS.collections, pollCollections);
  every(POLL_MS.replicas, pollReplicas);
  every(POLL_MS.status, pollStatus);
  every(POLL_MS.rows, pollRows);
  every(POLL_MS.counts, pollCounts);
  setInterval(renderFleet, 250); // the lease countdown between two polls
}

start();
