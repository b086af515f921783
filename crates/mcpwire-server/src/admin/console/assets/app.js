// The mcpwire console. Everything that comes from the gateway or its upstreams is data:
// it reaches the page through textContent and attributes only, never as markup.

const $ = (id) => document.getElementById(id);
let csrf = "";
let catalog = { tools: [] };
let chosen = null;
let polling = null;
const downSince = new Map();

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function api(path, body) {
  const init = { credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.headers["X-CSRF-Token"] = csrf;
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

document.addEventListener("securitypolicyviolation", (e) => {
  if (!csrf) return;
  api("/ui/api/csp", { directive: e.violatedDirective, blocked: e.blockedURI, sample: e.sample }).catch(() => {});
});

function loggedIn(s) {
  csrf = s.csrf;
  $("who").textContent = "admin: " + s.admin;
  $("login-panel").hidden = true;
  $("console").hidden = false;
  $("logout").hidden = false;
  start();
}

$("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    loggedIn(await api("/ui/api/login", { secret: $("secret").value }));
    $("secret").value = "";
  } catch (e) {
    $("login-error").textContent = e.message;
  }
});

$("logout").addEventListener("click", async () => {
  await api("/ui/api/logout", {}).catch(() => {});
  location.reload();
});

async function start() {
  const { callers } = await api("/ui/api/callers");
  const pick = $("view-as");
  pick.replaceChildren(...callers.map((c) => { const o = el("option", c); o.value = c; return o; }));
  const sub = el("option", "a JWT subject…");
  sub.value = "sub:";
  const jwt = el("option", "JWT claims (JSON)…");
  jwt.value = "jwt:";
  pick.append(sub, jwt);
  pick.addEventListener("change", async () => {
    if (pick.value === "sub:" || pick.value === "jwt:") {
      const asked = pick.value === "sub:"
        ? prompt("JWT subject")
        : prompt("JWT claims as JSON, e.g. {\"sub\": \"alice\", \"scope\": \"read write\"}");
      const o = el("option", pick.value + (asked || ""));
      o.value = pick.value + (asked || "");
      pick.append(o);
      pick.value = o.value;
    }
    await loadCatalog();
  });
  await loadCatalog();
  pollBackends();
  pollCalls();
  pollConfig();
  $("chart-backend").addEventListener("change", () => pollSeries());
  polling = setInterval(() => { pollBackends(); pollCalls(); pollConfig(); pollSeries(); }, 1500);
}

function fmtSince(t) {
  return t ? new Date(t).toLocaleTimeString() : "";
}

const fixed = (v, d) => (v === null || v === undefined ? "" : Number(v).toFixed(d));

async function pollBackends() {
  let data;
  try { data = await api("/ui/api/backends"); } catch (e) { return; }
  const rows = data.backends.map((b) => {
    if (b.up) downSince.delete(b.name);
    else if (!downSince.has(b.name)) downSince.set(b.name, Date.now());
    const f = b.figures || {};
    const tr = el("tr");
    tr.dataset.backend = b.name;
    const pct = f.calls ? [f.p50_ms, f.p90_ms, f.p99_ms].map((v) => fixed(v, 2)).join(" / ") : "";
    const errors = f.calls ? f.errors + " of " + f.calls + " (" + fixed(100 * f.error_rate, 1) + " %)" : "";
    tr.append(el("td", b.name), el("td", b.kind ?? "", "kind"),
      el("td", b.up ? "up" : "down", b.up ? "up state" : "down state"),
      el("td", b.up ? "" : fmtSince(downSince.get(b.name))), el("td", b.era ?? "", "era"),
      el("td", b.restarts ?? "", "restarts num"), el("td", b.required ? "closed" : "open"),
      el("td", b.sessions ?? "", "num"), el("td", f.calls ? fixed(f.calls_per_s, 1) : "", "rate num"),
      el("td", errors, "errors"), el("td", pct, "latency"), el("td", b.reason ?? ""));
    return tr;
  });
  $("backends").replaceChildren(...rows);
  // The chart's picker follows the backends (a reload adds or removes some).
  const pick = $("chart-backend");
  const names = data.backends.map((b) => b.name);
  if ([...pick.options].slice(1).map((o) => o.value).join("\n") !== names.join("\n")) {
    const was = pick.value;
    const none = el("option", "(choose a backend)");
    none.value = "";
    pick.replaceChildren(none, ...names.map((n) => { const o = el("option", n); o.value = n; return o; }));
    pick.value = names.includes(was) ? was : "";
  }
}

// One backend's last minute, second by second: calls, errors and latency (p50, p99).
async function pollSeries() {
  const backend = $("chart-backend").value;
  $("backend-charts").hidden = !backend;
  if (!backend) return;
  let data;
  try { data = await api("/ui/api/series?backend=" + encodeURIComponent(backend)); } catch (e) { return; }
  if (data.backend !== $("chart-backend").value) return;
  const pts = data.points;
  $("backend-charts").dataset.points = String(pts.reduce((n, p) => n + p.calls, 0));
  const calls = pts.map((p) => p.calls);
  const errors = pts.map((p) => p.errors);
  $("chart-calls-max").textContent = "(max " + Math.max(0, ...calls) + ")";
  $("chart-errors-max").textContent = "(max " + Math.max(0, ...errors) + ")";
  drawBars($("chart-calls"), [[calls, "bar-ok"]], 10, 60);
  drawBars($("chart-errors"), [[errors, "bar-bad"]], 10, 60);
  const p99 = pts.map((p) => p.p99_ms || 0);
  const p50 = pts.map((p) => p.p50_ms || 0);
  $("chart-latency-max").textContent = "(max p99 " + fixed(Math.max(0, ...p99), 2) + " ms)";
  drawBars($("chart-latency"), [[p99, "bar-p99"], [p50, "bar-p50"]], 10, 60, true);
}

async function pollConfig() {
  let c;
  try { c = await api("/ui/api/config"); } catch (e) { return; }
  $("config-file").textContent = c.file || "(none: command-line flags)";
  const r = c.reload;
  $("reload").textContent = r
    ? new Date(r.at_ms).toLocaleTimeString() + " — " + (r.applied ? "applied: " : "refused: ") + r.message
    : "none since the start";
  $("reload").className = r && !r.applied ? "error" : "";
  $("listeners").replaceChildren(...c.listeners.map((l) => {
    const tr = el("tr");
    tr.dataset.listener = l.url;
    tr.append(el("td", l.url), el("td", l.view ?? "(whole catalog)"), el("td", l.auth ? "required" : "none"),
      el("td", l.sessions ?? "", "sessions num"), el("td", l.connections ?? "", "connections num"),
      el("td", l.stateless ?? "", "stateless num"));
    return tr;
  }));
  $("masking").textContent = c.masking;
  if ($("config-text").textContent !== c.text) $("config-text").textContent = c.text;
}

let calls = [];
$("calls-filter").addEventListener("input", () => showCalls());

async function pollCalls() {
  try { calls = (await api("/ui/api/calls")).calls; } catch (e) { return; }
  showCalls();
  drawChart();
}

function showCalls() {
  const f = $("calls-filter").value.toLowerCase();
  const rows = calls
    .filter((c) => !f || [c.tool, c.identity, c.outcome, c.listener, c.backend].some((s) => s.toLowerCase().includes(f)))
    .map((c) => {
      const tr = el("tr", undefined, c.failed ? "failed" : "");
      tr.dataset.tool = c.tool;
      tr.append(el("td", new Date(c.at_ms).toLocaleTimeString()), el("td", c.identity),
        el("td", c.listener, "listener"), el("td", c.tool, "tool"), el("td", c.backend, "backend"),
        el("td", c.outcome, c.failed ? "down outcome" : "up outcome"),
        el("td", c.duration_ms.toFixed(1), "num"));
      return tr;
    });
  $("calls").replaceChildren(...rows);
}

// SVG bars: each series in `layers` is [values, class], one bar per value, `w` wide, in a
// chart `h` high. Stacked unless `overlaid` (then each layer is drawn from the bottom,
// the later in front).
function drawBars(svg, layers, w, h, overlaid) {
  const NS = "http://www.w3.org/2000/svg";
  const n = layers[0][0].length;
  const total = (i) => layers.reduce((t, [v]) => (overlaid ? Math.max(t, v[i]) : t + v[i]), 0);
  let max = 0;
  for (let i = 0; i < n; i++) max = Math.max(max, total(i));
  max = max || 1;
  const room = h - 5;
  const parts = [];
  for (let i = 0; i < n; i++) {
    let base = 0;
    for (const [values, cls] of layers) {
      const v = values[i];
      if (!v) continue;
      const r = document.createElementNS(NS, "rect");
      const bh = (v / max) * room;
      r.setAttribute("x", String(i * w + 1));
      r.setAttribute("width", String(w - 2));
      r.setAttribute("y", String(h - (base / max) * room - bh));
      r.setAttribute("height", String(bh));
      r.setAttribute("class", cls);
      parts.push(r);
      if (!overlaid) base += v;
    }
  }
  svg.replaceChildren(...parts);
}

// Calls and failures per 5 s over the last 2 minutes, drawn as SVG bars.
function drawChart() {
  const now = Date.now();
  const buckets = 24;
  const ok = new Array(buckets).fill(0);
  const bad = new Array(buckets).fill(0);
  for (const c of calls) {
    const i = buckets - 1 - Math.floor((now - c.at_ms) / 5000);
    if (i >= 0 && i < buckets) (c.failed ? bad : ok)[i]++;
  }
  drawBars($("chart"), [[ok, "bar-ok"], [bad, "bar-bad"]], 25, 80);
}

async function loadCatalog() {
  const as = $("view-as").value || "anonymous";
  $("try-as").textContent = as;
  $("catalog-status").textContent = "loading…";
  try {
    catalog = await api("/ui/api/catalog?as=" + encodeURIComponent(as));
    $("catalog-status").textContent = "";
  } catch (e) {
    $("catalog-status").textContent = e.message;
    return;
  }
  const rows = catalog.tools.map((t) => {
    const tr = el("tr", undefined, t.visible ? "visible-item" : "hidden-item");
    tr.dataset.tool = t.name;
    const seen = t.visible ? "yes" : "hidden by " + (t.hidden_by || "[policy]");
    tr.append(el("td", t.name, "name"), el("td", t.backend), el("td", t.upstream),
      el("td", t.description ?? "", "desc"), el("td", seen, "seen"));
    const cell = el("td");
    if (t.visible) {
      const b = el("button", "Try");
      b.type = "button";
      b.className = "try";
      b.addEventListener("click", () => choose(t));
      cell.append(b);
    }
    tr.append(cell);
    return tr;
  });
  $("catalog").replaceChildren(...rows);
  const others = [];
  for (const kind of ["prompts", "resources", "templates"]) {
    for (const i of catalog[kind] || []) {
      others.push(el("li", kind.slice(0, -1) + ": " + i.name + " (" + i.backend + ")" + (i.visible ? "" : " — hidden by " + i.hidden_by)));
    }
  }
  $("others").replaceChildren(...others);
}

// The form for a JSON schema: one field per property, nested objects as fieldsets.
function resolve(schema, root) {
  let s = schema || {};
  for (let i = 0; i < 16 && s && typeof s.$ref === "string"; i++) {
    const path = s.$ref.replace(/^#\//, "").split("/");
    let t = root;
    for (const p of path) t = t ? t[p.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
    s = t || {};
  }
  return s;
}

function field(name, schema, root, required) {
  const s = resolve(schema, root);
  const wrap = el("div", undefined, "field");
  const label = el("label", name + (required ? " *" : ""));
  wrap.append(label);
  let input;
  let read;
  if (Array.isArray(s.enum)) {
    input = el("select");
    for (const v of s.enum) { const o = el("option", JSON.stringify(v)); o.value = JSON.stringify(v); input.append(o); }
    if (s.default !== undefined) input.value = JSON.stringify(s.default);
    read = () => JSON.parse(input.value);
  } else if (s.type === "boolean") {
    input = el("input");
    input.type = "checkbox";
    input.checked = s.default === true;
    read = () => input.checked;
  } else if (s.type === "number" || s.type === "integer") {
    input = el("input");
    input.type = "number";
    if (s.type === "integer") input.step = "1";
    if (s.default !== undefined) input.value = String(s.default);
    read = () => (input.value === "" ? undefined : Number(input.value));
  } else if (s.type === "string") {
    input = el("input");
    input.type = "text";
    if (s.default !== undefined) input.value = String(s.default);
    read = () => (input.value === "" && !required ? undefined : input.value);
  } else if (s.type === "object" && s.properties) {
    input = el("fieldset");
    const sub = fields(s, root);
    input.append(...sub.nodes);
    read = sub.read;
  } else {
    input = el("textarea");
    input.placeholder = "JSON (" + (s.type || "any") + ")";
    if (s.default !== undefined) input.value = JSON.stringify(s.default);
    read = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  input.name = name;
  input.dataset.arg = name;
  if (s.description) input.title = s.description;
  wrap.append(input);
  return { node: wrap, read };
}

function fields(schema, root) {
  const s = resolve(schema, root);
  const req = new Set(s.required || []);
  const parts = Object.entries(s.properties || {}).map(([k, v]) => [k, field(k, v, root, req.has(k))]);
  return {
    nodes: parts.map(([, f]) => f.node),
    read: () => {
      const out = {};
      for (const [k, f] of parts) { const v = f.read(); if (v !== undefined) out[k] = v; }
      return out;
    },
  };
}

function choose(tool) {
  chosen = tool;
  $("try-tool").textContent = tool.name;
  const root = tool.inputSchema || {};
  const f = fields(root, root);
  chosen.read = f.read;
  $("try-fields").replaceChildren(...f.nodes);
  $("run").disabled = false;
  $("result").textContent = "";
}

$("try-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (!chosen) return;
  let args;
  try { args = chosen.read(); } catch (e) { $("result").textContent = "invalid arguments: " + e.message; return; }
  $("result").textContent = "running…";
  $("events").replaceChildren();
  $("progress").value = 0;
  $("progress-text").textContent = "";
  try {
    await streamCall({ as: $("view-as").value, name: chosen.name, arguments: args });
  } catch (e) {
    $("result").textContent = "error: " + e.message;
  }
});

// POSTs the call and reads its server-sent events as they arrive.
async function streamCall(body) {
  const r = await fetch("/ui/api/call", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: JSON.stringify(body),
  });
  if (!r.ok) {
    const data = await r.json().catch(() => ({}));
    throw new Error(data.error || r.statusText);
  }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) shown(JSON.parse(data));
    }
  }
}

function shown(ev) {
  if (ev.kind === "progress") {
    $("progress").max = ev.total || 1;
    $("progress").value = ev.progress;
    const text = ev.progress + (ev.total ? " / " + ev.total : "") + (ev.message ? " — " + ev.message : "");
    $("progress-text").textContent = text;
    $("events").append(el("li", "progress " + text, "progress-event"));
  } else if (ev.kind === "log") {
    $("events").append(el("li", "log " + ev.level + ": " + JSON.stringify(ev.data), "log-event"));
  } else if (ev.kind === "ask") {
    showAsk(ev);
  } else if (ev.kind === "result") {
    $("result").textContent = JSON.stringify(ev.result, null, 2);
  } else if (ev.kind === "error") {
    $("result").textContent = "error: " + ev.error;
  }
  if (ev.kind === "result" || ev.kind === "error") $("ask-panel").hidden = true;
}

// A question from the tool: an elicitation (a form from its requested schema) or a
// sampling request (answered by a text box). The answer is POSTed with the question's id.
let asking = null;

// Whether `u` may be offered as a link: the gateway says so (`openable`) and the browser
// parses it as http or https.
function webUrl(u, openable) {
  if (!openable || typeof u !== "string") return false;
  try { return ["http:", "https:"].includes(new URL(u).protocol); } catch (e) { return false; }
}

function showAsk(ev) {
  const p = ev.params || {};
  asking = { id: ev.id, method: ev.method };
  $("ask-method").textContent = ev.method;
  $("ask-url-panel").hidden = true;
  $("ask-link-line").replaceChildren();
  if (ev.method === "elicitation/create" && p.mode === "url") {
    // The address is the tool's, untrusted: shown as text, offered as a link only when it
    // is http(s), opened only by the operator's click, with no opener and no referrer.
    $("ask-message").textContent = p.message || "";
    $("ask-url").textContent = String(p.url ?? "");
    if (webUrl(p.url, p.openable)) {
      const a = el("a", "open this address in a new tab");
      a.id = "ask-link";
      a.href = p.url;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      $("ask-link-line").append(a);
    } else {
      $("ask-link-line").append(el("span", "not offered as a link: only http and https addresses are", "note"));
    }
    $("ask-url-panel").hidden = false;
    asking.read = () => ({ action: "accept" });
    $("ask-fields").replaceChildren();
  } else if (ev.method === "elicitation/create") {
    $("ask-message").textContent = p.message || "";
    const schema = p.requestedSchema || { type: "object", properties: {} };
    const f = fields(schema, schema);
    asking.read = () => ({ action: "accept", content: f.read() });
    $("ask-fields").replaceChildren(...f.nodes);
  } else {
    const said = (p.messages || []).map((m) => m.role + ": " + (m.content && m.content.text !== undefined ? m.content.text : JSON.stringify(m.content)));
    $("ask-message").textContent = (p.systemPrompt ? "system: " + p.systemPrompt + "\n" : "") + said.join("\n");
    const box = el("textarea");
    box.id = "sample-text";
    box.dataset.arg = "sample";
    const wrap = el("div", undefined, "field");
    wrap.append(el("label", "answer"), box);
    asking.read = () => ({ role: "assistant", content: { type: "text", text: box.value }, model: "mcpwire-console", stopReason: "endTurn" });
    $("ask-fields").replaceChildren(wrap);
  }
  $("ask-panel").hidden = false;
}

async function answerAsk(how) {
  if (!asking) return;
  const q = asking;
  asking = null;
  $("ask-panel").hidden = true;
  let body;
  if (how === "accept") {
    try { body = { id: q.id, result: q.read() }; } catch (e) { body = { id: q.id, error: "invalid answer: " + e.message }; }
  } else if (q.method === "elicitation/create") {
    body = { id: q.id, result: { action: how } };
  } else {
    body = { id: q.id, error: "the operator declined" };
  }
  await api("/ui/api/answer", body).catch((e) => { $("result").textContent = "error: " + e.message; });
}

$("ask-form").addEventListener("submit", (ev) => { ev.preventDefault(); answerAsk("accept"); });
$("ask-decline").addEventListener("click", () => answerAsk("decline"));
$("ask-cancel").addEventListener("click", () => answerAsk("cancel"));

api("/ui/api/session").then(loggedIn).catch(() => {});
