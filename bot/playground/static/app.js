// The playground page: the emulated workspace as one person sees it, kept live by server-sent events.
"use strict";

const state = { person: localStorage.getItem("person") || "", place: localStorage.getItem("place") || "", thread: null, data: null, seen: {} };
const $ = (id) => document.getElementById(id);

async function post(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || answer.error) toast(answer.error || `HTTP ${response.status}`);
  return answer;
}

function toast(message) {
  const node = $("toast");
  node.textContent = message;
  node.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { node.hidden = true; }, 6000);
}

async function refresh() {
  const response = await fetch(`/playground/state?user=${encodeURIComponent(state.person)}`);
  state.data = await response.json();
  if (!state.person || !state.data.people.some((p) => p.id === state.person)) state.person = state.data.people[0].id;
  const places = state.data.channels.map((c) => c.id);
  if (state.place !== "home" && !places.includes(state.place)) {
    const changes = state.data.channels.find((c) => c.name === "schema-changes");  // where the welcome and the cards are
    state.place = (changes || state.data.channels[0]).id;
  }
  render();
}

function names() {
  return state.data.names;
}

function render() {
  const data = state.data;
  const people = $("person");
  if (people.options.length !== data.people.length) {
    people.innerHTML = "";
    data.people.forEach((p) => {
      const option = document.createElement("option");
      option.value = p.id;
      option.textContent = `${p.name} — ${p.role}`;
      people.append(option);
    });
  }
  people.value = state.person;
  const me = data.people.find((p) => p.id === state.person);
  $("role").textContent = me ? me.detail : "";
  const channels = $("channels");
  const dms = $("dms");
  channels.innerHTML = "";
  dms.innerHTML = "";
  data.channels.forEach((c) => {
    const link = document.createElement("a");
    link.href = "#";
    link.className = `place${state.place === c.id ? " current" : ""}`;
    link.dataset.place = c.id;
    link.textContent = c.is_im ? "ChangeOps (app)" : `# ${c.name}`;
    const key = `${state.person}/${c.id}`;
    if (state.place === c.id || state.seen[key] === undefined) state.seen[key] = c.messages.length;
    const unread = c.messages.length - state.seen[key];
    if (unread > 0) link.append(Object.assign(document.createElement("span"), { className: "badge", textContent: unread }));
    link.onclick = (event) => { event.preventDefault(); go(c.id); };
    (c.is_im ? dms : channels).append(link);
  });
  $("home-link").className = `place${state.place === "home" ? " current" : ""}`;
  $("kafka").innerHTML = data.kafka ? mrkdwn(data.kafka, names()) : "";
  renderPlace();
  renderThread();
  renderModal();
}

function go(place) {
  state.place = place;
  state.thread = null;
  state.focus = null;
  localStorage.setItem("place", place);
  if (place === "home") post("/playground/home", { user: state.person });
  render();
}

function messageNode(message, inThread) {
  const node = document.createElement("article");
  node.className = `message${message.ephemeral ? " ephemeral" : ""}`;
  node.dataset.ts = message.ts;
  const author = names().users[message.user] || message.user;
  const head = document.createElement("div");
  head.className = "message-head";
  head.innerHTML = `<b>${escapeHtml(author)}</b>${message.bot ? ' <span class="app">APP</span>' : ""}`
    + ` <span class="time">${escapeHtml(message.time)}</span>${message.edited ? ' <span class="edited">(edited)</span>' : ""}`
    + (message.ephemeral ? ' <span class="only-you">Only visible to you</span>' : "");
  node.append(head);
  const act = (element, choice) => click(message, element, choice);
  if (message.blocks && message.blocks.length) node.append(renderBlocks(message.blocks, names(), act, false));
  else node.append(Object.assign(document.createElement("div"), { className: "message-text", innerHTML: mrkdwn(message.text, names()) }));
  (message.files || []).forEach((file) => {
    const link = document.createElement("a");
    link.className = "file";
    link.href = file.url;
    link.target = "_blank";
    if (/\.(png|jpe?g|gif|svg)$/i.test(file.name)) {
      const image = document.createElement("img");
      image.src = file.url;
      image.alt = file.name;
      link.append(image);
    } else {
      link.textContent = `📎 ${file.name}`;
    }
    node.append(link);
  });
  if (!inThread && message.replies) {
    const replies = document.createElement("a");
    replies.href = "#";
    replies.className = "replies";
    replies.textContent = `${message.replies} repl${message.replies === 1 ? "y" : "ies"}`;
    replies.onclick = (event) => { event.preventDefault(); state.thread = message.ts; renderThread(); };
    node.append(replies);
  }
  return node;
}

function renderPlace() {
  const data = state.data;
  const holder = $("messages");
  const atBottom = holder.scrollHeight - holder.scrollTop - holder.clientHeight < 40;
  holder.innerHTML = "";
  if (state.place === "home") {
    $("place-title").textContent = "ChangeOps — Home";
    $("composer").hidden = true;
    if (data.home) holder.append(renderBlocks(data.home.blocks, names(), (element, choice) => viewClick(data.home.id, element, choice), false));
    else holder.append(Object.assign(document.createElement("p"), { className: "empty", textContent: "Opening the Home tab…" }));
    return;
  }
  $("composer").hidden = false;
  const channel = data.channels.find((c) => c.id === state.place);
  $("place-title").textContent = channel.is_im ? "ChangeOps (direct messages)" : `# ${channel.name}`;
  const shown = channel.messages;
  if (!shown.length) holder.append(Object.assign(document.createElement("p"), { className: "empty", textContent: "No messages yet. Try /schema help." }));
  shown.forEach((message) => holder.append(messageNode(message, false)));
  const focused = state.focus && holder.querySelector(`article[data-ts="${CSS.escape(state.focus)}"]`);
  if (focused) {
    focused.classList.add("focus");
    if (renderPlace.focused !== state.focus) focused.scrollIntoView({ block: "center" });
    renderPlace.focused = state.focus;
  } else if (atBottom || renderPlace.last !== state.place) holder.scrollTop = holder.scrollHeight;
  renderPlace.last = state.place;
}

function renderThread() {
  const pane = $("thread");
  if (!state.thread || state.place === "home") {
    pane.hidden = true;
    return;
  }
  const channel = state.data.channels.find((c) => c.id === state.place);
  const parent = channel && channel.messages.find((m) => m.ts === state.thread);
  if (!parent) {
    pane.hidden = true;
    return;
  }
  pane.hidden = false;
  const holder = $("thread-messages");
  holder.innerHTML = "";
  holder.append(messageNode(parent, true));
  (parent.thread || []).forEach((reply) => holder.append(messageNode(reply, true)));
}

function renderModal() {
  const layer = $("modal-layer");
  const view = state.data.modal;
  if (!view) {
    layer.hidden = true;
    layer.innerHTML = "";
    layer.dataset.view = "";
    return;
  }
  if (layer.dataset.view === view.id && layer.dataset.hash === view.hash && layer.dataset.errors === JSON.stringify(view.errors)) return;
  const values = layer.dataset.view === view.id ? snapshot(layer) : null;
  if (layer.dataset.view !== view.id) suggested.clear();  // another form: nothing it was offered is kept
  window.playgroundSuggest = async (actionId, typed) => {
    const answer = await post("/playground/suggest", { user: state.person, view_id: view.id, action_id: actionId, value: typed });
    return answer.options || [];
  };
  layer.dataset.view = view.id;
  layer.dataset.hash = view.hash;
  layer.dataset.errors = JSON.stringify(view.errors);
  layer.hidden = false;
  layer.innerHTML = "";
  const box = document.createElement("form");
  box.className = "modal";
  box.setAttribute("role", "dialog");
  box.dataset.callbackId = view.view.callback_id || "";
  const head = document.createElement("header");
  head.innerHTML = `<h3>${plainText(view.view.title && view.view.title.text)}</h3>`;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "close";
  close.setAttribute("aria-label", "Close");
  close.textContent = "×";
  close.onclick = () => post("/playground/close", { user: state.person, view_id: view.id });
  head.append(close);
  box.append(head);
  const body = renderBlocks(view.view.blocks, names(), (element, choice) => viewClick(view.id, element, choice), true, view.errors);
  body.className = "blocks modal-body";
  box.append(body);
  if (view.errors && Object.keys(view.errors).some((block) => !box.querySelector(`[data-block-id="${CSS.escape(block)}"]`))) {
    box.append(Object.assign(document.createElement("div"), { className: "input-error", textContent: Object.values(view.errors).join(" ") }));
  }
  const foot = document.createElement("footer");
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "btn";
  cancel.textContent = (view.view.close && view.view.close.text) || "Cancel";
  cancel.onclick = close.onclick;
  foot.append(cancel);
  if (view.view.submit) {
    const submit = document.createElement("button");
    submit.type = "submit";
    submit.className = "btn primary";
    submit.textContent = view.view.submit.text;
    submit.dataset.testid = "modal-submit";
    foot.append(submit);
  }
  box.append(foot);
  box.onsubmit = async (event) => {
    event.preventDefault();
    const values = await readInputs(box, upload);
    await post("/playground/submit", { user: state.person, view_id: view.id, values });
  };
  layer.append(box);
  if (values) restore(layer, values);
  if (state.prefill) {
    Object.entries(state.prefill).forEach(([action, value]) => {
      const field = box.querySelector(`textarea[data-action-id="${CSS.escape(action)}"], input[data-action-id="${CSS.escape(action)}"]`);
      if (field && !field.value) field.value = value;
    });
    state.prefill = null;
  }
}

function snapshot(layer) {
  return Array.from(layer.querySelectorAll("input:not([type=file]), textarea, select")).map((field) => field.value);
}

function restore(layer, values) {
  Array.from(layer.querySelectorAll("input:not([type=file]), textarea, select")).forEach((field, i) => {
    if (values[i] !== undefined && values[i] !== "") field.value = values[i];
  });
}

async function upload(file) {
  const content = await new Promise((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.readAsDataURL(file);
  });
  const answer = await post("/playground/upload", { user: state.person, name: file.name, content });
  return answer.file;
}

async function click(message, element, choice) {
  const answer = await post("/playground/click", {
    user: state.person, channel: message.channel, ts: message.ts, ephemeral: Boolean(message.ephemeral),
    action_id: element.action_id, value: element.value || null, option: choice && choice.value !== undefined ? choice.value : null,
    date: typeof choice === "string" ? choice : null,
  });
  if (answer.journey) await journey(answer.journey);
  return answer;
}

// A journey of the welcome: act as its person, where it happens, with what to type filled in (the person presses the
// bot's buttons); the message to look at highlighted, or a note when it is not there yet.
async function journey(step) {
  state.person = step.act_as;
  localStorage.setItem("person", state.person);
  state.place = step.place;
  localStorage.setItem("place", state.place);
  state.thread = null;
  state.prefill = step.prefill || null;
  state.focus = step.focus || null;
  await refresh();
  if (step.note) toast(step.note);
}

function viewClick(viewId, element, choice) {
  return post("/playground/view-click", {
    user: state.person, view_id: viewId, action_id: element.action_id, value: element.value || null,
    option: choice && choice.value !== undefined ? choice.value : null,
  });
}

$("person").onchange = () => {
  state.person = $("person").value;
  localStorage.setItem("person", state.person);
  state.thread = null;
  refresh().then(() => { if (state.place === "home") post("/playground/home", { user: state.person }); });
};
$("home-link").onclick = (event) => { event.preventDefault(); go("home"); };
$("close-thread").onclick = () => { state.thread = null; renderThread(); };
$("composer").onsubmit = async (event) => {
  event.preventDefault();
  const input = $("command");
  const command = input.value.trim();
  if (!command) return;
  if (!command.startsWith("/")) {
    toast("Type a slash command, such as /schema help");
    return;
  }
  input.value = "";
  await post("/playground/command", { user: state.person, channel: state.place, text: command });
};

function listen() {
  const events = new EventSource("/playground/events");
  events.onmessage = () => {
    clearTimeout(listen.timer);
    listen.timer = setTimeout(refresh, 50);
  };
  events.onerror = () => { $("place-title").dataset.offline = "1"; };
  events.onopen = () => { delete $("place-title").dataset.offline; refresh(); };
}

refresh().then(listen);
