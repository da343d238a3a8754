// Lays out the dependency graph with dagre, off the page's main thread, so
// that the board stays responsive while a large graph is laid out.
"use strict";
importScripts("vendor/dagre/dagre.min.js");

onmessage = (e) => {
  const { seq, nodes, edges, compact } = e.data;
  try {
    const g = new dagre.graphlib.Graph();
    g.setGraph({
      rankdir: "LR",
      // An overview (epics collapsed) is packed tighter, to fit the window.
      nodesep: compact ? 8 : 14,
      ranksep: compact ? 26 : 56,
      edgesep: compact ? 4 : 10,
      marginx: 12,
      marginy: 12,
      // network-simplex gives the tightest ranks; past a few hundred
      // nodes tight-tree is several times faster and nearly as good.
      ranker: nodes.length <= 300 ? "network-simplex" : "tight-tree",
    });
    g.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) g.setNode(n.id, { width: n.w, height: n.h });
    for (const [from, to] of edges) g.setEdge(from, to);
    const t0 = performance.now();
    dagre.layout(g);
    const ms = performance.now() - t0;
    const out = { seq, ms, width: g.graph().width || 0, height: g.graph().height || 0, nodes: {}, edges: [] };
    for (const v of g.nodes()) {
      const n = g.node(v);
      out.nodes[v] = { x: n.x, y: n.y, w: n.width, h: n.height };
    }
    for (const ed of g.edges()) {
      out.edges.push({ from: ed.v, to: ed.w, points: g.edge(ed).points });
    }
    postMessage(out);
  } catch (err) {
    postMessage({ seq, error: String(err && err.message || err) });
  }
};
