// Block Kit to DOM: the layout blocks and interactive elements the bot sends, in messages, the App Home and
// modals. Interactive elements call `act(element, choice)`; inputs of a modal keep their state on the DOM
// node (`readInputs` turns them into Slack's `view.state.values`).
"use strict";

function text(obj, names) {
  if (!obj) return "";
  return obj.type === "mrkdwn" ? mrkdwn(obj.text, names) : plainText(obj.text);
}

function el(tag, className, html) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

function confirmed(element, names) {
  const confirm = element.confirm;
  if (!confirm) return Promise.resolve(true);
  return new Promise((resolve) => {
    const layer = el("div", "confirm-layer");
    const box = el("div", "confirm");
    box.setAttribute("role", "dialog");
    box.append(el("h3", "", plainText(confirm.title && confirm.title.text)), el("div", "confirm-text", text(confirm.text, names)));
    const row = el("div", "confirm-buttons");
    const no = el("button", "btn", plainText((confirm.deny && confirm.deny.text) || "Cancel"));
    const yes = el("button", `btn ${confirm.style === "danger" ? "danger" : "primary"}`, plainText((confirm.confirm && confirm.confirm.text) || "Yes"));
    yes.dataset.testid = "confirm-yes";
    no.onclick = () => { layer.remove(); resolve(false); };
    yes.onclick = () => { layer.remove(); resolve(true); };
    row.append(no, yes);
    box.append(row);
    layer.append(box);
    document.body.append(layer);
  });
}

function optionLabel(option) {
  return option && option.text ? option.text.text : "";
}

function allOptions(element) {
  if (element.option_groups) return element.option_groups.flatMap((g) => g.options);
  return element.options || [];
}

// The options each external select was last offered (by its action_id), kept while its modal is drawn again.
const suggested = new Map();

// An external select (a menu that asks the app as one types): a search box, and a menu of what is chosen and what the
// app offered for the text typed (window.playgroundSuggest, set by the page for the open modal).
function externalSelect(element) {
  const holder = el("div", "external-select");
  const search = document.createElement("input");
  search.type = "search";
  search.className = "suggest";
  search.placeholder = "Type to search…";
  const select = document.createElement("select");
  select.className = `menu ${element.type}`;
  select.dataset.actionId = element.action_id || "";
  select.multiple = element.type === "multi_external_select";
  const initial = [].concat(element.initial_option ? [element.initial_option] : [], element.initial_options || []);
  const fill = (offered) => {
    const chosen = new Set(Array.from(select.selectedOptions).map((o) => o.value).filter((v) => v !== ""));
    if (!select._options) initial.forEach((o) => chosen.add(o.value));
    const kept = (select._options || initial).filter((o) => chosen.has(o.value));
    const options = kept.concat(offered.filter((o) => !chosen.has(o.value)));
    select.replaceChildren();
    if (!select.multiple) {
      select.append(Object.assign(document.createElement("option"), { value: "", textContent: element.placeholder ? element.placeholder.text : "Choose…" }));
    }
    options.forEach((option) => {
      select.append(Object.assign(document.createElement("option"), { value: option.value, textContent: optionLabel(option), selected: chosen.has(option.value) }));
    });
    select._options = options;
  };
  fill(suggested.get(element.action_id) || []);
  let timer = null;
  const ask = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!window.playgroundSuggest) return;
      const offered = await window.playgroundSuggest(element.action_id, search.value);
      suggested.set(element.action_id, offered);
      fill(offered);
    }, 200);
  };
  search.oninput = ask;
  if ((element.min_query_length ?? 3) === 0 && !suggested.has(element.action_id)) ask();
  holder.append(search, select);
  return holder;
}

function interactive(element, names, act, inModal) {
  const kind = element.type;
  if (kind === "external_select" || kind === "multi_external_select") return externalSelect(element);
  if (kind === "button") {
    const button = el("button", `btn ${element.style || ""}`, plainText(element.text && element.text.text));
    button.type = "button";
    button.dataset.actionId = element.action_id || "";
    if (element.url) {
      button.onclick = () => window.open(element.url, "_blank", "noopener");
      return button;
    }
    button.onclick = async () => {
      if (await confirmed(element, names)) act(element, null);
    };
    return button;
  }
  if (kind === "overflow" || kind === "static_select" || kind === "users_select"
      || kind === "conversations_select" || kind === "channels_select" || kind === "multi_static_select") {
    const select = document.createElement("select");
    select.className = `menu ${kind}`;
    select.dataset.actionId = element.action_id || "";
    select.multiple = kind === "multi_static_select";
    if (!select.multiple) {
      const placeholder = document.createElement("option");
      placeholder.value = "";
      placeholder.textContent = kind === "overflow" ? "⋯" : (element.placeholder ? element.placeholder.text : "Choose…");
      select.append(placeholder);
    }
    const options = kind === "users_select" ? Object.entries(names.users).map(([id, name]) => ({ text: { text: name }, value: id }))
      : kind === "conversations_select" || kind === "channels_select"
        ? Object.entries(names.channels).map(([id, name]) => ({ text: { text: `#${name}` }, value: id })) : allOptions(element);
    const initial = new Set([].concat(element.initial_option ? [element.initial_option.value] : [],
      (element.initial_options || []).map((o) => o.value), element.initial_user || [], element.initial_conversation || []));
    options.forEach((option) => {
      const node = document.createElement("option");
      node.value = option.value;
      node.textContent = optionLabel(option);
      node.selected = initial.has(option.value);
      select.append(node);
    });
    select._options = options;
    if (!inModal) {
      select.onchange = async () => {
        const picked = options.find((o) => o.value === select.value);
        if (picked && await confirmed(element, names)) act(element, picked);
        select.value = "";
      };
    }
    return select;
  }
  if (kind === "datepicker" || kind === "timepicker" || kind === "datetimepicker") {
    const input = document.createElement("input");
    input.type = kind === "datepicker" ? "date" : kind === "timepicker" ? "time" : "datetime-local";
    input.className = "picker";
    input.dataset.actionId = element.action_id || "";
    if (element.initial_date) input.value = element.initial_date;
    if (element.initial_time) input.value = element.initial_time;
    if (element.initial_date_time) input.value = new Date(element.initial_date_time * 1000).toISOString().slice(0, 16);
    if (!inModal) input.onchange = () => act(element, input.value);
    return input;
  }
  if (kind === "plain_text_input" || kind === "number_input" || kind === "url_text_input" || kind === "email_text_input") {
    const input = document.createElement(element.multiline ? "textarea" : "input");
    if (!element.multiline) input.type = kind === "number_input" ? "number" : kind === "email_text_input" ? "email" : "text";
    if (kind === "number_input" && element.is_decimal_allowed) input.step = "any";
    input.className = "text-input";
    input.dataset.actionId = element.action_id || "";
    input.placeholder = element.placeholder ? element.placeholder.text : "";
    input.value = element.initial_value || "";
    return input;
  }
  if (kind === "file_input") {
    const input = document.createElement("input");
    input.type = "file";
    input.className = "file-input";
    input.dataset.actionId = element.action_id || "";
    if (element.filetypes) input.accept = element.filetypes.map((t) => `.${t}`).join(",");
    return input;
  }
  if (kind === "checkboxes" || kind === "radio_buttons") {
    const group = el("div", `choices ${kind}`);
    group.dataset.actionId = element.action_id || "";
    group.dataset.kind = kind;
    const initial = new Set([].concat(element.initial_option ? [element.initial_option.value] : [], (element.initial_options || []).map((o) => o.value)));
    (element.options || []).forEach((option) => {
      const label = el("label", "choice");
      const box = document.createElement("input");
      box.type = kind === "checkboxes" ? "checkbox" : "radio";
      box.name = `${element.action_id}`;
      box.value = option.value;
      box.checked = initial.has(option.value);
      box._option = option;
      label.append(box, el("span", "", text(option.text, names)));
      group.append(label);
    });
    return group;
  }
  if (kind === "image") {
    const image = document.createElement("img");
    image.src = element.image_url;
    image.alt = element.alt_text || "";
    image.className = "accessory-image";
    return image;
  }
  return el("span", "unsupported", plainText(`[${kind}]`));
}

function renderBlock(block, names, act, inModal, errors) {
  const kind = block.type;
  let node;
  if (kind === "section") {
    node = el("div", "block section");
    const body = el("div", "section-body");
    if (block.text) body.append(el("div", "section-text", text(block.text, names)));
    if (block.fields) {
      const fields = el("div", "fields");
      block.fields.forEach((field) => fields.append(el("div", "field", text(field, names))));
      body.append(fields);
    }
    node.append(body);
    if (block.accessory) node.append(interactive(block.accessory, names, (element, choice) => act(element, choice, block), inModal));
  } else if (kind === "header") {
    node = el("h2", "block header", plainText(block.text && block.text.text));
  } else if (kind === "divider") {
    node = el("hr", "block divider");
  } else if (kind === "context") {
    node = el("div", "block context");
    (block.elements || []).forEach((item) => {
      if (item.type === "image") {
        const image = document.createElement("img");
        image.src = item.image_url;
        image.alt = item.alt_text || "";
        node.append(image);
      } else {
        node.append(el("span", "", text(item, names)));
      }
    });
  } else if (kind === "image") {
    node = el("figure", "block image");
    if (block.title) node.append(el("figcaption", "", plainText(block.title.text)));
    const image = document.createElement("img");
    image.src = block.image_url || (block.slack_file && block.slack_file.url) || "";
    image.alt = block.alt_text || "";
    node.append(image);
  } else if (kind === "actions") {
    node = el("div", "block actions");
    (block.elements || []).forEach((element) => node.append(interactive(element, names, (e, choice) => act(e, choice, block), inModal)));
  } else if (kind === "input") {
    node = el("div", "block input");
    node.dataset.blockId = block.block_id || "";
    const label = el("label", "input-label", plainText(block.label && block.label.text) + (block.optional ? ' <span class="optional">(optional)</span>' : ""));
    node.append(label);
    const element = interactive(block.element, names, () => {}, true);
    node.append(element);
    if (block.element.type === "datetimepicker" || block.element.type === "timepicker") node.append(el("div", "hint", "UTC"));
    node._element = block.element;
    if (block.hint) node.append(el("div", "hint", plainText(block.hint.text)));
    if (errors && errors[block.block_id]) node.append(el("div", "input-error", plainText(errors[block.block_id])));
  } else if (kind === "rich_text") {
    node = el("div", "block rich-text", plainText(JSON.stringify(block.elements || []).slice(0, 200)));
  } else {
    node = el("div", "block unsupported", plainText(`[${kind} block]`));
  }
  if (block.block_id) node.dataset.blockId = block.block_id;
  return node;
}

function renderBlocks(blocks, names, act, inModal, errors) {
  const holder = el("div", "blocks");
  (blocks || []).forEach((block) => holder.append(renderBlock(block, names, act, inModal, errors)));
  return holder;
}

async function readInputs(container, upload) {
  const values = {};
  for (const node of container.querySelectorAll(".block.input")) {
    const element = node._element;
    const blockId = node.dataset.blockId;
    const action = element.action_id;
    const kind = element.type;
    let value;
    if (kind === "plain_text_input" || kind === "url_text_input" || kind === "email_text_input") {
      const field = node.querySelector(".text-input");
      value = { type: kind, value: field.value === "" ? null : field.value };
    } else if (kind === "number_input") {
      const field = node.querySelector(".text-input");
      value = { type: kind, value: field.value === "" ? null : field.value };
    } else if (kind === "static_select" || kind === "external_select") {  // an external select's menu holds what it was offered
      const select = node.querySelector("select");
      const picked = select._options.find((o) => o.value === select.value);
      value = { type: kind, selected_option: picked || null };
    } else if (kind === "multi_static_select" || kind === "multi_external_select") {
      const select = node.querySelector("select");
      const chosen = Array.from(select.selectedOptions).map((o) => select._options.find((x) => x.value === o.value));
      value = { type: kind, selected_options: chosen };
    } else if (kind === "users_select") {
      value = { type: kind, selected_user: node.querySelector("select").value || null };
    } else if (kind === "conversations_select" || kind === "channels_select") {
      const key = kind === "channels_select" ? "selected_channel" : "selected_conversation";
      value = { type: kind, [key]: node.querySelector("select").value || null };
    } else if (kind === "datepicker") {
      value = { type: kind, selected_date: node.querySelector("input").value || null };
    } else if (kind === "timepicker") {
      value = { type: kind, selected_time: node.querySelector("input").value || null };
    } else if (kind === "datetimepicker") {
      const raw = node.querySelector("input").value;
      value = { type: kind, selected_date_time: raw ? Math.floor(new Date(raw + "Z").getTime() / 1000) : null };
    } else if (kind === "checkboxes") {
      value = { type: kind, selected_options: Array.from(node.querySelectorAll("input:checked")).map((b) => b._option) };
    } else if (kind === "radio_buttons") {
      const picked = node.querySelector("input:checked");
      value = { type: kind, selected_option: picked ? picked._option : null };
    } else if (kind === "file_input") {
      const files = [];
      for (const file of node.querySelector("input").files) files.push(await upload(file));
      value = { type: kind, files };
    } else {
      continue;
    }
    values[blockId] = { [action]: value };
  }
  return values;
}

window.renderBlocks = renderBlocks;
window.readInputs = readInputs;
