// smq ui: the queue, pools and teams, a job, and a timeline, refreshed by polling the local proxy
// (`smq ui`), which signs every call to the smq API as the user. No framework, nothing fetched
// from elsewhere. Colours: priority by rank on viridis as `smq simulate`'s Gantt chart (light = low).
"use strict";

const REFRESH_MS = 3000;
const TOKEN = document.querySelector('meta[name="smq-token"]').content;
const STATES = ["pending", "starting", "running", "preempting", "stopping", "completed", "failed", "cancelled"];
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
const SHADES = [0.08, 1.0];

let timer = null;
let filters = { state: "", pool: "", team: "", owner: "" };

// ------------------------------------------------------------------ helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(method, path, body) {
  const options = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {
    options.headers["X-SMQ-Token"] = TOKEN;
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(data.message || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const parts = (big, bigUnit, small, smallUnit) => `${big}${bigUnit}` + (small ? ` ${small}${smallUnit}` : "");
  if (s < 60) return `${s}s`;
  if (s < 3600) return parts(Math.floor(s / 60), "m", s % 60, "s");
  if (s < 86400) return parts(Math.floor(s / 3600), "h", Math.floor((s % 3600) / 60), "m");
  return parts(Math.floor(s / 86400), "d", Math.floor((s % 86400) / 3600), "h");
}

function when(iso, { future = false } = {}) {
  if (!iso) return "";
  const at = new Date(iso);
  const delta = at - Date.now();
  const text = delta > 0 || future ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
  return el("time", { datetime: iso, title: at.toLocaleString() + " (" + iso + ")" }, text);
}

function since(iso) {
  if (!iso) return "-";
  return el("time", { datetime: iso, title: new Date(iso).toLocaleString() + " (" + iso + ")" }, duration(Date.now() - new Date(iso)));
}

function shortOwner(owner) {
  if (!owner) return "-";
  const parts = owner.split(":");
  return parts.length >= 6 && parts[0] === "arn" ? parts.slice(5).join(":") : owner;
}

function colourAt(x) {
  const position = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1);
  const low = Math.floor(position), high = Math.min(low + 1, VIRIDIS.length - 1), t = position - low;
  const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const [a, b] = [rgb(VIRIDIS[low]), rgb(VIRIDIS[high])];
  return `rgb(${a.map((value, i) => Math.round(value + (b[i] - value) * t)).join(",")})`;
}

// One colour per distinct priority, higher ones darker, spread by rank (gantt.priority_colours),
// ranked among every priority this page has seen, so that a priority keeps its colour on every view.
const seenPriorities = new Set();

function priorityColours(priorities) {
  priorities.forEach((priority) => seenPriorities.add(priority));
  const ranked = [...seenPriorities].sort((a, b) => a - b);
  const [low, high] = ranked.length > 1 ? SHADES : [(SHADES[0] + SHADES[1]) / 2, (SHADES[0] + SHADES[1]) / 2];
  const step = (high - low) / Math.max(ranked.length - 1, 1);
  return new Map(ranked.map((priority, rank) => [priority, colourAt(1 - (low + rank * step))]));
}

// Black or white, whichever reads better on `colour` (an `rgb(r,g,b)`).
function textOn(colour) {
  const [r, g, b] = colour.match(/\d+/g).map(Number);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? "#000" : "#fff";
}

function swatch(colour) {
  return el("span", { class: "swatch", style: `background:${colour}`, "aria-hidden": "true" });
}

function stateBadge(state) {
  return el("span", { class: `state state-${state}` }, state);
}

function stateSince(job) {
  const attempt = (job.attempts || [])[job.attempts.length - 1];
  if (["starting", "running", "preempting", "stopping"].includes(job.state) && attempt) return attempt.started_at;
  if (job.state === "pending") return attempt && attempt.ended_at ? attempt.ended_at : job.submitted_at;
  return job.updated_at;
}

function setStatus(text, isError = false) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

function updated() {
  const now = new Date();
  document.getElementById("updated").textContent = `updated ${now.toLocaleTimeString()}`;
}

// ------------------------------------------------------------------ pages

const pages = {
  queue: { render: renderQueueFrame, refresh: refreshQueue },
  pools: { render: (root) => root.append(el("div", { id: "pools" })), refresh: refreshPools },
  timeline: { render: renderTimelineFrame, refresh: refreshTimeline },
  job: { render: (root) => root.append(el("div", { id: "job" })), refresh: refreshJob },
};

function renderQueueFrame(root) {
  const select = (name, label, options) =>
    el("label", {}, label, el("select", { name, onchange: (e) => { filters[name] = e.target.value; refreshQueue(); } },
      options.map(([value, text]) => el("option", { value, selected: filters[name] === value }, text))));
  const input = (name, label) =>
    el("label", {}, label, el("input", { name, value: filters[name], type: "search",
      oninput: (e) => { filters[name] = e.target.value.trim(); refreshQueue(); } }));
  root.append(
    el("h2", { id: "queue-title" }, "Queue"),
    el("form", { class: "filters", role: "search", "aria-label": "Filter jobs", onsubmit: (e) => e.preventDefault() },
      select("state", "State", [["", "active"], ["all", "all"], ...STATES.map((s) => [s, s])]),
      input("pool", "Pool"), input("team", "Team"), input("owner", "Owner (contains)")),
    el("table", { "aria-labelledby": "queue-title" },
      el("thead", {}, el("tr", {}, ["Job", "State", "Priority", "Pool", "Team", "Instances", "Waiting/Running for",
        "Estimated start", "Attempts", "Owner", "Reason"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", { id: "jobs" })));
}

async function refreshQueue() {
  const query = new URLSearchParams();
  if (filters.state) query.set("state", filters.state);
  if (filters.pool) query.set("pool", filters.pool);
  const { jobs } = await api("GET", `/api/jobs?${query}`);
  const shown = jobs.filter((job) => (!filters.team || job.team === filters.team)
    && (!filters.owner || (job.owner || "").includes(filters.owner)));
  const colours = priorityColours(shown.map((job) => job.priority));
  const body = document.getElementById("jobs");
  if (!body) return;
  body.replaceChildren(...shown.map((job) => el("tr", { "data-job": job.name },
    el("td", {}, el("a", { href: `#/job/${encodeURIComponent(job.name)}` }, job.name)),
    el("td", {}, stateBadge(job.state)),
    el("td", { class: "num" }, swatch(colours.get(job.priority)), job.priority),
    el("td", {}, job.pool), el("td", {}, job.team || "-"),
    el("td", { class: "num" }, Object.values(job.demand || {}).reduce((a, b) => a + b, 0) || job.instances),
    el("td", {}, since(stateSince(job))),
    el("td", {}, job.estimated_start ? when(job.estimated_start.at, { future: true }) : ""),
    el("td", { class: "num" }, job.attempt_count ?? (job.attempts || []).length),
    el("td", {}, shortOwner(job.owner)),
    el("td", { class: "reason" }, job.reason || ""))));
  if (!shown.length) body.append(el("tr", {}, el("td", { colspan: 11 }, "No jobs match.")));
  setStatus(`${shown.length} job${shown.length === 1 ? "" : "s"}`);
}

async function refreshPools() {
  const [{ pools }, quotas] = await Promise.all([api("GET", "/api/pools"), api("GET", "/api/quotas")]);
  const root = document.getElementById("pools");
  if (!root) return;
  const table = (title, id, headers, rows) => [
    el("h2", { id }, title),
    el("table", { "aria-labelledby": id },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col", class: h.num ? "num" : null }, h.text || h)))),
      el("tbody", {}, rows))];
  const num = (text) => ({ text, num: true });
  root.replaceChildren(
    ...table("Pools", "pools-title", ["Pool", num("Capacity"), num("In use"), num("Free"), num("Pending"), "Head"],
      pools.map((p) => el("tr", {}, el("td", {}, p.pool), el("td", { class: "num" }, p.capacity ?? "-"),
        el("td", { class: "num" }, p.in_use), el("td", { class: "num" }, p.capacity == null ? "-" : Math.max(p.capacity - p.in_use, 0)),
        el("td", { class: "num" }, p.pending),
        el("td", {}, p.head ? el("a", { href: `#/job/${encodeURIComponent(p.head)}` }, p.head) : "-")))),
    ...table("Teams", "teams-title", ["Team", "Pool", num("Quota"), num("In use"), num("Borrowed"), num("Lent"), num("Pending"), "Sharing"],
      (quotas.teams || []).map((t) => el("tr", {}, el("td", {}, t.team || "(no team)"), el("td", {}, t.pool),
        ...[t.quota, t.in_use, t.borrowed, t.lent, t.pending].map((v) => el("td", { class: "num" }, v ?? "-")),
        el("td", {}, t.sharing)))),
    (quotas.teams || []).length ? "" : el("p", {}, "No team quotas configured."));
  setStatus(`${pools.length} pool${pools.length === 1 ? "" : "s"}`);
}

let lastAction = { job: null, text: "", isError: false };

// The request (up to 256 KB) is fetched with the job's first load and, while its block is open, with
// every refresh (a spot fallback rewrites it); otherwise the text last fetched is kept.
const requestText = new Map();
let requestOpen = false;

// Only the job's owner or an admin may read its request (it may carry secrets): for anyone else the
// API answers 403, and the page shows the job without it.
async function jobWithRequest(path, name) {
  try {
    return await api("GET", `${path}?include=request`);
  } catch (error) {
    if (error.status !== 403) throw error;
    const job = await api("GET", path);
    requestText.set(name, { jobId: job.job_id, refused: true, text: "Only the job's owner or an admin may read its request." });
    return job;
  }
}

async function refreshJob() {
  const name = decodeURIComponent(location.hash.split("/")[2] || "");
  if (document.getElementById("confirm").open) return;
  const known = requestText.get(name);
  const path = `/api/jobs/${encodeURIComponent(name)}`;
  const wantsRequest = (requestOpen || !known) && !(known && known.refused);
  const job = wantsRequest ? await jobWithRequest(path, name) : await api("GET", path);
  if (job.request) requestText.set(name, { jobId: job.job_id, text: JSON.stringify(job.request, null, 2) });
  else if (known && known.jobId !== job.job_id) requestText.delete(name); // a new job of the name: fetched next time
  const request = requestText.get(name);
  const root = document.getElementById("job");
  if (!root) return;
  const active = document.activeElement && document.activeElement.id;
  const live = !["completed", "failed", "cancelled"].includes(job.state);
  const attempts = job.attempts || [];
  const last = attempts[attempts.length - 1];
  if (decodeURIComponent(location.hash.split("/")[2] || "") !== name) return; // left for another page meanwhile
  const priorityInput = document.getElementById("new-priority");
  const typed = priorityInput ? priorityInput.value : String(job.priority);
  root.replaceChildren(
    el("h2", { id: "job-title" }, `Job ${job.name}`),
    el("dl", { class: "facts" },
      el("dt", {}, "State"), el("dd", {}, stateBadge(job.state)),
      el("dt", {}, "Priority"), el("dd", {}, job.priority),
      el("dt", {}, "Pool"), el("dd", {}, job.pool),
      el("dt", {}, "Team"), el("dd", {}, job.team || "-"),
      el("dt", {}, "Owner"), el("dd", {}, job.owner),
      el("dt", {}, "Submitted"), el("dd", {}, when(job.submitted_at)),
      el("dt", {}, "Reason"), el("dd", { id: "job-reason" }, job.reason || "-"),
      job.estimated_start ? [el("dt", {}, "Estimated start"), el("dd", {}, when(job.estimated_start.at, { future: true }))] : []),
    live ? el("form", { class: "actions", "aria-label": "Actions", onsubmit: (e) => e.preventDefault() },
      el("label", {}, "New priority ", el("input", { id: "new-priority", type: "number", step: 1, value: typed, "aria-describedby": "job-title" })),
      el("button", { id: "set-priority", type: "button", onclick: () => confirmPriority(job) }, "Change priority"),
      el("button", { id: "cancel-job", type: "button", class: "danger", onclick: () => confirmCancel(job) }, "Cancel job")) : "",
    el("p", { id: "action-result", role: "status", "aria-live": "polite", class: lastAction.isError ? "error" : null },
      lastAction.job === job.name ? lastAction.text : ""),
    el("h2", { id: "attempts-title" }, "Attempts"),
    el("table", { "aria-labelledby": "attempts-title" },
      el("thead", {}, el("tr", {}, ["#", "SageMaker job", "Started", "Ended", "Ran for", "Outcome", "Reason"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, attempts.length ? [] : el("tr", {}, el("td", { colspan: 7 }, "None yet.")), attempts.map((a) => el("tr", {}, el("td", {}, a.number), el("td", {}, a.training_job_name),
        el("td", {}, when(a.started_at)), el("td", {}, a.ended_at ? when(a.ended_at) : "live"),
        el("td", {}, a.started_at ? duration(new Date(a.ended_at || Date.now()) - new Date(a.started_at)) : ""),
        el("td", {}, a.outcome || ""), el("td", { class: "reason" }, a.reason || ""))))),
    el("h2", { id: "history-title" }, "Priority and other changes"),
    (job.history || []).length ? el("ul", { "aria-labelledby": "history-title" },
      job.history.map((c) => el("li", {}, when(c.at), ` ${shortOwner(c.by)}: ${c.what}`))) : el("p", {}, "None."),
    el("h2", { id: "logs-title" }, last ? `Log lines of ${last.training_job_name}` : "Log lines"),
    el("pre", { id: "log-lines", "aria-labelledby": "logs-title", tabindex: 0 }, logText.get(name) || "No log lines yet."),
    el("h2", { id: "request-title" }, "Request"),
    el("details", { id: "request", open: requestOpen, ontoggle: (e) => { requestOpen = e.target.open; } },
      el("summary", { id: "request-summary" }, "The CreateTrainingJob request, as the queue sends it to SageMaker"),
      el("pre", { "aria-labelledby": "request-title", tabindex: 0 }, request ? request.text : "Loading…")));
  if (active && document.getElementById(active)) document.getElementById(active).focus();
  setStatus("");
  if (last) refreshLogs(name, last.training_job_name);
}

// The log lines come after the rest of the page: CloudWatch Logs may answer slowly.
const logText = new Map();

async function refreshLogs(name, trainingJobName) {
  const logs = await api("GET", `/api/logs/${encodeURIComponent(trainingJobName)}`)
    .catch((error) => ({ lines: [], note: `Log lines unavailable: ${error.message}` }));
  const text = logs.lines.length ? logs.lines.map((l) => `[${l.host}] ${l.message}`).join("\n") : logs.note || "No log lines yet.";
  logText.set(name, text);
  const pre = document.getElementById("log-lines");
  if (pre && decodeURIComponent(location.hash.split("/")[2] || "") === name) pre.textContent = text;
}

function confirmAction(title, text, okText, action) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okText;
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "ok") return;
    const name = decodeURIComponent(location.hash.split("/")[2] || "");
    try {
      const job = await action();
      lastAction = { job: name, text: `Done: ${job.name} is ${job.state}, priority ${job.priority}.`, isError: false };
    } catch (error) {
      lastAction = { job: name, text: `Refused (${error.status || "error"}): ${error.message}`, isError: true };
    }
    await refreshJob().catch(() => {});
  };
  dialog.showModal();
  dialog.querySelector('button[value="cancel"]').focus();
}

function confirmCancel(job) {
  confirmAction(`Cancel ${job.name}?`, job.state === "pending" ? "It leaves the queue."
    : "Its running SageMaker training job is stopped.", "Cancel the job",
    () => api("DELETE", `/api/jobs/${encodeURIComponent(job.name)}`));
}

function confirmPriority(job) {
  const value = Number(document.getElementById("new-priority").value);
  if (!Number.isInteger(value)) { setStatus("The priority must be a whole number.", true); return; }
  confirmAction(`Change the priority of ${job.name}?`, `From ${job.priority} to ${value}: the next pass re-sorts the pool and may preempt lower-priority work.`,
    "Change priority", () => api("PATCH", `/api/jobs/${encodeURIComponent(job.name)}`, { priority: value }));
}

// ------------------------------------------------------------------ routing

function route() {
  const page = (location.hash.split("/")[1] || "queue");
  const current = pages[page] ? page : "queue";
  document.querySelectorAll("nav a").forEach((a) => {
    if (a.dataset.page === current) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  });
  const root = document.getElementById("page");
  root.replaceChildren();
  pages[current].render(root);
  document.title = `smq: ${current === "job" ? decodeURIComponent(location.hash.split("/")[2] || "") : current}`;
  clearInterval(timer);
  const tick = () => pages[current].refresh().then(updated).catch((error) => setStatus(`Cannot read the queue: ${error.message}`, true));
  tick();
  timer = setInterval(tick, REFRESH_MS);
}

window.addEventListener("hashchange", () => { route(); document.getElementById("main").focus(); });
route();
