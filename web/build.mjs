// Bundles the dashboard (src/main.ts, uPlot and the styles) with esbuild into
// ../src/boardd/dashboard/static/ (or $BOARDD_DASHBOARD_OUT): index.html, which names the
// assets, and assets/main-HASH.js, assets/main-HASH.css (content-hashed names, so boardd
// serves them as immutable). The folder is replaced whole, only once the build succeeded.
// hatch_build.py runs this (after `npm ci`) when the bundle is missing or older than web/.
import * as esbuild from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(
  process.env.BOARDD_DASHBOARD_OUT || path.join(here, "..", "src", "boardd", "dashboard", "static"),
);
const tmp = `${out}.tmp-${process.pid}`;
fs.rmSync(tmp, { recursive: true, force: true });

const result = await esbuild.build({
  entryPoints: [path.join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020"],
  outdir: path.join(tmp, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  legalComments: "linked",
  logLevel: "warning",
});

const outputs = Object.keys(result.metafile.outputs).map((p) => path.relative(tmp, path.resolve(p)));
const js = outputs.find((p) => p.endsWith(".js"));
const css = outputs.find((p) => p.endsWith(".css"));
if (!js || !css) throw new Error(`esbuild gave no script or no stylesheet: ${outputs.join(", ")}`);

const index = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>boardd</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${css}">
<script type="module" src="${js}"></script>
</head>
<body>
<noscript>boardd's dashboard needs JavaScript; the data API is at <a href="api/v1/">api/v1/</a>.</noscript>
</body>
</html>
`;
fs.writeFileSync(path.join(tmp, "index.html"), index);

// The licence texts of the npm packages bundled (uPlot's MIT licence asks for its notice).
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const found = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (found) packages.add(found[1]);
}
const notices = [...packages].sort().map((name) => {
  const dir = path.join(here, "node_modules", name);
  const file = fs.readdirSync(dir).find((f) => /^(licen[cs]e|copying)/i.test(f));
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const text = file ? fs.readFileSync(path.join(dir, file), "utf8") : "(no licence file)";
  return `${name} ${version}\n\n${text.trim()}\n`;
});
fs.writeFileSync(path.join(tmp, "THIRD_PARTY_LICENSES.txt"), notices.join("\n---\n\n"));
fs.rmSync(out, { recursive: true, force: true });
fs.renameSync(tmp, out);
console.log(`dashboard built: ${path.relative(process.cwd(), out) || "."} (${js}, ${css})`);
