// The review page. Document text is only ever written with textContent / text nodes,
// never as HTML: a document holding markup shows it and runs nothing.
"use strict";
(function () {
  const TOKEN = document.querySelector('meta[name="review-token"]').content;
  const S = { filter: "all", queue: [], doc: null, sel: null, busy: false };
  const $ = (id) => document.getElementById(id);
  const KIND = { rewrite: "LLM rewrite", generalisation: "generalisation",
                 sentence: "sentence rewrite (LLM)", redaction: "redaction",
                 pii: "PII placeholder", reviewer: "reviewer edit" };

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }

  async function api(path, body) {
    const opts = { headers: { "X-Review-Token": TOKEN } };
    if (body !== undefined) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    let data = {};
    try { data = await r.json(); } catch (e) { data = { error: "bad answer" }; }
    return { status: r.status, data };
  }

  function message(kind, text, reasons) {
    const m = $("msg");
    m.className = kind;
    m.replaceChildren(text);
    if (reasons && reasons.length) m.append(el("ul", {}, ...reasons.map((r) => el("li", {}, r))));
  }

  async function loadQueue() {
    const { data } = await api("/api/queue?filter=" + encodeURIComponent(S.filter));
    S.queue = data.documents || [];
    S.crowd = data.crowd;
    const c = data.counts || {};
    $("progress").textContent = `${c.signed_off || 0} of ${data.total} signed off, ` +
      `${c.in_review || 0} in review, ${c.unreviewed || 0} unreviewed, ${c.failed || 0} failed`;
    for (const b of document.querySelectorAll(".filter")) b.classList.toggle("on", b.dataset.filter === S.filter);
    const list = $("queue-list");
    list.replaceChildren(...S.queue.map((d) => {
      const li = el("li", { "data-id": d.id, class: S.doc && S.doc.id === d.id ? "cur" : "" },
        d.source_known === false
          ? el("span", { class: "risk unknown", title: RISK_HELP }, "source unknown")
          : el("span", { class: "risk" + (d.risk >= 1 ? " high" : ""), title: RISK_HELP },
              "risk " + d.risk.toFixed(2)),
        d.id, el("span", { class: "st" }, d.status.replace("_", " ") +
          (d.pending != null ? `, ${d.pending} pending` : "")));
      li.addEventListener("click", () => openDoc(d.id));
      return li;
    }));
  }

  // The latest openDoc or action: an earlier openDoc's late answer is dropped (an action
  // answers with the document as it now is, so a document fetched before it is stale).
  let opening = 0;
  async function openDoc(id) {
    const mine = ++opening;
    const { status, data } = await api("/api/doc?id=" + encodeURIComponent(id));
    if (mine !== opening) return;  // another document, or an action, was asked for since
    if (status !== 200) { message("err", data.error || "cannot open"); return; }
    // Opening the document already shown keeps its selection and its message.
    const same = S.doc && S.doc.id === data.id;
    const keep = same && S.sel != null && data.chunks[S.sel] && data.chunks[S.sel].kind !== "same";
    S.doc = data;
    if (!keep) S.sel = null;
    if (!same) message("", "");
    render();
    loadQueue();
  }

  function edits() { return S.doc ? S.doc.chunks.filter((c) => c.kind !== "same") : []; }

  function render() {
    const d = S.doc;
    $("doc-title").textContent = `${d.id} (${d.status.replace("_", " ")}, version ${d.version})`;
    const inp = $("input"), out = $("output");
    inp.replaceChildren(); out.replaceChildren();
    if (d.failed) {
      out.textContent = "delink could not clean this document: " + (d.error || "failed");
    }
    for (const c of d.chunks) {
      if (c.kind === "same") {
        inp.append(c.text); out.append(c.text);
        continue;
      }
      const cls = `edit kind-${c.kind} st-${c.status}` + (S.sel === c.i ? " sel" : "");
      const a = el("span", { class: cls, "data-i": c.i, title: KIND[c.kind] }, c.before);
      const b = el("span", { class: cls, "data-i": c.i, title: KIND[c.kind] }, c.text || "\u2205");
      for (const x of [a, b]) x.addEventListener("click", () => select(c.i));
      inp.append(a); out.append(b);
    }
    if (!d.has_input) inp.textContent = "(run with --input to see the input and every edit)";
    renderDetail(); renderAttacks(); renderTrail();
  }

  function renderDetail() {
    const body = $("detail-body");
    $("editor").hidden = true;
    const c = S.sel == null ? null : S.doc.chunks[S.sel];
    if (!c) { body.replaceChildren("Click an edit, or press n."); return; }
    const rows = [["kind", KIND[c.kind] || c.kind], ["status", c.status], ["input", c.before],
      ["delink output", c.proposed], ["now", c.text]];
    // A sentence written again: the whole sentence, as input, as delinked and now (revert
    // gives the edit's words back, and is verified like every action).
    if (c.sentence) rows.push(["sentence (input)", c.sentence.before],
      ["sentence (delink output)", c.sentence.proposed], ["sentence now", c.sentence.text]);
    if (c.ngram) rows.push(["forced by", `N-gram "${c.ngram}" found in ${c.df} document(s)` +
      (c.arity > 1 ? ` (combination of ${c.arity})` : "")]);
    else if (c.kind === "pii") rows.push(["forced by", "PII redaction"]);
    if (c.method) rows.push(["method", c.method + (c.passes.length ? `, pass ${c.passes.join(", ")}` : "")]);
    body.replaceChildren(el("dl", {}, ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  }

  // What the queue's badge means (shown as its tooltip and under the queue).
  const RISK_HELP = "risk = 1 / the best rank any audit attack gives the document's source " +
    "(1.00: some attack ranks it first, 0.50: second, 0.20: fifth, 0: no attack finds it); " +
    "2.00: the document failed or does not verify. 'source unknown': the source is not in " +
    "the collection, so no attack could be judged (not a sign of safety).";

  function exposedNote(v) {
    return v && v.exposed && v.exposed.length
      ? ` but ${v.exposed.join(", ")} search ranks the source within the first ${S.crowd || "few"} (see the attack table)`
      : "";
  }

  function renderAttacks() {
    const d = S.doc, v = d.verification;
    const tb = document.querySelector("#attacks tbody");
    tb.replaceChildren();
    const ver = $("verified");
    if (!v) { ver.textContent = ""; return; }
    const exposed = v.exposed && v.exposed.length;
    ver.className = v.ok ? (exposed ? "warn" : "ok") : "err";
    ver.textContent = v.ok
      ? `verified: nothing links below k${exposedNote(v)} (${(v.seconds * 1000).toFixed(0)} ms)`
      : "does not verify";
    tb.append(el("tr", {}, el("td", {}, "phrase (N-gram)"), el("td", {}, v.linkable.length ? "linkable" : "none below k"),
      el("td", {}, "none below k"), el("td", { class: v.linkable.length ? "bad" : "" }, v.linkable.length ? "links" : "no link")));
    const names = new Set([...Object.keys(v.attacks || {}), ...Object.keys(d.delink_ranks || {})]);
    for (const n of names) {
      const a = (v.attacks || {})[n];
      const base = (d.baseline || {})[n] || (d.delink_ranks || {})[n] || {};
      const now = a ? (a.source_rank == null ? "not found" : "#" + a.source_rank) : "not re-run";
      tb.append(el("tr", {}, el("td", {}, n), el("td", { class: a && a.regressed ? "bad" : "" }, now),
        el("td", {}, base.source_rank == null ? "not found" : "#" + base.source_rank),
        el("td", { class: a && a.exposed ? "bad" : "" }, a ? (a.exposed ? "exposed" : "in a crowd") +
          (a.margin_claims ? "; the calibrated margin claims it" : "") : "")));
    }
    if (!d.source_known) tb.append(el("tr", {}, el("td", { colspan: "4" }, "source not in the collection: attack ranks not judged")));
  }

  function renderTrail() {
    const t = $("trail");
    t.replaceChildren(...S.doc.trail.map((r) => el("li", { class: r.ok ? "" : "no" },
      `${r.at} ${r.reviewer}: ${r.action}` + (r.after != null ? ` \u2192 "${r.after}"` : "") +
      (r.ok ? "" : " (refused: " + r.reasons.join("; ") + ")"))));
    t.scrollTop = t.scrollHeight;
  }

  function select(i) {
    S.sel = i;
    for (const x of document.querySelectorAll(".edit.sel")) x.classList.remove("sel");
    for (const x of document.querySelectorAll(`.edit[data-i="${i}"]`)) {
      x.classList.add("sel");
      x.scrollIntoView({ block: "nearest" });
    }
    renderDetail();
  }

  function step(delta) {
    const e = edits();
    if (!e.length) return;
    let k = e.findIndex((c) => c.i === S.sel);
    k = k < 0 ? (delta > 0 ? 0 : e.length - 1) : (k + delta + e.length) % e.length;
    select(e[k].i);
  }

  async function act(action, extra) {
    if (!S.doc || S.busy) return;
    S.busy = true;
    ++opening;
    try {
      const { status, data } = await api("/api/act", Object.assign(
        { id: S.doc.id, version: S.doc.version, action }, extra || {}));
      if (status === 409 && data.document) {
        S.doc = data.document; render();
        message("err", data.error);
      } else if (status !== 200) {
        message("err", data.error || "refused");
      } else {
        const keep = data.chunk != null ? data.chunk : S.sel;
        S.doc = data.document;
        S.sel = keep != null && S.doc.chunks[keep] && S.doc.chunks[keep].kind !== "same" ? keep : null;
        render();
        if (S.sel != null) select(S.sel);
        const warn = exposedNote(data.verification);
        if (data.ok) message(warn ? "warn" : "ok", action === "signoff"
          ? `signed off: nothing links below k${warn}` : `${action}: verified, saved${warn}`);
        else message("err", `${action} refused, nothing changed:`, data.reasons);
      }
      loadQueue();
      return status === 200 && data.ok;
    } finally { S.busy = false; }
  }

  function needSel() {
    if (S.sel == null) { message("err", "select an edit first (click it, or n / p)"); return false; }
    return true;
  }

  function startEdit() {
    if (!needSel()) return;
    $("editor").hidden = false;
    const t = $("edit-text");
    t.value = S.doc.chunks[S.sel].text;
    t.focus(); t.select();
  }

  async function saveEdit() {
    const text = $("edit-text").value;
    const ok = await act("edit", { chunk: S.sel, text });
    if (!ok) { $("editor").hidden = false; $("edit-text").value = text; }
  }

  function selectionRange() {
    const s = window.getSelection(), out = $("output");
    if (!s.rangeCount || s.isCollapsed) return null;
    const r = s.getRangeAt(0);
    if (!out.contains(r.startContainer) || !out.contains(r.endContainer)) return null;
    const pre = document.createRange();
    pre.selectNodeContents(out);
    pre.setEnd(r.startContainer, r.startOffset);
    const start = pre.toString().length;
    return { start, end: start + r.toString().length };
  }

  function redact() {
    const r = selectionRange();
    if (!r) { message("err", "select the words to redact in the output pane first"); return; }
    act("redact", r);
  }

  async function doExport() {
    const { status, data } = await api("/api/export", {});
    if (status === 200) message("ok", `exported ${data.documents} documents (${data.signed_off} signed off) to ${data.path}; it holds the removed phrases (keep it private): presidio-delink release ${data.path} -o PUBLIC.jsonl writes what may be shared`);
    else message("err", data.error || "export failed");
  }

  $("b-accept").addEventListener("click", () => needSel() && act("accept", { chunk: S.sel }));
  $("b-revert").addEventListener("click", () => needSel() && act("revert", { chunk: S.sel }));
  $("b-edit").addEventListener("click", startEdit);
  $("b-save").addEventListener("click", saveEdit);
  $("b-cancel").addEventListener("click", () => { $("editor").hidden = true; });
  $("b-redact").addEventListener("mousedown", (e) => e.preventDefault());
  $("b-redact").addEventListener("click", redact);
  $("b-accept-all").addEventListener("click", () => act("accept_all"));
  $("b-signoff").addEventListener("click", () => act("signoff"));
  $("export").addEventListener("click", doExport);
  for (const b of document.querySelectorAll(".filter")) {
    b.addEventListener("click", () => { S.filter = b.dataset.filter; loadQueue(); });
  }
  $("edit-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); saveEdit(); }
    if (e.key === "Escape") { $("editor").hidden = true; }
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "TEXTAREA" || e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key;
    const cur = S.queue.findIndex((d) => S.doc && d.id === S.doc.id);
    if (k === "j" && S.queue.length) openDoc(S.queue[Math.min(cur + 1, S.queue.length - 1)].id);
    else if (k === "k" && S.queue.length) openDoc(S.queue[Math.max(cur - 1, 0)].id);
    else if (k === "n") step(1);
    else if (k === "p") step(-1);
    else if (k === "a") { if (needSel()) act("accept", { chunk: S.sel }); }
    else if (k === "A") act("accept_all");
    else if (k === "v") { if (needSel()) act("revert", { chunk: S.sel }); }
    else if (k === "e") { e.preventDefault(); startEdit(); }
    else if (k === "r") redact();
    else if (k === "s") act("signoff");
    else if (k === "x") doExport();
  });

  loadQueue().then(() => { if (S.queue.length) openDoc(S.queue[0].id); });
})();
