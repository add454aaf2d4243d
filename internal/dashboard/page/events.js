// hookline dashboard: the event browser. Every stored event (not only dead
// ones) searched by id, type, tenant, source, destination, status and time; an
// event's page with each destination's attempts and its actions: retry a
// dead delivery (its DLQ entry), replay a delivered one (dry run first),
// erase; and the erasure of a tenant's events. Uses the helpers app.js exposes (window.hookline); every piece
// of data goes into the DOM as text.
"use strict";

(function () {
	const $ = (id) => document.getElementById(id);

	// ---- the list ----

	let cursor = "";
	let nextCursor = "";

	function filters() {
		return {
			q: $("evs-q").value.trim(),
			type: $("evs-type").value.trim(),
			tenant: $("evs-tenant").value.trim(),
			source: $("evs-source").value.trim(),
			destination: $("evs-destination").value.trim(),
			status: $("evs-status").value,
			since: $("evs-since").value.trim(),
			until: $("evs-until").value.trim(),
			limit: $("evs-limit").value.trim(),
		};
	}

	// deliveriesOf is an event's deliveries: an event of one delivery (the
	// default destination's) has no list, it is its own one delivery.
	function deliveriesOf(info) {
		if (Array.isArray(info.deliveries) && info.deliveries.length) return info.deliveries;
		return [{ destination: info.destination, id: info.id, status: info.status, attempts: info.attempts,
			next_attempt_at: info.next_attempt_at, finished_at: info.finished_at }];
	}

	const statusClass = (st) => "status-" + String(st).replace(/[^a-z_]/g, "");

	async function loadEvents() {
		const h = window.hookline;
		const qs = new URLSearchParams();
		for (const [k, v] of Object.entries(filters())) if (v) qs.set(k, v);
		if (cursor) qs.set("cursor", cursor);
		const page = await h.guard("Loading events", () => h.api("GET", "events?" + qs.toString()));
		if (!page) return;
		const rows = $("evs-rows");
		rows.replaceChildren();
		const items = Array.isArray(page.items) ? page.items : [];
		for (const info of items) {
			const dests = deliveriesOf(info).map((d) => h.destName(d.destination) + ": " + d.status).join(", ");
			const tr = h.el("tr", { "class": "entry " + statusClass(info.status), "data-id": info.id, "data-event": info.event_id,
				"data-source": info.source, tabIndex: 0 },
				h.el("td", {}, h.fmtTime(info.received_at)),
				h.el("td", {}, info.source),
				h.el("td", { "class": "mono" }, info.event_id),
				h.el("td", { "class": "mono" }, info.event_type || ""),
				h.el("td", { "class": "mono" }, info.tenant || ""),
				h.el("td", {}, info.status),
				h.el("td", { "class": "dests" }, dests));
			tr.addEventListener("click", () => showEvent(info));
			tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter") showEvent(info); });
			rows.append(tr);
		}
		nextCursor = page.next_cursor || "";
		$("evs-empty").textContent = nextCursor ? "No match among the events examined: Next page looks further back." : "No events.";
		$("evs-empty").hidden = items.length > 0;
		$("evs-next").disabled = !nextCursor;
		$("evs-first").disabled = !cursor;
	}

	function searchFromStart() {
		cursor = "";
		loadEvents();
	}

	// ---- bulk replay of the delivered events the filters select ----

	let bulkReplay = null;
	let replayNext = ""; // where the last dry run stopped, when it stopped early

	function replayBody(f, dryRun) {
		const body = { dry_run: dryRun };
		for (const k of ["source", "destination", "type", "tenant", "since", "until"]) if (f[k]) body[k] = f[k];
		if (f.limit) body.limit = parseInt(f.limit, 10);
		return body;
	}

	// bulkReplayDryRun names what a replay of the filters would re-send,
	// from cursor on (a dry run stops after 20 deliveries examined per one
	// of its limit; "Look further" goes on from where it stopped, and the
	// confirmation replays the page shown).
	async function bulkReplayDryRun(cursor) {
		const h = window.hookline;
		const req = replayBody(filters(), true);
		if (typeof cursor === "string" && cursor) req.cursor = cursor;
		const res = await h.guard("Replay (dry run)", () => h.api("POST", "events/replay", req));
		if (!res) return;
		bulkReplay = Object.assign({}, req, { dry_run: false });
		const replayed = Array.isArray(res.replayed) ? res.replayed : [];
		$("evs-replay-summary").textContent = "Matched " + res.matched + " delivered event" + (res.matched === 1 ? "" : "s") +
			(req.source ? " of " + req.source : "") + (req.destination ? " to destination " + req.destination : "") +
			(req.type ? " of type " + req.type : "") + (req.tenant ? " of tenant " + req.tenant : "") + ": " + replayed.length + " would be sent again." +
			(res.next_cursor ? " The search stopped before the end: more may match further on (Look further)." : "");
		replayNext = res.next_cursor || "";
		$("evs-replay-further").hidden = !replayNext;
		fillReplayList($("evs-replay-list"), replayed);
		$("evs-replay-confirm").disabled = replayed.length === 0;
		$("evs-replay-panel").hidden = false;
	}

	function fillReplayList(list, replayed) {
		const h = window.hookline;
		list.replaceChildren();
		for (const r of replayed) {
			list.append(h.el("li", { "class": "mono", "data-id": r.id }, r.source + " " + r.event_id + " → " + h.destName(r.destination) + " (" + r.id + ")"));
		}
	}

	async function bulkReplayConfirm() {
		const h = window.hookline;
		if (!bulkReplay) return;
		const req = bulkReplay;
		bulkReplay = null;
		$("evs-replay-panel").hidden = true;
		const res = await h.guard("Replay", () => h.api("POST", "events/replay", req));
		if (!res) return;
		const failed = Object.keys(res.failed || {}).length;
		h.say("Replaying " + (res.replayed || []).length + " deliveries" + (res.spread ? " over " + res.spread : "") +
			(failed ? ", " + failed + " failed" : ""), failed > 0);
		searchFromStart();
		reloadEvent(); // an open event may be among those replayed: live again
	}

	// ---- one event ----

	let shown = null;

	function showEvent(info) {
		const h = window.hookline;
		shown = info;
		$("evp-id").textContent = info.event_id;
		const add = h.fieldList($("evp-fields"));
		add("ID", info.id);
		add("Event ID", info.event_id);
		add("Source", info.source);
		add("Type", info.event_type);
		add("Tenant", info.tenant);
		add("Status", info.status);
		add("Request ID", info.request_id);
		add("Received", h.fmtTime(info.received_at));
		add("Next attempt", h.fmtTime(info.next_attempt_at));
		add("Finished", h.fmtTime(info.finished_at));
		const rows = $("evp-delivery-rows");
		const att = $("evp-attempt-rows");
		rows.replaceChildren();
		att.replaceChildren();
		for (const d of deliveriesOf(info)) {
			const dest = h.destName(d.destination);
			const attempts = Array.isArray(d.attempts) ? d.attempts : [];
			let action = "";
			if (d.status === "dead") {
				action = h.el("button", { type: "button", "class": "evp-retry", "data-id": d.id }, "Retry");
				action.addEventListener("click", () => retryDelivery(d));
			} else if (d.status === "delivered") {
				action = h.el("button", { type: "button", "class": "evp-replay", "data-id": d.id }, "Replay…");
				action.addEventListener("click", () => replayDryRun(d));
			}
			rows.append(h.el("tr", { "class": statusClass(d.status), "data-destination": dest, "data-id": d.id || "" },
				h.el("td", {}, dest),
				h.el("td", {}, d.status),
				h.el("td", { "class": "num" }, String(attempts.length)),
				h.el("td", {}, h.fmtTime(d.next_attempt_at)),
				h.el("td", {}, h.fmtTime(d.finished_at)),
				h.el("td", {}, action)));
			for (const a of attempts) {
				att.append(h.el("tr", { "data-destination": dest },
					h.el("td", {}, dest),
					h.el("td", {}, String(a.n)),
					h.el("td", {}, h.fmtTime(a.at)),
					h.el("td", {}, a.status ? String(a.status) : "no response"),
					h.el("td", {}, h.fmtDuration(a.duration_ns)),
					h.el("td", { "class": "err" }, a.error || "")));
			}
		}
		replayRequest = null;
		$("evp-replay-panel").hidden = true;
		$("evp").hidden = false;
		$("evp").scrollIntoView({ block: "nearest" });
		// live while a delivery is on its way: read again every
		// liveEvery ms until each is settled, the page is closed or
		// another event is shown
		clearTimeout(liveTimer);
		if (deliveriesOf(info).some((d) => d.status === "queued" || d.status === "in_flight")) {
			liveTimer = setTimeout(reloadEvent, liveEvery);
		}
	}

	const liveEvery = 2000;
	let liveTimer = 0;

	// closeEvent hides the event page and stops its live reloads.
	function closeEvent() {
		clearTimeout(liveTimer);
		shown = null;
		$("evp").hidden = true;
	}

	// reloadEvent shows the shown event as the store has it now.
	async function reloadEvent() {
		const h = window.hookline;
		if (!shown) return;
		const ev = shown;
		const info = await h.guard("Loading the event", () => h.api("GET", "events/" + encodeURIComponent(ev.source) + "/" + encodeURIComponent(ev.event_id)));
		if (info && shown === ev) showEvent(info); // not one closed or replaced meanwhile
	}

	// retryDelivery re-enqueues a dead delivery: its DLQ entry's retry.
	async function retryDelivery(d) {
		const h = window.hookline;
		if (!shown) return;
		if (!window.confirm("Re-enqueue event " + shown.event_id + " (" + shown.source + ") for " + h.destName(d.destination) + "?")) return;
		const res = await h.guard("Retry", () => h.api("POST", "dlq/" + encodeURIComponent(d.id) + "/retry"));
		if (!res) return;
		h.say("Re-enqueued " + d.id);
		h.refresh();
		await Promise.all([reloadEvent(), loadEvents()]);
	}

	let replayRequest = null;

	// replayDryRun asks what replaying a delivered delivery would do (this
	// event alone, to its destination, delivered around its finish time),
	// and shows it for confirmation.
	async function replayDryRun(d) {
		const h = window.hookline;
		if (!shown) return;
		// the millisecond the delivery finished in (the API's times are
		// finer than a Date's): a listing starts there, and pages on while a
		// busy millisecond hides it
		const fin = new Date(d.finished_at || shown.finished_at || shown.received_at).getTime();
		const req = { source: shown.source, destination: h.destName(d.destination), id: shown.id,
			since: new Date(fin).toISOString(), until: new Date(fin + 1).toISOString(), limit: 10, dry_run: true };
		if (shown.event_type) req.type = shown.event_type;
		let res = null;
		let replayed = [];
		for (let page = 0; page < 20; page++) {
			res = await h.guard("Replay (dry run)", () => h.api("POST", "events/replay", req));
			if (!res) return;
			replayed = Array.isArray(res.replayed) ? res.replayed : [];
			if (replayed.length || !res.next_cursor) break;
			req.cursor = res.next_cursor;
		}
		replayRequest = Object.assign({}, req, { dry_run: false });
		$("evp-replay-summary").textContent = replayed.length ?
			"Would send " + shown.event_id + " to " + h.destName(d.destination) + " again:" :
			"Nothing to replay: the delivery is no longer delivered (replayed meanwhile, or past retention).";
		fillReplayList($("evp-replay-list"), replayed);
		$("evp-replay-confirm").disabled = replayed.length === 0;
		$("evp-replay-panel").hidden = false;
	}

	async function replayConfirm() {
		const h = window.hookline;
		if (!replayRequest) return;
		const req = replayRequest;
		replayRequest = null;
		$("evp-replay-panel").hidden = true;
		const res = await h.guard("Replay", () => h.api("POST", "events/replay", req));
		if (!res) return;
		const failed = Object.keys(res.failed || {}).length;
		h.say("Replaying " + (res.replayed || []).length + " deliver" + ((res.replayed || []).length === 1 ? "y" : "ies") +
			(failed ? ", " + failed + " failed" : ""), failed > 0);
		await Promise.all([reloadEvent(), loadEvents()]);
	}

	// ---- erasing a tenant (its source and tenant are the filters') ----

	// tenantLine is what the progress line says of a tenant's erasure.
	function tenantLine(p) {
		const what = p.erased + " event" + (p.erased === 1 ? "" : "s") + " erased (" + p.deliveries + " deliveries, " + p.dlq_entries + " DLQ entries)";
		switch (p.state) {
		case "running": return "Erasing tenant " + p.tenant + " of " + p.source + ": " + what + " so far…";
		case "done": return "Tenant " + p.tenant + " of " + p.source + " erased: " + what + ", every event received until " + window.hookline.fmtTime(p.until) + ".";
		default: return "The erasure of tenant " + p.tenant + " of " + p.source + " stopped after " + what + ": " + (p.error || p.state) + " (Erase tenant again resumes it).";
		}
	}

	// eraseTenant erases every event of the Tenant filter's tenant of the
	// Source filter's source, once the operator has typed the tenant to
	// confirm, and follows its progress to the end.
	async function eraseTenant() {
		const h = window.hookline;
		const f = filters();
		if (!f.source || !f.tenant) {
			h.say("Set Source and Tenant to the account to erase.");
			return;
		}
		const typed = window.prompt("Erase every event of tenant " + f.tenant + " of " + f.source +
			" received until now: every delivery, DLQ entry and stored payload. This cannot be undone. Type the tenant to confirm.", "");
		if (typed === null) return;
		if (typed.trim() !== f.tenant) {
			h.say("The tenant typed does not match: nothing was erased.");
			return;
		}
		const path = "tenants/" + encodeURIComponent(f.source) + "/" + encodeURIComponent(f.tenant);
		let p = await h.guard("Erasing the tenant", () => h.api("DELETE", path));
		const line = $("evs-tenant-progress");
		while (p) {
			line.textContent = tenantLine(p);
			line.hidden = false;
			if (p.state !== "running") break;
			await new Promise((resolve) => setTimeout(resolve, 1000));
			p = await h.guard("Reading the erasure's progress", () => h.api("GET", path));
		}
		h.refresh();
		loadEvents();
	}

	async function eraseShown() {
		const h = window.hookline;
		if (!shown || !await h.erase(shown)) return;
		closeEvent();
		h.refresh();
		loadEvents();
	}

	// ---- wiring ----

	document.addEventListener("DOMContentLoaded", () => {
		$("evs-filters").addEventListener("submit", (ev) => { ev.preventDefault(); searchFromStart(); });
		$("evs-next").addEventListener("click", () => { if (nextCursor) { cursor = nextCursor; loadEvents(); } });
		$("evs-first").addEventListener("click", searchFromStart);
		$("evs-replay-btn").addEventListener("click", bulkReplayDryRun);
		$("evs-erase-tenant").addEventListener("click", eraseTenant);
		$("evs-replay-confirm").addEventListener("click", bulkReplayConfirm);
		$("evs-replay-further").addEventListener("click", () => bulkReplayDryRun(replayNext));
		$("evs-replay-cancel").addEventListener("click", () => { bulkReplay = null; $("evs-replay-panel").hidden = true; });
		$("evp-refresh").addEventListener("click", reloadEvent);
		$("evp-erase").addEventListener("click", eraseShown);
		$("evp-close").addEventListener("click", closeEvent);
		$("evp-replay-confirm").addEventListener("click", replayConfirm);
		$("evp-replay-cancel").addEventListener("click", () => { replayRequest = null; $("evp-replay-panel").hidden = true; });
		$("refresh").addEventListener("click", loadEvents);
		loadEvents();
	});
})();
