// smq ui's timeline: the last minutes to days of attempts (GET /attempts), one row per instance slot
// of each pool, coloured by priority, marks as `smq simulate`'s Gantt chart (client/smq/simulate/gantt.py):
// ✕ preemption, red | spot interruption, plus ◆ idle stop. Loaded before app.js, whose helpers it uses.
"use strict";

const SPOT_OUTCOMES = new Set(["spot-fallback", "max-wait-time-exceeded"]);
// SageMaker resumes a spot attempt after each interruption by itself; the queue sees the attempt end only
// when it gave up (spot-fallback) or waited too long for spot capacity.
const MARKS = {
  preempted: { symbol: "✕", colour: "#000", label: "preempted" },
  spot: { symbol: "|", colour: "#d62728", label: "spot interruption" },
  "idle-gpu": { symbol: "◆", colour: "#8c8c8c", label: "idle stop" },
};
let timelineHours = 3;

function renderTimelineFrame(root) {
  root.append(el("h2", { id: "timeline-title" }, "Timeline"),
    el("form", { class: "filters", onsubmit: (e) => e.preventDefault() },
      el("label", {}, "Last", el("select", { id: "hours", onchange: (e) => { timelineHours = Number(e.target.value); refreshTimeline(); } },
        [5 / 60, 0.25, 1, 3, 6, 12, 24, 72].map((h) => el("option", { value: h, selected: h === timelineHours },
          h < 1 ? `${Math.round(h * 60)} minutes` : `${h} hour${h > 1 ? "s" : ""}`))))),
    el("div", { class: "legend", id: "legend" }),
    el("div", { class: "timeline", id: "timeline" }));
}

// Each attempt takes the lowest free slots of its pool for every instance it holds (gantt rows).
function placeInSlots(attempts, capacity, now) {
  const rows = new Map();
  const busyUntil = new Map();
  for (const a of attempts) {
    const end = a.ended_at ? new Date(a.ended_at).getTime() : now;
    const start = new Date(a.started_at).getTime();
    for (const [pool, count] of Object.entries(a.demand)) {
      const slots = busyUntil.get(pool) || [];
      busyUntil.set(pool, slots);
      let placed = 0;
      for (let slot = 0; placed < count; slot++) {
        if ((slots[slot] ?? -Infinity) <= start) {
          slots[slot] = end;
          rows.set(`${pool}#${slot}`, [...(rows.get(`${pool}#${slot}`) || []), { ...a, start, end, pool }]);
          placed++;
        }
      }
    }
  }
  const pools = [...new Set([...Object.keys(capacity), ...[...busyUntil.keys()]])].sort();
  return pools.flatMap((pool) => {
    const count = Math.max(capacity[pool] || 0, (busyUntil.get(pool) || []).length);
    return Array.from({ length: count }, (_, slot) => ({ label: `${pool} #${slot + 1}`, bars: rows.get(`${pool}#${slot}`) || [] }));
  });
}

function markOf(outcome) {
  if (outcome === "preempted") return MARKS.preempted;
  if (SPOT_OUTCOMES.has(outcome)) return MARKS.spot;
  if (outcome === "idle-gpu") return MARKS["idle-gpu"];
  return null;
}

async function refreshTimeline() {
  const now = Date.now();
  const from = new Date(now - timelineHours * 3600e3).toISOString();
  const [{ attempts }, { pools }] = await Promise.all([
    api("GET", `/api/attempts?from=${encodeURIComponent(from)}`), api("GET", "/api/pools")]);
  const root = document.getElementById("timeline");
  if (!root) return;
  const capacity = Object.fromEntries(pools.map((p) => [p.pool, p.capacity || 0]));
  const rows = placeInSlots(attempts, capacity, now);
  const colours = priorityColours(attempts.map((a) => a.priority));
  const NS = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs = {}, ...children) => {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  };
  const LEFT = 130, WIDTH = 1000, ROW = 22, TOP = 20;
  const start = now - timelineHours * 3600e3;
  const x = (t) => LEFT + ((Math.max(t, start) - start) / (now - start)) * (WIDTH - LEFT - 10);
  const height = TOP + rows.length * ROW + 10;
  const svg = svgEl("svg", { viewBox: `0 0 ${WIDTH} ${height}`, role: "group", "aria-labelledby": "timeline-title" });
  const ticks = 6;
  for (let i = 0; i <= ticks; i++) {
    const t = start + ((now - start) * i) / ticks;
    svg.append(svgEl("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: height, class: "grid" }),
      svgEl("text", { x: x(t), y: 12, "text-anchor": "middle" }, i === ticks ? "now" : `-${duration(now - t)}`));
  }
  rows.forEach((row, index) => {
    const y = TOP + index * ROW;
    svg.append(svgEl("text", { x: 4, y: y + ROW * 0.65, class: "slot-label" }, row.label));
    for (const bar of row.bars) {
      const mark = markOf(bar.outcome);
      const label = `${bar.name} attempt ${bar.number}, priority ${bar.priority}, ${bar.pool}, started ${new Date(bar.started_at).toLocaleString()}`
        + (bar.ended_at ? `, ended ${new Date(bar.ended_at).toLocaleString()} (${bar.outcome})` : ", running");
      const link = svgEl("a", { href: `#/job/${encodeURIComponent(bar.name)}`, "aria-label": label, "data-job": bar.name, "data-outcome": bar.outcome || "live" },
        svgEl("title", {}, label),
        svgEl("rect", { x: x(bar.start), y: y + 2, width: Math.max(x(bar.end) - x(bar.start), 2), height: ROW * 0.8,
          fill: colours.get(bar.priority), stroke: "#0006" }));
      const fits = Math.floor((x(bar.end) - x(bar.start) - 8) / 6.5);
      if (fits >= 4) {
        const name = bar.name.length <= fits ? bar.name : bar.name.slice(0, fits - 1) + "…";
        link.append(svgEl("text", { x: x(bar.start) + 4, y: y + ROW * 0.65, fill: textOn(colours.get(bar.priority)), "pointer-events": "none" }, name));
      }
      if (mark) {
        link.append(svgEl("text", { x: x(bar.end), y: y + ROW * 0.7, "text-anchor": "middle", fill: mark.colour, "font-size": 14, "font-weight": 700, class: "mark" }, mark.symbol));
      }
      svg.append(link);
    }
  });
  root.replaceChildren(svg);
  const legend = document.getElementById("legend");
  legend.replaceChildren(
    ...[...colours.entries()].map(([p, c]) => el("span", {}, swatch(c), `priority ${p}`)),
    ...Object.values(MARKS).map((m) => el("span", {}, el("b", { style: `color:${m.colour}`, "aria-hidden": "true" }, m.symbol), ` ${m.label}`)));
  setStatus(`${attempts.length} attempt${attempts.length === 1 ? "" : "s"} in the last ${duration(timelineHours * 3600e3)}`);
}
