// The plan's network drawn by aggregation: per plane and zone, rows of spines, leaves and nodes,
// a few switches drawn and the rest counted, so a 10,000-GPU cluster stays readable.
import { PALETTE } from "./charts.js";

const NS = "http://www.w3.org/2000/svg";
const node = (tag, attrs = {}, text) => {
  const n = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
};
const SHOWN = 6;
const textWidth = (text, px = 12) => 0.62 * px * String(text).length;  // an average glyph's width

function row(svg, { x, y, width, count, label, colour, shape = "switch" }) {
  const shown = Math.min(count, SHOWN);
  const more = count - shown, moreText = more > 0 ? `+${more.toLocaleString("en-US")}` : "";
  // Spread the drawn parts so that the "+N" after them ends inside the row's width.
  const gap = Math.min(width / (SHOWN + 1), (width - textWidth(moreText) - 4) / (shown + 0.2));
  for (let i = 0; i < shown; i++) {
    const cx = x + gap * (i + 0.5);
    svg.append(shape === "switch"
      ? node("rect", { x: cx - 14, y: y - 8, width: 28, height: 16, rx: 3, fill: colour, stroke: "#000" })
      : node("rect", { x: cx - 10, y: y - 10, width: 20, height: 20, fill: "#fff", stroke: colour, "stroke-width": 3 }));
  }
  svg.append(node("text", { x: x + gap * (shown + 0.2), y: y + 4, class: "topo-count" }, moreText));
  svg.append(node("text", { x: x + 4, y: y - 14, class: "topo-label" }, `${count.toLocaleString("en-US")} ${label}`));
  // end: where the row's drawing and its "+N" count end, so that a line leaving the row starts clear of them
  return { top: y - 8, bottom: y + 8, left: x + gap * 0.5, right: x + gap * (shown - 0.5), step: gap, shown,
    end: moreText ? x + gap * (shown + 0.2) + textWidth(moreText) + 4 : x + gap * (shown - 0.5) + 14 };
}

// Links go in the drawing's bottom layer, under the switches and the (haloed) labels.
function bundle(svg, a, b) {
  const links = svg.querySelector("g.topo-links");
  for (let i = 0; i < 5; i++) {
    const t = i / 4;
    links.append(node("line", { x1: a.left + t * (a.right - a.left), y1: a.bottom, x2: b.left + (1 - t) * (b.right - b.left), y2: b.top,
      stroke: "#777", "stroke-width": 1 }));
  }
}

// cluster: the result's cluster section (GPUs per scale-up domain, domains); a domain wider than a
// node (an NVL72 rack, a supernode) is drawn around the nodes it joins.
export function drawTopology(container, plan, fabric, cluster) {
  const zones = plan.zones, planes = plan.planes;
  const perPlaneZone = (n) => Math.round(n / (zones * planes));
  const title = planes > 1 ? `One of ${planes} identical planes (each node has one NIC port per plane)` :
    `${plan.fabric_layers}-layer fat-tree${plan.rails > 1 ? `, ${plan.rails} rails` : ""}`;
  const zoneWidth = 300, zoneGap = 40;
  const width = Math.max(zones * (zoneWidth + zoneGap) + 40, 420, 40 + textWidth(title, 13));
  const hasCore = fabric.core_switches > 0;
  const storageShared = plan.storage_network === "shared" && plan.storage_node_count > 0;
  const separateStorage = plan.storage_network !== "shared" && plan.storage_node_count > 0;
  const gpusPerNode = plan.gpu_count / plan.node_count;
  const domainNodes = cluster.scaleup_domain_gpus / gpusPerNode;
  const storageY = domainNodes > 1 ? 262 : 245;  // below the scale-up domains' two lines
  const taller = storageShared ? storageY - 245 : 0;  // what a zone grows by to hold both
  const height = 330 + (hasCore ? 60 : 0) + (separateStorage ? 120 : 0) + taller;
  const svg = node("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", class: "chart topology" });
  svg.append(node("title", {}, `Topology: ${fabric.switches} switches, ${plan.fabric_layers}-layer fat-tree, ` +
    `${zones} zone(s), ${planes} plane(s)`), node("g", { class: "topo-links" }));
  let top = 30;
  svg.append(node("text", { x: 20, y: 18, class: "topo-title" }, title));
  let core = null;
  if (hasCore) {
    core = row(svg, { x: 20, y: top + 30, width: width - 40, count: Math.round(fabric.core_switches / planes), label: "core switches", colour: PALETTE[3] });
    top += 60;
  }
  const zoneTops = [];
  for (let z = 0; z < zones; z++) {
    const x = 20 + z * (zoneWidth + zoneGap);
    svg.append(node("rect", { x, y: top, width: zoneWidth, height: 270 + taller, rx: 10, fill: "none", stroke: "#444", "stroke-dasharray": "5 4" }));
    svg.append(node("text", { x: x + 8, y: top + 16, class: "topo-zone" }, zones > 1 ? `zone ${z + 1}` : "cluster"));
    const spines = row(svg, { x: x + 8, y: top + 50, width: zoneWidth - 16, count: perPlaneZone(fabric.spine_switches), label: "spine switches", colour: PALETTE[0] });
    const leaves = row(svg, { x: x + 8, y: top + 120, width: zoneWidth - 16, count: perPlaneZone(fabric.leaf_switches), label: "leaf switches", colour: PALETTE[5] });
    bundle(svg, spines, leaves);
    const nodes = row(svg, { x: x + 8, y: top + 190, width: zoneWidth - 16, count: Math.round(plan.node_count / zones),
      label: `compute nodes (${gpusPerNode} GPUs each)`, colour: PALETTE[2], shape: "node" });
    bundle(svg, leaves, nodes);
    if (domainNodes > 1) {  // one domain boxed: as many of its nodes as are drawn
      const boxed = Math.min(domainNodes, nodes.shown);
      svg.append(node("rect", { x: nodes.left - 16, y: top + 176, width: nodes.step * (boxed - 1) + 32, height: 28, rx: 6,
        fill: "none", stroke: PALETTE[3], "stroke-width": 2.5, class: "topo-domain" }));
      svg.append(node("text", { x: x + 12, y: top + 222, class: "topo-label" },
        `${Math.round(cluster.scaleup_domains / zones).toLocaleString("en-US")} scale-up domains of ` +
        `${domainNodes} nodes (${cluster.scaleup_domain_gpus} GPUs)`));
      svg.append(node("text", { x: x + 12, y: top + 238, class: "topo-label" },
        boxed < domainNodes ? `boxed: one domain, ${boxed} of its nodes drawn` : "boxed: one domain"));
    }
    if (storageShared) {
      row(svg, { x: x + 8, y: top + storageY, width: zoneWidth - 16, count: Math.round(plan.storage_node_count / zones),
        label: "storage nodes on this fabric", colour: PALETTE[4], shape: "node" });
    }
    if (core) bundle(svg, core, spines);
    zoneTops.push({ x, spines });
  }
  if (zones > 1 && fabric.interzone_switches > 0) {
    for (let z = 0; z + 1 < zones; z++) {
      const cx = zoneTops[z].x + zoneWidth + zoneGap / 2;
      svg.append(node("rect", { x: cx - 14, y: top + 42, width: 28, height: 16, rx: 3, fill: PALETTE[1], stroke: "#000" }));
      svg.append(node("line", { x1: zoneTops[z].spines.end, y1: top + 50, x2: zoneTops[z + 1].spines.left, y2: top + 50, stroke: PALETTE[1], "stroke-width": 2 }));
    }
    svg.append(node("text", { x: 20, y: top + 290 + taller, class: "topo-label" },
      `${fabric.interzone_switches} inter-zone switch${fabric.interzone_switches === 1 ? "" : "es"} join${fabric.interzone_switches === 1 ? "s" : ""} the zones' spines`));
  }
  if (separateStorage) {
    const y = top + 320 + taller;
    svg.append(node("text", { x: 20, y: y - 10, class: "topo-zone" }, "separate storage plane"));
    row(svg, { x: 20, y: y + 30, width: width / 2 - 40, count: fabric.storage_plane_switches, label: "storage-plane switches", colour: PALETTE[4] });
    row(svg, { x: width / 2, y: y + 30, width: width / 2 - 40, count: plan.storage_node_count, label: "storage nodes", colour: PALETTE[4], shape: "node" });
  }
  container.replaceChildren(svg);
}
