// Controls both layouts show, written once: the chat's mode and config selects
// (model, …), and the foot of the list
// (machines, devices, Sign out).

import type { Store } from "../store";
import { Notifications } from "./notify";
import { Devices } from "./devices";
import { Machines } from "./machines";
import { Schedules } from "./schedules";
import { Rules } from "./rules";
import { UsageView } from "./usageview";

// ModeSelects is the mode switch and one select per config option the agent lists.
export function ModeSelects({ store }: { store: Store }) {
  const m = store.state.chat.mode;
  if (!m) return null;
  return (
    <>
      {m.available.length > 0 && (
        <label class="mode">
          Mode
          <select value={m.current} onChange={(e) => store.input({ type: "set_mode", mode_id: (e.target as HTMLSelectElement).value })}>
            {m.available.map((x) => (
              <option key={x.id} value={x.id}>{x.name}</option>
            ))}
          </select>
        </label>
      )}
      {m.config.filter((o) => o.values?.length).map((o) => (
        <label class="mode" key={o.id} data-config={o.id}>
          {o.name}
          <select value={o.current} onChange={(e) => store.input({ type: "set_config_option", config_id: o.id, value: (e.target as HTMLSelectElement).value })}>
            {!o.values!.some((v) => v.id === o.current) && <option value={o.current}>{o.current || "default"}</option>}
            {o.values!.map((v) => (
              <option key={v.id} value={v.id}>{v.name}</option>
            ))}
          </select>
        </label>
      ))}
    </>
  );
}

// Account is the foot of the agents and threads: notifications (notify.tsx), machines,
// devices and Sign out. Each layout pins it to the bottom of the screen, apart
// from the lists: the lists arrive after the page is drawn and grow as threads
// start, and a foot that moved with them would take a person's click on Sign
// out (or Devices) to whatever moved under the pointer instead. Sign out is
// last, so nothing that opens or appears above it moves it.
export function Account({ store }: { store: Store }) {
  return (
    <footer class="account" aria-label="Notifications, machines, devices, sign out">
      <Notifications />
      <Machines store={store} />
      <UsageView store={store} />
      <Devices />
      <Schedules agents={store.state.agents} here={store.state.node ?? ""} />
      <Rules here={store.state.node ?? ""} machines={store.state.machines.map((m) => m.name)} />
      <SignOut />
    </footer>
  );
}

// SignOut ends this browser's session on the server (POST /logout clears the
// cookie and revokes it) and shows the sign-in page.
export function SignOut() {
  return (
    <form method="post" action="/logout" class="sign-out">
      <button type="submit" class="link">Sign out</button>
    </form>
  );
}
