// Writes name.gz beside every script and stylesheet of the bundle, so the server can
// answer Accept-Encoding: gzip without compressing on each request. zlib's gzip
// header carries no timestamp, so the output is the same on every machine.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, constants } from "node:zlib";

const dir = join(import.meta.dirname, "..", "dist", "assets");
for (const name of readdirSync(dir)) {
  if (!/\.(js|css)$/.test(name)) continue;
  const src = readFileSync(join(dir, name));
  writeFileSync(join(dir, name + ".gz"), gzipSync(src, { level: constants.Z_BEST_COMPRESSION }));
}
