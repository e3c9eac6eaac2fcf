// Layout defects a reader sees, found from the rendered boxes (run by tests/e2e/test_layout.py):
// text pushed past the window's right edge or cut by its own box, text boxes drawn over each other
// in a chart or drawing, and chart or drawing text rendered under 11 px (its font size in the
// drawing's units times the drawing's scale on the screen).
() => {
  const width = document.documentElement.clientWidth;
  const describe = (node) => `${node.tagName.toLowerCase()}${node.id ? "#" + node.id : ""} "${(node.textContent || "").trim().slice(0, 60)}"`;
  const clipped = [];
  for (const node of document.querySelectorAll("main td, main th, main dd, main dt, main li, main p, main figcaption, main h1, main h2, main label")) {
    const text = (node.textContent || "").trim();
    if (!text || node.closest("[hidden], details:not([open])")) continue;
    const box = node.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.right > width + 1) clipped.push(`${describe(node)} ends at ${Math.round(box.right)}px of ${width}px`);
    else if (node.scrollWidth > node.clientWidth + 1 && getComputedStyle(node).overflowX === "hidden") clipped.push(`${describe(node)} is cut by its box`);
  }
  const overlaps = [];
  // A column of a grid (the report's cost beside its power) must hold what it shows: content wider than
  // its cell runs under the next column.
  for (const cell of document.querySelectorAll("main .grid2 > *, main .columns > *")) {
    if (cell.closest("[hidden]")) continue;
    const right = cell.getBoundingClientRect().right;
    for (const inner of cell.querySelectorAll("table, figure, svg, pre, p, ul")) {
      const box = inner.getBoundingClientRect();
      if (box.width > 0 && box.right > right + 1 && !inner.parentElement.closest(".scroll")) {
        overlaps.push(`${describe(inner)} runs ${Math.round(box.right - right)}px out of its column`);
      }
    }
  }
  for (const svg of document.querySelectorAll("main svg")) {
    const boxes = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim()).map((t) => [t, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) {
      const [a, p] = boxes[i];
      if (p.right > svg.getBoundingClientRect().right + 1 || p.left < svg.getBoundingClientRect().left - 1) overlaps.push(`${describe(a)} runs out of its drawing`);
      for (let j = i + 1; j < boxes.length; j++) {
        const [b, q] = boxes[j];
        const x = Math.min(p.right, q.right) - Math.max(p.left, q.left), y = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (x > 1.5 && y > 1.5) overlaps.push(`${describe(a)} over ${describe(b)}`);
      }
    }
  }
  // A drawing's straight lines (rules, links) must not run through its labels.
  for (const svg of document.querySelectorAll("main svg.topology")) {
    const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim()).map((t) => [t, t.getBoundingClientRect()]);
    for (const line of svg.querySelectorAll("line")) {
      const [x1, y1, x2, y2] = ["x1", "y1", "x2", "y2"].map((k) => Number(line.getAttribute(k)));
      if (x1 !== x2 && y1 !== y2) continue;
      const l = line.getBoundingClientRect();
      for (const [t, q] of texts) {
        if (Math.min(l.right, q.right) - Math.max(l.left, q.left) > 1 && Math.min(l.bottom, q.bottom) - Math.max(l.top, q.top) > 0.5) {
          overlaps.push(`a line runs through ${describe(t)}`);
        }
      }
    }
  }
  const small = [];
  for (const svg of document.querySelectorAll("main svg[viewBox]")) {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    for (const text of svg.querySelectorAll("text")) {
      if (!text.textContent.trim()) continue;
      const size = parseFloat(getComputedStyle(text).fontSize) * scale;
      if (size < 10.95) small.push(`${describe(text)} is ${size.toFixed(1)}px`);
    }
  }
  return { clipped, overlaps, small };
}
