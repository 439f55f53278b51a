// The dashboard's entry: one store, one socket module, two layouts chosen by width.

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { Store } from "./store";
import { installNotifications, notificationsOn, useChatRoute, useRoute, useStore } from "./app";
import { Desktop } from "./desktop/Desktop";
import { Phone } from "./phone/Phone";
import { watchThreads } from "./changes";
import { installServiceWorker, reportScreen, scrollToCard } from "./chat/devices";
import { Help, useShortcuts } from "./chat/help";
import "./style.css";

const store = new Store(undefined, () => {
  // The cookie is gone or wrong: the server answers "/" with the login page.
  location.assign("/");
});
installNotifications(store);
installServiceWorker();
(window as unknown as { parley: Store }).parley = store; // for tests and the curious

document.addEventListener("visibilitychange", () => {
  const t = store.state.chat.thread;
  const last = store.state.threads.find((x) => x.id === t?.id)?.last_seq;
  if (document.visibilityState === "visible" && t && last) store.markSeen(t.id, last);
});

const narrow = window.matchMedia("(max-width: 760px)");

function App() {
  const [phone, setPhone] = useState(narrow.matches);
  useEffect(() => {
    const f = () => setPhone(narrow.matches);
    narrow.addEventListener("change", f);
    return () => narrow.removeEventListener("change", f);
  }, []);
  useStore(store);
  const route = useRoute();
  useChatRoute(store, route);
  useEffect(() => {
    void store.refresh();
    // A hidden tab keeps listening only when it may notify: a card opening in any
    // thread is news then.
    const wanted = () => document.visibilityState === "visible" || notificationsOn();
    const feed = watchThreads(() => wanted() && void store.refresh());
    (window as unknown as { parleyFeed: typeof feed }).parleyFeed = feed; // for tests
    // Polling is the fallback while the change stream is down, and a slow
    // safety net while it is up.
    let last = Date.now();
    const t = setInterval(() => {
      const every = feed.live() ? 60000 : 5000;
      if (Date.now() - last < every || !wanted()) return;
      last = Date.now();
      void store.refresh();
    }, 1000);
    const seen = () => document.visibilityState === "visible" && void store.refresh();
    document.addEventListener("visibilitychange", seen);
    return () => {
      clearInterval(t);
      feed.close();
      document.removeEventListener("visibilitychange", seen);
    };
  }, []);
  useEffect(() => {
    const t = store.state.chat.thread;
    // How many threads wait for an answer, as the tab's (and the app's) title says.
    const waiting = store.state.threads.filter((x) => x.waiting).length;
    document.title = (waiting ? `(${waiting}) ` : "") + (t ? `${t.title || t.cwd} · parley` : "parley");
    reportScreen(route.view === "chat" || route.view === "thread" ? t?.id : undefined);
    scrollToCard();
  });
  useEffect(() => {
    const f = () => reportScreen(route.view === "chat" || route.view === "thread" ? store.state.chat.thread?.id : undefined);
    document.addEventListener("visibilitychange", f);
    return () => document.removeEventListener("visibilitychange", f);
  }, [route]);
  const [help, setHelp] = useShortcuts(store);
  return (
    <>
      {phone ? <Phone store={store} route={route} /> : <Desktop store={store} route={route} />}
      {help && <Help onClose={() => setHelp(false)} />}
    </>
  );
}

render(<App />, document.getElementById("app")!);
