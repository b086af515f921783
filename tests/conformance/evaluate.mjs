// Scores conformance runs against tests/conformance/expected-failures.yml.
//
//   node evaluate.mjs EXPECTED.yml LABEL=LOG=OUTDIR [LABEL=LOG=OUTDIR ...]
//
// LOG is the CLI's stdout (its `=== SUMMARY ===` and, for `--requirements` runs, its
// `Not scored for ...` list; a LABEL ending in `@scenario` is a single-scenario run, every
// one of which is scored); OUTDIR is what `-o` wrote (`server-<scenario>-<ts>/checks.json`).
// A scenario counts when it is scored and has a FAILURE check. Warnings never count (the CLI's
// own exit code ignores them too) — except in client runs (label `client@scenario`), which
// fail on anything but the CLI's `OVERALL: PASSED` (a warning, the harness failing or timing
// out). Expected-failures entries use the suite's format,
// `server: [scenario | scenario:check-id]`, and each must carry a `# reason` comment on its line.
// Exit 1 on an unexpected failure, on an entry that matched nothing in any run (stale), or on
// an entry without a reason.
import fs from 'node:fs';
import path from 'node:path';

function readExpected(file) {
  const entries = [];
  const problems = [];
  if (!fs.existsSync(file)) return { entries, problems };
  let inServer = false;
  for (const [i, raw] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
    const line = raw.replace(/\s+$/, '');
    if (/^\s*(#|$)/.test(line)) continue;
    const key = /^([A-Za-z_]+):\s*(\[\s*\])?\s*(#.*)?$/.exec(line);
    if (key) {
      inServer = key[1] === 'server';
      continue;
    }
    const item = /^\s+-\s+['"]?([^'"#\s]+)['"]?\s*(#\s*(.*))?$/.exec(line);
    if (!item) {
      problems.push(`${file}:${i + 1}: cannot parse: ${line}`);
      continue;
    }
    if (!inServer) continue;
    if (!item[3] || !item[3].trim()) problems.push(`${file}:${i + 1}: '${item[1]}' has no '# reason' comment`);
    entries.push({ entry: item[1], line: i + 1, used: false });
  }
  return { entries, problems };
}

let scoredPassed = 0;

function parseLog(log, label) {
  const text = fs.readFileSync(log, 'utf8');
  const summaryAt = text.indexOf('=== SUMMARY ===');
  // A single-scenario run (label `NAME@scenario`) prints `Passed: X/Y, N failed` instead.
  const single = /@(\S+)$/.exec(label);
  if (summaryAt < 0 && single) {
    const r = /^Passed: \d+\/\d+, (\d+) failed/m.exec(text);
    if (!r) return null;
    const clientFailed = label.startsWith('client@') && !/OVERALL: PASSED/.test(text);
    return { failed: new Map([[single[1], r[1] !== '0' || clientFailed]]), notScored: new Set() };
  }
  if (summaryAt < 0) return null;
  const failed = new Map();
  const notScored = new Set();
  let inNotScored = false;
  for (const line of text.slice(summaryAt).split('\n')) {
    if (line.startsWith('Not scored for')) inNotScored = true;
    const s = /^([✓✗]) (\S+): (\d+) passed, (\d+) failed/.exec(line);
    if (s && !inNotScored) failed.set(s[2], s[1] === '✗');
    const n = /^\s+[✓✗] (\S+) \(/.exec(line);
    if (n && inNotScored) notScored.add(n[1]);
  }
  return { failed, notScored };
}

function failingChecks(outDir) {
  const byScenario = new Map();
  if (!fs.existsSync(outDir)) return byScenario;
  for (const dir of fs.readdirSync(outDir)) {
    const file = path.join(outDir, dir, 'checks.json');
    if (!fs.existsSync(file)) continue;
    const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
    byScenario.set(scenario, checks.filter((c) => c.status === 'FAILURE'));
  }
  return byScenario;
}

const [expectedFile, ...runs] = process.argv.slice(2);
const { entries, problems } = readExpected(expectedFile);
const unexpected = [];
const expectedHits = [];
for (const run of runs) {
  const [label, log, outDir] = run.split('=');
  const parsed = parseLog(log, label);
  if (!parsed) {
    unexpected.push(`${label}: no summary in ${log} (the CLI did not finish)`);
    continue;
  }
  const checks = failingChecks(outDir);
  for (const [scenario, isFailed] of parsed.failed) {
    if (parsed.notScored.has(scenario)) continue;
    if (!isFailed) scoredPassed += 1;
    if (!isFailed) continue;
    const whole = entries.find((e) => e.entry === scenario);
    if (whole) {
      whole.used = true;
      expectedHits.push(`${label}: ${scenario}`);
      continue;
    }
    const recorded = checks.get(scenario) ?? [];
    const failures = recorded.length > 0 ? recorded : [{ id: '(no checks.json FAILURE recorded)' }];
    for (const check of failures) {
      const e = entries.find((x) => x.entry === `${scenario}:${check.id}`);
      if (e) {
        e.used = true;
        expectedHits.push(`${label}: ${scenario}:${check.id}`);
      } else {
        unexpected.push(`${label}: ${scenario}:${check.id} ${check.errorMessage ?? check.description ?? ''}`.trim());
      }
    }
  }
}

for (const e of entries) if (!e.used) problems.push(`${expectedFile}:${e.line}: stale entry '${e.entry}' (passes in every run; remove it)`);
console.log('\n=== conformance verdict ===');
for (const h of expectedHits) console.log(`  ~ expected failure: ${h}`);
for (const u of unexpected) console.log(`  ✗ unexpected failure: ${u}`);
for (const p of problems) console.log(`  ! ${p}`);
const ok = unexpected.length === 0 && problems.length === 0;
console.log(ok ? 'conformance: OK (every scored scenario passes or is an expected failure)' : 'conformance: FAILED');
// The plain closing line CI reads: scored scenarios over all runs.
console.log(`conformance: ${scoredPassed} passed, ${unexpected.length} failed`);
process.exit(ok ? 0 : 1);
