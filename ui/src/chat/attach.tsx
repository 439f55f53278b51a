// The files waiting in the composer, and the button that adds some; both layouts use it.

import type { useComposer } from "./composer";

type Comp = ReturnType<typeof useComposer>;

export function Attachments({ comp }: { comp: Comp }) {
  if (!comp.files.length && !comp.fileError) return null;
  return (
    <div class="attached" aria-label="Attached files">
      {comp.files.map((f, i) => (
        <span class={f.url ? "thumb" : "thumb file"} key={i}>
          {f.url ? <img src={f.url} alt={f.name} /> : <span class="fname">{f.name}</span>}
          <button type="button" class="link" aria-label={`Remove ${f.name}`} onClick={() => comp.removeFile(i)}>×</button>
        </span>
      ))}
      {comp.fileError && <span class="hint err" role="alert">{comp.fileError}</span>}
    </div>
  );
}

// Any file goes: it is saved in the thread's working directory and named by
// path in the message; an image also goes as an image to an agent that takes them.
export function AttachButton({ comp }: { comp: Comp }) {
  return (
    <label class="attach" title="Attach files">
      <span aria-hidden="true">+</span>
      <input type="file" multiple class="sr-only" aria-label="Attach files"
        onChange={(e) => { const el = e.target as HTMLInputElement; comp.addFiles(el.files); el.value = ""; }} />
    </label>
  );
}
