// Voice input: the browser's own speech recognition (Web Speech API) writes
// what it hears into the composer, for the person to read before sending.
// Nothing is sent by voice alone. A browser without it says so.

import { useEffect, useRef, useState } from "preact/hooks";
import type { useComposer } from "./composer";

type Comp = ReturnType<typeof useComposer>;

// The part of SpeechRecognition used here (TypeScript's DOM types lack it).
type Recognition = {
  lang: string;
  continuous: boolean;
  interimResults: boolean;
  start(): void;
  stop(): void;
  abort(): void;
  onresult: ((e: { resultIndex: number; results: ArrayLike<{ isFinal: boolean; 0: { transcript: string } }> }) => void) | null;
  onerror: ((e: { error: string }) => void) | null;
  onend: (() => void) | null;
};

function recognizer(): (new () => Recognition) | undefined {
  const w = window as unknown as { SpeechRecognition?: new () => Recognition; webkitSpeechRecognition?: new () => Recognition };
  return w.SpeechRecognition ?? w.webkitSpeechRecognition;
}

export const NOT_SUPPORTED = "Voice input is not supported in this browser: type instead, or use the keyboard's own dictation.";

// errorWords say what stopped the recognition, and what to do.
function errorWords(code: string): string {
  switch (code) {
    case "not-allowed":
    case "service-not-allowed":
      return isSecureContext
        ? "Voice input needs the microphone: allow it for this site in the browser's settings."
        : "Voice input needs a secure (https) address and the microphone; this page is plain http.";
    case "audio-capture":
      return "No microphone was found.";
    case "no-speech":
      return "No speech was heard.";
    case "network":
      return "The browser's speech service could not be reached.";
    case "aborted":
      return "";
    default:
      return `Voice input stopped (${code}).`;
  }
}

export function VoiceButton({ comp }: { comp: Comp }) {
  const [listening, setListening] = useState(false);
  const [note, setNote] = useState("");
  const rec = useRef<Recognition | null>(null);
  // The latest composer, for results that arrive after a render.
  const latest = useRef(comp);
  latest.current = comp;
  useEffect(() => () => rec.current?.abort(), []);
  const toggle = () => {
    if (rec.current) {
      rec.current.stop();
      return;
    }
    const R = recognizer();
    if (!R) {
      setNote(NOT_SUPPORTED);
      return;
    }
    const r = new R();
    r.lang = navigator.language;
    r.continuous = true;
    r.interimResults = false;
    r.onresult = (e) => {
      for (let i = e.resultIndex; i < e.results.length; i++) {
        const res = e.results[i];
        if (res.isFinal) latest.current.dictate(res[0].transcript.trim());
      }
    };
    r.onerror = (e) => setNote(errorWords(e.error));
    r.onend = () => {
      rec.current = null;
      setListening(false);
    };
    rec.current = r;
    setNote("");
    try {
      r.start();
      setListening(true);
    } catch (err) {
      rec.current = null;
      setNote(`Voice input could not start: ${(err as Error).message}`);
    }
  };
  return (
    <>
      <button type="button" class={`mic${listening ? " on" : ""}`} aria-pressed={listening} data-voice=""
        aria-label={listening ? "Stop voice input" : "Voice input"} title={listening ? "Listening: click to stop" : "Speak your message (it goes into the box, not sent)"}
        onClick={toggle}>
        <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true"><path fill="currentColor" d="M12 14a3 3 0 0 0 3-3V5a3 3 0 1 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.92V21h2v-3.08A7 7 0 0 0 19 11h-2z" /></svg>
      </button>
      {(note || listening) && (
        <div class="voice-note hint" role="status" data-voice-note="">
          {listening ? "Listening… what you say goes into the box; press Send when it reads right." : note}
          {note && <button type="button" class="link" aria-label="Dismiss" onClick={() => setNote("")}>×</button>}
        </div>
      )}
    </>
  );
}
