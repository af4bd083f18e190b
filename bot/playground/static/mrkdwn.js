// Slack's mrkdwn to HTML: *bold*, _italic_, ~strike~, `code`, ```pre```, > quotes, <links|labels>,
// <@U…> / <#C…> / <!subteam^S…> mentions shown as names, :emoji: shortcodes. Text arrives with Slack's
// escaping (&lt; &gt; &amp;); everything is HTML-escaped again before it reaches the page.
"use strict";

const EMOJI = {
  white_check_mark: "✅", x: "❌", warning: "⚠️", rotating_light: "🚨", hourglass_flowing_sand: "⏳",
  pencil2: "✏️", calendar: "📆", lock: "🔒", unlock: "🔓", mag: "🔍", bell: "🔔", no_bell: "🔕",
  fire: "🔥", tada: "🎉", eyes: "👀", rocket: "🚀", wrench: "🔧", hammer_and_wrench: "🛠️",
  chart_with_upwards_trend: "📈", chart_with_downwards_trend: "📉", bar_chart: "📊", information_source: "ℹ️",
  heavy_check_mark: "✔️", large_green_circle: "🟢", large_yellow_circle: "🟡", red_circle: "🔴",
  large_orange_circle: "🟠", white_circle: "⚪", arrows_counterclockwise: "🔄", repeat: "🔁",
  rewind: "⏪", fast_forward: "⏩", stopwatch: "⏱️", clock3: "🕒", zzz: "💤", memo: "📝",
  inbox_tray: "📥", outbox_tray: "📤", package: "📦", link: "🔗", shield: "🛡️", construction: "🚧",
  no_entry: "⛔", question: "❓", exclamation: "❗", thumbsup: "👍", "+1": "👍", wave: "👋",
  ice_cube: "🧊", snowflake: "❄️", hourglass: "⌛", busts_in_silhouette: "👥", bust_in_silhouette: "👤",
  alarm_clock: "⏰", arrow_double_up: "⏫", arrow_forward: "▶️", black_large_square: "⬛", book: "📖", bulb: "💡",
  checkered_flag: "🏁", detective: "🕵️", grey_question: "❔", loud_sound: "🔊", mute: "🔇", no_entry_sign: "🚫",
  octagonal_sign: "🛑", wastebasket: "🗑️",
  arrow_right: "➡️", leftwards_arrow_with_hook: "↩️", recycle: "♻️", skull: "💀", label: "🏷️",
};

function escapeHtml(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function unescapeSlack(text) {
  return String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function entity(inner, names) {
  const [target, label] = inner.split("|", 2);
  if (target.startsWith("@")) {
    return `<span class="mention">@${escapeHtml(label || names.users[target.slice(1)] || target.slice(1))}</span>`;
  }
  if (target.startsWith("#")) {
    return `<span class="mention">#${escapeHtml(label || names.channels[target.slice(1)] || target.slice(1))}</span>`;
  }
  if (target.startsWith("!subteam^")) {
    const id = target.slice("!subteam^".length);
    return `<span class="mention">@${escapeHtml(label || names.groups[id] || id)}</span>`;
  }
  if (target.startsWith("!date^")) {  // <!date^1700000000^{date_short}|fallback>: the reader's own time zone in Slack
    const seconds = Number(target.split("^")[1]);
    const shown = Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC" : label;
    return `<time>${escapeHtml(shown || label || "")}</time>`;
  }
  if (target.startsWith("!")) {
    return `<span class="mention">@${escapeHtml(label || target.slice(1))}</span>`;
  }
  const href = unescapeSlack(target);
  const safe = /^(https?:|mailto:|webcal:)/i.test(href) ? href : "#";
  return `<a href="${escapeHtml(safe)}" target="_blank" rel="noopener">${escapeHtml(unescapeSlack(label || target))}</a>`;
}

function inline(text, names) {
  const pieces = [];
  let rest = text;
  const pattern = /<([^<>]+)>/;
  let match;
  while ((match = pattern.exec(rest))) {
    pieces.push(escapeHtml(unescapeSlack(rest.slice(0, match.index))));
    pieces.push("\u0000" + entity(match[1], names) + "\u0001");
    rest = rest.slice(match.index + match[0].length);
  }
  pieces.push(escapeHtml(unescapeSlack(rest)));
  let html = pieces.join("");
  html = html.replace(/(^|[\s(])\*([^*\n]+)\*(?=$|[\s).,;:!?])/g, "$1<b>$2</b>");
  html = html.replace(/(^|[\s(])_([^_\n]+)_(?=$|[\s).,;:!?])/g, "$1<i>$2</i>");
  html = html.replace(/(^|[\s(])~([^~\n]+)~(?=$|[\s).,;:!?])/g, "$1<s>$2</s>");
  html = html.replace(/:([a-z0-9_+\-]+):/g, (all, name) => EMOJI[name] ? `<span class="emoji" title=":${name}:">${EMOJI[name]}</span>` : all);
  return html.replace(/[\u0000\u0001]/g, "");
}

function mrkdwn(text, names) {
  const parts = String(text || "").split("```");
  return parts.map((part, index) => {
    if (index % 2 === 1) {
      return `<pre>${escapeHtml(unescapeSlack(part.replace(/^\n/, "")))}</pre>`;
    }
    const codes = [];  // code spans stand aside while *bold* and _italics_ (which may enclose them) are found
    const marked = part.replace(/`([^`\n]+)`/g, (all, code) => {
      codes.push(`<code>${escapeHtml(unescapeSlack(code))}</code>`);
      return `\u0002${codes.length - 1}\u0003`;
    });
    const html = inline(marked, names).replace(/\u0002(\d+)\u0003/g, (all, i) => codes[Number(i)]);
    return html.split("\n").map((line) => line.startsWith("&gt; ") || line === "&gt;"
      ? `<blockquote>${line.replace(/^&gt; ?/, "")}</blockquote>` : line).join("<br>");
  }).join("");
}

function plain(text) {
  return escapeHtml(text || "");
}

window.mrkdwn = mrkdwn;
window.plainText = plain;
window.escapeHtml = escapeHtml;
