// A small helper shared by the views: an element with attributes and children.

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/** A name's pieces, each ending after a separator (/ _ - . : =): where a long name may wrap. */
export function nameParts(name: string): string[] {
  return name.match(/[^/_\-.:=]*(?:[/_\-.:=]+|$)/g)?.filter((p) => p !== "") ?? [name];
}

/** A name as nodes that wrap after its separators (<wbr>) rather than mid-word
 * ("sweep/lr0.008_bs64_a|dam"). */
export function breakable(name: string): (Node | string)[] {
  const out: (Node | string)[] = [];
  for (const part of nameParts(name)) {
    if (out.length > 0) out.push(document.createElement("wbr"));
    out.push(part);
  }
  return out;
}
