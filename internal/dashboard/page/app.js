// hookline dashboard: plain JS over the dashboard API (the admin API's
// routes, served relative to this page under "api/"). Every piece of data
// goes into the DOM as text (textContent), never as HTML.
"use strict";

(function () {
	const CSRF_HEADER = "X-Hookline-Dashboard";

	const $ = (id) => document.getElementById(id);

	// el builds an element; string children become text nodes.
	function el(tag, props, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(props || {})) {
			if (k === "class") e.className = v;
			else if (k.startsWith("data-")) e.setAttribute(k, v);
			else e[k] = v;
		}
		for (const c of children) {
			if (c === null || c === undefined) continue;
			e.append(c instanceof Node ? c : document.createTextNode(String(c)));
		}
		return e;
	}

	// fieldList empties a <dl> and returns add(name, value), which appends
	// a row for a value that is there (text only).
	function fieldList(dl) {
		dl.replaceChildren();
		return (k, v) => {
			if (v === undefined || v === null || v === "") return;
			dl.append(el("dt", {}, k), el("dd", {}, String(v)));
		};
	}

	class APIError extends Error {
		constructor(status, message) {
			super(message);
			this.status = status;
		}
	}

	// api calls the dashboard API; path is relative, like "dlq?status=pending".
	async function api(method, path, body) {
		const opts = { method, headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" };
		if (method !== "GET") {
			opts.headers[CSRF_HEADER] = "1";
			if (body !== undefined) {
				opts.headers["Content-Type"] = "application/json";
				opts.body = JSON.stringify(body);
			}
		}
		const resp = await fetch("api/" + path, opts);
		let data = null;
		try {
			data = await resp.json();
		} catch (e) {
			data = null;
		}
		if (!resp.ok) {
			const msg = data && typeof data.error === "string" ? data.error : resp.status + " " + resp.statusText;
			throw new APIError(resp.status, msg);
		}
		return data;
	}

	let messageTimer = null;
	function say(text, isError) {
		const m = $("message");
		m.textContent = text;
		m.className = isError ? "error" : "ok";
		m.hidden = false;
		clearTimeout(messageTimer);
		if (!isError) messageTimer = setTimeout(() => { m.hidden = true; }, 6000);
	}

	// guard runs an async action, reporting failures.
	async function guard(what, fn) {
		try {
			return await fn();
		} catch (e) {
			say(what + ": " + (e && e.message ? e.message : String(e)), true);
			return undefined;
		}
	}

	function fmtTime(s) {
		if (!s) return "";
		const d = new Date(s);
		if (isNaN(d.getTime()) || d.getFullYear() < 1970) return "";
		return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
	}

	function fmtDuration(ns) {
		if (typeof ns !== "number") return "";
		if (ns < 1e6) return (ns / 1e3).toFixed(0) + " µs";
		if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
		return (ns / 1e9).toFixed(2) + " s";
	}

	// destName names a destination as the API's filters do: the default
	// one (forward_to's), stored without a name, is "default".
	function destName(d) {
		return d ? String(d) : "default";
	}

	// ---- stats and pause/resume ----

	async function loadStats() {
		const st = await guard("Loading stats", () => api("GET", "stats"));
		if (!st) return;
		// a store that did not answer has no counts: unknown, not zero
		const q = st.store && st.store.available === false ? {} : st.queue || {};
		$("stat-queued").textContent = String(q.queued ?? "–");
		$("stat-in-flight").textContent = String(q.in_flight ?? "–");
		$("stat-dead").textContent = String(q.dead ?? "–");
		const paused = Array.isArray(st.paused_sources) ? st.paused_sources : [];
		$("stat-paused").textContent = paused.length ? paused.join(", ") : "none";
		const prows = $("pauses-rows");
		prows.replaceChildren();
		for (const p of Array.isArray(st.pauses) ? st.pauses : []) {
			prows.append(el("tr", { "data-source": p.source, "data-destination": p.destination || "", "data-tenant": p.tenant || "" },
				el("td", {}, p.source),
				el("td", {}, p.destination || "all"),
				el("td", {}, p.tenant || "all"),
				el("td", {}, p.mode === "hold" ? "hold (accepting)" : "refuse (503)"),
				el("td", {}, p.reason || "–"),
				el("td", {}, p.since || "–"),
				el("td", {}, p.until || "until resumed"),
				el("td", { "class": "num" }, String(p.waiting ?? 0))));
		}
		$("pauses-empty").hidden = prows.children.length > 0;
		$("pauses").hidden = prows.children.length === 0;
		const rows = $("dest-stats-rows");
		rows.replaceChildren();
		const sources = st.sources || {};
		for (const source of Object.keys(sources).sort()) {
			const dests = sources[source].destinations || {};
			for (const d of Object.keys(dests).sort()) {
				const lh = dests[d].last_hour || {};
				const all = dests[d].all_time || {};
				rows.append(el("tr", { "data-source": source, "data-destination": d },
					el("td", {}, source),
					el("td", {}, d),
					el("td", { "class": "num" }, String(lh.delivered ?? 0)),
					el("td", { "class": "num" }, String(lh.dead ?? 0)),
					el("td", { "class": "num" }, String(all.delivered ?? 0)),
					el("td", { "class": "num" }, String(all.dead ?? 0))));
			}
		}
		$("dest-stats-empty").hidden = rows.children.length > 0;
		$("dest-stats").hidden = rows.children.length === 0;
		// the busiest tenants of each source, then (other): the API's order
		const trows = $("tenant-stats-rows");
		trows.replaceChildren();
		for (const source of Object.keys(sources).sort()) {
			for (const t of Array.isArray(sources[source].tenants) ? sources[source].tenants : []) {
				trows.append(el("tr", { "data-source": source, "data-tenant": t.tenant },
					el("td", {}, source),
					el("td", {}, t.tenant),
					el("td", { "class": "num" }, String(t.received ?? 0)),
					el("td", { "class": "num" }, String(t.delivered ?? 0)),
					el("td", { "class": "num" }, String(t.dead ?? 0))));
			}
		}
		$("tenant-stats-empty").hidden = trows.children.length > 0;
		$("tenant-stats").hidden = trows.children.length === 0;
	}

	async function setPaused(pause) {
		const source = $("pause-source").value.trim();
		if (!source) {
			say("Enter a source name first", true);
			return;
		}
		const dest = $("pause-destination").value.trim();
		const tenant = $("pause-tenant").value.trim();
		if (dest && tenant) {
			say("A tenant's pause holds all its destinations: leave Destination empty", true);
			return;
		}
		const verb = pause ? "pause" : "resume";
		let path = "sources/" + encodeURIComponent(source);
		if (dest) path += "/destinations/" + encodeURIComponent(dest);
		if (tenant) path = "tenants/" + encodeURIComponent(source) + "/" + encodeURIComponent(tenant);
		const body = pause ? { reason: $("pause-reason").value.trim(), for: $("pause-for").value.trim(), accept: $("pause-accept").checked } : undefined;
		const res = await guard(verb, () => api("POST", path + "/" + verb, body));
		if (res) {
			const what = "Source " + res.source + (res.destination ? ", destination " + res.destination + "," : "") +
				(res.tenant ? ", tenant " + res.tenant + "," : "");
			say(what + (res.paused ? " paused (" + res.pause.mode + ")" : res.resumed ? " resumed" : " was not paused"));
			loadStats();
		}
	}

	// ---- DLQ list ----

	let cursor = "";
	let nextCursor = "";

	function filters() {
		return {
			source: $("f-source").value.trim(),
			destination: $("f-destination").value.trim(),
			type: $("f-type").value.trim(),
			tenant: $("f-tenant").value.trim(),
			status: $("f-status").value,
			since: $("f-since").value.trim(),
			limit: $("f-limit").value.trim(),
		};
	}

	async function loadList() {
		const f = filters();
		const qs = new URLSearchParams();
		for (const [k, v] of Object.entries(f)) if (v) qs.set(k, v);
		if (cursor) qs.set("cursor", cursor);
		const page = await guard("Loading the DLQ", () => api("GET", "dlq?" + qs.toString()));
		if (!page) return;
		const rows = $("dlq-rows");
		rows.replaceChildren();
		const entries = Array.isArray(page.entries) ? page.entries : [];
		for (const e of entries) {
			const tr = el("tr", { "class": "entry status-" + String(e.status).replace(/[^a-z]/g, ""), "data-id": e.id, "data-event-id": e.event_id,
				"data-destination": destName(e.destination), tabIndex: 0 },
				el("td", {}, fmtTime(e.created_at)),
				el("td", {}, e.source),
				el("td", { "class": "dest" }, destName(e.destination)),
				el("td", { "class": "mono" }, e.event_id),
				el("td", { "class": "mono" }, e.event_type || ""),
				el("td", { "class": "mono" }, e.tenant || ""),
				el("td", {}, e.status),
				el("td", {}, e.last_status ? String(e.last_status) : ""),
				el("td", { "class": "err" }, e.error));
			tr.addEventListener("click", () => openEntry(e.id));
			tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") openEntry(e.id); });
			rows.append(tr);
		}
		nextCursor = page.next_cursor || "";
		// a page stops after examining 20 entries per entry of its limit:
		// an empty one with a cursor has not reached the end
		$("dlq-empty").textContent = nextCursor ? "No match among the entries examined: Next page looks further back." : "No entries.";
		$("dlq-empty").hidden = entries.length > 0;
		$("next-page").disabled = !nextCursor;
		$("first-page").disabled = !cursor;
	}

	function reloadFromStart() {
		cursor = "";
		loadList();
	}

	// ---- one entry ----

	let current = null;

	async function openEntry(id) {
		const e = await guard("Loading entry", () => api("GET", "dlq/" + encodeURIComponent(id)));
		if (!e) return;
		current = e;
		$("d-id").textContent = e.id;
		const add = fieldList($("d-fields"));
		add("Event ID", e.event_id);
		add("Source", e.source);
		add("Destination", destName(e.destination));
		add("Type", e.event_type);
		add("Tenant", e.tenant);
		add("Status", e.status);
		add("Upstream", e.upstream);
		add("Error", e.error);
		add("Last status", e.last_status);
		add("Received", fmtTime(e.received_at));
		add("Dead since", fmtTime(e.created_at));
		add("Updated", fmtTime(e.updated_at));
		add("Resolution", e.resolution);
		add("Reason", e.reason);
		add("Retries", e.retries);
		let payload = e.payload || "";
		if (e.payload_encoding === "text") {
			try {
				payload = JSON.stringify(JSON.parse(payload), null, 2);
			} catch (err) {
				// not JSON: shown as received
			}
		}
		$("d-payload").textContent = payload;
		$("d-payload-encoding").textContent = e.payload_encoding === "base64" ? "(binary, base64)" : "";
		const hdrs = $("d-headers");
		hdrs.replaceChildren();
		for (const name of Object.keys(e.headers || {}).sort()) {
			for (const v of e.headers[name] || []) hdrs.append(el("tr", {}, el("th", {}, name), el("td", { "class": "mono" }, v)));
		}
		const att = $("d-attempts");
		att.replaceChildren();
		for (const a of e.attempts || []) {
			att.append(el("tr", {},
				el("td", {}, String(a.n)),
				el("td", {}, fmtTime(a.at)),
				el("td", {}, a.status ? String(a.status) : "no response"),
				el("td", {}, fmtDuration(a.duration_ns)),
				el("td", { "class": "err" }, a.error || "")));
		}
		const open = e.status === "pending" || e.status === "investigating";
		for (const b of ["btn-retry", "btn-resolve", "btn-discard", "btn-investigate"]) $(b).disabled = !open;
		$("detail").hidden = false;
		$("detail").scrollIntoView({ block: "nearest" });
	}

	async function act(verb, body, done) {
		if (!current) return;
		const id = current.id;
		const res = await guard(verb, () => api("POST", "dlq/" + encodeURIComponent(id) + "/" + verb, body));
		if (!res) return;
		say(done + ": " + id);
		await Promise.all([openEntry(id), loadList(), loadStats()]);
	}

	function retryCurrent() {
		if (!current) return;
		if (!window.confirm("Re-enqueue event " + current.event_id + " (" + current.source + ") for delivery?")) return;
		act("retry", undefined, "Re-enqueued");
	}

	function withText(verb, field, question, done) {
		if (!current) return;
		const text = window.prompt(question, "");
		if (text === null) return; // cancelled
		act(verb, { [field]: text }, done);
	}

	// ---- bulk retry ----

	let bulkRequest = null;
	let bulkNext = ""; // where the last dry run stopped, when it stopped early

	function bulkBody(dryRun) {
		const f = filters();
		const body = { status: f.status || "pending", dry_run: dryRun };
		if (f.source) body.source = f.source;
		if (f.destination) body.destination = f.destination;
		if (f.type) body.type = f.type;
		if (f.tenant) body.tenant = f.tenant;
		if (f.since) body.since = f.since;
		if (f.limit) body.limit = parseInt(f.limit, 10);
		return body;
	}

	// bulkDryRun says what a bulk retry of the filters would re-enqueue,
	// from cursor on (a dry run stops after 20 entries examined per entry of
	// its limit; "Look further" goes on from where it stopped, and the
	// confirmation re-enqueues the page shown).
	async function bulkDryRun(cursor) {
		const req = bulkBody(true);
		if (typeof cursor === "string" && cursor) req.cursor = cursor;
		const res = await guard("Bulk retry (dry run)", () => api("POST", "dlq/retry", req));
		if (!res) return;
		bulkRequest = Object.assign({}, req, { dry_run: false });
		const n = (res.retried || []).length;
		const skipped = (res.skipped_delivered || []).length;
		$("bulk-summary").textContent = "Matched " + res.matched + " " + req.status + " entr" + (res.matched === 1 ? "y" : "ies") +
			(req.source ? " of " + req.source : "") + (req.destination ? " to destination " + req.destination : "") + (req.type ? " of type " + req.type : "") + (req.tenant ? " of tenant " + req.tenant : "") + ": " + n + " would be re-enqueued" +
			(skipped ? ", " + skipped + " skipped (event delivered meanwhile)" : "") + "." +
			(res.next_cursor ? " The search stopped before the end of the DLQ: more may match further back (Look further)." : "");
		bulkNext = res.next_cursor || "";
		$("bulk-further").hidden = !bulkNext;
		const list = $("bulk-list");
		list.replaceChildren();
		for (const id of res.retried || []) list.append(el("li", { "class": "mono" }, id));
		$("bulk-confirm").disabled = n === 0;
		$("bulk-panel").hidden = false;
	}

	async function bulkConfirm() {
		if (!bulkRequest) return;
		const req = bulkRequest;
		bulkRequest = null;
		$("bulk-panel").hidden = true;
		const res = await guard("Bulk retry", () => api("POST", "dlq/retry", req));
		if (!res) return;
		const failed = Object.keys(res.failed || {}).length;
		say("Re-enqueued " + (res.retried || []).length + " entries" + (res.spread ? " over " + res.spread : "") +
			(failed ? ", " + failed + " failed" : ""), failed > 0);
		reloadFromStart();
		loadStats();
	}

	// ---- event lookup ----

	async function lookupEvent() {
		const source = $("ev-source").value.trim();
		const id = $("ev-id").value.trim();
		if (!source || !id) {
			say("Enter a source and an event ID first", true);
			return;
		}
		const info = await guard("Looking up the event", () => api("GET", "events/" + encodeURIComponent(source) + "/" + encodeURIComponent(id)));
		if (!info) return;
		const add = fieldList($("ev-fields"));
		add("ID", info.id);
		add("Event ID", info.event_id);
		add("Source", info.source);
		add("Type", info.event_type);
		add("Tenant", info.tenant);
		add("Status", info.status);
		add("Received", fmtTime(info.received_at));
		add("Next attempt", fmtTime(info.next_attempt_at));
		add("Finished", fmtTime(info.finished_at));
		// an event of one delivery (the default destination's) has no
		// deliveries list: it is its own one delivery
		const deliveries = Array.isArray(info.deliveries) && info.deliveries.length ? info.deliveries :
			[{ destination: info.destination, id: info.id, status: info.status, attempts: info.attempts,
				next_attempt_at: info.next_attempt_at, finished_at: info.finished_at }];
		const rows = $("ev-delivery-rows");
		rows.replaceChildren();
		for (const d of deliveries) {
			const attempts = Array.isArray(d.attempts) ? d.attempts : [];
			const last = attempts.length ? attempts[attempts.length - 1] : null;
			const lastText = last ? (last.status ? String(last.status) : "no response") + (last.error ? ": " + last.error : "") : "";
			const failed = last && (last.error || !last.status || last.status >= 300);
			rows.append(el("tr", { "class": "status-" + String(d.status).replace(/[^a-z_]/g, ""), "data-destination": destName(d.destination), "data-id": d.id || "" },
				el("td", {}, destName(d.destination)),
				el("td", {}, d.status),
				el("td", { "class": "num" }, String(attempts.length)),
				el("td", {}, fmtTime(d.next_attempt_at)),
				el("td", {}, fmtTime(d.finished_at)),
				el("td", { "class": failed ? "err" : "" }, lastText)));
		}
		$("ev-result").hidden = false;
		shownEvent = { source: info.source, event_id: info.event_id };
	}

	// shownEvent is the event the lookup shows (source and event id).
	let shownEvent = null;

	// eraseEvent erases the shown event everywhere (GDPR), once confirmed:
	// its deliveries, DLQ entries and stored payload; a provider's resend
	// stays a duplicate.
	async function eraseEvent() {
		const ev = shownEvent;
		if (!ev || !await erase(ev)) return;
		shownEvent = null;
		$("ev-result").hidden = true;
		reloadFromStart();
		loadStats();
	}

	// erase erases event ev ({source, event_id}) once confirmed, and says
	// so; the answer, or undefined (not confirmed, or failed).
	async function erase(ev) {
		if (!window.confirm("Erase event " + ev.event_id + " (" + ev.source + ") everywhere: every delivery, DLQ entry and stored payload? This cannot be undone.")) return undefined;
		const res = await guard("Erasing the event", () => api("DELETE", "events/" + encodeURIComponent(ev.source) + "/" + encodeURIComponent(ev.event_id)));
		if (res) say("Erased " + ev.event_id + ": " + res.deliveries + " deliveries, " + res.dlq_entries + " DLQ entries");
		return res;
	}

	// the helpers other scripts of the page (events.js) use
	window.hookline = Object.freeze({ api, el, fieldList, say, guard, fmtTime, fmtDuration, destName, erase,
		refresh: () => { loadStats(); reloadFromStart(); } });

	// ---- wiring ----

	document.addEventListener("DOMContentLoaded", () => {
		$("refresh").addEventListener("click", () => { loadStats(); loadList(); });
		$("pause-btn").addEventListener("click", () => setPaused(true));
		$("resume-btn").addEventListener("click", () => setPaused(false));
		$("pause-form").addEventListener("submit", (ev) => ev.preventDefault());
		$("dlq-filters").addEventListener("submit", (ev) => { ev.preventDefault(); reloadFromStart(); });
		$("next-page").addEventListener("click", () => { if (nextCursor) { cursor = nextCursor; loadList(); } });
		$("first-page").addEventListener("click", reloadFromStart);
		$("event-form").addEventListener("submit", (ev) => { ev.preventDefault(); lookupEvent(); });
		$("ev-erase").addEventListener("click", eraseEvent);
		$("bulk-retry-btn").addEventListener("click", bulkDryRun);
		$("bulk-confirm").addEventListener("click", bulkConfirm);
		$("bulk-further").addEventListener("click", () => bulkDryRun(bulkNext));
		$("bulk-cancel").addEventListener("click", () => { bulkRequest = null; $("bulk-panel").hidden = true; });
		$("btn-retry").addEventListener("click", retryCurrent);
		$("btn-resolve").addEventListener("click", () => withText("resolve", "resolution", "Resolution (what was done):", "Resolved"));
		$("btn-discard").addEventListener("click", () => withText("discard", "reason", "Reason for discarding:", "Discarded"));
		$("btn-investigate").addEventListener("click", () => withText("investigate", "note", "Note (optional):", "Marked as investigating"));
		$("btn-close").addEventListener("click", () => { current = null; $("detail").hidden = true; });
		loadStats();
		loadList();
		setInterval(loadStats, 5000);
	});
})();
