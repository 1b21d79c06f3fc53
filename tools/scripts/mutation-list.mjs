// The checked-in guard mutants (tools/mutation/<area>.json) and the pure steps of a mutation run:
// reading and checking a list, applying one mutant to a file's text, and scoring the outcomes.
// The runner (mutation.mjs) does the I/O; the test command checks the lists with these functions,
// so a mutant whose code moved is found the day it moves, not on the next mutation run.
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const ID = /^[a-z0-9][a-z0-9-]{0,79}$/;

const SERVICES = new Set(['redis', 'docker']);

/**
 * A list file is an array of mutants, or `{ "services": [...], "mutants": [...] }` for an area
 * whose tests need services (`redis`, `docker`), or `"services": []` to declare none (then a
 * baseline's skipped tests are accepted). Returns the declared services, or null if undeclared.
 */
function splitList(area, raw) {
  if (Array.isArray(raw)) return { services: null, entries: raw };
  const where = `tools/mutation/${area}.json`;
  if (typeof raw !== 'object' || raw === null || !Array.isArray(raw.mutants)) {
    throw new Error(`${where}: expected an array, or an object with a mutants array`);
  }
  const extra = Object.keys(raw).filter((k) => k !== 'services' && k !== 'mutants');
  if (extra.length > 0) throw new Error(`${where}: unknown key(s) ${extra.join(', ')}`);
  const { services } = raw;
  if (!Array.isArray(services) || services.some((s) => !SERVICES.has(s))) {
    throw new Error(`${where}: services must be an array of ${[...SERVICES].join(', ')}`);
  }
  return { services: [...new Set(services)], entries: raw.mutants };
}

/**
 * One list file's mutants, each checked for shape: a mutant that cannot be applied or run would
 * otherwise count as caught (its test run "fails") and inflate the score. Each carries its area's
 * declared `services` (see `splitList`).
 */
export function parseMutantList(area, text) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`tools/mutation/${area}.json: not JSON (${error.message})`);
  }
  const { services, entries: raw } = splitList(area, parsed);
  const seen = new Set();
  return raw.map((entry, index) => {
    const where = `tools/mutation/${area}.json[${index}]`;
    if (typeof entry !== 'object' || entry === null)
      throw new Error(`${where}: expected an object`);
    const { id, file, find, replace, tests, equivalent = false, note = '' } = entry;
    if (typeof id !== 'string' || !ID.test(id)) throw new Error(`${where}: id must match ${ID}`);
    if (seen.has(id)) throw new Error(`${where}: duplicate id ${id}`);
    seen.add(id);
    for (const [key, value] of Object.entries({ file, find, replace, note })) {
      if (typeof value !== 'string') throw new Error(`${where} (${id}): ${key} must be a string`);
    }
    if (find.length === 0) throw new Error(`${where} (${id}): find is empty`);
    if (find === replace) throw new Error(`${where} (${id}): replace equals find`);
    if (typeof equivalent !== 'boolean') {
      throw new Error(`${where} (${id}): equivalent must be a boolean`);
    }
    if (equivalent && note.trim() === '') {
      throw new Error(`${where} (${id}): an equivalent mutant says why in note`);
    }
    if (!Array.isArray(tests) || tests.some((t) => typeof t !== 'string')) {
      throw new Error(`${where} (${id}): tests must be an array of paths`);
    }
    if (!equivalent && tests.length === 0) {
      throw new Error(`${where} (${id}): a non-equivalent mutant names the tests that catch it`);
    }
    return { area, services, id, file, find, replace, tests, equivalent, note };
  });
}

/** Every list under `dir`, or only the named areas (an unknown area is an error, not nothing). */
export async function loadMutants(dir, areas = []) {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  const known = files.map((f) => f.slice(0, -'.json'.length));
  const unknown = areas.filter((a) => !known.includes(a));
  if (unknown.length > 0) {
    throw new Error(`unknown area(s) ${unknown.join(', ')}; known: ${known.join(', ')}`);
  }
  const wanted = areas.length > 0 ? areas : known;
  const out = [];
  for (const area of wanted) {
    out.push(...parseMutantList(area, await readFile(path.join(dir, `${area}.json`), 'utf8')));
  }
  return out;
}

/** The file's text with the mutant applied; the snippet must stand exactly once in it. */
export function applyMutant(text, mutant) {
  const first = text.indexOf(mutant.find);
  if (first < 0) throw new Error(`${mutant.id}: snippet not found in ${mutant.file}`);
  if (text.indexOf(mutant.find, first + 1) >= 0) {
    throw new Error(`${mutant.id}: snippet stands more than once in ${mutant.file}`);
  }
  return text.slice(0, first) + mutant.replace + text.slice(first + mutant.find.length);
}

/** Problems that would make a mutant unrunnable: a missing file or test, a snippet not unique. */
export async function checkMutant(root, mutant) {
  const problems = [];
  try {
    applyMutant(await readFile(path.join(root, mutant.file), 'utf8'), mutant);
  } catch (error) {
    problems.push(error.code === 'ENOENT' ? `${mutant.id}: no file ${mutant.file}` : error.message);
  }
  for (const test of mutant.tests) {
    const found = await stat(path.join(root, test)).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!found) problems.push(`${mutant.id}: no test file ${test}`);
  }
  return problems;
}

/**
 * Per-area scores over run outcomes (`caught` | `survived` | `timeout` | `baseline-failed` |
 * `disturbed`: its file was edited during the run), plus
 * the survivors and equivalents to list. A timeout counts as caught (the mutant made a test hang,
 * which the test command's limits would have failed); a failed baseline counts as neither, since
 * it says nothing about the mutant.
 */
export function scoreRun(mutants, outcomes) {
  const areas = new Map();
  for (const m of mutants) {
    const a = areas.get(m.area) ?? {
      area: m.area,
      total: 0,
      equivalent: 0,
      caught: 0,
      survived: 0,
      unscored: 0,
      survivors: [],
      equivalents: [],
    };
    areas.set(m.area, a);
    a.total += 1;
    if (m.equivalent) {
      a.equivalent += 1;
      a.equivalents.push({ id: m.id, note: m.note });
      continue;
    }
    const outcome = outcomes.get(m.id);
    if (outcome === 'caught' || outcome === 'timeout') a.caught += 1;
    else if (outcome === 'survived') {
      a.survived += 1;
      a.survivors.push({ id: m.id, file: m.file, note: m.note });
    } else a.unscored += 1;
  }
  return [...areas.values()].map((a) => {
    const scored = a.caught + a.survived;
    return { ...a, score: scored === 0 ? null : a.caught / scored };
  });
}
