// The explorer's page script (classwise.explorer.page inlines it). Every name (class, model,
// shift, dataset) is data: it reaches the page through textContent, attribute values and canvas
// text only, never as markup. The page sets data-ready="true" on <html> once it is drawn (or
// "error", with data-error, when it cannot start): the tests and the benchmark wait for that.
"use strict";
(() => {
  const root = document.documentElement;
  const byId = (id) => document.getElementById(id);

  function fail(error) {
    if (root.dataset.ready === "error") return;
    const message = error && error.message ? error.message : String(error);
    root.dataset.ready = "error";
    root.dataset.error = message;
    const box = byId("load-error");
    box.hidden = false;
    box.textContent = "The explorer could not show this run: " + message;
  }
  window.addEventListener("error", (event) => fail(event.error || event.message));

  // An element with text, attributes and children; strings become text nodes.
  function el(tag, props, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "className") node.className = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  // A name (a shift's "contrast_decrease_s3", a model's, a class's) as text nodes with a <wbr>
  // after each "_": a narrow column may break it there, between its words, as it breaks "great
  // white shark" at its spaces, and nowhere inside a word (the page sets no break-anywhere on
  // names). A <wbr> is an element, not a character: the name reads and copies as spelled.
  function nameNodes(name) {
    const words = String(name).split(/(?<=_)/);
    return words.flatMap((word, i) => (i ? [document.createElement("wbr"), word] : [word]));
  }

  const finite = (x) => typeof x === "number" && Number.isFinite(x);
  // Percent with two decimals, as the worst-class tables (82.42); a change in percentage points.
  const percent = (x) => (finite(x) ? (100 * x).toFixed(2) : "n/a");
  const change = (x) => (finite(x) ? (x >= 0 ? "+" : "") + (100 * x).toFixed(2) : "");
  const interval = (low, high) => (finite(low) && finite(high) ? "[" + percent(low) + ", " + percent(high) + "]" : "");
  // CFPS as the page holds it (4 significant digits).
  const score = (x) => (finite(x) ? String(x) : "n/a");
  const normalise = (text) => String(text).normalize("NFKC").toLocaleLowerCase();

  let DATA = null;
  let view = null;

  // ---------------------------------------------------------------- one dataset and label view
  function prepare(v) {
    if (v.prepared) return v;
    v.C = v.classes.length;
    v.M = v.models.length;
    v.S = v.shifts.length;
    v.keys = v.classes.map(normalise);
    const table = new Map();
    const t = v.intervals;
    for (let i = 0; i < t.hits.length; i++) table.set(t.hits[i] + "/" + t.support[i], [t.low[i], t.high[i]]);
    v.intervalOf = (hits, support) => table.get(hits + "/" + support) || [null, null];
    v.minimum = v.models.map((_, m) =>
      v.shifts.map((_, s) => {
        let low = Infinity;
        for (let c = 0; c < v.C; c++) {
          const r = recall(v, m, s, c);
          if (r < low) low = r;
        }
        return low;
      })
    );
    if (v.drops) {
      const cells = v.drops.significant;
      v.dropAt = new Map();
      for (let i = 0; i < cells.m.length; i++) v.dropAt.set(cells.m[i] + "/" + cells.s[i] + "/" + cells.c[i], i);
    }
    v.prepared = true;
    return v;
  }

  // ---------------------------------------------------------------- class-drop tests
  const DROP = { none: 0, notSignificant: 1, drop: 2, rise: 3 };
  const TEST_NAMES = {
    mcnemar_exact: "McNemar's exact test on the samples clean and the shift share",
    fisher_exact: "Fisher's exact test for other images",
    boschloo_exact: "Boschloo's exact test for other images",
  };
  const ADJUSTMENT_NAMES = { bh: "Benjamini-Hochberg (false discovery rate)", holm: "Holm (family-wise error rate)" };

  // The code of a (model, shift, class): 0 no test, 1 not significant, 2 a significant drop, 3 a rise.
  function dropCode(v, m, s, c) {
    return v.drops ? v.drops.codes[m][s].charCodeAt(c) - 48 : DROP.none;
  }

  // How the cells were tested, in one sentence (q and the method).
  function dropMethod(v) {
    const d = v.drops;
    const tests = d.tests.map((t) => TEST_NAMES[t] || t).join("; ");
    const sizes = Object.values(d.family_size);
    const family = sizes.length ? Math.min(...sizes) + (Math.max(...sizes) > Math.min(...sizes) ? "-" + Math.max(...sizes) : "") : "0";
    return (
      "two-sided " + (tests || "no test") + "; " + (ADJUSTMENT_NAMES[d.adjustment] || d.adjustment) + " at q = " + d.q +
      " over each model's " + family + " tests (every shift x class)"
    );
  }

  // A cell's test result as text ("" where nothing was tested).
  function dropText(v, m, s, c) {
    const code = dropCode(v, m, s, c);
    if (code === DROP.none) return "";
    if (code === DROP.notSignificant) return "change from clean: not significant at q = " + v.drops.q;
    const d = v.drops.significant;
    const i = v.dropAt.get(m + "/" + s + "/" + c);
    const what = code === DROP.drop ? "significant drop" : "significant rise";
    return (
      what + ": " + change(d.change[i]) + " pp " + "[" + change(d.change_low[i]) + ", " + change(d.change_high[i]) + "], adjusted p = " +
      d.p_adjusted[i]
    );
  }

  function recall(v, m, s, c) {
    const n = v.support[m][s][c];
    return n > 0 ? v.hits[m][s][c] / n : NaN;
  }

  // ---------------------------------------------------------------- search
  function matching(v, query) {
    const q = normalise(query.trim());
    if (!q) return [];
    const exact = [];
    const prefix = [];
    const inside = [];
    v.keys.forEach((key, c) => {
      if (key === q) exact.push(c);
      else if (key.startsWith(q)) prefix.push(c);
      else if (key.includes(q)) inside.push(c);
    });
    return exact.concat(prefix, inside);
  }

  const SHOWN_MATCHES = 40;

  function search() {
    const query = byId("class-search").value;
    const found = matching(view, query);
    const box = byId("class-matches");
    if (!query.trim()) {
      box.replaceChildren();
      byId("class-panel").hidden = true;
      return;
    }
    if (!found.length) {
      box.replaceChildren(el("span", { className: "hint", text: "No class of " + view.dataset + " matches." }));
      byId("class-panel").hidden = true;
      return;
    }
    const buttons = found.slice(0, SHOWN_MATCHES).map((c) =>
      el("button", { type: "button", "data-class": c, title: view.classes[c], "aria-selected": "false" }, [view.classes[c]])
    );
    const more = found.length > SHOWN_MATCHES ? [el("span", { className: "hint", text: "and " + (found.length - SHOWN_MATCHES) + " more" })] : [];
    box.replaceChildren(...buttons, ...more);
    selectClass(found[0]);
  }

  function selectClass(c) {
    for (const button of byId("class-matches").querySelectorAll("button")) {
      button.setAttribute("aria-selected", String(Number(button.dataset.class) === c));
    }
    showClass(view, c);
  }

  // ---------------------------------------------------------------- one class across shifts
  function confusionsOf(v, m, s, c) {
    const k = v.confusions;
    const n = v.support[m][s][c];
    const out = [];
    for (let i = 0; i < k; i++) {
      const predicted = v.confusedWith[m][s][c * k + i];
      const count = v.confusedCount[m][s][c * k + i];
      if (predicted < 0 || count <= 0) break;
      out.push({ predicted, count, share: n > 0 ? count / n : NaN });
    }
    return out;
  }

  function showClass(v, c) {
    const panel = byId("class-panel");
    const level = Math.round(100 * DATA.confidence * 1000) / 1000;
    const head1 = [el("th", { rowspan: 2, scope: "col", text: "shift" })];
    const head2 = [];
    for (const model of v.models) {
      head1.push(el("th", { colspan: 4, scope: "colgroup", "data-model": model }, nameNodes(model)));
      head2.push(
        el("th", { scope: "col", text: "accuracy % [" + level + " % interval]" }),
        el("th", { scope: "col", text: "n" }),
        el("th", { scope: "col", text: "CFPS" }),
        el("th", { scope: "col", text: "taken for (share of its samples)" })
      );
    }
    const rows = v.shifts.map((shift, s) => {
      const cells = [el("th", { scope: "row" }, nameNodes(shift))];
      v.models.forEach((model, m) => {
        const n = v.support[m][s][c];
        const hits = v.hits[m][s][c];
        const [low, high] = n > 0 ? v.intervalOf(hits, n) : [null, null];
        cells.push(
          el("td", { "data-model": model }, [
            el("span", { "data-field": "accuracy", text: percent(recall(v, m, s, c)) }),
            " ",
            el("span", { className: "interval", "data-field": "interval", text: interval(low, high) }),
            ...dropMark(v, m, s, c),
          ]),
          el("td", { "data-model": model, "data-field": "n", text: n }),
          el("td", { "data-model": model, "data-field": "cfps", text: score(v.cfps[m][s][c]) }),
          el(
            "td",
            { "data-model": model, className: "confusions" },
            confusionsOf(v, m, s, c).map((x) =>
              el("span", { "data-field": "confusion", "data-predicted": x.predicted, "data-count": x.count }, [
                "\u2192 " + v.classes[x.predicted] + " (" + percent(x.share) + " %, " + x.count + ")",
              ])
            )
          )
        );
      });
      return el("tr", { "data-shift": shift }, cells);
    });
    const table = el("table", { id: "class-table" }, [el("thead", {}, [el("tr", {}, head1), el("tr", {}, head2)]), el("tbody", {}, rows)]);
    panel.replaceChildren(
      el("h3", { id: "class-name", "data-class": c }, nameNodes(v.classes[c])),
      el("p", {
        className: "hint",
        text:
          "Class " + c + " of " + v.C + " of " + v.dataset + " (" + v.labels + " labels). Accuracy: the recall of the class, in %, with its " +
          level + " % Clopper-Pearson interval; n: its samples under the shift; CFPS: the share of the model's errors that predict this class " +
          "(Medi et al., 2024, Eq. 1); taken for: its most frequent confusions, true \u2192 predicted, as a share of its samples." +
          (v.drops ? " \u25bc / \u25b2: a significant drop / rise from clean (" + dropMethod(v) + ")." : ""),
      }),
      worstWhere(v, c),
      el("div", { className: "scroll" }, [table])
    );
    panel.hidden = false;
    panel.dataset.class = String(c);
  }

  // A significant change's mark beside a class's accuracy (nothing otherwise).
  function dropMark(v, m, s, c) {
    const code = dropCode(v, m, s, c);
    if (code !== DROP.drop && code !== DROP.rise) return [];
    return [" ", el("span", { className: code === DROP.drop ? "drop" : "rise", "data-field": "drop", title: dropText(v, m, s, c), text: code === DROP.drop ? "\u25bc" : "\u25b2" })];
  }

  const HARDEST_SHIFTS = 5;

  function worstWhere(v, c) {
    const items = v.models.map((model, m) => {
      const by = v.shifts.map((_, s) => ({ s, r: recall(v, m, s, c) })).filter((x) => finite(x.r));
      by.sort((a, b) => a.r - b.r || a.s - b.s);
      const hardest = by.slice(0, HARDEST_SHIFTS).map((x) => v.shifts[x.s] + " (" + percent(x.r) + ")");
      const worstUnder = [];
      v.shifts.forEach((shift, s) => {
        const r = recall(v, m, s, c);
        if (finite(r) && r === v.minimum[m][s]) {
          const tied = v.worst.tiedAtMinimum[m][s];
          worstUnder.push(shift + (tied > 1 ? " (" + tied + " tied)" : ""));
        }
      });
      return el("li", { "data-model": model }, [
        el("strong", { text: model + ": " }),
        el("span", { "data-field": "hardest", text: "lowest accuracy under " + (hardest.length ? hardest.join(", ") : "no shift (no samples)") }),
        "; ",
        el("span", {
          "data-field": "worst-under",
          text: worstUnder.length ? "the model's worst class (WCA) under " + worstUnder.join(", ") : "never the model's worst class",
        }),
      ]);
    });
    return el("div", { className: "worst-where" }, [el("strong", { text: "Where it is worst" }), el("ul", {}, items)]);
  }

  // ---------------------------------------------------------------- models x shifts
  const PAIRINGS = {
    reference: "reference",
    "same samples": "same samples",
    unpaired: "unpaired: other images",
    "no reference": "no clean run",
    "": "not compared",
  };

  // A heatmap column's shift, with its n where it is not the clean set's (a subset, other images).
  function shiftLabel(v, model, shift) {
    const t = v.summary;
    for (let r = 0; r < t.shift.length; r++) {
      if (t.shift[r] !== shift || t.model[r] !== model) continue;
      if (t.pairing[r] === "subset") return v.shifts[shift] + " (n " + t.n[r] + "/" + t.reference_n[r] + ")";
      if (t.pairing[r] === "unpaired") return v.shifts[shift] + " (n " + t.n[r] + ", other images)";
    }
    return v.shifts[shift];
  }

  function pairingText(v, row) {
    const t = v.summary;
    const pairing = t.pairing[row];
    if (pairing === "subset") return "same " + t.n[row] + " of " + t.reference_n[row] + " samples";
    return pairing in PAIRINGS ? PAIRINGS[pairing] : pairing;
  }

  function worstClassText(v, row) {
    const t = v.summary;
    const c = t.worst_class[row];
    if (c < 0) return "n/a";
    return v.classes[c] + (t.worst_class_tied[row] > 1 ? "; " + t.worst_class_tied[row] + " tied" : "");
  }

  // Each column: its header, the text of a row's cell and the value it sorts by.
  function summaryColumns(v) {
    const t = v.summary;
    const reference = (row) => t.pairing[row] === "reference";
    return [
      { key: "shift", label: "shift", text: (r) => v.shifts[t.shift[r]], sort: (r) => t.shift[r], name: true },
      { key: "model", label: "model", text: (r) => v.models[t.model[r]], sort: (r) => t.model[r], name: true },
      { key: "n", label: "n", text: (r) => String(t.n[r]), sort: (r) => t.n[r] },
      { key: "pairing", label: "vs " + (v.reference || "clean"), text: (r) => pairingText(v, r), sort: (r) => pairingText(v, r) },
      { key: "accuracy", label: "A %", text: (r) => percent(t.accuracy[r]), sort: (r) => t.accuracy[r] },
      { key: "accuracy_interval", label: "A interval", text: (r) => interval(t.accuracy_low[r], t.accuracy_high[r]), sort: (r) => t.accuracy_low[r] },
      { key: "accuracy_change", label: "\u0394A (pp)", text: (r) => (reference(r) ? "" : change(t.accuracy_change[r])), sort: (r) => t.accuracy_change[r] },
      { key: "worst_class_accuracy", label: "WCA %", text: (r) => percent(t.worst_class_accuracy[r]), sort: (r) => t.worst_class_accuracy[r] },
      {
        key: "worst_class_interval",
        label: "WCA interval",
        text: (r) => interval(t.worst_class_low[r], t.worst_class_high[r]),
        sort: (r) => t.worst_class_low[r],
      },
      { key: "worst_class", label: "worst class", text: (r) => worstClassText(v, r), sort: (r) => worstClassText(v, r), name: true },
      {
        key: "worst_class_accuracy_change",
        label: "\u0394WCA (pp)",
        text: (r) => (reference(r) ? "" : change(t.worst_class_accuracy_change[r])),
        sort: (r) => t.worst_class_accuracy_change[r],
      },
      ...rankColumns(v),
    ];
  }

  // Each ranked metric's column: "1 [1, 2] a" (rank, its interval, its group), "2.5 (2 tied) ..."
  // where models share the value; empty where the shift's models are not ranked.
  function rankColumns(v) {
    if (!v.ranks) return [];
    return Object.entries(v.ranks).map(([metric, k]) => ({
      key: "rank_" + metric,
      label: metric + " rank [interval] group",
      text: (r) =>
        k.rank[r] === null
          ? ""
          : k.rank[r] + (k.tied[r] > 1 ? " (" + k.tied[r] + " tied)" : "") + " [" + k.low[r] + ", " + k.high[r] + "] " + k.group[r],
      sort: (r) => k.rank[r],
    }));
  }

  const summaryState = { column: null, descending: false };

  function renderSummary(v) {
    const columns = summaryColumns(v);
    const head = el(
      "tr",
      {},
      columns.map((col) =>
        el("th", { scope: "col", "data-column": col.key, className: col.name ? "name" : undefined, "aria-sort": "none", title: "sort by " + col.label, text: col.label })
      )
    );
    const rows = v.summary.shift.map((_, r) =>
      el(
        "tr",
        { "data-row": r, "data-shift": v.shifts[v.summary.shift[r]], "data-model": v.models[v.summary.model[r]] },
        columns.map((col) =>
          col.name
            ? el("td", { "data-column": col.key, className: "name" }, nameNodes(col.text(r)))
            : el("td", { "data-column": col.key, text: col.text(r) })
        )
      )
    );
    const table = byId("summary-table");
    table.replaceChildren(el("thead", {}, [head]), el("tbody", {}, rows));
    summaryState.column = null;
    for (const th of head.children) th.addEventListener("click", () => sortSummary(v, th.dataset.column));
    filterSummary();
    const note = [
      "One row per shift and model; click a header to sort. A: accuracy; WCA: worst-class accuracy with its class",
      " (\u201c; k tied\u201d: k classes share that accuracy and the class named is the lowest index, as in the tables);",
      " \u0394: the change from " + (v.reference || "clean") + " in percentage points.",
    ];
    if (v.hasShiftSummary) {
      note.push(
        " A, WCA, n and the changes are the robustness step's shift summary: each shift compared with clean on the same samples, matched by sample id."
      );
    } else {
      note.push(" No change from clean here: the robustness step pairs the samples of each shift with clean's on the original labels only.");
    }
    note.push(" Intervals: A's bootstrap percentile interval and WCA's exact bound, where the run has them (metrics.bootstrap on).");
    if (v.ranks) {
      note.push(
        " Ranks: 1 is the highest value, equal values share their average rank; the interval is the 95 % percentile interval of" +
          " the ranks over paired bootstrap replicates; models that share a group letter cannot be told apart (per pair, not adjusted)."
      );
    }
    byId("summary-note").textContent = note.join("");
  }

  function sortSummary(v, key) {
    const columns = summaryColumns(v);
    const col = columns.find((c) => c.key === key);
    summaryState.descending = summaryState.column === key ? !summaryState.descending : false;
    summaryState.column = key;
    const body = byId("summary-table").tBodies[0];
    const rows = Array.from(body.rows);
    const sign = summaryState.descending ? -1 : 1;
    const value = (tr) => col.sort(Number(tr.dataset.row));
    rows.sort((a, b) => {
      const x = value(a);
      const y = value(b);
      const xMissing = x === null || (typeof x === "number" && !Number.isFinite(x));
      const yMissing = y === null || (typeof y === "number" && !Number.isFinite(y));
      if (xMissing || yMissing) return xMissing === yMissing ? Number(a.dataset.row) - Number(b.dataset.row) : xMissing ? 1 : -1;
      const order = typeof x === "string" ? x.localeCompare(y) : x - y;
      return sign * order || Number(a.dataset.row) - Number(b.dataset.row);
    });
    body.append(...rows);
    for (const th of byId("summary-table").tHead.rows[0].cells) {
      th.setAttribute("aria-sort", th.dataset.column === key ? (summaryState.descending ? "descending" : "ascending") : "none");
    }
  }

  function filterSummary() {
    const q = normalise(byId("summary-filter").value.trim());
    const body = byId("summary-table").tBodies[0];
    if (!body) return;
    for (const tr of body.rows) {
      tr.hidden = q !== "" && !normalise(tr.dataset.shift).includes(q) && !normalise(tr.dataset.model).includes(q);
    }
  }

  // ---------------------------------------------------------------- heatmap
  const VIRIDIS = [
    [68, 1, 84], [72, 36, 117], [65, 68, 135], [53, 95, 141], [42, 120, 142], [33, 145, 140],
    [34, 168, 132], [68, 191, 112], [122, 209, 81], [189, 223, 38], [253, 231, 37],
  ];
  const MISSING = [215, 215, 215];

  function colour(t) {
    if (!finite(t)) return MISSING;
    const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    const f = x - i;
    return VIRIDIS[i].map((a, k) => Math.round(a + f * (VIRIDIS[i + 1][k] - a)));
  }

  const MARGIN = { left: 170, top: 110, right: 12, bottom: 14 };
  const ROW_LABEL_MIN = 11; // px per row before the class names are drawn
  const COLUMN_LABEL_MIN = 14; // px per column before the shift names are drawn (slanted, they need more)

  const heat = { v: null, model: 0, kind: "accuracy", max: 1, image: null, r0: 0, r1: 1, c0: 0, c1: 1, drag: null };

  function heatValue(v, m, s, c) {
    return heat.kind === "accuracy" ? recall(v, m, s, c) : v.cfps[m][s][c];
  }

  // The "significant changes" map: a colour per test result, readable at any zoom.
  const DROP_COLOURS = { 0: MISSING, 1: [238, 238, 238], 2: [192, 57, 43], 3: [46, 111, 209] };

  function cellColour(v, m, s, c) {
    if (heat.kind === "drops") return DROP_COLOURS[dropCode(v, m, s, c)];
    return colour(heatValue(v, m, s, c) / heat.max);
  }

  function setHeatmap(v, model, kind) {
    heat.v = v;
    heat.model = model;
    heat.kind = kind;
    let max = 0;
    if (kind === "cfps") {
      for (let s = 0; s < v.S; s++) for (let c = 0; c < v.C; c++) if (finite(v.cfps[model][s][c])) max = Math.max(max, v.cfps[model][s][c]);
    }
    heat.max = kind === "accuracy" ? 1 : max || 1;
    const image = document.createElement("canvas");
    image.width = v.S;
    image.height = v.C;
    const ctx = image.getContext("2d");
    const pixels = ctx.createImageData(v.S, v.C);
    v.classOrder.forEach((c, row) => {
      v.shiftOrder.forEach((s, col) => {
        const rgb = cellColour(v, model, s, c);
        const at = 4 * (row * v.S + col);
        pixels.data[at] = rgb[0];
        pixels.data[at + 1] = rgb[1];
        pixels.data[at + 2] = rgb[2];
        pixels.data[at + 3] = 255;
      });
    });
    ctx.putImageData(pixels, 0, 0);
    heat.image = image;
    resetZoom();
    drawLegend();
    const what = { accuracy: "accuracy (recall) of each class", cfps: "CFPS of each class", drops: "each class's change from clean, tested" }[kind];
    const tested = v.drops
      ? " Significant changes from clean (" + dropMethod(v) + ")" +
        (kind === "drops" ? ": red a drop, blue a rise, light grey not significant." : ": marked \u25bc (a drop) and \u25b2 (a rise) once the cells are large enough; the value \u201csignificant changes\u201d shows them at any size.")
      : "";
    byId("heatmap-note").textContent =
      v.models[model] + ": " + what +
      " under each shift. Rows: the " + v.C + " classes, lowest mean accuracy first (over every model and shift); columns: the " + v.S +
      " shifts, highest mean accuracy first. Scroll to zoom the classes (shift + scroll: the shifts), drag to move, double-click to reset;" +
      " names appear once they fit. Click a cell to look its class up. Grey: no samples." + tested;
  }

  function resetZoom() {
    heat.r0 = 0;
    heat.r1 = heat.v.C;
    heat.c0 = 0;
    heat.c1 = heat.v.S;
    drawHeatmap();
  }

  function plotArea(canvas) {
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    return { x: MARGIN.left, y: MARGIN.top, w: Math.max(10, w - MARGIN.left - MARGIN.right), h: Math.max(10, h - MARGIN.top - MARGIN.bottom) };
  }

  function fitted(ctx, text, width) {
    if (ctx.measureText(text).width <= width) return text;
    let cut = text;
    while (cut.length > 1 && ctx.measureText(cut + "\u2026").width > width) cut = cut.slice(0, -1);
    return cut + "\u2026";
  }

  function drawHeatmap() {
    const canvas = byId("heatmap");
    const v = heat.v;
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    if (canvas.width !== Math.round(w * ratio) || canvas.height !== Math.round(h * ratio)) {
      canvas.width = Math.round(w * ratio);
      canvas.height = Math.round(h * ratio);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const p = plotArea(canvas);
    const rowPx = p.h / (heat.r1 - heat.r0);
    const colPx = p.w / (heat.c1 - heat.c0);
    // averaging when a pixel holds several cells, crisp cells once zoomed in
    ctx.imageSmoothingEnabled = rowPx < 1 || colPx < 1;
    ctx.drawImage(heat.image, heat.c0, heat.r0, heat.c1 - heat.c0, heat.r1 - heat.r0, p.x, p.y, p.w, p.h);
    drawDropMarks(ctx, v, p, rowPx, colPx);
    ctx.strokeStyle = "#888";
    ctx.strokeRect(p.x - 0.5, p.y - 0.5, p.w + 1, p.h + 1);
    ctx.fillStyle = "#222";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    if (rowPx >= ROW_LABEL_MIN) {
      ctx.textAlign = "right";
      for (let row = Math.floor(heat.r0); row < Math.ceil(heat.r1); row++) {
        const y = p.y + (row + 0.5 - heat.r0) * rowPx;
        if (y < p.y || y > p.y + p.h) continue;
        ctx.fillText(fitted(ctx, v.classes[v.classOrder[row]], MARGIN.left - 10), p.x - 6, y);
      }
    } else {
      ctx.save();
      ctx.translate(p.x - 16, p.y + p.h / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "center";
      const shown = Math.round(heat.r1 - heat.r0);
      ctx.fillText("classes " + (Math.floor(heat.r0) + 1) + "-" + Math.ceil(heat.r1) + " of " + v.C + " (" + shown + " shown; scroll to zoom)", 0, 0);
      ctx.restore();
    }
    if (colPx >= COLUMN_LABEL_MIN) {
      ctx.textAlign = "left";
      for (let col = Math.floor(heat.c0); col < Math.ceil(heat.c1); col++) {
        const x = p.x + (col + 0.5 - heat.c0) * colPx;
        if (x < p.x || x > p.x + p.w) continue;
        ctx.save();
        ctx.translate(x, p.y - 6);
        ctx.rotate(-Math.PI / 3);
        ctx.fillText(fitted(ctx, shiftLabel(v, heat.model, v.shiftOrder[col]), (MARGIN.top - 12) / Math.sin(Math.PI / 3)), 0, 0);
        ctx.restore();
      }
    } else {
      ctx.textAlign = "center";
      ctx.fillText("shifts " + (Math.floor(heat.c0) + 1) + "-" + Math.ceil(heat.c1) + " of " + v.S + " (shift + scroll to zoom)", p.x + p.w / 2, p.y - 14);
    }
    canvas.dataset.window = [heat.r0, heat.r1, heat.c0, heat.c1].map((x) => x.toFixed(2)).join(",");
    canvas.dataset.model = v.models[heat.model];
    canvas.dataset.kind = heat.kind;
  }

  const MARK_MIN = 7; // px per cell before the significant changes are marked on the accuracy map

  // A triangle on each visible cell whose change from clean is significant (down: a drop, up: a
  // rise), once the cells are large enough to hold one; the "significant changes" map shows
  // them at any zoom.
  function drawDropMarks(ctx, v, p, rowPx, colPx) {
    let marked = 0;
    if (v.drops && heat.kind !== "drops" && rowPx >= MARK_MIN && colPx >= MARK_MIN) {
      const size = Math.min(rowPx, colPx) * 0.32;
      ctx.lineWidth = 1;
      for (let row = Math.floor(heat.r0); row < Math.ceil(heat.r1); row++) {
        const c = v.classOrder[row];
        for (let col = Math.floor(heat.c0); col < Math.ceil(heat.c1); col++) {
          const code = dropCode(v, heat.model, v.shiftOrder[col], c);
          if (code !== DROP.drop && code !== DROP.rise) continue;
          const x = p.x + (col + 0.5 - heat.c0) * colPx;
          const y = p.y + (row + 0.5 - heat.r0) * rowPx;
          if (x < p.x || x > p.x + p.w || y < p.y || y > p.y + p.h) continue;
          const tip = code === DROP.drop ? 1 : -1;
          ctx.beginPath();
          ctx.moveTo(x - size, y - tip * size * 0.8);
          ctx.lineTo(x + size, y - tip * size * 0.8);
          ctx.lineTo(x, y + tip * size * 0.9);
          ctx.closePath();
          ctx.fillStyle = "#fff";
          ctx.fill();
          ctx.strokeStyle = "#000";
          ctx.stroke();
          marked++;
        }
      }
    }
    byId("heatmap").dataset.marked = String(marked);
  }

  function drawLegend() {
    const canvas = byId("heatmap-legend");
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const width = canvas.width - 40;
    if (heat.kind === "drops") {
      const items = [[2, "drop"], [3, "rise"], [1, "not significant"], [0, "no test"]];
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      items.forEach(([code, label], i) => {
        const x = 20 + (i * width) / items.length;
        ctx.fillStyle = "rgb(" + DROP_COLOURS[code].join(",") + ")";
        ctx.fillRect(x, 2, 14, 14);
        ctx.fillStyle = "#222";
        ctx.textAlign = "left";
        ctx.fillText(label, x + 18, 3);
      });
      return;
    }
    for (let x = 0; x < width; x++) {
      const rgb = colour(x / (width - 1));
      ctx.fillStyle = "rgb(" + rgb.join(",") + ")";
      ctx.fillRect(20 + x, 2, 1, 14);
    }
    ctx.fillStyle = "#222";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "top";
    const label = (x) => (heat.kind === "accuracy" ? percent(x) + " %" : String(Number(x.toPrecision(3))));
    ctx.textAlign = "left";
    ctx.fillText(label(0), 20, 20);
    ctx.textAlign = "right";
    ctx.fillText(label(heat.max), 20 + width, 20);
    ctx.textAlign = "center";
    ctx.fillText(heat.kind === "accuracy" ? "accuracy" : "CFPS", 20 + width / 2, 20);
  }

  function cellAt(event) {
    const canvas = byId("heatmap");
    const box = canvas.getBoundingClientRect();
    const x = event.clientX - box.left;
    const y = event.clientY - box.top;
    const p = plotArea(canvas);
    const inside = x >= p.x && x < p.x + p.w && y >= p.y && y < p.y + p.h;
    const row = heat.r0 + ((y - p.y) / p.h) * (heat.r1 - heat.r0);
    const col = heat.c0 + ((x - p.x) / p.w) * (heat.c1 - heat.c0);
    return { inside, x, y, row, col, p };
  }

  function showTooltip(event) {
    const tip = byId("heatmap-tooltip");
    const at = cellAt(event);
    const v = heat.v;
    if (!at.inside || heat.drag) {
      tip.hidden = true;
      return;
    }
    const row = Math.min(v.C - 1, Math.max(0, Math.floor(at.row)));
    const col = Math.min(v.S - 1, Math.max(0, Math.floor(at.col)));
    const c = v.classOrder[row];
    const s = v.shiftOrder[col];
    const m = heat.model;
    const n = v.support[m][s][c];
    const [low, high] = n > 0 ? v.intervalOf(v.hits[m][s][c], n) : [null, null];
    const lines = [
      v.classes[c],
      "shift: " + v.shifts[s],
      "model: " + v.models[m],
      "accuracy: " + percent(recall(v, m, s, c)) + " % " + interval(low, high),
      "CFPS: " + score(v.cfps[m][s][c]),
      "n = " + n,
    ];
    const tested = v.drops ? dropText(v, m, s, c) : "";
    if (tested) lines.push(tested);
    tip.replaceChildren(...lines.map((line) => el("div", {}, nameNodes(line))));
    tip.dataset.class = String(c);
    tip.dataset.shift = v.shifts[s];
    tip.hidden = false;
    const wrap = byId("heatmap-wrap").getBoundingClientRect();
    const left = Math.min(at.x + 14, wrap.width - tip.offsetWidth - 4);
    const top = at.y + 14 + tip.offsetHeight > wrap.height ? at.y - tip.offsetHeight - 10 : at.y + 14;
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = Math.max(0, top) + "px";
  }

  function clampWindow() {
    const v = heat.v;
    const fit = (a0, a1, size, least) => {
      let span = Math.min(Math.max(a1 - a0, Math.min(least, size)), size);
      let start = Math.min(Math.max(a0, 0), size - span);
      return [start, start + span];
    };
    [heat.r0, heat.r1] = fit(heat.r0, heat.r1, v.C, 3);
    [heat.c0, heat.c1] = fit(heat.c0, heat.c1, v.S, 2);
  }

  function zoom(factor, rows, cols, centreRow, centreCol) {
    if (rows) {
      const r = centreRow === undefined ? (heat.r0 + heat.r1) / 2 : centreRow;
      heat.r0 = r - (r - heat.r0) * factor;
      heat.r1 = r + (heat.r1 - r) * factor;
    }
    if (cols) {
      const c = centreCol === undefined ? (heat.c0 + heat.c1) / 2 : centreCol;
      heat.c0 = c - (c - heat.c0) * factor;
      heat.c1 = c + (heat.c1 - c) * factor;
    }
    clampWindow();
    drawHeatmap();
  }

  function bindHeatmap() {
    const canvas = byId("heatmap");
    canvas.addEventListener(
      "wheel",
      (event) => {
        const at = cellAt(event);
        if (!at.inside) return;
        event.preventDefault();
        const factor = event.deltaY < 0 ? 0.8 : 1.25;
        const both = event.ctrlKey || event.metaKey;
        zoom(factor, !event.shiftKey || both, event.shiftKey || both, at.row, at.col);
        showTooltip(event);
      },
      { passive: false }
    );
    canvas.addEventListener("mousedown", (event) => {
      const at = cellAt(event);
      if (at.inside) heat.drag = { x: event.clientX, y: event.clientY, r0: heat.r0, r1: heat.r1, c0: heat.c0, c1: heat.c1, moved: false };
    });
    window.addEventListener("mousemove", (event) => {
      if (!heat.drag) return;
      const d = heat.drag;
      const dx = event.clientX - d.x;
      const dy = event.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (!d.moved) return;
      const p = plotArea(canvas);
      const dr = (dy / p.h) * (d.r1 - d.r0);
      const dc = (dx / p.w) * (d.c1 - d.c0);
      heat.r0 = d.r0 - dr;
      heat.r1 = d.r1 - dr;
      heat.c0 = d.c0 - dc;
      heat.c1 = d.c1 - dc;
      clampWindow();
      drawHeatmap();
    });
    window.addEventListener("mouseup", (event) => {
      const d = heat.drag;
      heat.drag = null;
      if (!d || d.moved) return;
      const at = cellAt(event);
      if (!at.inside) return;
      const c = heat.v.classOrder[Math.min(heat.v.C - 1, Math.max(0, Math.floor(at.row)))];
      byId("class-search").value = heat.v.classes[c];
      search();
      selectClass(c);
    });
    canvas.addEventListener("mousemove", showTooltip);
    canvas.addEventListener("mouseleave", () => {
      byId("heatmap-tooltip").hidden = true;
    });
    canvas.addEventListener("dblclick", resetZoom);
    byId("heatmap-zoom-in").addEventListener("click", () => zoom(0.5, true, false));
    byId("heatmap-zoom-out").addEventListener("click", () => zoom(2, true, true));
    byId("heatmap-reset").addEventListener("click", resetZoom);
    byId("heatmap-model").addEventListener("change", (event) => setHeatmap(view, Number(event.target.value), heat.kind));
    byId("heatmap-value").addEventListener("change", (event) => setHeatmap(view, heat.model, event.target.value));
    window.addEventListener("resize", () => heat.v && drawHeatmap());
  }

  // ---------------------------------------------------------------- worst classes
  function renderWorst(v) {
    const m = Number(byId("worst-model").value);
    const s = Number(byId("worst-shift").value);
    const listed = v.worst.classes[m][s].filter((c) => c >= 0);
    const rows = listed.map((c, i) => {
      const n = v.support[m][s][c];
      const [low, high] = n > 0 ? v.intervalOf(v.hits[m][s][c], n) : [null, null];
      return el("tr", { "data-class": c }, [
        el("td", { text: i + 1 }),
        el("td", { className: "name" }, nameNodes(v.classes[c])),
        el("td", { "data-field": "accuracy", text: percent(recall(v, m, s, c)) }),
        el("td", { className: "interval", "data-field": "interval", text: interval(low, high) }),
        el("td", { "data-field": "n", text: n }),
        el("td", { "data-field": "cfps", text: score(v.cfps[m][s][c]) }),
      ]);
    });
    const head = el(
      "tr",
      {},
      ["rank", "class", "accuracy %", "interval", "n", "CFPS"].map((label) => el("th", { scope: "col", text: label }))
    );
    byId("worst-table").replaceChildren(el("thead", {}, [head]), el("tbody", {}, rows));
    const notes = [];
    const tied = v.worst.tiedAtMinimum[m][s];
    if (!listed.length) notes.push("No class has samples under this shift.");
    if (tied > 1) {
      notes.push(
        tied + " classes tie at the lowest accuracy, " + percent(recall(v, m, s, listed[0])) + " %: the tables name the lowest index, " +
          v.classes[listed[0]] + " (WCA \u201c" + v.classes[listed[0]] + "; " + tied + " tied\u201d)."
      );
    }
    const past = v.worst.tiedPastList[m][s];
    if (past > 0) {
      notes.push(past + " more " + (past === 1 ? "class ties" : "classes tie") + " with the last listed at " + percent(recall(v, m, s, listed[listed.length - 1])) + " %.");
    }
    notes.push("Ties go to the lower class index, as in the tables.");
    byId("worst-ties").textContent = notes.join(" ");
  }

  // ---------------------------------------------------------------- the page
  function options(select, names) {
    select.replaceChildren(...names.map((name, i) => el("option", { value: i, text: name })));
  }

  function showView(index) {
    view = prepare(DATA.views[index]);
    const v = view;
    const leftOut = v.leftOut && v.leftOut.length
      ? "; left out, over a class subset of their own: " + v.leftOut.join(", ") + " (their tables and figures have them)"
      : "";
    byId("view-size").textContent =
      v.C + " classes, " + v.M + (v.M === 1 ? " model, " : " models, ") + v.S + (v.S === 1 ? " shift" : " shifts") + leftOut;
    renderSummary(v);
    options(byId("heatmap-model"), v.models);
    const values = [["accuracy", "accuracy (recall)"], ["cfps", "CFPS"]];
    if (v.drops) values.push(["drops", "significant changes"]);
    byId("heatmap-value").replaceChildren(...values.map(([value, text]) => el("option", { value, text })));
    byId("heatmap-value").value = "accuracy";
    setHeatmap(v, 0, "accuracy");
    options(byId("worst-model"), v.models);
    options(byId("worst-shift"), v.shifts);
    renderWorst(v);
    const sources = v.sources;
    const lines = [
      el("strong", { text: "Where the numbers come from" }),
      " (below the run's output directory): class-wise numbers ",
      el("code", { text: sources.per_class }),
      ", confusions ",
      el("code", { text: sources.confusion }),
      ", A and WCA intervals ",
      el("code", { text: sources.worst_class }),
    ];
    if (sources.shift_summary) lines.push(", the models x shifts table ", el("code", { text: sources.shift_summary }));
    if (sources.class_drops) lines.push(", the class-drop tests ", el("code", { text: sources.class_drops }));
    if (sources.ranking) lines.push(", the ranks ", el("code", { text: sources.ranking }));
    lines.push(". Written by classwise from the cached metric outputs (never the logits); one file, nothing loaded from elsewhere.");
    byId("sources").replaceChildren(...lines);
    search();
  }

  function start() {
    DATA = JSON.parse(byId("explorer-data").textContent);
    if (DATA.format !== 1) throw new Error("this page reads data format 1, the file holds " + DATA.format);
    byId("description").textContent = DATA.description || "";
    options(
      byId("view-select"),
      DATA.views.map((v) => v.dataset + " \u00b7 " + v.labels + " labels")
    );
    byId("view-select").addEventListener("change", (event) => showView(Number(event.target.value)));
    byId("class-search").addEventListener("input", search);
    byId("class-search").addEventListener("keydown", (event) => {
      if (event.key === "Enter") search();
    });
    byId("class-matches").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-class]");
      if (button) selectClass(Number(button.dataset.class));
    });
    byId("summary-filter").addEventListener("input", filterSummary);
    byId("worst-model").addEventListener("change", () => renderWorst(view));
    byId("worst-shift").addEventListener("change", () => renderWorst(view));
    bindHeatmap();
    showView(0);
    root.dataset.readyMs = performance.now().toFixed(1);
    root.dataset.ready = "true";
  }

  try {
    start();
  } catch (error) {
    fail(error);
  }
})();
