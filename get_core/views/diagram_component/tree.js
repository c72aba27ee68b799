// Browser side of the clickable tree diagram (a Streamlit components-v2 component, mounted by pages/tree.py).
// data: {svg: Graphviz SVG whose node groups have id "get-node-<heap id>" (focusable and named by
// diagram.with_node_names), selected: node id or null}.
// A click on a node, or Enter / Space on a focused node, sets the trigger value "clicked" to its heap id; Tab and the
// arrow keys move the focus between nodes.
// The picture opens fitted to the width of its box (as wide as the page; the page opens a tree with as many levels as
// stay readable so), or, when that would shrink its text below READABLE, at READABLE with the selected node (or the
// root) in the middle; it pans (drag) and zooms (wheel, the +/- buttons); "Fit" shows it whole, "100%" at its
// natural size. A click that ends a drag selects nothing.
const PREFIX = "get-node-";
const MIN_SCALE = 0.05;
const MAX_SCALE = 4;
const READABLE = 0.6; // the smallest scale a new picture opens at: 10 pt labels stay about 8 px high (pages/tree.py)
const DRAG_PX = 5; // a press that moves farther than this pans instead of clicking
const MARGIN = 40; // px of picture that panning always leaves in view
const STEP = 1.25; // zoom factor of a button press or a wheel notch
const BOX_SLACK = 0.25; // a box this much narrower or wider than the page planned for (data.box_width) is reported:
// a 1,000 px window's 540 px box is, a 1,400 px window's 940 px box (15% under the 1,100 planned) is not

export default function (component) {
  const { data, setTriggerValue, setStateValue, parentElement } = component;
  let host = parentElement.querySelector(".get-tree-host");
  if (!host) host = build(parentElement);
  host._select = (node) => setTriggerValue("clicked", node);
  const view = host.querySelector(".get-tree-view");
  const svgText = (data && data.svg) || "";
  const svgHash = String(svgText.length) + ":" + hash(svgText);
  const fresh = host.getAttribute("data-svg-hash") !== svgHash;
  if (fresh) {
    view.innerHTML = svgText; // Graphviz output; every user-provided string in it is escaped by get_core
    host.setAttribute("data-svg-hash", svgHash);
    host._pic = picture(view);
  }
  view.querySelectorAll("g.get-node.get-selected").forEach((g) => g.classList.remove("get-selected"));
  const chosen = data && data.selected != null
    ? view.querySelector("#" + PREFIX + String(parseInt(data.selected, 10))) : null;
  if (chosen) chosen.classList.add("get-selected");
  if (fresh && host._pic) open(host, chosen);
  // The page chose the levels to draw for a box of data.box_width px; a narrower one (a 1,000 px window) would cut the
  // picture or shrink its text, so the real width goes back and the page draws the levels that fit it.
  const planned = data && data.box_width;
  const actual = view.clientWidth;
  if (planned && actual && Math.abs(actual - planned) > BOX_SLACK * planned) setStateValue("box_width", actual);
  return () => {};
}

// ------------------------------------------------------------------------------------------- building
function build(parentElement) {
  const host = document.createElement("div");
  host.className = "get-tree-host";
  const tools = document.createElement("div");
  tools.className = "get-tree-tools";
  const buttons = [["\u2212", "Zoom the tree out", (h) => zoomBy(h, 1 / STEP)],
    ["+", "Zoom the tree in", (h) => zoomBy(h, STEP)], ["Fit", "Fit the whole tree in view", (h) => fit(h)],
    ["100%", "Show the tree at its natural size", (h) => natural(h)]];
  for (const [text, label, act] of buttons) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = text;
    button.title = label;
    button.setAttribute("aria-label", label);
    button.addEventListener("click", () => act(host));
    tools.appendChild(button);
  }
  const hint = document.createElement("span");
  hint.className = "get-tree-hint";
  hint.textContent = "drag to pan, wheel to zoom; Tab to a node, arrows to move, Enter to select";
  tools.appendChild(hint);
  const view = document.createElement("div");
  view.className = "get-tree-view";
  host.append(tools, view);
  parentElement.appendChild(host);
  wire(host, view);
  return host;
}

function picture(view) {
  const svg = view.querySelector("svg");
  if (!svg) return null;
  // Graphviz gives the natural size in points: 1 pt = 4/3 px
  const w = toPx(svg.getAttribute("width")) || 400;
  const h = toPx(svg.getAttribute("height")) || 300;
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.style.width = w + "px";
  svg.style.height = h + "px";
  return { svg, w, h, scale: 1, x: 0, y: 0 };
}

function toPx(value) {
  const match = /^([0-9.]+)(pt|px)?$/.exec(String(value || "").trim());
  if (!match) return 0;
  return parseFloat(match[1]) * (match[2] === "pt" ? 4 / 3 : 1);
}

// A new picture: it opens fitted to the width when that is readable, else at READABLE with the selected node (or the
// root) in the middle; the viewport's height follows it (within 72% of the window; a taller one shows its top).
function open(host, chosen) {
  const view = host.querySelector(".get-tree-view");
  const pic = host._pic;
  const width = view.clientWidth || 600;
  const tallest = Math.max(240, Math.round(window.innerHeight * 0.72));
  const whole = Math.min(1, width / pic.w);
  const scale = Math.max(whole, READABLE);
  view.style.height = Math.max(200, Math.min(tallest, Math.ceil(pic.h * scale) + 8)) + "px";
  const focus = chosen || view.querySelector("#" + PREFIX + "1");
  const centre = focus ? centreOf(focus, pic) : { x: pic.w / 2, y: 0 }; // at the scale drawn so far
  pic.scale = scale;
  if (scale === whole) {
    pic.x = (width - pic.w * scale) / 2;
    pic.y = 4;
  } else {
    pic.x = width / 2 - centre.x * scale;
    pic.y = Math.min(4, view.clientHeight / 2 - centre.y * scale); // the top stays in view when it can
  }
  apply(host);
}

// ------------------------------------------------------------------------------------------- pan and zoom
function apply(host) {
  const view = host.querySelector(".get-tree-view");
  const pic = host._pic;
  if (!pic) return;
  const [vw, vh] = [view.clientWidth, view.clientHeight];
  pic.x = clamp(pic.x, Math.min(0, vw - pic.w * pic.scale) - MARGIN, Math.max(0, vw - pic.w * pic.scale) + MARGIN);
  pic.y = clamp(pic.y, Math.min(0, vh - pic.h * pic.scale) - MARGIN, Math.max(0, vh - pic.h * pic.scale) + MARGIN);
  pic.svg.style.transform = `translate(${pic.x}px, ${pic.y}px) scale(${pic.scale})`;
  pic.fitted = false; // fit() sets it again after this
  host.setAttribute("data-scale", pic.scale.toFixed(3));
}

function zoomAt(host, factor, px, py) {
  const pic = host._pic;
  if (!pic) return;
  const scale = clamp(pic.scale * factor, MIN_SCALE, MAX_SCALE);
  pic.x = px - (px - pic.x) * (scale / pic.scale);
  pic.y = py - (py - pic.y) * (scale / pic.scale);
  pic.scale = scale;
  apply(host);
}

function zoomBy(host, factor) {
  const view = host.querySelector(".get-tree-view");
  zoomAt(host, factor, view.clientWidth / 2, view.clientHeight / 2);
}

function fit(host) {
  const view = host.querySelector(".get-tree-view");
  const pic = host._pic;
  if (!pic) return;
  pic.scale = clamp(Math.min(view.clientWidth / pic.w, view.clientHeight / pic.h), MIN_SCALE, MAX_SCALE);
  pic.x = (view.clientWidth - pic.w * pic.scale) / 2;
  pic.y = (view.clientHeight - pic.h * pic.scale) / 2;
  apply(host);
  pic.fitted = true;
}

function natural(host) {
  const view = host.querySelector(".get-tree-view");
  const pic = host._pic;
  if (!pic) return;
  const cx = (view.clientWidth / 2 - pic.x) / pic.scale; // keep the picture point in the middle where it is
  const cy = (view.clientHeight / 2 - pic.y) / pic.scale;
  pic.scale = 1;
  pic.x = view.clientWidth / 2 - cx;
  pic.y = view.clientHeight / 2 - cy;
  apply(host);
}

// Bring a node fully into view (keyboard focus reaches nodes outside it).
function reveal(host, group) {
  const view = host.querySelector(".get-tree-view");
  const pic = host._pic;
  view.scrollLeft = 0; // the browser scrolls even an overflow: hidden box to a focused element
  view.scrollTop = 0;
  const box = group.getBoundingClientRect();
  const frame = view.getBoundingClientRect();
  if (box.left < frame.left || box.right > frame.right) {
    pic.x += frame.left + frame.width / 2 - (box.left + box.width / 2);
  }
  if (box.top < frame.top || box.bottom > frame.bottom) {
    pic.y += frame.top + frame.height / 2 - (box.top + box.height / 2);
  }
  apply(host);
}

function centreOf(group, pic) {
  const box = group.getBoundingClientRect();
  const origin = pic.svg.getBoundingClientRect();
  return {
    x: (box.left + box.width / 2 - origin.left) / pic.scale,
    y: (box.top + box.height / 2 - origin.top) / pic.scale,
  };
}

// ------------------------------------------------------------------------------------------- events
function wire(host, view) {
  let press = null; // {x, y, px, py, id, moved} while the primary button is down
  let swallowClick = false;
  view.addEventListener("pointerdown", (event) => {
    if (event.button !== 0 || !host._pic) return;
    press = { x: event.clientX, y: event.clientY, px: host._pic.x, py: host._pic.y, id: event.pointerId, moved: false };
    swallowClick = false;
  });
  view.addEventListener("pointermove", (event) => {
    if (!press || event.pointerId !== press.id) return;
    const dx = event.clientX - press.x;
    const dy = event.clientY - press.y;
    if (!press.moved && Math.hypot(dx, dy) < DRAG_PX) return;
    if (!press.moved) {
      press.moved = true;
      view.classList.add("get-dragging");
      view.setPointerCapture(event.pointerId); // only now: a plain click must still reach its node
    }
    host._pic.x = press.px + dx;
    host._pic.y = press.py + dy;
    apply(host);
  });
  const release = (event) => {
    if (!press || event.pointerId !== press.id) return;
    swallowClick = press.moved;
    press = null;
    view.classList.remove("get-dragging");
  };
  view.addEventListener("pointerup", release);
  view.addEventListener("pointercancel", release);
  view.addEventListener("click", (event) => {
    if (swallowClick) { // the end of a drag, not a choice
      swallowClick = false;
      event.preventDefault();
      return;
    }
    choose(host, event);
  });
  view.addEventListener("keydown", (event) => {
    if (event.key in MOVES) {
      if (move(view, event.target, MOVES[event.key])) event.preventDefault();
      return;
    }
    if (event.key !== "Enter" && event.key !== " " && event.key !== "Spacebar") return;
    if (choose(host, event)) event.preventDefault(); // Space would scroll the page
  });
  view.addEventListener("focusin", (event) => {
    const group = event.target.closest && event.target.closest("g.get-node");
    if (group && host._pic) reveal(host, group);
  });
  // a new window width re-fits a fitted picture and keeps any other in bounds
  new ResizeObserver(() => (host._pic && host._pic.fitted ? fit(host) : apply(host))).observe(view);
  view.addEventListener("wheel", (event) => {
    if (!host._pic) return;
    event.preventDefault();
    const frame = view.getBoundingClientRect();
    const notches = clamp(-event.deltaY / (event.deltaMode === 1 ? 3 : 100), -3, 3);
    zoomAt(host, Math.pow(STEP, notches), event.clientX - frame.left, event.clientY - frame.top);
  }, { passive: false });
}

// Arrow keys walk the tree from a focused node: up to the parent, down to the left child, left and right along the
// level (heap ids: the children of t are 2t and 2t + 1; a level's ids are consecutive; 0 is no node).
const sameLevel = (t, u) => (Math.clz32(t) === Math.clz32(u) ? u : 0);
const MOVES = { ArrowUp: (t) => t >> 1, ArrowDown: (t) => 2 * t, ArrowLeft: (t) => sameLevel(t, t - 1),
  ArrowRight: (t) => sameLevel(t, t + 1) };

function move(view, target, step) {
  const group = target.closest && target.closest("g.get-node");
  if (!group) return false;
  const next = view.querySelector("#" + PREFIX + String(step(parseInt(group.id.slice(PREFIX.length), 10))));
  if (!next) return false;
  next.focus();
  return true;
}

function choose(host, event) {
  const group = event.target.closest && event.target.closest("g.get-node");
  if (!group || !group.id.startsWith(PREFIX)) return false;
  event.preventDefault();
  const node = parseInt(group.id.slice(PREFIX.length), 10);
  if (!Number.isInteger(node)) return false;
  host._select(node);
  return true;
}

function clamp(value, low, high) {
  return Math.min(high, Math.max(low, value));
}

function hash(text) {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return String(h);
}
