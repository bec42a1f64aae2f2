// The code map: folders first, opened on demand from /codemap/*.json, drawn with the vendored Cytoscape.js.
// Node ids: "d:" + folder, "f:" + file, "s:" + symbol id. Every text goes in as textContent or a canvas label.
"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  const holder = document.getElementById("map");
  if (!holder || typeof cytoscape === "undefined") return;
  const script = document.querySelector("script[data-base]");
  const base = script.dataset.base;
  const repo = script.dataset.repo ? { repo: script.dataset.repo } : {}; // the team server's chosen repository
  const data = JSON.parse(document.getElementById("codemap-data").textContent);
  const status = document.getElementById("map-status");
  const answer = document.getElementById("answer");
  const hot = new Map(); // symbol id -> rank (1 = highest PageRank)
  const HOT_ON_MAP = 5; // the list shows 20; the map marks the first few, or on a small graph everything glows
  let raw = []; // {source, target, calls}: each call once, at the finest grain fetched; drawn at the visible ends
  let overlay = []; // [a, b] pairs of the highlighted path, drawn even when no fetched call joins them

  const cy = cytoscape({
    container: holder,
    wheelSensitivity: 0.3,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 10, "text-valign": "center", "text-halign": "center",
        "background-color": "#dfe6ee", "border-width": 1, "border-color": "#9aa7b4", "text-wrap": "ellipsis", "text-max-width": 140 } },
      { selector: "node.folder", style: { shape: "round-rectangle", "background-color": "#c9d6e8", width: 150, height: 34 } },
      { selector: "node.file", style: { shape: "rectangle", "background-color": "#eef2f6", width: 140, height: 28 } },
      { selector: "node.symbol", style: { shape: "ellipse", width: 16, height: 16, "text-valign": "bottom", "font-size": 9 } },
      { selector: "node.symbol.class", style: { shape: "round-rectangle" } },
      { selector: ":parent", style: { "text-valign": "top", "background-opacity": 0.35, padding: 10 } },
      { selector: "node[claimColour]", style: { "border-width": 4, "border-color": "data(claimColour)" } },
      { selector: "node.symbol[claimColour]", style: { "background-color": "data(claimColour)" } },
      { selector: "node.hot", style: { "underlay-color": "#ff8c1a", "underlay-opacity": 0.45, "underlay-padding": 5 } },
      { selector: "node.selected", style: { "border-width": 4, "border-color": "#1d232b" } },
      { selector: "node.reached", style: { "background-color": "#f5c2c2" } },
      { selector: "node.on-path", style: { "background-color": "#ffd54f", "border-color": "#8a6d00", "border-width": 3 } },
      { selector: "edge", style: { width: "data(width)", "line-color": "#b7c1cc", "target-arrow-color": "#b7c1cc",
        "target-arrow-shape": "triangle", "curve-style": "bezier", "arrow-scale": 0.7 } },
      { selector: "edge.blast", style: { "line-color": "#d64545", "target-arrow-color": "#d64545", width: 3 } },
      { selector: "edge.path", style: { "line-color": "#e0a800", "target-arrow-color": "#e0a800", width: 4, "z-index": 10 } },
    ],
  });

  const basename = (path) => path.slice(path.lastIndexOf("/") + 1);
  const fileOf = (id) => id.split("::")[0];

  async function fetchJson(path, params) {
    const response = await fetch(`${base}/codemap/${path}?${new URLSearchParams({ ...params, ...repo })}`);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `the map answered ${response.status}`);
    return body;
  }

  function say(text) { status.textContent = text; }

  function claimColour(claims) {
    if (!claims.length) return undefined;
    const top = claims.reduce((best, c) => ((c.claims || 1) > (best.claims || 1) ? c : best), claims[0]);
    return top.colour;
  }

  // The visible node that stands for a path or symbol id: itself, else its file, else its nearest open folder.
  function visible(end) {
    if (end.includes("::") && cy.getElementById(`s:${end}`).length) return `s:${end}`;
    const file = fileOf(end);
    for (const id of [`f:${file}`, `d:${file}`]) if (cy.getElementById(id).length) return id;
    for (let at = file.lastIndexOf("/"); at > 0; at = file.lastIndexOf("/", at - 1)) {
      const id = `d:${file.slice(0, at)}`;
      if (cy.getElementById(id).length) return id;
    }
    return null;
  }

  function redrawEdges() {
    cy.edges().remove();
    const merged = new Map();
    for (const edge of raw) {
      const source = visible(edge.source), target = visible(edge.target);
      if (!source || !target || source === target) continue;
      const key = `${source}>${target}`;
      const known = merged.get(key) || { source, target, calls: 0 };
      known.calls += edge.calls;
      merged.set(key, known);
    }
    const edges = [...merged].map(([key, { source, target, calls }]) => (
      { group: "edges", data: { id: `e:${key}`, source, target, calls, width: Math.min(1 + Math.log2(calls), 8) } }));
    cy.add(edges);
    for (const [a, b] of overlay) {
      const source = visible(a), target = visible(b);
      if (!source || !target || source === target) continue;
      const existing = cy.getElementById(`e:${source}>${target}`);
      if (existing.length) existing.addClass("path");
      else cy.add({ group: "edges", data: { id: `p:${source}>${target}`, source, target, width: 4 }, classes: "path" });
    }
  }

  function layout() {
    // The whole map, before anything is opened: started afresh (grown from the last positions, opened folders
    // and files would overlap their neighbours).
    cy.layout({ name: "cose", animate: false, randomize: true, fit: true, padding: 20, nodeDimensionsIncludeLabels: true,
      idealEdgeLength: () => 60, nodeRepulsion: () => 12000, nodeOverlap: 20, componentSpacing: 60, numIter: 1000 }).run();
  }

  // What an opened folder or file shows is laid out in a grid where it stood; nothing placed before moves, so
  // the map keeps the shape the reader has learnt.
  function placeInside(centre, added) {
    const leaves = added.filter((n) => n.isChildless());
    if (!leaves.length) return;
    const columns = Math.ceil(Math.sqrt(leaves.length));
    const rows = Math.ceil(leaves.length / columns);
    const [w, h] = leaves[0].hasClass("symbol") ? [110, 44] : [170, 48];
    leaves.layout({ name: "grid", fit: false, animate: false, avoidOverlap: true, condense: true, cols: columns,
      boundingBox: { x1: centre.x - (columns * w) / 2, y1: centre.y - (rows * h) / 2, w: columns * w, h: rows * h },
    }).run();
    cy.fit(cy.elements(), 20);
  }

  // A second click on an opened folder or file closes it again: its contents go, and the calls drawn to them
  // are drawn to it (they stay fetched).
  function collapse(node) {
    node.descendants().remove();
    node.data("open", false);
    redrawEdges();
    markHot();
    say(`${node.data("path")} closed`);
  }

  function markHot() {
    cy.nodes().removeClass("hot");
    for (const [id, rank] of hot) {
      if (rank > HOT_ON_MAP) continue;
      const node = visible(id);
      if (node) cy.getElementById(node).addClass("hot");
    }
  }

  function addFolder(parent, folder) {
    const nodes = folder.children.map((child) => ({
      group: "nodes",
      classes: child.kind,
      data: {
        id: `${child.kind === "folder" ? "d" : "f"}:${child.path}`,
        parent,
        path: child.path,
        label: child.kind === "folder" ? `${basename(child.path)}/ · ${child.files} files · ${child.symbols}` :
          `${basename(child.path)} · ${child.symbols}`,
        claimColour: claimColour(child.claims),
      },
    }));
    return cy.add(nodes);
  }

  async function openFolder(node) {
    if (node.data("open")) return;
    node.data("open", "loading"); // before the fetch: a second click while it runs must not add the children twice
    say(`opening ${node.data("path")}/ …`);
    const folder = await fetchJson("folder.json", { path: node.data("path") }).catch((error) => {
      node.data("open", false);
      throw error;
    });
    // The folder's bundles hold every call in or out of it, finer than the ones drawn so far: they replace them.
    raw = raw.filter((e) => !touches(e, node.data("path"), "/"));
    const centre = { ...node.position() };
    const added = addFolder(node.id(), folder);
    raw.push(...folder.bundles);
    node.data("open", true);
    refresh(`${folder.path}/: ${folder.children.length} entries`, centre, added);
  }

  function touches(edge, path, separator) {
    return [edge.source, edge.target].some((end) => end === path || end.startsWith(path + separator));
  }

  async function openFile(node) {
    if (node.data("open")) return;
    node.data("open", "loading");
    const path = node.data("path");
    say(`opening ${path} …`);
    const file = await fetchJson("file.json", { path }).catch((error) => {
      node.data("open", false);
      throw error;
    });
    const ids = new Set(file.symbols.map((s) => s.id));
    const centre = { ...node.position() };
    const added = cy.add(file.symbols.map((s) => ({
      group: "nodes",
      classes: `symbol ${s.kind}`,
      data: { id: `s:${s.id}`, parent: s.parent && ids.has(s.parent) ? `s:${s.parent}` : node.id(), symbol: s.id,
        label: s.qualname, claimColour: claimColour(s.claims),
        claims: s.claims.map((c) => `${c.developer} (#${c.task} ${c.title})`).join(", ") },
    })));
    raw = raw.filter((e) => !touches(e, path, "::"));
    raw.push(...file.calls.map((c) => ({ source: c.caller, target: c.callee, calls: 1 })));
    node.data("open", true);
    refresh(`${path}: ${file.symbols.length} symbols, ${file.calls.length} calls in or out`, centre, added);
  }

  function refresh(text, centre, added) {
    redrawEdges();
    markHot();
    placeInside(centre, added);
    say(text);
  }

  // Open the folders down to a symbol's file, then the file: the map then shows the symbol itself.
  async function reveal(symbolId) {
    const file = fileOf(symbolId);
    for (let guard = 0; guard < 64 && !cy.getElementById(`s:${symbolId}`).length; guard += 1) {
      const at = visible(symbolId);
      if (!at) return;
      const node = cy.getElementById(at);
      if (node.hasClass("folder")) await openFolder(node);
      else if (node.hasClass("file") && node.data("path") === file) await openFile(node);
      else return;
    }
  }

  function clearMarks() {
    cy.elements().removeClass("selected reached on-path blast");
    overlay = [];
  }

  function heading(text) {
    const h = document.createElement("h2");
    h.textContent = text;
    return h;
  }

  function codeList(items, describe) {
    const list = document.createElement("ol");
    for (const item of items) {
      const li = document.createElement("li");
      const code = document.createElement("code");
      code.textContent = item.id;
      li.append(code, ` ${describe(item)}`);
      list.append(li);
    }
    return list;
  }

  // A test (or a screen reader) waits for the answer it asked for, not the last one still on show.
  function working() {
    answer.dataset.shown = "working";
  }

  async function showBlast(symbolId, hops) {
    working();
    const blast = await fetchJson("blast.json", { symbol: symbolId, hops: hops || 3 });
    await reveal(blast.symbol);
    clearMarks();
    overlay = blast.calls;
    redrawEdges();
    cy.edges(".path").removeClass("path").addClass("blast");
    cy.getElementById(`s:${blast.symbol}`).addClass("selected");
    for (const r of blast.reached) {
      const node = visible(r.id);
      if (node) cy.getElementById(node).addClass("reached");
    }
    answer.replaceChildren(heading(`Blast radius of ${blast.symbol}`),
      blast.reached.length ? codeList(blast.reached, (r) => `${r.hops} hop${r.hops > 1 ? "s" : ""}`) :
        Object.assign(document.createElement("p"), { className: "empty", textContent: "nothing calls it" }));
    answer.dataset.shown = "blast";
    say(`${blast.reached.length} callers within ${hops || 3} hops of ${blast.symbol}`);
  }

  async function showChains(chains, title) {
    working();
    for (const chain of chains) for (const id of chain) await reveal(id);
    clearMarks();
    overlay = chains.flatMap((chain) => chain.slice(1).map((id, i) => [chain[i], id]));
    redrawEdges();
    for (const chain of chains) for (const id of chain) cy.getElementById(visible(id) || "").addClass("on-path");
    const blocks = chains.map((chain) => {
      const p = document.createElement("p");
      p.className = "chain-path";
      p.textContent = chain.join(" → ");
      return p;
    });
    answer.replaceChildren(heading(title), ...blocks);
    answer.dataset.shown = "path";
  }

  const TITLES = { calls: "Call path", "called by": "Call path (the other way)", "common caller": "Nearest common caller",
    none: "No call path" };

  async function showPath(a, b) {
    working();
    const path = await fetchJson("path.json", { a, b });
    await showChains(path.chains, TITLES[path.kind]);
    say(path.chains.length ? `${TITLES[path.kind]}: ${path.chains.map((c) => c.join(" → ")).join(" | ")}` :
      "neither calls the other, and no caller reaches both");
  }

  function failed(error) {
    const p = document.createElement("p");
    p.className = "problem";
    p.textContent = error.message;
    answer.replaceChildren(p);
    answer.dataset.shown = "problem";
    say(error.message);
  }

  cy.on("tap", "node", (event) => {
    const node = event.target;
    if (node.data("open") === "loading") return;
    if (node.data("open") && !node.hasClass("symbol")) {
      collapse(node);
      return;
    }
    const work = node.hasClass("folder") ? openFolder(node) : node.hasClass("file") ? openFile(node) :
      showBlast(node.data("symbol"), Number(document.querySelector("#blast-form [name=hops]").value));
    if (node.hasClass("symbol")) document.querySelector("#blast-form [name=symbol]").value = node.data("symbol");
    work.catch(failed);
  });

  document.getElementById("blast-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.target;
    showBlast(form.symbol.value.trim(), Number(form.hops.value)).catch(failed);
  });
  document.getElementById("path-form").addEventListener("submit", (event) => {
    event.preventDefault();
    showPath(event.target.a.value.trim(), event.target.b.value.trim()).catch(failed);
  });
  for (const button of document.querySelectorAll("[data-conflict]")) {
    button.addEventListener("click", () => {
      const conflict = data.conflicts[Number(button.dataset.conflict)];
      const [one, two] = conflict.tasks;
      showChains([conflict.path], `Conflict: #${one.task} (${one.developer}) ↔ #${two.task} (${two.developer})`)
        .catch(failed);
    });
  }

  async function loadHotspots() {
    const list = document.getElementById("hotspots");
    const found = await fetchJson("hotspots.json", { limit: 20 });
    list.replaceChildren(...found.hotspots.map((h, i) => {
      hot.set(h.id, i + 1);
      const li = document.createElement("li");
      const button = Object.assign(document.createElement("button"), { type: "button", className: "link" });
      button.textContent = h.id;
      button.addEventListener("click", () => showBlast(h.id, 3).catch(failed));
      li.append(button, ` PageRank ${h.pagerank.toFixed(4)} · betweenness ${h.betweenness.toFixed(4)}`);
      return li;
    }));
    if (!found.hotspots.length) list.replaceChildren(Object.assign(document.createElement("li"), { textContent: "no calls" }));
    markHot();
  }

  // The page carries the top folders without their calls (counting them walks every call): drawn first,
  // then joined by the bundles of folder.json.
  addFolder(undefined, data.root);
  layout();
  performance.mark("codemap-nodes");
  window.codemap = cy; // for the browser's console, and the browser test that clicks its nodes
  try {
    raw = (await fetchJson("folder.json", { path: data.root.path })).bundles;
    redrawEdges();
    layout();
  } catch (error) {
    say(error.message);
  }
  holder.dataset.ready = "true";
  performance.mark("codemap-drawn");
  loadHotspots().catch((error) => {
    document.getElementById("hotspots").replaceChildren(Object.assign(document.createElement("li"),
      { className: "problem", textContent: error.message }));
  }).finally(() => performance.mark("codemap-hotspots"));
  // A page asked with ?symbol= or ?a=&b= (the forms without JavaScript) is drawn on the map too.
  const asked = new URLSearchParams(window.location.search);
  if (asked.get("symbol")) showBlast(asked.get("symbol"), Number(asked.get("hops") || 3)).catch(failed);
  else if (asked.get("a") && asked.get("b")) showPath(asked.get("a"), asked.get("b")).catch(failed);
});
