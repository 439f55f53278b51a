// A thread whose machine is away (at a cluster's hub): its row, its header
// and its chat say so and that messages wait, from the machines the hub lists
// (store.state.machines), not only once a send fails.

import type { NodeStatus } from "../protocol";
import type { Store } from "../store";

// awayMachine is the thread's machine while it is offline, else undefined.
export function awayMachine(store: Store, node?: string): NodeStatus | undefined {
  if (!node || node === store.state.node) return undefined;
  return store.state.machines.find((n) => n.name === node && !n.online);
}

function since(n: NodeStatus): string {
  const d = new Date(n.since ?? "");
  if (isNaN(d.getTime())) return "";
  const today = d.toDateString() === new Date().toDateString();
  return " since " + (today ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleString());
}

// awayState is what a thread's row says instead of its last state.
export const awayState = (n: NodeStatus) => `machine offline${since(n)}, messages wait`;

// Away is the chat's note: the machine is offline since when, what is shown
// (the hub's copy, when the socket said so), and that a message sent now
// waits and is delivered once the machine is back.
export function Away({ store }: { store: Store }) {
  const c = store.state.chat;
  const n = awayMachine(store, c.thread?.node);
  if (!n) return null;
  return (
    <div class="banner away" role="status" data-away={n.name} data-from-copy={c.fromCopy !== undefined ? "" : undefined}>
      Machine {n.name} offline{since(n)}
      {c.fromCopy !== undefined ? "; showing the hub's copy of its recent events" : ""}. Messages you send wait and are delivered when it is back.
    </div>
  );
}
