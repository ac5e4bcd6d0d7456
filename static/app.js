// Redrive console behaviour. Vanilla JS, loaded with `defer`, driven only by
// data attributes so that templates need no inline script or style (the CSP is
// script-src 'self'; style-src 'self'). Everything here is progressive: the
// server renders correct text and working forms without it.
//
//   <time datetime="RFC3339" data-rel>          relative text, refreshed every 30 s
//   [data-copy="text"]                          copy text to the clipboard
//   [data-copy-target="selector"]               copy textContent of parent.querySelector(selector)
//   table[data-sortable] th[data-nosort]        click-to-sort columns; td[data-sort] overrides the key;
//                                               a cell of only a <time datetime> sorts by the instant,
//                                               of only a [data-sort-value] by that value
//   input[data-filter-for="tableId"]            live row filter; tr[data-filter-text] adds hidden text
//   form[data-confirm="msg"], button[data-confirm]  confirm() before submit (htmx too)
//   input[data-check-all="name"]                select-all for checkboxes named name
//   [data-check-count="name"]                   shows how many are checked
//   [data-requires-checked="name"]              disabled while none are checked
//   div[data-chart][data-src][data-series]      uPlot line chart; data-labels, data-height, data-refresh
//   div[data-chart][data-sparkline]             the same as a plain line: no axes, legend or cursor
//   [data-live][hx-get][hx-trigger="every Ns"]  a page's live numbers (components.Live): the poll is
//                                               skipped while text is selected, a form field has
//                                               focus or rows are ticked; a failed poll keeps the
//                                               numbers shown; a sorted table stays sorted
//   ol[data-trace-stream="url"][data-trace-result="id"]  a trace's timeline: each source's steps arrive
//                                               as server-sent events ("steps", appended), then
//                                               "done" replaces the element #id with the whole result
//   div[data-scan="url"] [data-scan-rows] [data-scan-status] [data-scan-cancel]  a filter's matches,
//                                               streamed page by page from the records API
//   input[data-filter-history="kind"]           the last filters used, offered in its datalist
//   table[data-records] tr[data-record-row]     a message row; the next tr[data-row-detail] is its full
//                                               view, toggled by [data-expand], a click on the row or
//                                               Enter; j/k move between rows, x ticks the row's box
//
// static/README.md documents every attribute; browser_test.go in
// views/components exercises them under the production CSP.
(function () {
  "use strict";

  var doc = document;

  function each(root, selector, fn) {
    var list = (root || doc).querySelectorAll(selector);
    for (var i = 0; i < list.length; i++) fn(list[i]);
  }

  function within(root, selector) {
    // querySelectorAll that also considers root itself.
    var out = [];
    if (root.matches && root.matches(selector)) out.push(root);
    each(root, selector, function (el) { out.push(el); });
    return out;
  }

  // ---------------------------------------------------------------- times

  // relText mirrors components.RelText in Go so that the text does not jump
  // when the script takes over.
  function relText(t, now) {
    var d = now - t;
    var future = d < 0;
    if (future) d = -d;
    var s = Math.floor(d / 1000);
    if (s < 1) return "just now";
    var txt;
    if (s < 60) txt = s + " s";
    else if (s < 3600) txt = Math.floor(s / 60) + " min";
    else if (s < 86400) txt = Math.floor(s / 3600) + " h";
    else txt = Math.floor(s / 86400) + " d";
    return future ? "in " + txt : txt + " ago";
  }

  function refreshTimes(root) {
    var now = Date.now();
    within(root, "time[data-rel][datetime]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(t)) el.textContent = relText(t, now);
    });
  }

  // ---------------------------------------------------------------- copy

  function fallbackCopy(text) {
    var ta = doc.createElement("textarea");
    ta.value = text;
    ta.setAttribute("readonly", "");
    ta.className = "clipboard-fallback";
    doc.body.appendChild(ta);
    ta.select();
    var ok = false;
    try { ok = doc.execCommand("copy"); } catch (e) { ok = false; }
    doc.body.removeChild(ta);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy failed"));
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); });
    }
    return fallbackCopy(text);
  }

  function flash(btn, cls) {
    btn.classList.remove("is-copied", "is-copy-failed");
    btn.classList.add(cls);
    clearTimeout(btn._copyTimer);
    btn._copyTimer = setTimeout(function () { btn.classList.remove(cls); }, 1400);
  }

  function onCopyClick(e) {
    var btn = e.target.closest("[data-copy],[data-copy-target]");
    if (!btn) return;
    e.preventDefault();
    var text = btn.getAttribute("data-copy");
    if (text === null) {
      var scope = btn.parentElement || doc;
      var src = scope.querySelector(btn.getAttribute("data-copy-target"));
      text = src ? src.textContent : "";
    }
    copyText(text).then(
      function () { flash(btn, "is-copied"); },
      function () { flash(btn, "is-copy-failed"); }
    );
  }

  // ---------------------------------------------------------------- sort

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var numRe = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?%?$/i;

  // cellKey is what a cell sorts by: its data-sort; else, when the cell shows only a time
  // (components.RelTime, "5 min ago") its instant in milliseconds, or only an element with a
  // data-sort-value (a duration, say) that value; else its text. Relative words sorted as text
  // put "25 s ago" between "19 min ago" and "27 min ago".
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var k = cell.getAttribute("data-sort");
    if (k !== null) return k.trim();
    var text = cell.textContent.trim();
    var only = function (el) { return el && el.textContent.trim() === text; };
    var t = cell.querySelector("time[datetime]");
    if (only(t)) {
      var ms = Date.parse(t.getAttribute("datetime"));
      if (!isNaN(ms)) return String(ms);
    }
    var v = cell.querySelector("[data-sort-value]");
    if (only(v)) return v.getAttribute("data-sort-value").trim();
    return text;
  }

  function asNumber(s) {
    var c = s.replace(/[,\s\u00a0\u202f_]/g, "");
    return numRe.test(c) ? parseFloat(c) : NaN;
  }

  function isBlank(k) { return k === "" || k === "\u2014"; }

  function compareKeys(a, b) {
    if (a === b) return 0;
    var na = asNumber(a), nb = asNumber(b);
    if (!isNaN(na) && !isNaN(nb)) return na - nb;
    return collator.compare(a, b);
  }

  function sortBy(th, keep) {
    var table = th.closest("table");
    var index = th.cellIndex;
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    if (keep) dir = th.getAttribute("aria-sort") || "ascending"; // re-sort new rows the same way
    each(table.tHead, "th[aria-sort]", function (o) { o.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var sign = dir === "ascending" ? 1 : -1;
    for (var b = 0; b < table.tBodies.length; b++) {
      var body = table.tBodies[b];
      var rows = Array.prototype.filter.call(body.rows, function (r) {
        return !r.classList.contains("filter-empty") && !r.hasAttribute("data-row-detail");
      });
      var keyed = rows.map(function (r, i) { return { r: r, k: cellKey(r, index), i: i, d: detailOf(r) }; });
      keyed.sort(function (x, y) {
        var bx = isBlank(x.k), by = isBlank(y.k);
        if (bx !== by) return bx ? 1 : -1; // blanks last whatever the direction
        return sign * compareKeys(x.k, y.k) || x.i - y.i;
      });
      keyed.forEach(function (x) {
        body.appendChild(x.r);
        if (x.d) body.appendChild(x.d); // a record's full view stays under its row
      });
    }
  }

  function sortableHeader(target) {
    var th = target.closest("th");
    if (!th || th.hasAttribute("data-nosort")) return null;
    if (target.closest("a,button,input,select,label")) return null;
    var table = th.closest("table[data-sortable]");
    if (!table || !table.tHead || !table.tHead.contains(th)) return null;
    return th;
  }

  function initSortable(root) {
    each(root, "table[data-sortable] thead th:not([data-nosort])", function (th) {
      if (!th.hasAttribute("tabindex")) th.setAttribute("tabindex", "0");
    });
  }

  // ---------------------------------------------------------------- filter

  function applyFilter(input) {
    var table = doc.getElementById(input.getAttribute("data-filter-for"));
    if (!table) return;
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0, total = 0;
    for (var b = 0; b < table.tBodies.length; b++) {
      var rows = table.tBodies[b].rows;
      for (var i = 0; i < rows.length; i++) {
        var r = rows[i];
        if (r.classList.contains("filter-empty") || r.hasAttribute("data-row-detail")) continue;
        total++;
        var hay = (r.textContent + " " + (r.getAttribute("data-filter-text") || "")).toLowerCase();
        var match = terms.every(function (t) { return hay.indexOf(t) !== -1; });
        r.hidden = !match;
        var d = detailOf(r);
        if (d) d.hidden = !match || r.getAttribute("aria-expanded") !== "true";
        if (match) shown++;
      }
    }
    var body = table.tBodies[0];
    var empty = table.querySelector("tr.filter-empty");
    if (body && total > 0 && shown === 0) {
      if (!empty) {
        empty = doc.createElement("tr");
        empty.className = "filter-empty";
        var td = doc.createElement("td");
        td.colSpan = (table.tHead && table.tHead.rows[0]) ? table.tHead.rows[0].cells.length : 1;
        empty.appendChild(td);
        body.appendChild(empty);
      }
      empty.cells[0].textContent = "No rows match \u201c" + input.value.trim() + "\u201d. Clear the filter (Esc) to see all " + total + ".";
    } else if (empty) {
      empty.parentNode.removeChild(empty);
    }
    each(doc, '[data-filter-count-for="' + cssEscape(table.id) + '"]', function (el) {
      el.textContent = terms.length ? shown + " of " + total : String(total);
    });
  }

  function cssEscape(s) {
    return window.CSS && CSS.escape ? CSS.escape(s) : s.replace(/["\\]/g, "\\$&");
  }

  function refreshFilters() {
    each(doc, "input[data-filter-for]", function (input) {
      if (input.value) applyFilter(input);
    });
  }

  // ---------------------------------------------------------------- check-all

  function boxes(name) {
    return Array.prototype.filter.call(
      doc.querySelectorAll('input[type="checkbox"][name="' + cssEscape(name) + '"]'),
      function (el) { return !el.hasAttribute("data-check-all"); }
    );
  }

  function visible(el) {
    return !el.closest("tr[hidden]") && !el.disabled;
  }

  function syncChecks(name) {
    var all = boxes(name);
    var n = all.filter(function (b) { return b.checked; }).length;
    var vis = all.filter(visible);
    var visChecked = vis.filter(function (b) { return b.checked; }).length;
    each(doc, '[data-check-all="' + cssEscape(name) + '"]', function (master) {
      master.checked = vis.length > 0 && visChecked === vis.length;
      master.indeterminate = visChecked > 0 && visChecked < vis.length;
    });
    each(doc, '[data-check-count="' + cssEscape(name) + '"]', function (el) {
      el.textContent = String(n);
    });
    each(doc, '[data-requires-checked="' + cssEscape(name) + '"]', function (el) {
      el.disabled = n === 0;
    });
  }

  function syncAllChecks() {
    var names = {};
    each(doc, "[data-check-all],[data-check-count],[data-requires-checked]", function (el) {
      names[el.getAttribute("data-check-all") || el.getAttribute("data-check-count") || el.getAttribute("data-requires-checked")] = true;
    });
    Object.keys(names).forEach(syncChecks);
  }

  function onChange(e) {
    var el = e.target;
    if (!(el instanceof HTMLInputElement) || el.type !== "checkbox") return;
    var master = el.getAttribute("data-check-all");
    if (master !== null) {
      boxes(master).forEach(function (b) {
        if (visible(b)) b.checked = el.checked; // only rows the filter shows
      });
      syncChecks(master);
      return;
    }
    if (el.name) syncChecks(el.name);
  }

  // ---------------------------------------------------------------- confirm

  function onSubmit(e) {
    var form = e.target;
    if (!(form instanceof HTMLFormElement)) return;
    var msg = (e.submitter && e.submitter.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      // Capture phase on document: stopping here also keeps htmx's own
      // submit listener on the form from issuing the request.
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    onceOnly(e, form);
  }

  // A plain form that posts (no htmx) posts once: a double click sent it twice, and the second
  // landed on a 409 though the first had worked. The buttons are disabled after the submit has
  // taken the submitter's value; Back (the page from the cache) enables them again.
  function onceOnly(e, form) {
    if ((form.getAttribute("method") || "get").toLowerCase() !== "post") return;
    if (form.hasAttribute("hx-post") || form.hasAttribute("data-hx-post")) return;
    if (form._posted) {
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    form._posted = true;
    setTimeout(function () {
      form.querySelectorAll("button[type=submit], button:not([type]), input[type=submit]").forEach(function (b) {
        b.disabled = true;
        b.setAttribute("data-posted", "");
      });
      if (form.id) doc.querySelectorAll("button[form='" + form.id + "']").forEach(function (b) { b.disabled = true; b.setAttribute("data-posted", ""); });
    }, 0);
  }
  window.addEventListener("pageshow", function (e) {
    if (!e.persisted) return;
    doc.querySelectorAll("form").forEach(function (f) { f._posted = false; });
    doc.querySelectorAll("[data-posted]").forEach(function (b) { b.disabled = false; b.removeAttribute("data-posted"); });
  });

  // a[data-history-back]: the previous page when there is one (an error page's way back to the
  // form it answered), its href otherwise.
  function onHistoryBack(e) {
    var a = e.target.closest && e.target.closest("a[data-history-back]");
    if (!a || window.history.length < 2) return;
    e.preventDefault();
    window.history.back();
  }

  function onHtmxConfirm(e) {
    // htmx triggers other than a form (e.g. <button hx-post data-confirm>,
    // also a submit button with its own hx-post: htmx cancels the native
    // submit, so onSubmit never sees it). A form's own htmx submit went
    // through onSubmit already.
    var el = e.detail && e.detail.elt;
    if (!el || el.tagName === "FORM") return;
    var msg = el.getAttribute("data-confirm");
    if (!msg) return;
    e.preventDefault();
    if (window.confirm(msg)) e.detail.issueRequest(true);
  }

  // ---------------------------------------------------------------- charts

  var palette = ["#1f5fd1", "#d97706", "#0f8a5f", "#c4281c", "#7c3aed", "#0e7490", "#be185d", "#4b5563"];
  var chartObserver = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.forEach(function (en) {
      var el = en.target;
      if (!el.isConnected) { destroyChart(el); return; }
      // Only follow width: the legend makes the height depend on the chart.
      if (el._uplot && el._chartWidth !== el.clientWidth) {
        el._chartWidth = el.clientWidth;
        el._uplot.setSize(chartSize(el));
      }
    });
  }) : null;

  function shortNum(v) {
    if (v == null) return "";
    var a = Math.abs(v);
    if (a >= 1e9) return +(v / 1e9).toFixed(1) + "G";
    if (a >= 1e6) return +(v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return +(v / 1e3).toFixed(1) + "k";
    return String(+v.toFixed(2));
  }

  // Height is uPlot's whole height, axes included. The x axis alone takes 50 px: below
  // fullChartMin the plot area would be negative, and uPlot then draws the series upside down.
  var fullChartMin = 120;

  function isSparkline(el) { return el.hasAttribute("data-sparkline"); }

  function chartSize(el) {
    var h = parseInt(el.getAttribute("data-height"), 10);
    if (isSparkline(el)) return { width: Math.max(el.clientWidth, 40), height: h > 0 ? h : 48 };
    return { width: Math.max(el.clientWidth, 200), height: Math.max(h > 0 ? h : 220, fullChartMin) };
  }

  // sparkRange is a sparkline's y scale: the data's own span with a little room so the stroke
  // is not clipped, never below zero for data that is not (lag, depth), and a flat series in
  // the middle of the box rather than on an edge.
  function sparkRange(u, lo, hi) {
    if (lo == null || hi == null || !isFinite(lo) || !isFinite(hi)) return [0, 1];
    var span = hi - lo;
    var pad = span > 0 ? span * 0.08 : Math.max(Math.abs(hi) * 0.5, 1);
    var min = lo - pad;
    if (lo >= 0 && min < 0) min = 0;
    return [min, hi + pad];
  }

  function seriesOpts(keys, labels, spark) {
    return [{}].concat(keys.map(function (k, i) {
      var o = { label: labels[i] || k, stroke: palette[i % palette.length], width: 1.5, points: { show: false }, spanGaps: false };
      if (!spark) o.value = function (u, v) { return v == null ? "\u2014" : v.toLocaleString(); };
      return o;
    }));
  }

  function chartOpts(el, keys, labels) {
    var size = chartSize(el);
    if (isSparkline(el)) {
      return {
        width: size.width,
        height: size.height,
        padding: [2, 2, 2, 2],
        legend: { show: false },
        cursor: { show: false },
        select: { show: false },
        scales: { x: { time: false }, y: { range: sparkRange } },
        axes: [{ show: false }, { show: false }],
        series: seriesOpts(keys, labels, true)
      };
    }
    return {
      width: size.width,
      height: size.height,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: true } },
      axes: [
        { stroke: "#5f6b7a", grid: { stroke: "#edf0f3" }, ticks: { stroke: "#dde2e8" } },
        { stroke: "#5f6b7a", grid: { stroke: "#edf0f3" }, ticks: { stroke: "#dde2e8" }, size: 56,
          values: function (u, vals) { return vals.map(shortNum); } }
      ],
      series: seriesOpts(keys, labels, false)
    };
  }

  // sparkTitle says in words what a sparkline draws, for the tooltip: "lag: 12 → 48 (3–60)".
  function sparkTitle(data, labels, keys) {
    return keys.map(function (k, i) {
      var vs = data[i + 1].filter(function (v) { return v != null; });
      if (!vs.length) return (labels[i] || k) + ": no data";
      var lo = Math.min.apply(null, vs), hi = Math.max.apply(null, vs);
      return (labels[i] || k) + ": " + vs[0].toLocaleString() + " \u2192 " + vs[vs.length - 1].toLocaleString() +
        " (" + lo.toLocaleString() + "\u2013" + hi.toLocaleString() + ")";
    }).join("; ");
  }

  function chartStatus(el, text, isError) {
    var s = el.querySelector(".chart-status");
    if (!text) { if (s) s.parentNode.removeChild(s); return; }
    if (!s) {
      s = doc.createElement("div");
      s.className = "chart-status";
      el.appendChild(s);
    }
    s.classList.toggle("is-error", !!isError);
    s.textContent = text;
  }

  function destroyChart(el) {
    if (el._uplot) { el._uplot.destroy(); el._uplot = null; }
    if (el._chartTimer) { clearInterval(el._chartTimer); el._chartTimer = null; }
    if (chartObserver) chartObserver.unobserve(el);
  }

  function toData(points, keys) {
    var xs = [], cols = keys.map(function () { return []; });
    points.forEach(function (p) {
      var t = Date.parse(p.at);
      if (isNaN(t)) return;
      xs.push(t / 1000);
      keys.forEach(function (k, i) {
        var v = p[k];
        cols[i].push(typeof v === "number" && isFinite(v) ? v : null);
      });
    });
    return [xs].concat(cols);
  }

  function loadChart(el) {
    var src = el.getAttribute("data-src");
    var keys = (el.getAttribute("data-series") || "").split(",").map(function (s) { return s.trim(); }).filter(Boolean);
    if (!src || !keys.length || typeof window.uPlot !== "function") return;
    var labels = (el.getAttribute("data-labels") || "").split(",").map(function (s) { return s.trim(); });

    if (!el._uplot) chartStatus(el, "Loading chart\u2026");
    fetch(src, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) throw new Error("HTTP " + res.status);
        return res.json();
      })
      .then(function (body) {
        if (!el.isConnected) return;
        var points = (body && Array.isArray(body.points)) ? body.points : [];
        var data = toData(points, keys);
        var known = data.slice(1).some(function (col) { return col.some(function (v) { return v != null; }); });
        if (data[0].length === 0 || !known) { // no points, or none with a value to draw
          destroyChart(el);
          chartStatus(el, el.getAttribute("data-empty") || "No data points yet.");
          return;
        }
        if (data[0].length === 1 && !isSparkline(el)) {
          // One point gives uPlot an empty time range, which it widens to years of empty axis.
          destroyChart(el);
          chartStatus(el, "One sample so far (" + new Date(data[0][0] * 1000).toLocaleTimeString() +
            "); the chart draws from the second.");
          return;
        }
        chartStatus(el, "");
        if (isSparkline(el)) el.setAttribute("title", sparkTitle(data, labels, keys));
        if (el._uplot) { el._uplot.setData(data); return; }
        el._chartWidth = el.clientWidth;
        el._uplot = new window.uPlot(chartOpts(el, keys, labels), data, el);
        if (chartObserver) chartObserver.observe(el);
      })
      .catch(function (err) {
        if (!el.isConnected) return;
        if (!el._uplot) chartStatus(el, "Chart data unavailable: " + err.message, true);
      });
  }

  function initCharts(root) {
    within(root, "[data-chart]").forEach(function (el) {
      if (el._chartInit) return;
      el._chartInit = true;
      loadChart(el);
      var every = parseInt(el.getAttribute("data-refresh"), 10);
      if (every > 0) {
        el._chartTimer = setInterval(function () {
          if (!el.isConnected) { destroyChart(el); return; }
          if (!doc.hidden) loadChart(el);
        }, every * 1000);
      }
    });
  }

  // ---------------------------------------------------------------- record tables

  function detailOf(row) {
    var n = row.nextElementSibling;
    return n && n.hasAttribute("data-row-detail") ? n : null;
  }

  function setExpanded(row, open) {
    var d = detailOf(row);
    if (!d) return;
    d.hidden = !open;
    row.setAttribute("aria-expanded", open ? "true" : "false");
    var btn = row.querySelector("[data-expand]");
    if (btn) btn.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function toggleRow(row) { setExpanded(row, row.getAttribute("aria-expanded") !== "true"); }

  function recordRows(table) {
    return Array.prototype.filter.call(table.querySelectorAll("tr[data-record-row]"), function (r) { return !r.hidden; });
  }

  function currentRow(table) { return table.querySelector("tr[data-record-row].is-current"); }

  function makeCurrent(row) {
    var table = row.closest("table");
    var old = currentRow(table);
    if (old && old !== row) old.classList.remove("is-current");
    row.classList.add("is-current");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }

  function onRecordClick(e) {
    var t = e.target;
    var row = t.closest && t.closest("tr[data-record-row]");
    if (!row) return;
    if (t.closest("[data-expand]")) { makeCurrent(row); toggleRow(row); return; }
    if (t.closest("a,button,input,select,label,textarea,form")) return;
    var sel = window.getSelection && window.getSelection();
    if (sel && String(sel).length > 0) return; // selecting text is not a click on the row
    makeCurrent(row);
    toggleRow(row);
  }

  // onRecordKey is j/k/Enter/x on the page's record table; it returns true when it handled the key.
  function onRecordKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return false;
    var t = e.target;
    var typing = t.closest && t.closest("textarea,select,[contenteditable],input:not([type=checkbox])");
    if (typing) return false;
    var table = doc.querySelector("table[data-records]");
    if (!table) return false;
    var rows = recordRows(table);
    if (!rows.length) return false;
    var cur = currentRow(table);
    var i = cur ? rows.indexOf(cur) : -1;
    switch (e.key) {
      case "j":
        makeCurrent(rows[Math.min(i + 1, rows.length - 1)]);
        return true;
      case "k":
        makeCurrent(rows[Math.max(i - 1, 0)]);
        return true;
      case "Enter":
        if (!cur || (t !== cur && t !== doc.body && !(t.closest && t.closest("tr[data-record-row]") === cur && t.type === "checkbox"))) return false;
        toggleRow(cur);
        return true;
      case "x":
        if (!cur) return false;
        var box = cur.querySelector('input[type="checkbox"]');
        if (!box || box.disabled) return false;
        box.checked = !box.checked;
        box.dispatchEvent(new Event("change", { bubbles: true }));
        return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- live pages

  // livePaused says why a live page should not swap new numbers in now, or "".
  function livePaused() {
    var sel = window.getSelection && window.getSelection();
    if (sel && String(sel).length > 0) return "selecting";
    var a = doc.activeElement;
    if (a && a.closest && a.closest("form input:not([type=checkbox]):not([type=radio]), form select, form textarea, input[type=search]")) return "typing";
    if (doc.querySelector('main input[type="checkbox"]:checked:not([data-check-all])')) return "rows ticked";
    if (doc.querySelector("main details[open], main tr[data-record-row][aria-expanded=true]")) return "a detail is open";
    return "";
  }

  function showPaused(el, why) {
    each(el, "[data-live-paused]", function (p) {
      p.hidden = !why;
      p.textContent = why ? "\u00b7 paused (" + why + ")" : "";
    });
  }

  function onLiveRequest(e) {
    var el = e.detail && e.detail.elt;
    if (!el || !el.hasAttribute || !el.hasAttribute("data-live")) return;
    var why = livePaused();
    showPaused(el, why);
    if (why) e.preventDefault();
  }

  function onLiveSwap(e) {
    var el = e.detail && e.detail.elt;
    if (!el || !el.hasAttribute || !el.hasAttribute("data-live")) return;
    var xhr = e.detail.xhr;
    if (xhr && xhr.status >= 400) { // keep the numbers shown; say the refresh failed
      e.detail.shouldSwap = false;
      showPaused(el, "refresh failed: HTTP " + xhr.status);
    }
  }

  function resortTables(root) {
    // A swapped-in tbody arrives in the server's order: put it back in the order the person chose.
    within(root, "tbody").forEach(function (body) {
      var table = body.closest("table[data-sortable]");
      var th = table && table.tHead && table.tHead.querySelector("th[aria-sort]");
      if (th) sortBy(th, true);
    });
  }

  // ---------------------------------------------------------------- toasts

  function toast(text, tone) {
    var region = doc.getElementById("toasts");
    if (!region) return;
    var t = doc.createElement("div");
    t.className = "toast" + (tone ? " tone-" + tone : "");
    t.setAttribute("role", "status");
    t.textContent = text;
    region.appendChild(t);
    setTimeout(function () { if (t.parentNode) t.parentNode.removeChild(t); }, 6000);
  }

  // ---------------------------------------------------------------- wiring

  // ---------------------------------------------------------------- trace

  // The server renders every row (escaped HTML); the script only places it. One stream per page
  // load: the trace runs once on the server and its sources answer in any order.
  function initTraceStreams(root) {
    within(root, "ol[data-trace-stream]").forEach(function (el) {
      if (el._traceStream || !window.EventSource) return;
      var src = new EventSource(el.getAttribute("data-trace-stream"));
      el._traceStream = src;
      var finished = false;
      src.addEventListener("steps", function (e) {
        el.insertAdjacentHTML("beforeend", e.data);
        refreshTimes(el);
      });
      src.addEventListener("done", function (e) {
        finished = true;
        src.close();
        var box = doc.getElementById(el.getAttribute("data-trace-result"));
        if (!box) return;
        var holder = doc.createElement("div");
        holder.innerHTML = e.data;
        var result = holder.firstElementChild;
        if (!result) return;
        box.replaceWith(result);
        init(result);
      });
      src.addEventListener("error", function () {
        if (finished) return;
        src.close();
        toast("The trace stopped before every source answered; reload to run it again.", "danger");
      });
    });
  }

  // ---------------------------------------------------------------- content scans
  // div[data-scan="records API url"]: the matches of a filter, page after page (next_cursor)
  // until the range is read, data-scan-limit matches are shown or [data-scan-cancel] is pressed;
  // [data-scan-status] counts records scanned, matches and the rate. Rows are built with
  // textContent: message content is never parsed as HTML.
  function initScans(root) {
    within(root, "[data-scan]").forEach(function (el) {
      if (el._scan) return;
      el._scan = true;
      var url = el.getAttribute("data-scan");
      var recordBase = el.getAttribute("data-scan-record");
      var limit = parseInt(el.getAttribute("data-scan-limit") || "500", 10);
      var rows = el.querySelector("[data-scan-rows]");
      var status = el.querySelector("[data-scan-status]");
      var cancel = el.querySelector("[data-scan-cancel]");
      var scope = el.getAttribute("data-scan-scope");
      var errorsBox = el.querySelector("[data-scan-errors]");
      var scanned = 0, matched = 0, evalErrors = 0, evalError = "", started = Date.now(), stopped = false;
      // A filter that cannot be evaluated on a record (a field's name mistyped) matches nothing:
      // say so, with the filter's own reason, rather than "0 matched · done".
      function showErrors() {
        if (!errorsBox || evalErrors === 0) return;
        errorsBox.hidden = false;
        errorsBox.textContent = "The filter could not be evaluated on " + evalErrors.toLocaleString() +
          (evalErrors === 1 ? " record" : " records") + ", which it does not match" +
          (evalError ? ": " + evalError : "") + ". Check the names the filter uses.";
      }
      function show(state) {
        var secs = Math.max((Date.now() - started) / 1000, 0.001);
        status.textContent = scanned.toLocaleString() + " records scanned · " + matched.toLocaleString() + " matched · " +
          Math.round(scanned / secs).toLocaleString() + " records/s" + (state ? " · " + state : "");
      }
      function cell(tr, text, cls) {
        var td = doc.createElement("td");
        if (cls) td.className = cls;
        td.textContent = text;
        tr.appendChild(td);
        return td;
      }
      var kind = el.getAttribute("data-scan-kind") || "kafka";
      function addMessage(m) { // a RabbitMQ message of the messages API
        var tr = doc.createElement("tr");
        tr.setAttribute("data-testid", "scan-row");
        cell(tr, String(m.position), "num");
        cell(tr, m.message_id || "", "mono small");
        cell(tr, m.routing_key || "", "mono small");
        cell(tr, m.dead_letter && m.dead_letter.reason ? m.dead_letter.reason : "", "small");
        cell(tr, m.body == null ? "" : String(m.body).slice(0, 160), "mono small");
        rows.appendChild(tr);
      }
      function add(r) {
        if (kind === "rabbitmq") { addMessage(r); return; }
        var tr = doc.createElement("tr");
        tr.setAttribute("data-testid", "scan-row");
        cell(tr, String(r.partition), "num");
        var off = cell(tr, "", "num");
        var a = doc.createElement("a");
        a.className = "mono";
        a.href = recordBase + "?partition=" + r.partition + "&offset=" + r.offset + "&limit=1";
        a.textContent = String(r.offset);
        off.appendChild(a);
        cell(tr, r.timestamp || "", "small");
        cell(tr, r.key == null ? "" : String(r.key).slice(0, 80), "mono small");
        cell(tr, r.dead_letter && r.dead_letter.exception_type ? r.dead_letter.exception_type : "", "small");
        cell(tr, r.value == null ? "" : String(r.value).slice(0, 160), "mono small");
        rows.appendChild(tr);
      }
      if (cancel) {
        cancel.addEventListener("click", function () {
          stopped = true;
          cancel.disabled = true;
          show("cancelled");
        });
      }
      function page(cursor) {
        var u = url + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
        fetch(u, { headers: { Accept: "application/json" }, credentials: "same-origin" }).then(function (resp) {
          return resp.json().then(function (j) { return { ok: resp.ok, j: j }; });
        }).then(function (res) {
          if (!res.ok) {
            show(res.j && res.j.error ? res.j.error.message : "the scan failed");
            if (cancel) cancel.disabled = true;
            return;
          }
          var recs = res.j.records || res.j.messages || [];
          scanned += res.j.scanned || 0;
          evalErrors += res.j.eval_errors || 0;
          if (res.j.eval_error) evalError = res.j.eval_error;
          showErrors();
          for (var i = 0; i < recs.length && matched < limit; i++) { add(recs[i]); matched++; }
          if (stopped) return;
          if (res.j.exhausted || !res.j.next_cursor || matched >= limit) {
            show(res.j.exhausted ? "done: " + (scope || "the whole range") + " read to its end" :
              matched >= limit ? "showing the first " + limit + " matches" : "done");
            if (cancel) cancel.disabled = true;
            return;
          }
          show("scanning…");
          page(res.j.next_cursor);
        }).catch(function () {
          show("the console did not answer; reload to scan again");
          if (cancel) cancel.disabled = true;
        });
      }
      show("scanning…");
      page("");
    });
  }

  // input[data-filter-history="kind"]: the last filters used are offered again (its datalist),
  // kept in this browser only.
  function initFilterHistory(root) {
    within(root, "input[data-filter-history]").forEach(function (input) {
      if (input._history) return;
      input._history = true;
      var key = "redrive.filters." + input.getAttribute("data-filter-history");
      var list = [];
      try { list = JSON.parse(localStorage.getItem(key) || "[]"); } catch (e) { list = []; }
      var dl = input.list;
      if (dl) {
        list.forEach(function (f) {
          var o = doc.createElement("option");
          o.value = f;
          o.label = "used before";
          dl.insertBefore(o, dl.firstChild);
        });
      }
      var v = input.value.trim();
      if (v) {
        list = [v].concat(list.filter(function (f) { return f !== v; })).slice(0, 10);
        try { localStorage.setItem(key, JSON.stringify(list)); } catch (e) { /* private mode */ }
      }
    });
  }

  function init(root) {
    refreshTimes(root);
    initSortable(root);
    refreshFilters();
    syncAllChecks();
    initCharts(root);
    initTraceStreams(root);
    initScans(root);
    initFilterHistory(root);
  }

  function onKeydown(e) {
    var t = e.target;
    if (onRecordKey(e)) { e.preventDefault(); return; }
    if (e.key === "Escape" && t.matches && t.matches("input[data-filter-for]") && t.value) {
      t.value = "";
      applyFilter(t);
      syncAllChecks();
      return;
    }
    if ((e.key === "Enter" || e.key === " ") && t.tagName === "TH") {
      var th = sortableHeader(t);
      if (th) { e.preventDefault(); sortBy(th); }
      return;
    }
    if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey &&
        !(t.closest && t.closest("input,textarea,select,[contenteditable]"))) {
      var f = doc.querySelector("input[data-filter-for]");
      if (f) { e.preventDefault(); f.focus(); f.select(); }
    }
  }

  doc.addEventListener("click", function (e) {
    onHistoryBack(e);
    onCopyClick(e);
    onRecordClick(e);
    var th = sortableHeader(e.target);
    if (th) sortBy(th);
  });
  doc.addEventListener("input", function (e) {
    if (e.target.matches && e.target.matches("input[data-filter-for]")) {
      applyFilter(e.target);
      syncAllChecks();
    }
  });
  doc.addEventListener("change", onChange);
  doc.addEventListener("submit", onSubmit, true);
  doc.addEventListener("keydown", onKeydown);
  doc.addEventListener("htmx:confirm", onHtmxConfirm);
  doc.addEventListener("htmx:afterSettle", function (e) {
    init(e.detail && e.detail.elt ? e.detail.elt : doc);
  });
  doc.addEventListener("htmx:oobAfterSwap", function (e) {
    var el = e.detail && e.detail.elt;
    if (el) { init(el); resortTables(el); }
  });
  doc.addEventListener("htmx:beforeRequest", onLiveRequest);
  doc.addEventListener("htmx:beforeSwap", onLiveSwap);
  doc.addEventListener("htmx:sendError", function () {
    toast("The console did not answer. Check your connection; the page keeps its last data.", "danger");
  });
  doc.addEventListener("htmx:timeout", function () {
    toast("The request timed out. Try again in a moment.", "danger");
  });

  setInterval(function () { refreshTimes(doc); }, 30000);

  if (doc.readyState === "loading") {
    doc.addEventListener("DOMContentLoaded", function () { init(doc); });
  } else {
    init(doc);
  }
})();
