"use strict";
// The approvals inbox. Lists GET /v1/approvals?status=pending every half second (so a request
// made, or decided elsewhere, shows within a second) and decides with
// POST /v1/responses/{id}/approvals. Everything the server sends is shown as text, never as HTML.
// Requests background responses wait for are decided at once; requests that ended responses
// left open (decision_applies "on_follow_up") are listed apart: a decision on one is kept for the
// client's next request that continues the response.

const KEY_STORAGE = "durable-responses-inbox-key";
const POLL_MS = 500;
const LOAD_FACTOR = 4;  // a look that took t waits at least LOAD_FACTOR * t before the next: a long list is read
                        // less often, so an open tab never keeps the server busy more than a fifth of the time
const PAGE_LIMIT = 100;
const MAX_PAGES = 20;

const list = document.getElementById("requests");
const openSection = document.getElementById("open-section");
const openList = document.getElementById("open-requests");
const empty = document.getElementById("empty");
const connection = document.getElementById("connection");
const announcer = document.getElementById("announcer");
const keyForm = document.getElementById("key-form");
const shown = new Map();  // approval request id -> { card, request }
// Requests this page is deciding: a poll that finds one gone before the decision's answer is
// read leaves it to decide(), which says what this page did (not "decided elsewhere").
const deciding = new Set();
// Requests this page decided: a poll begun before the decision still lists them, and must not
// show them again.
const decided = new Set();
let firstLook = true;

function headers() {
  const result = { "content-type": "application/json" };
  const key = sessionStorage.getItem(KEY_STORAGE);
  if (key) result.authorization = "Bearer " + key;
  return result;
}

function announce(text) {
  announcer.textContent = text;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function waited(askedAtMs) {
  const seconds = Math.max(0, Math.round((Date.now() - askedAtMs) / 1000));
  if (seconds < 60) return seconds + " s";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return minutes + " min";
  const hours = Math.round(minutes / 60);
  if (hours < 48) return hours + " h";
  return Math.round(hours / 24) + " days";
}

function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch (error) {
    return text;
  }
}

// Characters that change how text reads without showing themselves: direction controls
// (which can make "delete /etc" read as something else), zero-width and other format
// characters, and control characters other than line breaks and tabs.
const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}]|(?![\n\t])\p{Cc}/gu;

function codePoint(character) {
  return "\\u{" + character.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "}";
}

// The text as nodes, each hidden character shown as a marked \u{XXXX} escape; and how many.
function visible(text) {
  const nodes = [];
  let count = 0;
  let last = 0;
  for (const match of text.matchAll(HIDDEN)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    const shown = element("mark", "hidden-character", codePoint(match[0]));
    shown.title = "an invisible or direction-changing character";
    nodes.push(shown);
    count += 1;
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return { nodes, count };
}

function plain(text) {
  return String(text).replace(HIDDEN, codePoint);
}

function argumentsBlock(text) {
  const shown = visible(prettyArguments(text));
  const block = element("pre", "arguments");
  block.append(...shown.nodes);
  if (!shown.count) return [block];
  const note = element("p", "hidden-note", "These arguments hold " + shown.count + " invisible or " +
    "direction-changing character" + (shown.count === 1 ? "" : "s") + ", shown as \\u{…} escapes. " +
    "Read them before you approve.");
  return [note, block];
}

function render(request) {
  const card = element("li", "request");
  card.dataset.id = request.id;
  const titleId = "title-" + request.id;
  const article = element("article");
  article.setAttribute("aria-labelledby", titleId);
  const title = element("h2", null, plain(request.name) + " on " + plain(request.server_label));
  title.id = titleId;
  article.append(title);
  const meta = element("p", "meta");
  const later = request.decision_applies === "on_follow_up";
  meta.append("Model " + request.model + (later ? " · response " + request.response_status + " · asked " : " · waiting "));
  const time = element("time", "waited", waited(request.asked_at_ms));
  time.dateTime = new Date(request.asked_at_ms).toISOString();
  meta.append(time, (later ? " ago" : "") + " · response " + request.response_id);
  article.append(meta);
  if (later) {
    article.append(element("p", "applies", "Applies when the client continues this response: approved, its next " +
      "request runs the call; denied, the model is told why."));
  }
  if (request.last_user_message) {
    article.append(element("h3", null, "Asked"), element("blockquote", "asked", request.last_user_message));
  }
  article.append(element("h3", null, "Arguments"), ...argumentsBlock(request.arguments));
  const reasonId = "reason-" + request.id;
  const label = element("label", null, "Reason (optional, told to the model)");
  label.htmlFor = reasonId;
  const reason = element("input", "reason");
  reason.type = "text";
  reason.id = reasonId;
  reason.maxLength = 1000;
  const actions = element("div", "actions");
  const approve = element("button", "approve", "Approve");
  const deny = element("button", "deny", "Deny");
  approve.type = deny.type = "button";
  approve.setAttribute("aria-describedby", titleId);
  deny.setAttribute("aria-describedby", titleId);
  approve.addEventListener("click", () => decide(request, true, card));
  deny.addEventListener("click", () => decide(request, false, card));
  actions.append(approve, deny);
  const error = element("p", "error");
  error.setAttribute("role", "alert");
  error.hidden = true;
  article.append(label, reason, actions, error);
  card.append(article);
  return card;
}

function forget(id) {
  const entry = shown.get(id);
  if (!entry) return;
  const focused = entry.card.contains(document.activeElement);
  const next = entry.card.nextElementSibling || entry.card.previousElementSibling;
  entry.card.remove();
  shown.delete(id);
  if (focused && next) next.querySelector("button.approve").focus();
  showCount();
}

function decidedText(request, approve) {
  const what = (approve ? "Approved " : "Denied ") + request.name + " on " + request.server_label;
  if (request.decision_applies !== "on_follow_up") return what + ".";
  return what + "; the client's next request continuing the response " + (approve ? "runs it." : "is told so.");
}

function showCount() {
  empty.hidden = list.children.length > 0;
  openSection.hidden = openList.children.length === 0;
  document.title = shown.size ? "(" + shown.size + ") Approvals inbox" : "Approvals inbox";
}

async function decide(request, approve, card) {
  const buttons = card.querySelectorAll("button");
  const error = card.querySelector(".error");
  const reason = card.querySelector("input.reason").value.trim();
  buttons.forEach((button) => { button.disabled = true; });
  error.hidden = true;
  const body = { approval_request_id: request.id, approve: approve };
  if (reason) body.reason = reason;
  let answer;
  deciding.add(request.id);
  try {
    answer = await fetch("/v1/responses/" + encodeURIComponent(request.response_id) + "/approvals",
      { method: "POST", headers: headers(), body: JSON.stringify(body) });
  } catch (failure) {
    answer = null;
  } finally {
    deciding.delete(request.id);
  }
  if (answer && answer.ok) {
    decided.add(request.id);
    forget(request.id);
    announce(decidedText(request, approve));
    return;
  }
  let message = "The server could not be reached; try again.";
  if (answer) {
    const problem = await answer.json().catch(() => null);
    message = problem && problem.error && problem.error.message ? problem.error.message : "HTTP " + answer.status;
  }
  error.textContent = message;
  error.hidden = false;
  buttons.forEach((button) => { button.disabled = false; });
}

async function pendingRequests() {
  // Every page, up to MAX_PAGES: the last answer, and the requests read (null when it failed).
  const requests = [];
  let after = null;
  let answer = null;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const query = "/v1/approvals?status=pending&limit=" + PAGE_LIMIT + (after ? "&after=" + encodeURIComponent(after) : "");
    answer = await fetch(query, { headers: headers(), cache: "no-store" });
    if (!answer.ok) return { answer: answer, requests: null };
    const page = await answer.json();
    requests.push(...page.data);
    if (!page.has_more || !page.last_id) break;
    after = page.last_id;
  }
  return { answer: answer, requests: requests };
}

async function refresh() {
  let answer, requests;
  try {
    ({ answer, requests } = await pendingRequests());
  } catch (failure) {
    connection.textContent = "Cannot reach the server; trying again.";
    connection.hidden = false;
    return;
  }
  if (answer.status === 401 || answer.status === 403) {
    keyForm.hidden = false;
    connection.textContent = answer.status === 401 ? "An API key is needed." : "This key may not list approvals.";
    connection.hidden = false;
    return;
  }
  if (requests === null) {
    connection.textContent = "The server answered HTTP " + answer.status + "; trying again.";
    connection.hidden = false;
    return;
  }
  connection.hidden = true;
  keyForm.hidden = true;
  const pending = new Set(requests.map((request) => request.id));
  for (const id of Array.from(shown.keys())) {
    if (!pending.has(id) && !deciding.has(id)) {
      const { request } = shown.get(id);
      forget(id);
      announce(request.name + " on " + request.server_label + " was decided elsewhere.");
    }
  }
  for (const request of requests) {
    const entry = shown.get(request.id);
    if (entry) {
      entry.card.querySelector("time.waited").textContent = waited(request.asked_at_ms);
      continue;
    }
    if (decided.has(request.id)) continue;
    const card = render(request);
    (request.decision_applies === "on_follow_up" ? openList : list).append(card);
    shown.set(request.id, { card: card, request: request });
    if (!firstLook) announce("New approval request: " + request.name + " on " + request.server_label + ".");
  }
  firstLook = false;
  showCount();
}

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(KEY_STORAGE, document.getElementById("key").value.trim());
  refresh();
});

async function poll() {
  const started = performance.now();
  await refresh();
  setTimeout(poll, Math.max(POLL_MS, LOAD_FACTOR * (performance.now() - started)));
}

poll();
