import { defineConfig } from "vite";

// The bundle is embedded into the Go binary (ui/embed.go). The login page is the
// server's own (internal/channel/web), served to requests without the cookie.
export default defineConfig({
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
});
