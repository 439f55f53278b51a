// The images waiting in the composer, and the button that adds some; both layouts use it.

import type { useComposer } from "./composer";

type Comp = ReturnType<typeof useComposer>;

export function Attachments({ comp }: { comp: Comp }) {
  if (!comp.images.length && !comp.imageError) return null;
  return (
    <div class="attached" aria-label="Attached images">
      {comp.images.map((im, i) => (
        <span class="thumb" key={i}>
          <img src={im.url} alt={im.name} />
          <button type="button" class="link" aria-label={`Remove ${im.name}`} onClick={() => comp.removeImage(i)}>×</button>
        </span>
      ))}
      {comp.imageError && <span class="hint err" role="alert">{comp.imageError}</span>}
    </div>
  );
}

export function AttachButton({ comp }: { comp: Comp }) {
  if (!comp.acceptsImages) return null;
  return (
    <label class="attach" title="Attach images">
      <span aria-hidden="true">+</span>
      <input type="file" accept="image/*" multiple class="sr-only" aria-label="Attach images"
        onChange={(e) => { const el = e.target as HTMLInputElement; comp.addFiles(el.files); el.value = ""; }} />
    </label>
  );
}
