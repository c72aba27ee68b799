// Browser side of the clickable tree diagram (a Streamlit components-v2 component, mounted by pages/tree.py).
// data: {svg: Graphviz SVG whose node groups have id "get-node-<heap id>", selected: node id or null, fit: bool}.
// A click on a node sets the trigger value "clicked" to its heap id (an integer).
const PREFIX = "get-node-";

export default function (component) {
  const { data, setTriggerValue, parentElement } = component;
  let host = parentElement.querySelector(".get-tree-host");
  if (!host) {
    host = document.createElement("div");
    host.className = "get-tree-host";
    parentElement.appendChild(host);
  }
  const svg = (data && data.svg) || "";
  const svgHash = String(svg.length) + ":" + hash(svg);
  if (host.getAttribute("data-svg-hash") !== svgHash) {
    host.innerHTML = svg;  // Graphviz output; every user-provided string in it is escaped by get_core
    host.setAttribute("data-svg-hash", svgHash);
  }
  const fit = Boolean(data && data.fit);
  // re-centre only when the picture changed (first render, new view, fit toggled), not on a click
  const changed = host.dataset.shownSvg !== host.getAttribute("data-svg-hash") || host.dataset.shownFit !== String(fit);
  host.classList.toggle("get-fit", fit);
  host.querySelectorAll("g.get-node.get-selected").forEach((g) => g.classList.remove("get-selected"));
  const chosen = data && data.selected != null
    ? host.querySelector("#" + PREFIX + String(parseInt(data.selected, 10))) : null;
  if (chosen) chosen.classList.add("get-selected");
  if (changed && chosen && !fit) {
    // a wide tree scrolls inside the host: bring the selected node to the middle
    requestAnimationFrame(() => {
      const box = chosen.getBoundingClientRect();
      const frame = host.getBoundingClientRect();
      host.scrollLeft += box.left + box.width / 2 - (frame.left + host.clientWidth / 2);
      host.scrollTop += box.top + box.height / 2 - (frame.top + host.clientHeight / 2);
    });
  }
  host.dataset.shownSvg = host.getAttribute("data-svg-hash");
  host.dataset.shownFit = String(fit);
  const onClick = (event) => {
    const group = event.target.closest("g.get-node");
    if (!group || !group.id.startsWith(PREFIX)) return;
    event.preventDefault();
    const node = parseInt(group.id.slice(PREFIX.length), 10);
    if (Number.isInteger(node)) setTriggerValue("clicked", node);
  };
  host.addEventListener("click", onClick);
  return () => host.removeEventListener("click", onClick);
}

function hash(text) {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(31, h) + text.charCodeAt(i)) | 0;
  return String(h);
}
