// The plain offline banner both layouts show while the socket is away.

import type { Store } from "../store";

export function Banner({ store }: { store: Store }) {
  const s = store.state;
  if (s.conn === "online" || (s.conn === "connecting" && !s.everOnline && !s.connDetail)) return null;
  return (
    <div class="banner" role="alert" data-banner="offline">
      Offline: reconnecting{s.connDetail ? ` (${s.connDetail})` : ""}. Nothing you send is lost; it goes out when the connection is back.
    </div>
  );
}


// OfflineNote says, above the lists, that the states in them are as of the last
// connection: while offline nothing in them is live.
export function OfflineNote({ store }: { store: Store }) {
  const s = store.state;
  if (s.conn === "online" || !s.everOnline) return null;
  return (
    <div class="offline-note" role="status" data-offline-note="">
      Offline: states below are as of the last connection.
    </div>
  );
}
