// hookline dashboard, health and charts: the store's state and this node's
// spool (GET api/stats), the per-source health table (GET
// api/stats?from=) and six charts over a chosen window (GET
// api/stats/series?from=), drawn as inline SVG built element by element.
// Every piece of data goes into the DOM as text or as a number attribute,
// never as HTML; nothing is loaded from elsewhere.
"use strict";

(function () {
	const $ = (id) => document.getElementById(id);
	// the SVG namespace, read from the page's empty inline <svg> (the
	// HTML parser puts it there): the page's files spell out no URL
	const SVG = $("svg-ns").namespaceURI;
	const W = 480, H = 180, PAD = { l: 44, r: 8, t: 10, b: 22 };

	// the window asked for, by the buttons (data-window)
	let win = "1h";

	function el(tag, props, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(props || {})) {
			if (k === "class") e.className = v;
			else e.setAttribute(k, v);
		}
		for (const c of children) {
			if (c === null || c === undefined) continue;
			e.append(c instanceof Node ? c : document.createTextNode(String(c)));
		}
		return e;
	}

	function svg(tag, attrs, ...children) {
		const e = document.createElementNS(SVG, tag);
		for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
		for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
		return e;
	}

	async function get(path) {
		const resp = await fetch("api/" + path, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
		let data = null;
		try {
			data = await resp.json();
		} catch (e) {
			data = null;
		}
		if (!resp.ok) throw new Error(data && typeof data.error === "string" ? data.error : resp.status + " " + resp.statusText);
		return data;
	}

	function fmtNum(v, digits) {
		if (v === null || v === undefined || Number.isNaN(v)) return "—";
		return Number(v).toFixed(digits);
	}

	function fmtAge(s) {
		if (!s) return "0 s";
		if (s < 120) return Math.round(s) + " s";
		if (s < 7200) return Math.round(s / 60) + " min";
		if (s < 172800) return (s / 3600).toFixed(1) + " h";
		return (s / 86400).toFixed(1) + " d";
	}

	function fmtTick(t, stepSeconds) {
		const d = new Date(t);
		const iso = d.toISOString();
		return stepSeconds >= 3600 ? iso.slice(5, 13).replace("T", " ") + "h" : iso.slice(11, 16);
	}

	// ---- health tables ----

	function fmtBytes(n) {
		if (!n) return "0 B";
		const units = ["B", "KiB", "MiB", "GiB", "TiB"];
		let i = 0;
		while (n >= 1024 && i < units.length - 1) {
			n /= 1024;
			i++;
		}
		return (i === 0 ? String(n) : n.toFixed(1)) + " " + units[i];
	}

	// drawStore fills the store's row from GET api/stats: shown when the
	// store did not answer or this node has a spool (storage redis spool).
	// It returns whether the store answered.
	function drawStore(plain) {
		const available = !(plain && plain.store && plain.store.available === false);
		const sp = plain && plain.spool;
		$("store-health").hidden = available && !sp;
		$("store-state").textContent = available ? "available" : "unavailable: events are spooled on this node and delivered once it answers";
		$("spool-events").textContent = sp ? String(sp.events ?? 0) : "—";
		$("spool-bytes").textContent = sp ? fmtBytes(sp.bytes) : "—";
		const oldest = sp && sp.oldest ? new Date(sp.oldest) : null;
		$("spool-oldest").textContent = oldest && !Number.isNaN(oldest.getTime())
			? oldest.toISOString().slice(0, 19).replace("T", " ") + " UTC (" + fmtAge((Date.now() - oldest.getTime()) / 1000) + " ago)"
			: "—";
		$("store-row").className = !available || (sp && sp.events > 0) ? "unhealthy" : "";
		return available;
	}

	// reasonText says what a failure's reason means, for the operator.
	const reasonText = {
		missing: "missing: a header the scheme needs is absent",
		malformed: "malformed: a header is there but unreadable",
		timestamp: "timestamp: outside the tolerance",
		mismatch: "mismatch: no configured secret produces the signature",
		body: "body: signed for other bytes than those received",
	};

	// fmtSkew tells a timestamp's skew: the sender's clock ahead (+) or
	// behind (-), or a replay.
	function fmtSkew(s) {
		if (typeof s !== "number") return "—";
		const a = Math.abs(s);
		return (s > 0 ? "+" : "−") + fmtAge(a) + (s > 0 ? " (ahead)" : " (behind, or a replay)");
	}

	// drawSigFailures lists the last failed signature checks of each
	// source on this node (GET api/stats signature_failures), newest first.
	function drawSigFailures(plain) {
		const rows = $("sig-failures-rows");
		rows.replaceChildren();
		const all = (plain && plain.signature_failures) || {};
		for (const source of Object.keys(all).sort()) {
			for (const f of Array.isArray(all[source]) ? all[source] : []) {
				rows.append(el("tr", { "data-source": source, "data-reason": String(f.reason) },
					el("td", {}, source),
					el("td", {}, f.at ? new Date(f.at).toISOString().slice(0, 19).replace("T", " ") + " UTC" : "—"),
					el("td", {}, reasonText[f.reason] || String(f.reason)),
					el("td", {}, fmtSkew(f.skew_seconds)),
					el("td", {}, String(f.client_ip || "—"))));
			}
		}
		$("sig-failures-empty").hidden = rows.children.length > 0;
		$("sig-failures").hidden = rows.children.length === 0;
	}

	// drawSecrets lists which secret of each source verified its requests
	// and when each last did (GET api/stats sources.*.secrets), so that an
	// operator rotating one sees when the old one can go.
	function drawSecrets(plain) {
		const rows = $("secrets-rows");
		rows.replaceChildren();
		if (plain && plain.store && plain.store.available === false) {
			// not known while the store does not answer
			$("secrets").hidden = true;
			$("secrets-empty").hidden = true;
			return;
		}
		const sources = (plain && plain.sources) || {};
		for (const source of Object.keys(sources).sort()) {
			const list = Array.isArray(sources[source].secrets) ? sources[source].secrets : [];
			for (const s of list) {
				const last = s.last_matched ? new Date(s.last_matched) : null;
				const when = last && !Number.isNaN(last.getTime())
					? fmtAge(Math.max(0, (Date.now() - last.getTime()) / 1000)) + " ago (" + last.toISOString().slice(0, 19).replace("T", " ") + " UTC)"
					: "never matched";
				rows.append(el("tr", { "data-source": source, "data-position": String(s.position) },
					el("td", {}, source),
					el("td", {}, "secret " + s.position + " of " + list.length),
					el("td", {}, when),
					el("td", { class: "num" }, String(s.matches_last_hour ?? 0)),
					el("td", { class: "num" }, String(s.matches_all_time ?? 0))));
			}
		}
		$("secrets-empty").hidden = rows.children.length > 0;
		$("secrets").hidden = rows.children.length === 0;
	}

	// loadHealth draws the store's row and the per-source table; it
	// returns whether the store answered (without it there is nothing to
	// count, nor to chart).
	async function loadHealth() {
		let plain;
		try {
			plain = await get("stats");
		} catch (e) {
			// not known: say so rather than keep an earlier state
			$("sig-failures").hidden = true;
			$("sig-failures-empty").hidden = true;
			$("secrets").hidden = true;
			$("secrets-empty").hidden = true;
			$("store-health").hidden = false;
			$("store-state").textContent = "unknown";
			for (const id of ["spool-events", "spool-bytes", "spool-oldest"]) $(id).textContent = "—";
			$("store-row").className = "unhealthy";
			throw e;
		}
		drawSigFailures(plain);
		drawSecrets(plain);
		const rows = $("health-rows");
		rows.replaceChildren();
		if (!drawStore(plain)) {
			$("health-empty").textContent = "The store did not answer: the counts are unknown until it does.";
			$("health-empty").hidden = false;
			$("health").hidden = true;
			return false;
		}
		const range = await get("stats?from=" + encodeURIComponent(win));
		const enc = plain && plain.encryption && typeof plain.encryption.enabled === "boolean" ? (plain.encryption.enabled ? "on" : "off") : "—";
		const sources = range.sources || {};
		for (const name of Object.keys(sources).sort()) {
			const s = sources[name];
			const rate = s.success_rate;
			rows.append(el("tr", { "data-source": name, "class": rate !== null && rate !== undefined && rate < 95 ? "unhealthy" : "" },
				el("td", {}, name),
				el("td", { "class": "num" }, fmtNum(s.received_per_minute, 2)),
				el("td", { "class": "num" }, rate === null || rate === undefined ? "—" : fmtNum(rate, 1) + " %"),
				el("td", { "class": "num" }, String(s.open_dlq ?? 0)),
				el("td", { "class": "num" }, fmtAge(s.oldest_queued_age_seconds)),
				el("td", {}, s.paused ? "paused" : "no"),
				el("td", {}, s.breaker_open ? "open" : "closed"),
				el("td", {}, enc)));
		}
		$("health-empty").textContent = "Nothing counted in this window.";
		$("health-empty").hidden = rows.children.length > 0;
		$("health").hidden = rows.children.length === 0;
		return true;
	}

	// ---- charts ----

	// frame draws a chart's axes for values up to max and returns the
	// svg and the x and y scales (x by point index).
	// evenMax rounds a count chart's top up to an even number (at least 2),
	// so that its middle line is a whole number too.
	const evenMax = (v) => Math.max(2, Math.ceil(v / 2) * 2);

	function frame(n, max, unit, points, stepSeconds, digits) {
		const s = svg("svg", { viewBox: "0 0 " + W + " " + H, "class": "chart", role: "img" });
		const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
		const x = (i) => PAD.l + ((i + 0.5) * iw) / Math.max(n, 1); // the middle of point i's band
		const y = (v) => PAD.t + ih - (max > 0 ? (v / max) * ih : 0);
		for (const f of [0, 0.5, 1]) {
			const v = max * f;
			s.append(svg("line", { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), "class": "grid" }),
				svg("text", { x: PAD.l - 4, y: y(v) + 4, "text-anchor": "end", "class": "tick" }, fmtNum(v, digits || 0) + unit));
		}
		if (points && points.length) {
			const last = points.length - 1;
			for (const [i, anchor] of [[0, "start"], [Math.floor(last / 2), "middle"], [last, "end"]]) {
				s.append(svg("text", { x: x(i), y: H - 6, "text-anchor": last === 0 ? "middle" : anchor, "class": "tick" }, fmtTick(points[i].t, stepSeconds)));
			}
		}
		return { s, x, y, bw: Math.min(40, Math.max(1, (iw / Math.max(n, 1)) * 0.8)) };
	}

	// line draws one series (null values break the line) with a dot per
	// value, and returns how many values it drew.
	function line(f, values, cls) {
		let d = "", pen = false, drawn = 0;
		values.forEach((v, i) => {
			if (v === null || v === undefined) {
				pen = false;
				return;
			}
			d += (pen ? "L" : "M") + f.x(i).toFixed(1) + " " + f.y(v).toFixed(1) + " ";
			pen = true;
			drawn++;
			f.s.append(svg("circle", { cx: f.x(i).toFixed(1), cy: f.y(v).toFixed(1), r: 1.6, "class": "dot " + cls }));
		});
		if (d) f.s.append(svg("path", { d: d.trim(), "class": "line " + cls }));
		return drawn;
	}

	function legend(items) {
		return el("ul", { "class": "legend" }, ...items.map(([cls, name]) => el("li", { "class": cls }, name)));
	}

	// put replaces a chart's figure, counting its points (data-points)
	// for tests and screen readers.
	function put(id, node, count, label, extra) {
		const fig = $(id);
		fig.replaceChildren(node);
		if (extra) fig.append(extra);
		fig.setAttribute("data-points", String(count));
		fig.setAttribute("aria-label", label);
	}

	const maxOf = (vals) => vals.reduce((m, v) => (v !== null && v !== undefined && v > m ? v : m), 0);

	function drawSeries(s) {
		const pts = Array.isArray(s.points) ? s.points : [];
		const n = pts.length;
		const step = s.step_seconds;
		$("charts-range").textContent = new Date(s.from).toISOString().replace(/\.\d+Z$/, "Z") + " to " +
			new Date(s.to).toISOString().replace(/\.\d+Z$/, "Z") + ", one point per " + (step >= 3600 ? step / 3600 + " h" : step / 60 + " min");

		// 1. success rate
		let f = frame(n, 100, "%", pts, step);
		line(f, pts.map((p) => p.success_rate), "s0");
		put("chart-success", f.s, n, "Success rate over time, " + n + " points");

		// 2. failed attempts by status class: stacked bars
		const classes = [["4xx", "s1"], ["5xx", "s2"], ["connection", "s3"], ["other", "s4"]];
		const totals = pts.map((p) => classes.reduce((a, [c]) => a + ((p.failed || {})[c] || 0), 0));
		f = frame(n, evenMax(maxOf(totals)), "", pts, step);
		pts.forEach((p, i) => {
			const g = svg("g", { "class": "bar" });
			let base = 0;
			for (const [c, cls] of classes) {
				const v = (p.failed || {})[c] || 0;
				if (v > 0) {
					g.append(svg("rect", { x: (f.x(i) - f.bw / 2).toFixed(1), y: f.y(base + v).toFixed(1), width: f.bw.toFixed(1),
						height: (f.y(base) - f.y(base + v)).toFixed(1), "class": cls }, svg("title", {}, c + ": " + v)));
				}
				base += v;
			}
			f.s.append(g);
		});
		put("chart-errors", f.s, n, "Failed attempts by status class, " + n + " points", legend(classes.map(([c, cls]) => [cls, c])));

		// 3. latency percentiles
		const lat = (k) => pts.map((p) => (p.latency ? p.latency[k] : null));
		const ps = [["p50", "s0"], ["p95", "s2"], ["p99", "s3"]];
		f = frame(n, Math.max(0.01, maxOf(lat("p99"))), " s", pts, step, 3);
		for (const [k, cls] of ps) line(f, lat(k), cls);
		put("chart-latency", f.s, n, "Delivery latency percentiles, " + n + " points", legend(ps.map(([k, cls]) => [cls, k])));

		// 4. DLQ size
		const dlq = pts.map((p) => p.dlq_size);
		f = frame(n, evenMax(maxOf(dlq)), "", pts, step);
		line(f, dlq, "s2");
		put("chart-dlq", f.s, n, "Open DLQ entries over time, " + n + " points");

		// 5. attempts distribution: bars by attempt number, delivered then dead
		const att = s.attempts || {};
		const nums = [...new Set([...Object.keys(att.delivered || {}), ...Object.keys(att.dead || {})])].sort((a, b) => a - b);
		const counts = nums.map((k) => [(att.delivered || {})[k] || 0, (att.dead || {})[k] || 0]);
		f = frame(nums.length, evenMax(maxOf(counts.map(([a, b]) => a + b))), "", null, step);
		nums.forEach((k, i) => {
			const [ok, dead] = counts[i];
			const g = svg("g", { "class": "bar", "data-attempt": k });
			if (ok) g.append(svg("rect", { x: (f.x(i) - f.bw / 2).toFixed(1), y: f.y(ok).toFixed(1), width: f.bw.toFixed(1), height: (f.y(0) - f.y(ok)).toFixed(1), "class": "s0" }, svg("title", {}, "delivered at attempt " + k + ": " + ok)));
			if (dead) g.append(svg("rect", { x: (f.x(i) - f.bw / 2).toFixed(1), y: f.y(ok + dead).toFixed(1), width: f.bw.toFixed(1), height: (f.y(ok) - f.y(ok + dead)).toFixed(1), "class": "s2" }, svg("title", {}, "dead at attempt " + k + ": " + dead)));
			g.append(svg("text", { x: f.x(i), y: H - 6, "text-anchor": "middle", "class": "tick" }, k === "10" ? "10+" : k));
			f.s.append(g);
		});
		put("chart-attempts", f.s, nums.length, "Deliveries by the attempt they ended at, " + nums.length + " attempt numbers",
			legend([["s0", "delivered"], ["s2", "dead"]]));

		// 6. top errors
		const rows = $("top-errors-rows");
		rows.replaceChildren();
		for (const e of Array.isArray(s.top_errors) ? s.top_errors : []) {
			rows.append(el("tr", {}, el("td", { "class": "num" }, String(e.count)), el("td", { "class": "err mono" }, e.message)));
		}
		$("top-errors-empty").hidden = rows.children.length > 0;
		$("top-errors").hidden = rows.children.length === 0;
		$("charts").setAttribute("data-window", win);
	}

	async function loadCharts() {
		const source = $("charts-source").value.trim();
		const qs = new URLSearchParams({ from: win });
		if (source) qs.set("source", source);
		drawSeries(await get("stats/series?" + qs.toString()));
	}

	async function load() {
		// without the store (or its stats) the charts are unknown: hidden,
		// not stale
		let available = false;
		try {
			available = await loadHealth();
			$("charts").hidden = !available;
			$("charts-range").hidden = !available;
			if (available) await loadCharts();
			$("charts-error").hidden = true;
		} catch (e) {
			$("charts").hidden = !available;
			$("charts-range").hidden = !available;
			$("charts-error").textContent = "Loading the charts: " + (e && e.message ? e.message : String(e));
			$("charts-error").hidden = false;
		}
	}

	function init() {
		for (const b of document.querySelectorAll("#window-buttons button")) {
			b.addEventListener("click", () => {
				win = b.getAttribute("data-window");
				for (const o of document.querySelectorAll("#window-buttons button")) o.setAttribute("aria-pressed", String(o === b));
				load();
			});
		}
		$("charts-source").addEventListener("change", load);
		$("refresh").addEventListener("click", load);
		load();
	}

	if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
	else init();
})();
