import { defineConfig } from "vite";
import { resolve } from "node:path";

// The bundle is embedded into the Go binary (ui/embed.go); login.html is served to
// requests without the cookie, so it carries no scripts and no external assets.
export default defineConfig({
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
    rollupOptions: {
      input: { index: resolve(import.meta.dirname, "index.html"), login: resolve(import.meta.dirname, "login.html") },
    },
  },
});
