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
  if (host.dataset.svgLength !== String(svg.length) || host.getAttribute("data-svg-hash") !== hash(svg)) {
    host.innerHTML = svg;  // Graphviz output; every user-provided string in it is escaped by get_core
    host.dataset.svgLength = String(svg.length);
    host.setAttribute("data-svg-hash", hash(svg));
  }
  host.classList.toggle("get-fit", Boolean(data && data.fit));
  host.querySelectorAll("g.get-node.get-selected").forEach((g) => g.classList.remove("get-selected"));
  if (data && data.selected != null) {
    const chosen = host.querySelector("#" + PREFIX + String(parseInt(data.selected, 10)));
    if (chosen) chosen.classList.add("get-selected");
  }
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
