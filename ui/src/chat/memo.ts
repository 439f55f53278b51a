// memo without preact/compat: a component that re-renders only when a prop changes identity.

import { Component, type ComponentChildren, type FunctionComponent } from "preact";

export function memo<P extends object>(fn: FunctionComponent<P>): FunctionComponent<P> {
  class Memo extends Component<P> {
    shouldComponentUpdate(next: P): boolean {
      const a = this.props as Record<string, unknown>, b = next as Record<string, unknown>;
      for (const k in b) if (a[k] !== b[k]) return true;
      for (const k in a) if (!(k in b)) return true;
      return false;
    }
    render(): ComponentChildren {
      return fn(this.props as P);
    }
  }
  return Memo as unknown as FunctionComponent<P>;
}
